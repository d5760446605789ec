"""Steady-state output analysis on series whose truth is known (seeded, fast)."""

import math

import numpy as np
import pytest

from cloudsched.steadystate import (
    analyse_series,
    drift_limit,
    integrated_time,
    mser,
    von_neumann_ratio,
)


def ar1(rng, n, phi, sigma=1.0):
    x = np.empty(n)
    x[0] = rng.normal() * sigma / math.sqrt(1 - phi * phi)
    noise = rng.normal(size=n) * sigma
    for k in range(1, n):
        x[k] = phi * x[k - 1] + noise[k]
    return x


def test_mser_cuts_a_decaying_transient():
    rng = np.random.default_rng(1)
    t = np.arange(1000)
    series = 5.0 * np.exp(-t / 40.0) + rng.normal(size=1000) * 0.3
    d, found = mser(series)
    assert found
    assert 80 <= d <= 300  # the offset is below the noise after about 3 time constants


def test_mser_finds_nothing_in_a_trend():
    series = np.linspace(0, 10, 500) + np.random.default_rng(2).normal(size=500) * 0.1
    d, found = mser(series)
    assert not found and d == 250


def test_mser_keeps_a_stationary_series():
    d, found = mser(np.random.default_rng(3).normal(size=800))
    assert found and d < 80


@pytest.mark.parametrize("phi", [0.0, 0.5, 0.9])
def test_integrated_time_of_ar1(phi):
    x = ar1(np.random.default_rng(4), 200_000, phi)
    tau = integrated_time(x)
    assert tau == pytest.approx((1 + phi) / (1 - phi), rel=0.15)


def test_von_neumann_ratio_separates_independent_and_correlated():
    rng = np.random.default_rng(5)
    z_iid = [von_neumann_ratio(rng.normal(size=40)) for _ in range(2000)]
    assert abs(np.mean(z_iid)) < 0.1 and 0.85 < np.std(z_iid) < 1.15
    assert von_neumann_ratio(ar1(rng, 40, 0.8)) > 3


def _interval_coverage(phi, micro, per_batch, reps=400, relaxation=0.0):
    """Coverage of the interval of a zero-mean AR(1) series cut into micro-batches."""
    rng = np.random.default_rng(6)
    hits = certified = 0
    for _ in range(reps):
        x = ar1(rng, micro * per_batch, phi)
        sums = x.reshape(micro, per_batch).sum(axis=1)
        times = np.arange(micro + 1, dtype=float) * per_batch
        est = analyse_series(
            sums, np.full(micro, float(per_batch)), times, relaxation=relaxation, truncation=0
        )
        hits += abs(est.mean) <= est.half_width
        certified += est.certified
    return hits / reps, certified / reps


def test_interval_covers_iid_data():
    cover, certified = _interval_coverage(0.0, 512, 4)
    assert cover >= 0.93 and certified >= 0.95


def test_the_coarse_look_widens_iid_intervals_only_a_little():
    """Half as many, twice as long batches: on independent data about 12% wider, not 2x.

    (An early version normalised the coarse batches by the fine batches' weight: its
    intervals were twice as wide and covered 99.5%.)
    """
    rng = np.random.default_rng(6)
    widths, hits = [], 0
    for _ in range(400):
        x = rng.normal(size=2048)
        est = analyse_series(
            x.reshape(512, 4).sum(axis=1), np.full(512, 4.0), np.arange(513.0) * 4, truncation=0
        )
        widths.append(est.half_width)
        hits += abs(est.mean) <= est.half_width
    plain = 2.093 * 1 / math.sqrt(2048)  # t(19) times the true standard error
    assert 1.0 <= np.mean(widths) / plain <= 1.25
    assert 0.94 <= hits / 400 <= 0.99


def test_interval_covers_correlated_data_with_long_batches():
    # AR(1) with phi = 0.9: integrated time 19 steps; 20 batches of 1280 steps = 67 of them
    cover, certified = _interval_coverage(0.9, 512, 50)
    assert cover >= 0.93 and certified >= 0.9


def test_short_batches_are_not_certified():
    """Batches of 2 relaxation times: the interval is withheld, not trusted."""
    rng = np.random.default_rng(7)
    x = ar1(rng, 400 * 20, 0.99)  # relaxation about 200 steps, 20 batches of 400
    sums = x.reshape(400, 20).sum(axis=1)
    times = np.arange(401, dtype=float) * 20
    est = analyse_series(sums, np.full(400, 20.0), times, relaxation=200.0, truncation=0)
    assert not est.long_enough and not est.certified
    assert est.correction > 1.1  # the half-width is widened for the batch length


def test_drift_is_detected():
    rng = np.random.default_rng(8)
    x = rng.normal(size=1024) + np.linspace(0, 2, 1024)
    est = analyse_series(x, np.ones(1024), np.arange(1025.0), truncation=0)
    assert est.drifting and not est.certified


def test_ratio_estimate_with_unequal_weights():
    """Sums and counts of unequal micro-batches: the estimate is total sum / total count."""
    rng = np.random.default_rng(9)
    counts = rng.integers(50, 150, size=300).astype(float)
    sums = counts * 2.0 + rng.normal(size=300) * np.sqrt(counts)
    est = analyse_series(sums, counts, np.cumsum(np.append(0.0, counts)), truncation=0)
    assert est.mean == pytest.approx(sums.sum() / counts.sum())
    assert abs(est.mean - 2.0) <= est.half_width * 3.3 / 1.96


def test_drift_false_alarms_are_rare_and_shared_among_replications():
    """Independent batches: the drift test fires about once in a thousand series."""
    rng = np.random.default_rng(10)
    alarms = 0
    for _ in range(4000):
        x = rng.normal(size=200)
        alarms += analyse_series(x, np.ones(200), np.arange(201.0), truncation=0).drifting
    assert alarms <= 12  # expected 4 (level 0.001); 12 is far beyond it
    assert drift_limit(20, 256) > drift_limit(20, 1) > 3.5
