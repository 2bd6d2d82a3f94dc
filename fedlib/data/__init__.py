"""Datasets: a verified registry, fetching with cache and offline mirror, loaders, partitions.

Environment variables (see ``fedlib.paths``): ``FEDLIB_DATA_DIR`` (download cache),
``FEDLIB_DATA_MIRROR`` (read-only offline mirror searched before any download) and
``FEDLIB_OFFLINE`` (never use the network).
"""

from fedlib.data.cifar10 import Cifar10Images, load_cifar10
from fedlib.data.errors import (
    ChecksumMismatchError,
    DatasetError,
    DatasetUnavailableError,
    IDXFormatError,
    UnknownDatasetError,
)
from fedlib.data.fetch import content_sha256, fetch
from fedlib.data.har import (
    ACTIVITY_LABELS,
    SITTING,
    HarData,
    SubjectTask,
    binary_subject_tasks,
    load_har,
    normalise_rows,
)
from fedlib.data.idx import read_idx, write_idx
from fedlib.data.imdb import ImdbReviews, load_imdb
from fedlib.data.loaders import (
    FemnistDigits,
    load_fashion_mnist,
    load_femnist_digits,
    load_mnist,
)
from fedlib.data.partition import (
    dirichlet_partition,
    iid_partition,
    label_shard_partition,
    natural_partition,
)
from fedlib.data.registry import REGISTRY, RemoteFile, dataset_files, get_file, list_datasets
from fedlib.data.synthetic import AdditiveSyntheticTask

__all__ = [
    "ACTIVITY_LABELS",
    "REGISTRY",
    "SITTING",
    "AdditiveSyntheticTask",
    "Cifar10Images",
    "ChecksumMismatchError",
    "DatasetError",
    "DatasetUnavailableError",
    "FemnistDigits",
    "HarData",
    "IDXFormatError",
    "ImdbReviews",
    "RemoteFile",
    "SubjectTask",
    "UnknownDatasetError",
    "binary_subject_tasks",
    "content_sha256",
    "dataset_files",
    "dirichlet_partition",
    "fetch",
    "get_file",
    "iid_partition",
    "label_shard_partition",
    "list_datasets",
    "load_cifar10",
    "load_fashion_mnist",
    "load_femnist_digits",
    "load_har",
    "load_imdb",
    "load_mnist",
    "natural_partition",
    "normalise_rows",
    "read_idx",
    "write_idx",
]
