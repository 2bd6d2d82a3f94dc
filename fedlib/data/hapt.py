"""UCI HAPT raw recordings, and the UCI HAR windows cut from them.

UCI HAR (30 volunteers, a smartphone on the waist, accelerometer and gyroscope at 50 Hz)
was cut from continuous recordings that its authors later published with per-sample
labels as UCI HAPT ("Smartphone-Based Recognition of Human Activities and Postural
Transitions"). This module reads those recordings (registry entry ``"hapt"``, file
``hapt-raw.npz``) and re-runs the windowing that ``features_info.txt`` of UCI HAR
describes:

1. per experiment and axis, a median filter (kernel 3) and a 3rd-order Butterworth
   low-pass at 20 Hz, then the acceleration split into gravity (3rd-order Butterworth
   low-pass at 0.3 Hz) and body acceleration (the rest): :func:`preprocess`;
2. windows of 128 samples (2.56 s) with 50 % overlap (step 64), cut inside each maximal
   run of consecutive samples that carry the same activity label 1-6; postural
   transitions (labels 7-12) and unlabelled samples are never windowed:
   :func:`har_windows`.

The window counts per (subject, activity) this gives are close to, not equal to, the
official ones (``subject_*.txt``/``y_*.txt`` of UCI HAR): about 10,400 windows against
10,299. The 561 features are computed from the windows by
:mod:`fedlib.data.har_features`.
"""

from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

import numpy as np
from scipy import signal

from fedlib.data.errors import DatasetError
from fedlib.data.fetch import fetch
from fedlib.data.registry import HAPT_RAW_FILE, get_file

SAMPLE_RATE_HZ = 50.0
"""Sampling rate of the recordings."""

WINDOW = 128
"""Samples per UCI HAR window (2.56 s at 50 Hz)."""

STEP = 64
"""Samples between the starts of consecutive windows (50 % overlap)."""

HAR_ACTIVITIES: tuple[int, ...] = (1, 2, 3, 4, 5, 6)
"""The six activity codes of UCI HAR (WALKING ... LAYING, as in ``activity_labels.txt``)."""

TRANSITIONS: tuple[int, ...] = (7, 8, 9, 10, 11, 12)
"""HAPT's postural-transition codes (STAND_TO_SIT ... LIE_TO_STAND); never windowed."""

UNLABELLED = -1
"""Label of the samples outside every labelled activity or transition."""

N_SUBJECTS = 30

NOISE_CUTOFF_HZ = 20.0
"""Corner frequency of the noise low-pass applied to both sensors."""

GRAVITY_CUTOFF_HZ = 0.3
"""Corner frequency of the low-pass that separates gravity from body acceleration."""

BUTTERWORTH_ORDER = 3

_ARRAYS = ("acc", "gyro", "label", "experiment_user", "experiment_start")
_READ_ERRORS = (ValueError, OSError, EOFError, zlib.error, zipfile.BadZipFile, KeyError)


# ----------------------------------------------------------------------------- data types


@dataclass(frozen=True, eq=False)
class HaptRecordings:
    """The continuous recordings of the 61 HAPT experiments, concatenated row-wise.

    Every array is read-only.

    Attributes
    ----------
    acc
        float64 ``(rows, 3)``: total acceleration (gravity included), in g.
    gyro
        float64 ``(rows, 3)``: angular velocity, in rad/s.
    label
        int8 ``(rows,)``: -1 unlabelled, 1-6 the activities of UCI HAR, 7-12 postural
        transitions.
    experiment_user
        int64 ``(experiments,)``: the volunteer (1-30) of each experiment.
    experiment_start
        int64 ``(experiments + 1,)``: row offsets; experiment ``e`` is the rows
        ``experiment_start[e]:experiment_start[e + 1]``.
    """

    acc: np.ndarray
    gyro: np.ndarray
    label: np.ndarray
    experiment_user: np.ndarray
    experiment_start: np.ndarray

    def __len__(self) -> int:
        return len(self.label)

    @property
    def n_experiments(self) -> int:
        """Number of experiments."""
        return len(self.experiment_user)

    def rows(self, experiment: int) -> slice:
        """The rows of one experiment (0-based index)."""
        if not 0 <= experiment < self.n_experiments:
            raise IndexError(f"experiment {experiment} outside 0-{self.n_experiments - 1}")
        return slice(int(self.experiment_start[experiment]),
                     int(self.experiment_start[experiment + 1]))


