"""fedlib.data.har_features: the 561 UCI HAR features, against closed forms and real data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import require_datasets
from scipy import signal

from fedlib.data.hapt import HarWindows, WindowTable, har_windows, load_hapt_recordings
from fedlib.data.har_features import (
    BANDS,
    burg_ar,
    feature_names,
    hapt_har_features,
    har_features,
    normalise_features,
    spectrum,
    time_derivative,
)

N = 128
FS = 50.0
T = np.arange(N)
NAMES = feature_names()


def _windows(body=None, gravity=None, gyro=None, n: int = 1) -> HarWindows:
    """Windows built by hand; every signal ``(n, 3, 128)``, zeros where not given."""
    zeros = np.zeros((n, 3, N))
    arrays = [zeros if a is None else np.broadcast_to(a, (n, 3, N)).astype(float)
              for a in (body, gravity, gyro)]
    ints = np.zeros(n, np.int64)
    return HarWindows(*arrays, table=WindowTable(ints + 1, ints + 1, ints, ints))


def _feature(matrix: np.ndarray, name: str, occurrence: int = 0) -> np.ndarray:
    """Column ``name`` (the ``occurrence``-th one, for the repeated bandsEnergy names)."""
    return matrix[:, [i for i, n in enumerate(NAMES) if n == name][occurrence]]


def _bands(matrix: np.ndarray, prefix: str, axis: int) -> dict[tuple[int, int], np.ndarray]:
    return {band: _feature(matrix, f"{prefix}-bandsEnergy()-{band[0]},{band[1]}", axis)
            for band in BANDS}


# --------------------------------------------------------------------------------- names


def test_feature_names_structure() -> None:
    assert len(NAMES) == 561
    assert NAMES[0] == "tBodyAcc-mean()-X" and NAMES[-1] == "angle(Z,gravityMean)"
    assert sum("bandsEnergy" in n for n in NAMES) == 3 * 3 * 14
    assert len(set(NAMES)) == 561 - 3 * 3 * 14 + 3 * 14  # bands repeat once per axis
    assert "fBodyBodyAccJerkMag-meanFreq()" in NAMES  # features.txt's spelling
    assert "angle(tBodyAccJerkMean),gravityMean)" in NAMES


def test_feature_names_equal_features_txt(mirror: Path) -> None:
    path = mirror / "har" / "features.txt"
    if not path.is_file():
        pytest.skip(f"the mirror {mirror} has no har/features.txt to compare with")
    lines = [line.split(maxsplit=1) for line in path.read_text().splitlines() if line.strip()]
    assert [number for number, _ in lines] == [str(i) for i in range(1, 562)]
    assert list(NAMES) == [name.strip() for _, name in lines]


# ------------------------------------------------------------------ closed-form features


def test_pure_sine() -> None:
    amplitude, cycles = 0.7, 8  # 8 cycles in 128 samples: 3.125 Hz, bin 8
    sine = amplitude * np.sin(2 * np.pi * cycles * T / N)
    body = np.zeros((3, N))
    body[0] = sine
    x = har_features(_windows(body=body))
    assert abs(_feature(x, "tBodyAcc-mean()-X")[0]) < 1e-12
    np.testing.assert_allclose(_feature(x, "tBodyAcc-std()-X"), amplitude / np.sqrt(2))
    np.testing.assert_allclose(_feature(x, "tBodyAcc-energy()-X"), amplitude**2 / 2)
    np.testing.assert_allclose(_feature(x, "tBodyAcc-max()-X"), amplitude)
    np.testing.assert_allclose(_feature(x, "tBodyAcc-min()-X"), -amplitude)
    np.testing.assert_allclose(_feature(x, "tBodyAcc-mad()-X"), amplitude / np.sqrt(2))
    np.testing.assert_allclose(_feature(x, "tBodyAcc-sma()"), np.abs(sine).mean())
    np.testing.assert_allclose(_feature(x, "tBodyAcc-std()-Y"), 0.0)
    # frequency domain: all of it at bin 8 = 3.125 Hz, |X_8| = A N / 2
    assert _feature(x, "fBodyAcc-maxInds-X")[0] == cycles
    np.testing.assert_allclose(_feature(x, "fBodyAcc-meanFreq()-X"), cycles * FS / N)
    np.testing.assert_allclose(_feature(x, "fBodyAcc-max()-X"), amplitude * N / 2)
    np.testing.assert_allclose(_feature(x, "fBodyAcc-entropy()-X"), 0.0, atol=1e-9)
    np.testing.assert_allclose(_feature(x, "fBodyAcc-mean()-X"), amplitude * N / 2 / 64)
    # one non-zero value among 64: Bernoulli(1/64) moments
    m = 64
    np.testing.assert_allclose(_feature(x, "fBodyAcc-skewness()-X"), (m - 2) / np.sqrt(m - 1))
    np.testing.assert_allclose(_feature(x, "fBodyAcc-kurtosis()-X"), (m * m - 3 * m + 3) / (m - 1))
    bands = _bands(x, "fBodyAcc", 0)
    np.testing.assert_allclose(bands[9, 16], (amplitude * N / 2) ** 2 / 64)
    np.testing.assert_allclose(bands[1, 8], 0.0, atol=1e-20)
    # the Jerk of a sine is a sine of the same frequency
    assert _feature(x, "fBodyAccJerk-maxInds-X")[0] == cycles


def test_jerk_is_the_time_derivative() -> None:
    slope = 0.4  # g/s
    ramp = slope * T / FS
    np.testing.assert_allclose(time_derivative(ramp), slope)
    square = (T / FS) ** 2
    derivative = time_derivative(square)
    np.testing.assert_allclose(derivative[1:], (2 * T[1:] - 1) / FS)  # backward difference
    assert derivative[0] == derivative[1]
    x = har_features(_windows(body=np.stack([ramp, -2 * ramp, 0 * ramp])))
    np.testing.assert_allclose(_feature(x, "tBodyAccJerk-mean()-X"), slope)
    np.testing.assert_allclose(_feature(x, "tBodyAccJerk-mean()-Y"), -2 * slope)
    np.testing.assert_allclose(_feature(x, "tBodyAccJerk-std()-X"), 0.0, atol=1e-12)
    np.testing.assert_allclose(_feature(x, "tBodyAccJerkMag-mean()"), np.sqrt(5) * slope)


def test_constant_gravity_through_the_pipeline(tmp_path: Path) -> None:
    g = np.array([0.3, -0.5, 0.81])
    rows = 1000
    np.savez(
        tmp_path / "const.npz",
        acc=np.tile(g, (rows, 1)),
        gyro=np.zeros((rows, 3)),
        label=np.full(rows, 5, np.int8),
        experiment_user=np.array([7], np.int8),
        experiment_start=np.array([0, rows]),
    )
    windows = har_windows(load_hapt_recordings(tmp_path / "const.npz"))
    assert len(windows) == (rows - 128) // 64 + 1
    x = har_features(windows)
    for index, axis in enumerate("XYZ"):
        np.testing.assert_allclose(_feature(x, f"tGravityAcc-mean()-{axis}"), g[index])
        np.testing.assert_allclose(_feature(x, f"tBodyAcc-mean()-{axis}"), 0.0, atol=1e-12)
        np.testing.assert_allclose(_feature(x, f"tBodyAcc-std()-{axis}"), 0.0, atol=1e-12)
        np.testing.assert_allclose(_feature(x, f"angle({axis},gravityMean)"),
                                   np.arccos(g[index] / np.linalg.norm(g)))
    np.testing.assert_allclose(_feature(x, "tGravityAccMag-mean()"), np.linalg.norm(g))
    np.testing.assert_allclose(_feature(x, "tGravityAcc-sma()"), np.abs(g).sum())
    np.testing.assert_allclose(_feature(x, "tGravityAcc-entropy()-X"), np.log2(N))


def test_angles_between_mean_vectors() -> None:
    gravity = np.array([0.0, 0.0, -1.0])[:, None]
    body = np.array([1.0, 0.0, -1.0])[:, None]  # 45 degrees from gravity
    gyro = np.array([0.0, 2.0, 0.0])[:, None]  # orthogonal to gravity
    x = har_features(_windows(body=body, gravity=gravity, gyro=gyro))
    np.testing.assert_allclose(_feature(x, "angle(tBodyAccMean,gravity)"), np.pi / 4)
    np.testing.assert_allclose(_feature(x, "angle(tBodyGyroMean,gravityMean)"), np.pi / 2)
    np.testing.assert_allclose(_feature(x, "angle(Z,gravityMean)"), np.pi)
    np.testing.assert_allclose(_feature(x, "angle(X,gravityMean)"), np.pi / 2)
    # constant signals have zero Jerk: the angle of a zero vector is pi/2 by convention
    np.testing.assert_allclose(_feature(x, "angle(tBodyAccJerkMean),gravityMean)"), np.pi / 2)


def test_correlation_of_linear_relations() -> None:
    rng = np.random.default_rng(3)
    a = rng.normal(size=N)
    x = har_features(_windows(body=np.stack([a, 2 * a + 1, -3 * a])))
    np.testing.assert_allclose(_feature(x, "tBodyAcc-correlation()-X,Y"), 1.0)
    np.testing.assert_allclose(_feature(x, "tBodyAcc-correlation()-X,Z"), -1.0)
    np.testing.assert_allclose(_feature(x, "tBodyAcc-correlation()-Y,Z"), -1.0)
    np.testing.assert_allclose(_feature(x, "tGravityAcc-correlation()-X,Y"), 0.0)  # constant


def test_order_statistics_of_known_arrays() -> None:
    ramp = T.astype(float)  # 0..127: median 63.5, |x - 63.5| = 0.5, 0.5, 1.5, 1.5, ...
    rng = np.random.default_rng(4)
    noise = rng.normal(size=N)
    x = har_features(_windows(gyro=np.stack([ramp, noise, np.full(N, 2.0)])))
    np.testing.assert_allclose(_feature(x, "tBodyGyro-mad()-X"), 32.0)
    np.testing.assert_allclose(_feature(x, "tBodyGyro-iqr()-X"), 95.25 - 31.75)
    np.testing.assert_allclose(_feature(x, "tBodyGyro-mad()-Y"),
                               np.median(np.abs(noise - np.median(noise))))
    q75, q25 = np.percentile(noise, [75, 25])
    np.testing.assert_allclose(_feature(x, "tBodyGyro-iqr()-Y"), q75 - q25)
    np.testing.assert_allclose(_feature(x, "tBodyGyro-max()-Y"), noise.max())
    np.testing.assert_allclose(_feature(x, "tBodyGyro-mad()-Z"), 0.0)
    np.testing.assert_allclose(_feature(x, "tBodyGyro-iqr()-Z"), 0.0)
    np.testing.assert_allclose(_feature(x, "tBodyGyro-std()-Y"), noise.std())
    # entropy in bits of the energy distribution: a constant spreads it over 128 samples
    np.testing.assert_allclose(_feature(x, "tBodyGyro-entropy()-Z"), 7.0)
    impulse = np.zeros(N)
    impulse[40] = 3.0
    y = har_features(_windows(gyro=np.stack([impulse, impulse, impulse])))
    np.testing.assert_allclose(_feature(y, "tBodyGyro-entropy()-X"), 0.0)
    # an impulse has a flat spectrum: 6 bits over 64 bins, and every band gets 1/8 or more
    np.testing.assert_allclose(_feature(y, "fBodyGyro-entropy()-X"), 6.0)
    np.testing.assert_allclose(_feature(y, "fBodyGyro-meanFreq()-X"), np.arange(64).mean()
                               * FS / N)


def test_bands_energy_adds_up() -> None:
    rng = np.random.default_rng(5)
    body = rng.normal(size=(4, 3, N)) + 0.3  # four windows, non-zero means
    x = har_features(_windows(body=body, n=4))
    for axis, name in enumerate("XYZ"):
        bands = _bands(x, "fBodyAcc", axis)
        energy = _feature(x, f"fBodyAcc-energy()-{name}")
        eights = sum(bands[a, a + 7] for a in range(1, 64, 8))
        sixteens = sum(bands[a, a + 15] for a in range(1, 64, 16))
        np.testing.assert_allclose(eights, energy)
        np.testing.assert_allclose(sixteens, energy)
        np.testing.assert_allclose(bands[1, 24] + bands[25, 48],
                                   sum(bands[a, a + 7] for a in range(1, 48, 8)))
        # Parseval over the kept bins 0..63 of a real signal:
        # sum_{k<64} |X_k|^2 = (N sum x^2 + X_0^2 - X_64^2) / 2
        signal_ = body[:, axis]
        dc = signal_.sum(axis=1)
        nyquist = (signal_ * (-1.0) ** T).sum(axis=1)
        expected = (N * (signal_**2).sum(axis=1) + dc**2 - nyquist**2) / 2
        np.testing.assert_allclose(energy * 64, expected)


def test_spectrum_of_a_sum_of_tones() -> None:
    tones = 2.0 * np.cos(2 * np.pi * 3 * T / N) + 0.5 * np.sin(2 * np.pi * 20 * T / N)
    spec = spectrum(tones)
    assert spec.shape == (64,)
    np.testing.assert_allclose(spec[[3, 20]], [2.0 * N / 2, 0.5 * N / 2])
    np.testing.assert_allclose(np.delete(spec, [3, 20]), 0.0, atol=1e-12)
    x = har_features(_windows(body=np.stack([tones, tones, tones])))
    expected = (3 * 2.0 * N / 2 + 20 * 0.5 * N / 2) / (2.0 * N / 2 + 0.5 * N / 2) * FS / N
    np.testing.assert_allclose(_feature(x, "fBodyAcc-meanFreq()-Y"), expected)
    assert _feature(x, "fBodyAcc-maxInds-Z")[0] == 3


# --------------------------------------------------------------------------------- Burg


def _ar_process(coefficients: list[float], length: int, seed: int) -> np.ndarray:
    noise = np.random.default_rng(seed).normal(size=length + 1000)
    return signal.lfilter([1.0], [1.0, *(-np.array(coefficients))], noise)[1000:]


@pytest.mark.parametrize(
    "coefficients",
    [
        [0.9],
        [0.75, -0.5],
        # roots 0.9 exp(+-0.5i), 0.7 exp(+-1.8i): a stable AR(4)
        list(-np.real(np.poly([0.9 * np.exp(0.5j), 0.9 * np.exp(-0.5j),
                               0.7 * np.exp(1.8j), 0.7 * np.exp(-1.8j)]))[1:]),
    ],
)
def test_burg_recovers_ar_coefficients(coefficients: list[float]) -> None:
    series = _ar_process(coefficients, 200_000, seed=len(coefficients))
    fitted = burg_ar(series, order=4)
    expected = np.zeros(4)
    expected[: len(coefficients)] = coefficients
    np.testing.assert_allclose(fitted, expected, atol=0.01)
    # the order-p fit of an AR(p) process: same answer
    np.testing.assert_allclose(burg_ar(series, order=len(coefficients)), coefficients,
                               atol=0.01)


def test_burg_rows_and_degenerate_series() -> None:
    rows = np.stack([_ar_process([0.5, 0.2], 500, seed=s) for s in range(3)])
    batched = burg_ar(rows.reshape(3, 1, 500))
    assert batched.shape == (3, 1, 4)
    for i in range(3):
        np.testing.assert_allclose(batched[i, 0], burg_ar(rows[i]))
    np.testing.assert_allclose(burg_ar(np.full(N, 2.0)), [1.0, 0.0, 0.0, 0.0])  # x_t = x_{t-1}
    np.testing.assert_allclose(burg_ar(np.zeros(N)), 0.0)
    alternating = (-1.0) ** T
    np.testing.assert_allclose(burg_ar(alternating), [-1.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="more than 4 samples"):
        burg_ar(np.ones(4))


def test_ar_features_use_burg() -> None:
    series = _ar_process([0.75, -0.5], N * 3, seed=9).reshape(3, N)
    x = har_features(_windows(body=series))
    fitted = burg_ar(series)
    for index, axis in enumerate("XYZ"):
        for lag in range(4):
            np.testing.assert_allclose(
                _feature(x, f"tBodyAcc-arCoeff()-{axis},{lag + 1}"), fitted[index, lag]
            )


# --------------------------------------------------------------------------- normalising


def test_normalise_features() -> None:
    matrix = np.array([[0.0, 5.0, 1.0], [10.0, 5.0, 3.0], [5.0, 5.0, 2.0], [2.5, 5.0, 1.5]])
    scaled = normalise_features(matrix)
    np.testing.assert_allclose(scaled[:, 0], [-1.0, 1.0, 0.0, -0.5])
    np.testing.assert_allclose(scaled[:, 1], 0.0)  # constant
    np.testing.assert_allclose(scaled[:, 2], [-1.0, 1.0, 0.0, -0.5])
    with pytest.raises(ValueError, match="finite"):
        normalise_features(np.array([[np.nan]]))


def test_har_features_rejects_other_window_lengths() -> None:
    windows = HarWindows(*(np.zeros((1, 3, 64)),) * 3,
                         table=WindowTable(*(np.zeros(1, np.int64),) * 4))
    with pytest.raises(ValueError, match=r"\(n, 3, 128\)"):
        har_features(windows)


# ----------------------------------------------------------------------------- real data


def test_real_features_separate_sitting_from_the_rest() -> None:
    require_datasets("hapt")
    data = hapt_har_features()
    x, activity, subject = data.features, data.activity, data.subject
    assert x.shape == (len(data.table), 561) and data.names == NAMES
    assert abs(len(x) - 10_299) <= 0.02 * 10_299
    assert np.isfinite(x).all() and x.min() >= -1.0 and x.max() <= 1.0
    assert not x.flags.writeable
    assert hapt_har_features() is data  # cached
    # least squares on odd subjects, tested on even ones: sitting (+1) against the rest
    train = subject % 2 == 1
    design = np.hstack([x, np.ones((len(x), 1))])
    target = np.where(activity == 4, 1.0, -1.0)
    weights, *_ = np.linalg.lstsq(design[train], target[train], rcond=None)
    accuracy = (np.sign(design[~train] @ weights) == target[~train]).mean()
    majority = max((target[~train] == 1).mean(), (target[~train] == -1).mean())
    assert majority < 0.85
    assert accuracy > majority + 0.08, (accuracy, majority)
    # and the six activities from one another, far above chance (1/6)
    onehot = np.eye(6)[activity - 1]
    weights, *_ = np.linalg.lstsq(design[train], onehot[train], rcond=None)
    assert ((design[~train] @ weights).argmax(axis=1) + 1 == activity[~train]).mean() > 0.85
