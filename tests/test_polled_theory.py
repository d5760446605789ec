"""Mean fields of polled information (a board refreshed every T) and of proxies' own counts.

Each is checked against an independent oracle where one exists (random dispatch, the live
mean field, the Engset queue) and against the simulator with tolerances from its interval.
"""

import itertools
from math import factorial

import numpy as np
import pytest
from scipy.optimize import brentq

from cloudsched.dispatch.simulation import simulate
from cloudsched.dispatch.theory.board import _period_map, _rates, board_meanfield
from cloudsched.dispatch.theory.meanfield import predict
from cloudsched.dispatch.theory.proxies import POD_CLOSURE_ERROR, own_meanfield
from cloudsched.errors import ParameterError

Z = 3.29  # two-sided 99.9%: a seeded check that fails one time in a thousand by chance


def _z_close(sim, theory: float) -> None:
    half = (sim.ci95[1] - sim.ci95[0]) / 2 / 1.96
    assert abs(sim.mean_response_time - theory) <= Z * half, (sim.ci95, theory)


@pytest.mark.parametrize("period", [0.5, 3.0])
def test_board_with_one_probe_is_random(period):
    """pod(1) reads the board but picks one server at random: an M/M/1 queue per server."""
    p = board_meanfield("pod", 0.8, period, d=1)
    assert p.converged
    assert p.mean_response_time == pytest.approx(1.0 / (1.0 - 0.8), rel=1e-7)


def test_board_refreshed_often_is_the_live_mean_field():
    live = float(predict("pod", [0.9], d=2).mean_response_time[0])
    assert board_meanfield("pod", 0.9, 1e-3).mean_response_time == pytest.approx(live, rel=1e-3)
    assert board_meanfield("jsq", 0.9, 1e-3).mean_response_time == pytest.approx(1.0, rel=1e-2)
    # an old board hurts, JSQ more than pod (the herd) at a period of 2
    pod2, jsq2 = board_meanfield("pod", 0.9, 2.0), board_meanfield("jsq", 0.9, 2.0)
    assert live < pod2.mean_response_time < jsq2.mean_response_time


@pytest.mark.parametrize("policy, period", [("pod", 2.0), ("jsq", 1.0)])
def test_board_is_a_fixed_point_of_the_period_map(policy, period):
    """The published law comes back after one period, computed the other way (one weighted run)."""
    p = board_meanfield(policy, 0.85, period)
    again, average = _period_map(_rates(policy, 0.85, p.published, 2), p.published, period)
    assert np.abs(again / again.sum() - p.published).sum() < 1e-7
    assert (average * np.arange(average.size)).sum() == pytest.approx(p.mean_tasks, rel=1e-9)
    # Little's law closes: tasks served = arrivals, busy fraction = load
    assert 1.0 - p.lengths[0] == pytest.approx(0.85, rel=1e-6)


def test_board_mean_field_matches_the_simulator():
    _z_close(
        simulate("pod", servers=1000, load=0.7, refresh=5, rng=7, precision=0.004),
        board_meanfield("pod", 0.7, 5.0).mean_response_time,
    )
    _z_close(
        simulate("jsq", servers=5000, load=0.8, refresh=1, rng=13, precision=0.004),
        board_meanfield("jsq", 0.8, 1.0).mean_response_time,
    )


@pytest.mark.slow
def test_jsq_board_herd_matches_a_large_simulation():
    """At N = 2,000 JSQ's herd is 0.5% above the limit; at 20,000 it is within the interval."""
    _z_close(
        simulate("jsq", servers=20_000, load=0.9, refresh=2, rng=11, precision=0.003),
        board_meanfield("jsq", 0.9, 2.0).mean_response_time,
    )


def test_board_refuses():
    for kw in (
        {"policy": "random", "load": 0.5, "period": 1.0},
        {"policy": "pod", "load": 1.0, "period": 1.0},
        {"policy": "pod", "load": 0.5, "period": 0.0},
        {"policy": "jsq", "load": 0.5, "period": float("nan")},
    ):
        with pytest.raises(ParameterError):
            board_meanfield(**kw)


def _engset(lam: float, k: int) -> float:
    """Mean response of an Engset queue of k sources at throughput lam (Little)."""

    def law(a: float) -> np.ndarray:
        w = np.array([factorial(k) / factorial(k - q) * a**q for q in range(k + 1)])
        return w / w.sum()

    a = brentq(lambda a: a * (k - law(a) @ np.arange(k + 1)) - lam, 1e-12, 1e6)
    return float(law(a) @ np.arange(k + 1)) / lam


@pytest.mark.parametrize("k", [1, 2, 5, 16])
def test_jsq_own_counts_is_an_engset_queue(k):
    p = own_meanfield("jsq", 0.9, k)
    assert p.exact and p.converged
    assert p.mean_response_time == pytest.approx(_engset(0.9, k), rel=1e-8)


def test_pod_own_counts_limits():
    live = float(predict("pod", [0.8], d=2).mean_response_time[0])
    one = own_meanfield("pod", 0.8, 1)
    assert one.exact and one.mean_response_time == pytest.approx(live, rel=1e-8)
    means = [own_meanfield("pod", 0.8, k).mean_response_time for k in (1, 2, 4, 8)]
    assert all(a < b for a, b in itertools.pairwise(means))  # blinder with more
    assert means[-1] < 1.0 / (1.0 - 0.8)  # still better than random
    assert not own_meanfield("pod", 0.8, 2).exact


def test_own_counts_mean_field_matches_the_simulator():
    # jsq: the limit of the simulated farm, within the interval
    _z_close(
        simulate("jsq", servers=2000, load=0.8, dispatchers=4, view="own", rng=3, precision=0.004),
        own_meanfield("jsq", 0.8, 4).mean_response_time,
    )
    # pod: the closure, high by no more than the stated bound
    sim = simulate("pod", servers=2000, load=0.9, dispatchers=4, view="own", rng=3, precision=0.004)
    ratio = own_meanfield("pod", 0.9, 4).mean_response_time / sim.mean_response_time
    assert sim.ci95[1] / sim.mean_response_time - 1 < 0.01
    assert -0.01 < ratio - 1 < POD_CLOSURE_ERROR
