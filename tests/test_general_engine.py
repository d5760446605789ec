"""The event-list (general) engine: queueing theory oracles, equivalence with the fast path."""

import math

import numpy as np
import pytest
from scipy import stats

from cloudsched.dispatch import simulate
from cloudsched.dispatch.theory.relaxation import relaxation_time
from cloudsched.dispatch.workload.distributions import Deterministic, LogNormal, Uniform
from cloudsched.dispatch.workload.resolved import Trace
from cloudsched.errors import ParameterError


def within(res, value, level=0.999):
    """True when ``value`` lies in the ``level`` t-interval of the replication means."""
    k = res.replications
    half95 = (res.ci95[1] - res.ci95[0]) / 2
    se = half95 / stats.t.ppf(0.975, k - 1)
    half = stats.t.ppf(0.5 + level / 2, k - 1) * se
    centre = (res.ci95[0] + res.ci95[1]) / 2
    return abs(centre - value) <= half


@pytest.mark.parametrize(
    "service", [Deterministic(1.0), LogNormal(1.0, 1.5), Uniform(1.0)], ids=repr
)
def test_mg1_matches_pollaczek_khinchine(service):
    load = 0.6
    res = simulate(
        "random", servers=1, load=load, service=service, tasks=200_000, replications=10, rng=4
    )
    es2 = service.variance + service.mean**2
    pk = service.mean + load / service.mean * es2 / (2 * (1 - load))
    assert (res.engine, res.clock) == ("servers", "event-list")
    assert within(res, pk)


def test_mm1_through_general_engine():
    res = simulate(
        "random", servers=4, load=0.8, engine="general", tasks=400_000, replications=8, rng=6
    )
    assert (res.engine, res.clock) == ("servers", "event-list")
    assert res.engine_reason == "asked for; event list"
    assert within(res, 5.0)


def test_general_and_exponential_engines_agree_on_exponential_input():
    kw = dict(servers=300, r=10, load=0.9, d=2, tasks=600_000, replications=6)
    fast = simulate("jiq-pod", engine="exponential", rng=1, **kw)
    slow = simulate("jiq-pod", engine="general", rng=2, **kw)
    assert (fast.clock, slow.clock) == ("markov", "event-list") and fast.engine == slow.engine
    half = math.hypot(fast.ci95[1] - fast.ci95[0], slow.ci95[1] - slow.ci95[0]) / 2
    assert abs(fast.mean_response_time - slow.mean_response_time) < 1.6 * half + 1e-3
    assert fast.p0 == pytest.approx(slow.p0, abs=0.01)
    assert np.allclose(fast.tail[:3], slow.tail[:3], atol=0.01)
    for key in ("join", "delete", "probe"):
        assert fast.messages[key] == pytest.approx(slow.messages[key], rel=0.03)


def test_heterogeneous_speeds():
    # random dispatch: server i is an M/M/1 queue with arrival rate 0.75 and speed i
    res = simulate(
        "random", servers=2, load=0.5, speeds=[1.0, 2.0], tasks=400_000, replications=8, rng=3
    )
    expected = 0.5 / (1 - 0.75) + 0.5 / (2 - 0.75)
    assert within(res, expected)


def test_deterministic_trace_has_no_queueing():
    times = np.arange(0.0, 200.0, 2.0)
    res = simulate(
        "jiq",
        servers=1,
        dispatchers=1,
        load=None,
        trace=Trace(times, np.ones(times.size)),
        warmup=0.0,
    )
    assert res.mean_response_time == pytest.approx(1.0)
    assert res.percentiles["p99.9"] == pytest.approx(1.0)
    assert res.measured_tasks == times.size - 1  # the last arrival closes the window
    assert res.load == pytest.approx(0.5, rel=0.02)


def test_trace_load_rescaling():
    rng = np.random.default_rng(0)
    times = np.cumsum(rng.exponential(3.0, 50_000))
    trace = Trace(times, rng.exponential(2.0, 50_000))
    res = simulate("pod", servers=10, load=0.7, trace=trace, rng=1)
    assert res.load == pytest.approx(0.7, rel=1e-9)
    raw = simulate("pod", servers=10, load=None, trace=trace, rng=1)
    assert raw.load == pytest.approx(trace.services.sum() / (trace.span * 10), rel=1e-9)
    # doubling service times at the same load doubles the time axis: same decisions, 2x times
    slow = simulate("pod", servers=10, load=0.7, trace=trace, rng=1, service_scale=2.0)
    assert slow.mean_response_time == pytest.approx(2 * res.mean_response_time, rel=1e-9)


def test_bad_general_inputs():
    with pytest.raises(ParameterError, match=r"^speeds "):
        simulate("random", servers=3, load=0.5, speeds=[1.0, 2.0])
    with pytest.raises(ParameterError, match=r"^speeds "):
        simulate("random", servers=2, load=0.5, speeds=[1.0, 0.0])
    with pytest.raises(ParameterError, match=r"^engine "):
        simulate("random", servers=2, load=0.5, service="det", engine="exponential")
    with pytest.raises(ParameterError, match=r"^load "):
        simulate("random", servers=2, load=None)
    with pytest.raises(ParameterError, match=r"^trace "):
        Trace(np.array([1.0, 0.5]), np.array([1.0, 1.0]))
    with pytest.raises(ParameterError, match=r"^service "):
        simulate("random", servers=2, load=0.5, service="weibull")


def test_a_short_trace_is_not_called_steady():
    """A log of a few hundred service times cannot show a steady state at load 0.9."""
    rng = np.random.default_rng(5)
    times = np.cumsum(rng.exponential(1 / (0.9 * 20), 4000))
    trace = Trace(times, rng.exponential(1.0, 4000))
    res = simulate("jiq", servers=20, r=5, load=None, trace=trace, rng=2)
    assert res.log_span == pytest.approx(trace.span / trace.services.mean())
    assert not res.steady_state and res.ci95 is None and res.stop_reason == "trace"
    assert any("too short for a steady state" in w for w in res.warnings)


def test_a_long_poisson_trace_gives_a_certified_interval():
    n, load, tasks = 4, 0.5, 400_000
    rng = np.random.default_rng(6)
    trace = Trace(np.cumsum(rng.exponential(1 / (load * n), tasks)), rng.exponential(1.0, tasks))
    res = simulate("random", servers=n, load=None, trace=trace, rng=3)
    assert res.steady_state and res.ci95 is not None
    se = (res.ci95[1] - res.ci95[0]) / 2 / 1.96
    assert abs(res.mean_response_time - 1 / (1 - res.load)) <= 3.3 * se


def test_general_laws_run_to_the_precision_target():
    """Open-ended runs work on the event-list engine too (empty start by default)."""
    res = simulate("jiq-pod", servers=50, r=5, load=0.8, service="lognormal:cv=2", rng=4)
    assert res.clock == "event-list" and res.initial == "empty" and res.stop_reason == "precision"
    assert res.steady_state and res.precision_reached <= 0.01
    # lognormal service with cv 2: (c_a^2 + c_s^2) / 2 = 2.5 times the exponential value
    base = relaxation_time("jiq-pod", 0.8, servers=50, r=5, d=2)
    assert res.relaxation_estimate >= 2.5 * base * (1 - 1e-12)