@dataclass(frozen=True, eq=False)
class WindowTable:
    """Where every window comes from; int64 ``(n,)`` arrays, read-only.

    Attributes
    ----------
    activity
        Activity code 1-6.
    subject
        Volunteer 1-30 (the user of the window's experiment).
    experiment
        0-based index of the experiment in :class:`HaptRecordings`.
    start
        Row of the window's first sample in the :class:`HaptRecordings` arrays.
    """

    activity: np.ndarray
    subject: np.ndarray
    experiment: np.ndarray
    start: np.ndarray

    def __len__(self) -> int:
        return len(self.activity)


@dataclass(frozen=True, eq=False)
class HarWindows:
    """Preprocessed signals of the UCI HAR windows, float64 ``(n, 3, 128)`` (axes x, y, z).

    Attributes
    ----------
    body_acc
        Body acceleration (total minus gravity), in g: ``tBodyAcc-XYZ``.
    gravity_acc
        Gravity, the 0.3 Hz low-pass of the acceleration, in g: ``tGravityAcc-XYZ``.
    body_gyro
        Angular velocity after the noise filters, in rad/s: ``tBodyGyro-XYZ``.
    table
        Activity, subject, experiment and start row of every window.
    """

    body_acc: np.ndarray
    gravity_acc: np.ndarray
    body_gyro: np.ndarray
    table: WindowTable

    def __post_init__(self) -> None:
        shape = self.body_acc.shape
        if len(shape) != 3 or shape[1] != 3:
            raise ValueError(f"signals must be (n, 3, samples), got body_acc {shape}")
        for name in ("gravity_acc", "body_gyro"):
            if getattr(self, name).shape != shape:
                raise ValueError(
                    f"{name} has shape {getattr(self, name).shape}, body_acc {shape}"
                )
        if len(self.table) != shape[0]:
            raise ValueError(f"{shape[0]} windows but {len(self.table)} table rows")

    def __len__(self) -> int:
        return len(self.table)

    @property
    def total_acc(self) -> np.ndarray:
        """Total acceleration, body plus gravity, in g (a new array)."""
        return self.body_acc + self.gravity_acc

    @property
    def activity(self) -> np.ndarray:
        """Activity code 1-6 of every window."""
        return self.table.activity

    @property
    def subject(self) -> np.ndarray:
        """Volunteer 1-30 of every window."""
        return self.table.subject


# ------------------------------------------------------------------------------ reading


def _damaged(path: Path, problem: str) -> DatasetError:
    """The error for a file that is not the HAPT recordings, with the fix."""
    entry = get_file("hapt", HAPT_RAW_FILE)
    return DatasetError(
        f"{path}: {problem}. It is not a faithful copy of {entry.mirror_path} (content "
        f"SHA-256 {entry.sha256}): delete it and fetch('hapt', {HAPT_RAW_FILE!r}) again "
        "from a mirror holding the original file (FEDLIB_DATA_MIRROR)"
    )


