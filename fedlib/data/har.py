"""UCI HAR (Human Activity Recognition Using Smartphones): features, windows, subject tasks.

Thirty volunteers wore a smartphone on the waist while walking, walking upstairs and
downstairs, sitting, standing and lying; the accelerometer and gyroscope were sampled
at 50 Hz and cut into windows of 128 samples (2.56 s, 50 % overlap): 10,299 windows in
all, 7,352 in the official train split (21 subjects) and 2,947 in the test split (9).

Two sources are registered under the dataset name ``"har"``:

* ``UCI HAR Dataset.zip``, the canonical distribution, with the authors' 561 engineered
  features (``X_train.txt``, ``X_test.txt``) and the nine raw "Inertial Signals" per
  window. It is read member by member, never extracted.
* ``har-inertial.npz``, a mirror-only file with the nine inertial channels of every
  window (``x``, ``activity``, ``subject``) but not the 561 features.

:func:`load_har` returns one feature matrix for the whole dataset: the official 561
features (``feature_source == "uci-561"``) when the zip can be had, otherwise
:func:`inertial_feature_map` computed on the windows (``"inertial-map"``). Either way the
matrix goes through :func:`normalise_rows`. :func:`binary_subject_tasks` turns it into one
binary task per subject (one federated client each).
"""

from __future__ import annotations

import io
import logging
import numbers
import warnings
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fedlib.data.errors import DatasetError, DatasetUnavailableError
from fedlib.data.fetch import fetch
from fedlib.data.registry import HAR_INERTIAL_FILE, HAR_ZIP_FILE

_log = logging.getLogger(__name__)

ACTIVITY_LABELS: dict[int, str] = {
    1: "WALKING",
    2: "WALKING_UPSTAIRS",
    3: "WALKING_DOWNSTAIRS",
    4: "SITTING",
    5: "STANDING",
    6: "LAYING",
}
"""Activity code -> name, as in the dataset's ``activity_labels.txt``."""

SITTING: int = 4
"""Activity code of ``SITTING``."""

N_SUBJECTS = 30
WINDOW = 128
"""Samples per window (2.56 s at 50 Hz)."""

SAMPLE_RATE_HZ = 50.0

HAR_CHANNELS: tuple[str, ...] = tuple(
    f"{group}_{axis}" for group in ("body_acc", "body_gyro", "total_acc") for axis in "xyz"
)
"""The nine inertial channels, in the order of axis 1 of the windows."""

FEATURE_SOURCES = ("uci-561", "inertial-map")
_FEATURE_CHOICES = ("auto", *FEATURE_SOURCES)
_ROOT = "UCI HAR Dataset/"
_SPLITS = ("train", "test")
_N_UCI_FEATURES = 561


# ----------------------------------------------------------------------------- data types


@dataclass(frozen=True, eq=False)
class HarData:
    """One feature vector per window of UCI HAR, train and test splits concatenated.

    Attributes
    ----------
    features
        float64 ``(n, F)``; columns standardised and rows scaled to unit L2 norm
        (:func:`normalise_rows`).
    activity
        int64 ``(n,)``, activity codes 1-6 (:data:`ACTIVITY_LABELS`).
    subject
        int64 ``(n,)``, volunteer 1-30.
    feature_source
        ``"uci-561"`` (the authors' features) or ``"inertial-map"``
        (:func:`inertial_feature_map` of the raw windows).
    feature_names
        The ``F`` column names.
    """

    features: np.ndarray
    activity: np.ndarray
    subject: np.ndarray
    feature_source: str
    feature_names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.activity)


@dataclass(frozen=True, eq=False)
class SubjectTask:
    """One subject's binary task: ``y = +1`` for the positive activity, else ``-1``.

    ``x_train``/``x_test`` are float64 rows of :attr:`HarData.features`; ``y_train`` and
    ``y_test`` are float64 in ``{-1.0, +1.0}``.
    """

    subject: int
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


# ------------------------------------------------------------------------- reading files


_READ_ERRORS = (ValueError, OSError, EOFError, zlib.error, zipfile.BadZipFile)


