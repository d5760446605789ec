"""Finite-N predictions against long simulations (slow tier).

Tolerances come from the simulations' own 95% intervals: a prediction passes when it lies
within 3.3 standard errors (half-width / 1.96 * 3.3, a 99.9% two-sided band), so each check
fails by chance about once in a thousand runs, and the seeds are fixed.  The mean-field
checks at N = 10,000 are the issue's 1% criterion.
"""

from __future__ import annotations

import numpy as np
import pytest

from cloudsched.dispatch import predict, simulate
from cloudsched.dispatch.theory.exact import solve_exact
from cloudsched.dispatch.theory.finite import predict_finite
from cloudsched.dispatch.theory.speeds import predict_heterogeneous

pytestmark = pytest.mark.slow


def _band(sim):
    return 3.3 * (sim.ci95[1] - sim.ci95[0]) / 2 / 1.96


@pytest.mark.parametrize(
    ("policy", "n", "m", "replace"),
    [
        ("random", 4, 1, False),
        ("pod", 4, 1, False),
        ("pod", 4, 1, True),
        ("jsq", 4, 1, False),
        ("jiq", 3, 3, False),
        ("jiq-pod", 4, 2, False),
    ],
)
def test_exact_chain_agrees_with_simulation(policy, n, m, replace):
    load = 0.7
    exact = solve_exact(policy, n, load, m=m, d=2, replace=replace, tol=1e-7)
    sim = simulate(
        policy,
        servers=n,
        load=load,
        dispatchers=m if policy.startswith("jiq") else None,
        d=2,
        with_replacement=replace,
        precision=0.003,
        rng=11,
    )
    assert sim.steady_state
    assert abs(exact.mean_response_time - sim.mean_response_time) < _band(sim)


def test_round_robin_one_dispatcher_agrees_with_simulation():
    pred = predict_finite("round-robin", 6, [0.8], r=6)[0]
    sim = simulate("round-robin", servers=6, load=0.8, dispatchers=1, precision=0.003, rng=12)
    assert abs(pred.value - sim.mean_response_time) < _band(sim)


@pytest.mark.parametrize("n", [10, 40])
def test_refined_is_at_least_twice_as_close_as_the_mean_field(n):
    pred = predict_finite("pod", n, [0.9], d=2, replace=True, method="refined")[0]
    # one run's batch means: two replications' Student t (one degree of freedom) needs
    # about 40 times the run length for the same precision
    sim = simulate("pod", servers=n, load=0.9, d=2, with_replacement=True, precision=0.001, rng=13)
    mean = sim.mean_response_time
    assert abs(pred.refined - mean) * 2 < abs(pred.meanfield - mean)


@pytest.mark.parametrize(
    ("policy", "z"),
    [("jiq-sq", 1), ("jiq-threshold", 1), ("jiq-threshold", 2), ("jiq-original", 1)],
)
def test_variant_mean_fields_within_one_percent_at_10000_servers(policy, z):
    mf = predict(policy, [0.9], r=10, d=2, z=z).mean_response_time[0]
    sim = simulate(
        policy, servers=10_000, load=0.9, r=10, d=2, threshold=z, precision=0.002, rng=14
    )
    assert sim.steady_state
    assert abs(mf / sim.mean_response_time - 1) < 0.01


@pytest.mark.parametrize("policy", ["pod", "jiq", "jiq-pod"])
def test_speed_classes_agree_with_simulation(policy):
    speeds = np.repeat([0.5, 1.0, 2.0], [2000, 1000, 1000])
    het = predict_heterogeneous(policy, 0.8, speeds)
    sim = simulate(
        policy, servers=4000, load=0.8, r=10, d=2, speeds=speeds, precision=0.003, rng=15
    )
    assert abs(het.mean_response_time / sim.mean_response_time - 1) < 0.01