def _read_arrays(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as npz:
            missing = [name for name in _ARRAYS if name not in npz.files]
            if missing:
                raise _damaged(path, f"the arrays {missing} are missing")
            return {name: npz[name] for name in _ARRAYS}
    except _READ_ERRORS as exc:
        raise _damaged(
            path, f"not a readable npz file ({type(exc).__name__}: {exc})"
        ) from exc


def _validated(path: Path, arrays: dict[str, np.ndarray]) -> HaptRecordings:
    acc, gyro, label = arrays["acc"], arrays["gyro"], arrays["label"]
    user, start = arrays["experiment_user"], arrays["experiment_start"]
    for name, values in (("acc", acc), ("gyro", gyro)):
        if values.ndim != 2 or values.shape[1] != 3 or values.dtype.kind != "f":
            raise _damaged(path, f"{name} should be float (rows, 3), got {values.dtype} "
                                 f"{values.shape}")
        if not np.isfinite(values).all():
            raise _damaged(path, f"{name} has non-finite values")
    rows = len(acc)
    if gyro.shape[0] != rows:
        raise _damaged(path, f"acc has {rows} rows but gyro {gyro.shape[0]}")
    for name, values in (("label", label), ("experiment_user", user),
                         ("experiment_start", start)):
        if values.ndim != 1 or values.dtype.kind not in "iu":
            raise _damaged(path, f"{name} should be a 1-D integer array, got {values.dtype} "
                                 f"{values.shape}")
    if len(label) != rows:
        raise _damaged(path, f"{len(label)} labels for {rows} rows")
    allowed = np.array([UNLABELLED, *HAR_ACTIVITIES, *TRANSITIONS])
    if not np.isin(label, allowed).all():
        raise _damaged(path, "labels outside {-1, 1, ..., 12}")
    if len(user) == 0 or user.min() < 1 or user.max() > N_SUBJECTS:
        raise _damaged(path, f"experiment users outside 1-{N_SUBJECTS}")
    if len(start) != len(user) + 1:
        raise _damaged(path, f"{len(start)} experiment offsets for {len(user)} experiments "
                             "(expected one more)")
    if start[0] != 0 or start[-1] != rows or (np.diff(start) <= 0).any():
        raise _damaged(path, f"experiment offsets must rise strictly from 0 to {rows}")
    fields = {
        "acc": acc.astype(np.float64),
        "gyro": gyro.astype(np.float64),
        "label": label.astype(np.int8),
        "experiment_user": user.astype(np.int64),
        "experiment_start": start.astype(np.int64),
    }
    for values in fields.values():
        values.setflags(write=False)
    return HaptRecordings(**fields)


def load_hapt_recordings(path: str | PathLike[str] | None = None) -> HaptRecordings:
    """The HAPT raw recordings, validated.

    Parameters
    ----------
    path
        An npz file to read instead of the registered one; by default
        ``fetch("hapt", "hapt-raw.npz")`` (verified cache, then mirror; the file has no
        canonical download).

    Returns
    -------
    HaptRecordings
        1,122,772 rows and 61 experiments for the registered file.

    Raises
    ------
    DatasetUnavailableError
        If the file is neither cached nor in the mirror.
    DatasetError
        If the file is unreadable (truncated, not an npz) or its arrays do not have the
        documented shapes, dtypes and value ranges; the message names the file and says
        how to replace it.
    """
    where = Path(fetch("hapt", HAPT_RAW_FILE) if path is None else path)
    return _validated(where, _read_arrays(where))


# ------------------------------------------------------------------------ preprocessing


def _lowpass(cutoff_hz: float, sample_rate: float) -> np.ndarray:
    return signal.butter(BUTTERWORTH_ORDER, cutoff_hz, btype="lowpass", fs=sample_rate,
                         output="sos")


def _zero_phase(sos: np.ndarray, values: np.ndarray, padlen: int) -> np.ndarray:
    return signal.sosfiltfilt(sos, values, axis=0, padtype="odd",
                              padlen=min(padlen, len(values) - 1))


def preprocess(
    acc: np.ndarray, gyro: np.ndarray, sample_rate: float = SAMPLE_RATE_HZ
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """UCI HAR's noise filters and gravity split of one continuous recording.

    Per axis: :func:`scipy.signal.medfilt` with kernel 3 (the first and last sample are
    filtered against a copy of themselves rather than against zero, so the ends are not
    pulled towards 0 g), then a 3rd-order Butterworth low-pass at 20 Hz. The filtered
    acceleration is split into gravity, a 3rd-order Butterworth low-pass at 0.3 Hz of it,
    and body acceleration, the difference.

    Both Butterworth filters are applied forward and backward with
    :func:`scipy.signal.sosfiltfilt`: forward-backward filtering has zero phase, so the
    filtered signals are not delayed with respect to the per-sample labels and gravity
    does not lag the total acceleration it is subtracted from (the magnitude response is
    the square of the filter's, -6 dB at the corner); second-order sections keep the
    0.3 Hz filter (a corner at 1.2 % of the Nyquist frequency) numerically stable where
    the transfer-function form used by ``filtfilt`` loses precision. The ends are padded
    with an odd extension of up to 500 samples (10 s, three time constants of the 0.3 Hz
    filter), which keeps a constant signal constant.

    Parameters
    ----------
    acc, gyro
        ``(T, 3)`` total acceleration (g) and angular velocity (rad/s), ``T >= 3``.
    sample_rate
        In Hz.

    Returns
    -------
    body_acc, gravity_acc, body_gyro
        float64 ``(T, 3)`` each.
    """
    acc = np.asarray(acc, dtype=np.float64)
    gyro = np.asarray(gyro, dtype=np.float64)
    if acc.ndim != 2 or acc.shape[1] != 3 or gyro.shape != acc.shape or len(acc) < 3:
        raise ValueError(f"acc and gyro must both be (T >= 3, 3), got {acc.shape} and "
                         f"{gyro.shape}")
    padlen = int(np.ceil(3 * sample_rate / GRAVITY_CUTOFF_HZ))
    noise = _lowpass(NOISE_CUTOFF_HZ, sample_rate)
    gravity_filter = _lowpass(GRAVITY_CUTOFF_HZ, sample_rate)

    def denoise(values: np.ndarray) -> np.ndarray:
        padded = np.pad(values, ((1, 1), (0, 0)), mode="edge")
        median = np.stack(
            [signal.medfilt(padded[:, axis], kernel_size=3)[1:-1] for axis in range(3)],
            axis=1,
        )
        return _zero_phase(noise, median, padlen)

    total = denoise(acc)
    gravity = _zero_phase(gravity_filter, total, padlen)
    return total - gravity, gravity, denoise(gyro)


# ---------------------------------------------------------------------------- windowing


def window_starts(
    labels: np.ndarray,
    window: int = WINDOW,
    step: int = STEP,
    activities: tuple[int, ...] = HAR_ACTIVITIES,
) -> np.ndarray:
    """First samples of the windows of one experiment.

    The windows lie inside the maximal runs of consecutive samples with the same label
    in ``activities``: a run of ``L >= window`` samples starting at ``s`` gives the
    windows starting at ``s, s + step, ...``, ``(L - window) // step + 1`` of them; a
    shorter run gives none.

    Parameters
    ----------
    labels
        ``(T,)`` per-sample labels of one experiment.

    Returns
    -------
    numpy.ndarray
        int64 ``(m,)``, increasing.
    """
    labels = np.asarray(labels)
    if window < 1 or step < 1:
        raise ValueError(f"window and step must be positive, got {window} and {step}")
    edges = np.concatenate([[0], np.flatnonzero(np.diff(labels)) + 1, [len(labels)]])
    starts = []
    for begin, end in zip(edges[:-1], edges[1:], strict=True):
        length = end - begin
        if length >= window and labels[begin] in activities:
            starts.append(begin + step * np.arange((length - window) // step + 1))
    return np.concatenate(starts).astype(np.int64) if starts else np.zeros(0, np.int64)


def har_windows(
    recordings: HaptRecordings,
    *,
    window: int = WINDOW,
    step: int = STEP,
    activities: tuple[int, ...] = HAR_ACTIVITIES,
    sample_rate: float = SAMPLE_RATE_HZ,
) -> HarWindows:
    """The UCI HAR windows of the recordings, with their preprocessed signals.

    Every experiment is preprocessed as a whole (:func:`preprocess`), then cut at
    :func:`window_starts`. Windows are ordered by experiment, then start row.

    Parameters
    ----------
    recordings
        From :func:`load_hapt_recordings`.
    window, step
        Window length and hop in samples (128 and 64 in UCI HAR).
    activities
        Labels that are windowed.
    sample_rate
        In Hz.

    Returns
    -------
    HarWindows
        Read-only float64 ``(n, 3, window)`` signals and the :class:`WindowTable`.
    """
    parts: dict[str, list[np.ndarray]] = {
        k: [] for k in ("body", "gravity", "gyro", "activity", "subject", "experiment", "start")
    }
    offsets = np.arange(window)
    for experiment in range(recordings.n_experiments):
        rows = recordings.rows(experiment)
        labels = recordings.label[rows]
        starts = window_starts(labels, window, step, activities)
        if len(starts) == 0:
            continue
        body, gravity, gyro = preprocess(recordings.acc[rows], recordings.gyro[rows],
                                         sample_rate)
        index = starts[:, None] + offsets
        for key, values in (("body", body), ("gravity", gravity), ("gyro", gyro)):
            parts[key].append(values[index].transpose(0, 2, 1))
        parts["activity"].append(labels[starts].astype(np.int64))
        parts["subject"].append(
            np.full(len(starts), recordings.experiment_user[experiment], np.int64)
        )
        parts["experiment"].append(np.full(len(starts), experiment, np.int64))
        parts["start"].append(starts + rows.start)

    def joined(key: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        values = np.concatenate(parts[key]) if parts[key] else np.zeros(shape, dtype)
        values.setflags(write=False)
        return values

    signals = [joined(k, (0, 3, window), np.float64) for k in ("body", "gravity", "gyro")]
    table = WindowTable(*(joined(k, (0,), np.int64)
                          for k in ("activity", "subject", "experiment", "start")))
    return HarWindows(*signals, table=table)
