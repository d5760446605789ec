"""Every dispatch policy against an independent reference (default tier, seeded).

References: the exact Markov chain of tiny systems (:mod:`cloudsched.testing.exact_chain`),
the E_N/M/1 queue
that round-robin from one dispatcher makes of every server, M/M/1 for random dispatch,
degenerate equivalences (JIQ-Threshold with z = 0 is JIQ, JIQ-SQ with d = 1 is JIQ in law),
orderings (JIQ-SQ(2) beats JIQ), and the mean field at N = 1000 within its known 1/N error.
Tolerances come from the simulation's own 95% interval: a test fails when the reference lies
more than 3.3 standard errors away (two-sided p < 0.001), so a wrong model fails and a correct
one passes for any seed with probability 0.999.
"""

import math

import numpy as np
import pytest
from scipy import optimize

from cloudsched.dispatch import predict, simulate
from cloudsched.testing import exact_chain

Z = 3.3  # standard errors allowed between a simulation and an exact reference


def standard_error(res) -> float:
    assert res.ci95 is not None, res.warnings
    return (res.ci95[1] - res.ci95[0]) / 2 / 1.96


def assert_matches(res, exact: float, slack: float = 0.0) -> None:
    se = standard_error(res)
    gap = abs(res.mean_response_time - exact)
    assert gap <= Z * se + slack, (res.mean_response_time, exact, se)


SMALL = [
    # policy, servers, dispatchers, d, z, with_replacement
    ("random", 3, 1, 2, 1, False),
    ("jsq", 3, 1, 2, 1, False),
    ("pod", 3, 1, 2, 1, False),
    ("pod", 3, 1, 2, 1, True),
    ("jiq", 3, 1, 2, 1, False),
    ("jiq", 3, 2, 2, 1, False),
    ("jiq-pod", 3, 2, 2, 1, False),
    ("jiq-pod", 3, 2, 2, 1, True),
    ("jiq-original", 2, 2, 2, 1, False),
    ("jiq-threshold", 3, 2, 2, 1, False),
    ("jiq-sq", 3, 2, 2, 1, False),
    ("round-robin", 2, 2, 2, 1, False),
]


@pytest.mark.parametrize(("policy", "n", "m", "d", "z", "replace"), SMALL)
def test_tiny_systems_match_the_exact_chain(policy, n, m, d, z, replace):
    load = 0.5
    exact, blocked = exact_chain.solve(policy, n, load, m=m, d=d, z=z, replace=replace, cap=16)
    assert blocked < 1e-4
    res = simulate(
        policy,
        servers=n,
        dispatchers=m,
        load=load,
        d=d,
        threshold=z,
        with_replacement=replace,
        precision=0.005,
        rng=20261201,
    )
    assert res.steady_state and res.stop_reason == "precision"
    # the truncated chain drops a fraction `blocked` of arrivals: allow that much bias
    assert_matches(res, exact, slack=10 * blocked * exact)


def test_the_planted_pod_bug_would_be_caught():
    """Pod sending to a uniform server instead is random dispatch: far from Pod's chain."""
    pod, _ = exact_chain.solve("pod", 3, 0.5, cap=16)
    uniform, _ = exact_chain.solve("random", 3, 0.5, cap=16)
    res = simulate("random", servers=3, load=0.5, precision=0.005, rng=20261201)
    assert abs(uniform - pod) > 10 * Z * standard_error(res)


def e_n_m_1_response(n: int, load: float) -> float:
    """Mean response of an E_N/M/1 queue (inter-arrival Erlang(N) of mean 1/load, exp(1))."""
    lam = load * n  # rate of each phase
    sigma = optimize.brentq(lambda s: s - (lam / (lam + 1.0 - s)) ** n, 1e-12, 1 - 1e-12)
    return 1.0 / (1.0 - sigma)


@pytest.mark.parametrize(("n", "load"), [(5, 0.8), (50, 0.9)])
def test_round_robin_from_one_dispatcher_is_e_n_m_1(n, load):
    res = simulate("round-robin", servers=n, dispatchers=1, load=load, rng=11)
    assert_matches(res, e_n_m_1_response(n, load))


def test_random_is_m_m_1():
    res = simulate("random", servers=20, load=0.8, rng=2024)
    assert_matches(res, 1 / (1 - 0.8))
    # each server is an M/M/1 queue: P(N >= i) = load^i
    assert np.allclose(res.tail[:4], 0.8 ** np.arange(1, 5), atol=0.02)


def test_jiq_threshold_with_z_0_is_jiq_exactly():
    common = dict(
        servers=40, r=4, load=0.8, tasks=30_000, initial="empty", rng=5, keep_response_times=True
    )
    a = simulate("jiq-threshold", threshold=0, **common)
    b = simulate("jiq", **common)
    assert np.array_equal(a.response_times, b.response_times)
    assert a.messages == b.messages


def test_jiq_sq_with_d_1_is_jiq_in_law():
    a = simulate("jiq-sq", servers=100, r=10, load=0.9, d=1, rng=8, initial="empty")
    b = simulate("jiq", servers=100, r=10, load=0.9, rng=9, initial="empty")
    se = math.hypot(standard_error(a), standard_error(b))
    assert abs(a.mean_response_time - b.mean_response_time) <= Z * se


def test_jiq_sq_beats_jiq():
    """Joining the shorter of two I-queues leaves fewer empty ones (a longer one would not)."""
    sq = simulate("jiq-sq", servers=200, r=10, load=0.9, d=2, rng=3)
    jiq = simulate("jiq", servers=200, r=10, load=0.9, rng=4)
    se = math.hypot(standard_error(sq), standard_error(jiq))
    assert jiq.mean_response_time - sq.mean_response_time > Z * se
    assert sq.p0 < jiq.p0


@pytest.mark.parametrize("policy", ["jiq", "jiq-pod", "pod"])
def test_mean_field_at_n_1000(policy):
    """At N = 1000 the mean field is within its finite-N error, about 5/N in relative terms."""
    res = simulate(policy, servers=1000, r=10, load=0.9, d=2, rng=17)
    mf = float(predict(policy, 0.9, r=10, d=2).mean_response_time[0])
    assert_matches(res, mf, slack=5e-3 * mf)