def _member_text(archive: zipfile.ZipFile, path: Path, member: str) -> str:
    """The decoded text of ``UCI HAR Dataset/<member>``, read without extracting anything."""
    try:
        with archive.open(_ROOT + member) as stream:
            return stream.read().decode("utf-8")
    except KeyError:
        raise DatasetError(
            f"{path} lacks the member {_ROOT + member!r}: it is not the UCI HAR Dataset zip "
            "(or is incomplete)"
        ) from None
    except _READ_ERRORS as exc:
        raise DatasetError(f"{path}: cannot read {member!r} ({type(exc).__name__}: {exc})") from exc


def _read_member(
    archive: zipfile.ZipFile, path: Path, member: str, dtype: type, columns: int | None
) -> np.ndarray:
    """A whitespace-separated numeric table from one zip member, shape-checked."""
    text = _member_text(archive, path, member)
    try:
        table = np.loadtxt(io.StringIO(text), dtype=dtype, ndmin=2)
    except ValueError as exc:
        raise DatasetError(f"{path}: cannot parse {member!r} ({exc})") from exc
    if columns is None:
        if table.shape[1] != 1:
            raise DatasetError(f"{path}: {member!r} should have one value per line")
        return table[:, 0]
    if table.shape[1] != columns:
        raise DatasetError(
            f"{path}: {member!r} has {table.shape[1]} columns, expected {columns}"
        )
    return table


