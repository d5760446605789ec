"""Long statistical checks of the simulator against the mean field (run with -m slow)."""

import numpy as np
import pytest

from cloudsched.dispatch import predict, simulate, tail_probabilities

pytestmark = pytest.mark.slow

TASKS = {0.5: 10_000_000, 0.9: 20_000_000, 0.95: 80_000_000}


@pytest.mark.parametrize("load", [0.5, 0.9, 0.95])
@pytest.mark.parametrize("policy", ["jiq", "jiq-pod", "pod"])
def test_within_one_percent_of_mean_field_at_n_10000(policy, load):
    res = simulate(policy, servers=10_000, r=10, load=load, d=2, tasks=TASKS[load], rng=20261130)
    mf = predict(policy, load, r=10, d=2)
    expected = mf.mean_response_time[0]
    half = (res.ci95[1] - res.ci95[0]) / 2
    assert half / expected < 0.005  # the run is long enough for the check to mean something
    assert abs(res.mean_response_time - expected) / expected < 0.01
    # time-average tail and p0 agree as well
    s = np.zeros(4)
    s[: min(4, len(res.tail))] = res.tail[:4]
    assert np.allclose(s, tail_probabilities(policy, load, 4, r=10, d=2), atol=0.01)
    assert res.p0 == pytest.approx(mf.p0[0], abs=0.01)


@pytest.mark.parametrize("policy", ["jiq", "jiq-pod"])
def test_error_shrinks_as_n_grows(policy):
    load = 0.95
    expected = predict(policy, load, r=10, d=2).mean_response_time[0]
    errors, halves = {}, {}
    for n, tasks in ((100, 8_000_000), (1000, 20_000_000), (10_000, 40_000_000)):
        res = simulate(policy, servers=n, r=10, load=load, d=2, tasks=tasks, rng=7 + n)
        errors[n] = abs(res.mean_response_time - expected) / expected
        halves[n] = (res.ci95[1] - res.ci95[0]) / 2 / expected
    # N = 100 is clearly further from the mean field than N = 1000 and N = 10,000 ...
    assert errors[100] - halves[100] > errors[1000] + halves[1000]
    assert errors[100] - halves[100] > errors[10_000] + halves[10_000]
    # ... and N = 10,000 is not further than N = 1000 (up to the statistical error of both)
    assert errors[10_000] <= errors[1000] + halves[1000] + halves[10_000]
    assert errors[10_000] < 0.01


@pytest.mark.parametrize("policy", ["jiq", "jiq-pod", "pod"])
def test_message_rates_within_two_percent_at_n_10000(policy):
    res = simulate(policy, servers=10_000, r=10, load=0.9, d=2, tasks=20_000_000, rng=11)
    mf = predict(policy, 0.9, r=10, d=2)
    for name, rate in (
        ("join", mf.join_rate[0]),
        ("delete", mf.delete_rate[0]),
        ("probe", mf.probe_rate[0]),
    ):
        if rate == 0:
            assert res.messages[name] == 0
        else:
            assert res.messages[name] == pytest.approx(rate, rel=0.02), name