def _open_zip(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise DatasetError(f"{path} is not a readable zip file ({exc})") from exc


def _check_labels(where: object, activity: np.ndarray, subject: np.ndarray) -> None:
    if activity.shape != subject.shape or activity.ndim != 1:
        raise DatasetError(
            f"{where}: {activity.shape} activity labels but {subject.shape} subject ids"
        )
    if len(activity) and (activity.min() < 1 or activity.max() > len(ACTIVITY_LABELS)):
        raise DatasetError(f"{where}: activity codes outside 1-{len(ACTIVITY_LABELS)}")
    if len(subject) and (subject.min() < 1 or subject.max() > N_SUBJECTS):
        raise DatasetError(f"{where}: subject ids outside 1-{N_SUBJECTS}")


def _read_split_labels(
    archive: zipfile.ZipFile, path: Path, split: str
) -> tuple[np.ndarray, np.ndarray]:
    activity = _read_member(archive, path, f"{split}/y_{split}.txt", np.int64, None)
    subject = _read_member(archive, path, f"{split}/subject_{split}.txt", np.int64, None)
    _check_labels(f"{path} ({split})", activity, subject)
    return activity, subject


def _check_activity_names(archive: zipfile.ZipFile, path: Path) -> None:
    lines = _member_text(archive, path, "activity_labels.txt").splitlines()
    found = dict(line.split(maxsplit=1) for line in lines if len(line.split()) == 2)
    expected = {str(code): name for code, name in ACTIVITY_LABELS.items()}
    if found != expected or len(found) != sum(1 for line in lines if line.strip()):
        raise DatasetError(f"{path}: activity_labels.txt does not list {expected}")


def _read_feature_names(archive: zipfile.ZipFile, path: Path) -> tuple[str, ...]:
    lines = _member_text(archive, path, "features.txt").splitlines()
    rows = [line.split(maxsplit=1) for line in lines if line.strip()]
    numbered = [r[0] for r in rows] == [str(i) for i in range(1, len(rows) + 1)]
    if len(rows) != _N_UCI_FEATURES or not numbered or any(len(r) != 2 for r in rows):
        raise DatasetError(
            f"{path}: features.txt should list features 1-{_N_UCI_FEATURES} as "
            "'<number> <name>' lines"
        )
    return tuple(r[1].strip() for r in rows)


def _uci_features(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]:
    """The 561 features, activities and subjects of both splits (train first)."""
    with _open_zip(path) as archive:
        _check_activity_names(archive, path)
        names = _read_feature_names(archive, path)
        parts = []
        for split in _SPLITS:
            activity, subject = _read_split_labels(archive, path, split)
            x = _read_member(
                archive, path, f"{split}/X_{split}.txt", np.float64, _N_UCI_FEATURES
            )
            if len(x) != len(activity):
                raise DatasetError(
                    f"{path}: X_{split}.txt has {len(x)} rows but y_{split}.txt {len(activity)}"
                )
            parts.append((x, activity, subject))
    x, activity, subject = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    return x, activity, subject, names


def _zip_windows(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The nine inertial channels of both splits (train first) from the zip."""
    with _open_zip(path) as archive:
        parts = []
        for split in _SPLITS:
            activity, subject = _read_split_labels(archive, path, split)
            channels = []
            for channel in HAR_CHANNELS:
                member = f"{split}/Inertial Signals/{channel}_{split}.txt"
                signal = _read_member(archive, path, member, np.float32, WINDOW)
                if len(signal) != len(activity):
                    raise DatasetError(
                        f"{path}: {member!r} has {len(signal)} rows, "
                        f"y_{split}.txt {len(activity)}"
                    )
                channels.append(signal)
            parts.append((np.stack(channels, axis=1), activity, subject))
    x, activity, subject = (np.concatenate(arrays) for arrays in zip(*parts, strict=True))
    return x, activity, subject


def _npz_windows(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as npz:
            missing = {"x", "activity", "subject"} - set(npz.files)
            if missing:
                raise DatasetError(f"{path} lacks the arrays {sorted(missing)}")
            x, activity, subject = npz["x"], npz["activity"], npz["subject"]
    except _READ_ERRORS as exc:
        raise DatasetError(f"{path} is not a readable npz file ({exc})") from exc
    if x.ndim != 3 or x.shape[1:] != (len(HAR_CHANNELS), WINDOW) or x.dtype.kind != "f":
        raise DatasetError(
            f"{path}: expected float windows (n, {len(HAR_CHANNELS)}, {WINDOW}), "
            f"got {x.dtype} {x.shape}"
        )
    if activity.dtype.kind not in "iu" or subject.dtype.kind not in "iu":
        raise DatasetError(f"{path}: activity and subject should be integers")
    activity, subject = activity.astype(np.int64), subject.astype(np.int64)
    _check_labels(path, activity, subject)
    if len(activity) != len(x):
        raise DatasetError(f"{path}: {len(x)} windows but {len(activity)} labels")
    return x.astype(np.float32, copy=False), activity, subject


def gravity_level(windows: np.ndarray) -> float:
    """Median over windows of the time-averaged ``total_acc`` magnitude, in g.

    About 1 for recordings of a person under gravity (``total_acc`` includes it).
    """
    total = np.asarray(windows)[:, 6:9].astype(np.float64)
    return float(np.median(np.sqrt((total**2).sum(axis=1)).mean(axis=1)))


def _check_gravity(x: np.ndarray, where: str) -> None:
    """Warn when the total acceleration does not look like a body under gravity.

    ``total_acc`` is in units of g and includes gravity, so the time-average of its
    magnitude is close to 1 for a phone carried by someone sitting, standing, lying or
    walking. A median far from 1 means the windows are not the recorded signals (or are
    in other units), and any result computed on them should not be reported as UCI HAR.
    """
    if len(x) == 0:
        return
    level = gravity_level(x)
    if not 0.7 <= level <= 1.3:
        warnings.warn(
            f"the total_acc channels of the HAR windows from {where} have a median "
            f"magnitude of {level:.3f} g, where recordings of a person under gravity "
            "average about 1 g: these windows do not look like the UCI HAR recordings",
            RuntimeWarning,
            stacklevel=3,
        )


def load_har_windows() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The raw inertial windows of all 10,299 UCI HAR windows.

    Read from ``UCI HAR Dataset.zip`` (cache, mirror or download) when it can be had,
    else from the mirror file ``har/har-inertial.npz`` (which loses the original row
    order within a subject). Warns (``RuntimeWarning``) when the total acceleration is
    not about 1 g, i.e. when the windows cannot be the recorded signals.

    Returns
    -------
    x : numpy.ndarray
        float32 ``(n, 9, 128)``, channels in the order of :data:`HAR_CHANNELS`
        (body_acc x, y, z in g; body_gyro x, y, z in rad/s; total_acc x, y, z in g).
    activity : numpy.ndarray
        int64 ``(n,)``, 1-6.
    subject : numpy.ndarray
        int64 ``(n,)``, 1-30.

    Raises
    ------
    DatasetUnavailableError
        If neither file is available; the message says where to get each.
    ChecksumMismatchError, DatasetError
        If a file is damaged or malformed.
    """
    try:
        zip_path = fetch("har", HAR_ZIP_FILE)
    except DatasetUnavailableError as zip_error:
        try:
            npz_path = fetch("har", HAR_INERTIAL_FILE)
        except DatasetUnavailableError as npz_error:
            raise DatasetUnavailableError(
                "the UCI HAR inertial windows are available from neither source.\n\n"
                f"{zip_error}\n\n{npz_error}"
            ) from npz_error
        x, activity, subject = _npz_windows(npz_path)
        where = str(npz_path)
    else:
        x, activity, subject = _zip_windows(zip_path)
        where = str(zip_path)
    _check_gravity(x, where)
    return x, activity, subject


# ------------------------------------------------------------------------- feature map

_GROUPS = ("body_acc", "body_gyro", "total_acc")
_SIGNALS: tuple[str, ...] = HAR_CHANNELS + tuple(f"{g}_mag" for g in _GROUPS)
_BANDS = ((1, 8), (9, 16), (17, 32), (33, 64))
_STATS: tuple[str, ...] = (
    "mean",
    "std",
    "mad",
    "max",
    "min",
    "energy",
    "iqr",
    "skewness",
    "meanfreq",
    "maxinds",
    *(f"bandenergy-{lo}-{hi}" for lo, hi in _BANDS),
    "entropy",
)
_PAIRS = (("x", "y"), ("x", "z"), ("y", "z"))
_FEATURE_NAMES: tuple[str, ...] = tuple(
    f"{signal}-{stat}" for signal in _SIGNALS for stat in _STATS
) + tuple(f"{g}-corr-{a}{b}" for g in _GROUPS for a, b in _PAIRS)
_CHUNK = 1024


def _quantile(ordered: np.ndarray, q: float) -> np.ndarray:
    """Quantile ``q`` of rows sorted along the last axis (numpy's default, linear)."""
    position = q * (ordered.shape[-1] - 1)
    lo = int(np.floor(position))
    hi = min(lo + 1, ordered.shape[-1] - 1)
    weight = position - lo
    return ordered[..., lo] + weight * (ordered[..., hi] - ordered[..., lo])


def _window_stats(signals: np.ndarray) -> np.ndarray:
    """The :data:`_STATS` of ``signals`` (m, s, 128), as (m, s, len(_STATS))."""
    n = signals.shape[-1]
    mean = signals.mean(axis=-1)
    flat = signals.max(axis=-1) == signals.min(axis=-1)
    centred = signals - mean[..., None]
    centred[flat] = 0.0  # exact zeros: no rounding noise in std, skewness or spectrum
    var = (centred**2).mean(axis=-1)
    std = np.sqrt(var)
    ordered = np.sort(signals, axis=-1)
    median = _quantile(ordered, 0.5)
    iqr = _quantile(ordered, 0.75) - _quantile(ordered, 0.25)
    mad = _quantile(np.sort(np.abs(signals - median[..., None]), axis=-1), 0.5)
    third = (centred * centred * centred).mean(axis=-1)
    skewness = np.divide(third, std * std * std, out=np.zeros_like(std), where=std > 0)

    spectrum = np.fft.rfft(centred, axis=-1)[..., 1:]  # bins 1..n/2; bin 0 is 0
    power = (spectrum.real**2 + spectrum.imag**2) / n**2
    power[..., :-1] *= 2.0  # one-sided: bins 1..n/2-1 stand for two; sums to var
    total = power.sum(axis=-1)
    bins = np.arange(1, power.shape[-1] + 1, dtype=np.float64)
    has_power = total > 0
    meanfreq = np.divide(power @ bins, total, out=np.zeros_like(total), where=has_power)
    maxinds = np.where(has_power, power.argmax(axis=-1) + 1, 0).astype(np.float64)
    bands = [power[..., lo - 1 : hi].sum(axis=-1) for lo, hi in _BANDS]
    share = np.divide(
        power, total[..., None], out=np.zeros_like(power), where=has_power[..., None]
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(share > 0, share * np.log(share), 0.0)
    entropy = -plogp.sum(axis=-1) / np.log(power.shape[-1])

    energy = (signals**2).mean(axis=-1)
    columns = (
        mean, std, mad, ordered[..., -1], ordered[..., 0], energy, iqr,
        skewness, meanfreq, maxinds, *bands, entropy,
    )  # fmt: skip
    return np.stack(columns, axis=-1)


def _correlations(signals: np.ndarray) -> np.ndarray:
    """Pearson correlations of the axis pairs of each 3-axis group, (m, 9)."""
    mean = signals.mean(axis=-1, keepdims=True)
    flat = signals.max(axis=-1) == signals.min(axis=-1)
    centred = signals - mean
    centred[flat] = 0.0
    std = np.sqrt((centred**2).mean(axis=-1))
    out = []
    for g in range(len(_GROUPS)):
        for a, b in _PAIRS:
            i, j = 3 * g + "xyz".index(a), 3 * g + "xyz".index(b)
            cov = (centred[:, i] * centred[:, j]).mean(axis=-1)
            scale = std[:, i] * std[:, j]
            corr = np.divide(cov, scale, out=np.zeros_like(cov), where=scale > 0)
            out.append(np.clip(corr, -1.0, 1.0))
    return np.stack(out, axis=-1)


def inertial_feature_map(windows: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """Hand-made features of the raw inertial windows, in the spirit of the UCI list.

    Twelve signals are summarised: the nine channels of :data:`HAR_CHANNELS` and the
    Euclidean magnitude of each 3-axis group (``body_acc_mag``, ``body_gyro_mag``,
    ``total_acc_mag``, the norm of the x, y, z samples at each time step). Each signal
    ``s_0..s_127`` of a window gets these 15 statistics, named ``<signal>-<statistic>``
    (for example ``body_acc_x-mean``):

    ====================  ===============================================================
    statistic             definition
    ====================  ===============================================================
    ``mean``              mean of the 128 samples
    ``std``               standard deviation (divisor 128)
    ``mad``               median absolute deviation, ``median(|s - median(s)|)``
    ``max``, ``min``      largest and smallest sample
    ``energy``            mean of squares, ``mean(s**2)``
    ``iqr``               interquartile range, 75th minus 25th percentile (linear
                          interpolation, numpy's default)
    ``skewness``          ``mean((s - mean)**3) / std**3``; 0 for a flat window
    ``meanfreq``          power-weighted mean frequency ``sum_k k P_k / sum_k P_k``
    ``maxinds``           the bin ``k`` of largest power ``P_k`` (first one on ties)
    ``bandenergy-a-b``    ``sum_{k=a..b} P_k`` for the bands 1-8, 9-16, 17-32, 33-64
    ``entropy``           spectral entropy ``-sum_k q_k log q_k / log 64``,
                          ``q_k = P_k / sum_j P_j``; in [0, 1]
    ====================  ===============================================================

    The spectrum is that of the window with its mean removed: ``X = rfft(s - mean(s))``
    and, for the bins ``k = 1..64`` (``k`` cycles per window, ``k * 50 / 128`` Hz), the
    one-sided power ``P_k = c_k |X_k|**2 / 128**2`` with ``c_k = 2`` for ``k < 64`` and
    ``c_64 = 1``, so that the four band energies add up to ``std**2``. The bands are
    about 0.4-3.1 Hz, 3.5-6.3 Hz, 6.6-12.5 Hz and 12.9-25 Hz. A window without power
    (a flat one) has ``meanfreq``, ``maxinds``, band energies and ``entropy`` 0.

    After the 12 x 15 = 180 per-signal features come 9 correlations, the Pearson
    correlation over the window of each pair of axes of each group, named
    ``<group>-corr-xy``, ``-corr-xz``, ``-corr-yz`` (0 when an axis is flat): 189
    features in all, in the order signals (channels, then magnitudes) x statistics,
    then correlations.

    Parameters
    ----------
    windows
        ``(n, 9, 128)`` real array, channels in the order of :data:`HAR_CHANNELS`.

    Returns
    -------
    features : numpy.ndarray
        float64 ``(n, 189)``, not normalised (see :func:`normalise_rows`).
    names : tuple of str
        The 189 column names.
    """
    windows = np.asarray(windows)
    expected = (len(HAR_CHANNELS), WINDOW)
    if windows.ndim != 3 or windows.shape[1:] != expected:
        raise ValueError(
            f"windows must have shape (n, {expected[0]}, {expected[1]}), got {windows.shape}"
        )
    if windows.dtype.kind not in "fiu":
        raise ValueError(f"windows must be real numbers, got dtype {windows.dtype}")
    out = np.empty((len(windows), len(_FEATURE_NAMES)), dtype=np.float64)
    n_signal_features = len(_SIGNALS) * len(_STATS)
    for start in range(0, len(windows), _CHUNK):
        block = windows[start : start + _CHUNK].astype(np.float64)
        if not np.isfinite(block).all():
            raise ValueError("windows contain NaN or infinite values")
        groups = block.reshape(len(block), len(_GROUPS), 3, WINDOW)
        magnitudes = np.sqrt((groups**2).sum(axis=2))
        signals = np.concatenate([block, magnitudes], axis=1)
        rows = slice(start, start + len(block))
        out[rows, :n_signal_features] = _window_stats(signals).reshape(len(block), -1)
        out[rows, n_signal_features:] = _correlations(block)
    return out, _FEATURE_NAMES


# ---------------------------------------------------------------------- normalisation


def normalise_rows(features: np.ndarray) -> np.ndarray:
    """Standardise each column, then scale each row to unit Euclidean norm.

    Each column is z-scored over all rows, ``(f - mean) / std`` with the population
    standard deviation; a column whose standard deviation is at most ``1e-12`` times its
    absolute mean (a constant column, up to rounding) becomes 0. Each row is then divided
    by its L2 norm, so every row has norm 1 -- except a row that is zero after
    standardisation, which stays zero.

    :func:`load_har` applies this to both feature sources: the UCI features are already
    scaled to [-1, 1] by their authors, but standardising them too treats both sources
    alike, and unit-norm rows bound every example's norm by 1.

    Parameters
    ----------
    features
        ``(n, F)`` real array without NaN or infinity.

    Returns
    -------
    numpy.ndarray
        float64 ``(n, F)``, a new array.
    """
    x = np.array(features, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"features must be a 2-D (n, F) array, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("features contain NaN or infinite values")
    if len(x) == 0:
        return x
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    constant = std <= 1e-12 * np.abs(mean)
    x -= mean
    x = np.divide(x, std, out=np.zeros_like(x), where=~constant)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


# ----------------------------------------------------------------------------- loaders


def _inertial_map_data(
    x: np.ndarray, activity: np.ndarray, subject: np.ndarray
) -> HarData:
    raw, names = inertial_feature_map(x)
    return HarData(normalise_rows(raw), activity, subject, "inertial-map", names)


def load_har(features: str = "auto") -> HarData:
    """UCI HAR as one normalised feature matrix (train then test split, all 30 subjects).

    Parameters
    ----------
    features
        ``"uci-561"``: the authors' 561 features from ``UCI HAR Dataset.zip`` (download
        cache, ``$FEDLIB_DATA_MIRROR`` or download). ``"inertial-map"``: the
        :func:`inertial_feature_map` of the raw windows (:func:`load_har_windows`: from
        the zip when available, else from the mirror's ``har/har-inertial.npz``).
        ``"auto"``: ``"uci-561"`` when the zip can be obtained, otherwise
        ``"inertial-map"``; check :attr:`HarData.feature_source` for which one it was.

    Both sources go through :func:`normalise_rows` (columns standardised, rows of norm 1).

    Raises
    ------
    ValueError
        For an unknown ``features``.
    DatasetUnavailableError
        If the data the choice needs cannot be found; the message says where to get it.
    ChecksumMismatchError, DatasetError
        If a file is damaged or malformed (never silently skipped by ``"auto"``).
    """
    if not isinstance(features, str) or features not in _FEATURE_CHOICES:
        raise ValueError(
            f"unknown features={features!r}; use one of "
            + ", ".join(repr(c) for c in _FEATURE_CHOICES)
        )
    if features == "inertial-map":
        return _inertial_map_data(*load_har_windows())
    try:
        path = fetch("har", HAR_ZIP_FILE)
    except DatasetUnavailableError:
        if features == "uci-561":
            raise
        _log.info("UCI HAR zip unavailable: computing the inertial feature map instead")
        return _inertial_map_data(*load_har_windows())
    x, activity, subject, names = _uci_features(path)
    return HarData(normalise_rows(x), activity, subject, "uci-561", names)


# ------------------------------------------------------------------------ subject tasks


def binary_subject_tasks(
    data: HarData,
    positive_activity: int = SITTING,
    train_fraction: float = 0.75,
    seed: int = 0,
) -> list[SubjectTask]:
    """One binary task per subject, sorted by subject id: one federated client each.

    The label is ``+1.0`` for windows of ``positive_activity`` and ``-1.0`` otherwise.
    Each subject's windows are split at random into ``round(train_fraction * n)``
    training and the rest test windows, with a generator seeded by ``(seed, subject)``:
    a subject's split does not depend on the other subjects. Within each part the rows
    keep their order in ``data``.

    Parameters
    ----------
    data
        From :func:`load_har`.
    positive_activity
        Activity code 1-6 (:data:`ACTIVITY_LABELS`); default :data:`SITTING`.
    train_fraction
        In (0, 1); every subject must end up with at least one training and one test row.
    seed
        Non-negative integer.
    """
    if (
        isinstance(positive_activity, bool)
        or not isinstance(positive_activity, numbers.Integral)
        or int(positive_activity) not in ACTIVITY_LABELS
    ):
        raise ValueError(
            f"unknown positive_activity {positive_activity!r}; use an activity code "
            f"1-{len(ACTIVITY_LABELS)}: {ACTIVITY_LABELS}"
        )
    if (
        isinstance(train_fraction, bool)
        or not isinstance(train_fraction, numbers.Real)
        or not 0.0 < float(train_fraction) < 1.0
    ):
        raise ValueError(f"train_fraction must be a number in (0, 1), got {train_fraction!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    n = len(data.activity)
    if data.features.ndim != 2 or len(data.features) != n or data.subject.shape != (n,):
        raise ValueError(
            f"inconsistent HarData: features {data.features.shape}, activity "
            f"{data.activity.shape}, subject {data.subject.shape}"
        )
    labels = np.where(data.activity == int(positive_activity), 1.0, -1.0)
    tasks = []
    for subject in np.unique(data.subject):
        rows = np.flatnonzero(data.subject == subject)
        n_train = round(float(train_fraction) * len(rows))
        if not 0 < n_train < len(rows):
            raise ValueError(
                f"subject {subject} has {len(rows)} windows: train_fraction={train_fraction} "
                f"gives {n_train} training rows, leaving no training or no test rows"
            )
        rng = np.random.default_rng([int(seed), int(subject)])
        picked = rng.permutation(len(rows))
        train = rows[np.sort(picked[:n_train])]
        test = rows[np.sort(picked[n_train:])]
        tasks.append(
            SubjectTask(
                subject=int(subject),
                x_train=data.features[train],
                y_train=labels[train],
                x_test=data.features[test],
                y_test=labels[test],
            )
        )
    return tasks
