"""The slow-start transient's ODE (dispatch.theory.slowstart) against its laws and the simulator."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from cloudsched.dispatch import predict, simulate
from cloudsched.dispatch.options import options_by_name, resolve_options
from cloudsched.dispatch.theory import slowstart
from cloudsched.dispatch.workload.resolved import Trace
from cloudsched.errors import ParameterError
from cloudsched.policy_table import TABLE


def slow_start_trajectory(load, servers, options, **kw):
    """The ODE with wlr's options given as simulate takes them."""
    return slowstart.slow_start_trajectory(load, servers, options_by_name("wlr", options), **kw)


def _wlr_mirror_factor(options: dict, t: float) -> float:
    """Envoy's slow-start factor as the per-server engine's Python mirror computes it."""
    from cloudsched.dispatch.engines.servers.mirror_balancers import Wlr

    names = [o.name for o in TABLE["wlr"].options]
    o = dict(zip(names, resolve_options("wlr", options), strict=True))
    rule = Wlr.__new__(Wlr)
    rule.o, rule.join_t, rule.joining = o, o["join-time"], lambda s: True
    return rule.slow_start(0, t)


@pytest.mark.parametrize(
    "options",
    [
        {"slow-start-window": 30},
        {"slow-start-window": 30, "aggression": 2.5},
        {"slow-start-window": 60, "aggression": 0.5, "min-weight-percent": 1},
        {"slow-start-window": 10, "min-weight-percent": 0},
    ],
)
def test_weight_is_envoys_slow_start_factor(options):
    opts = {"join-count": 2, "join-time": 20, **options}
    traj = slow_start_trajectory(0.6, 10, opts, horizon=100, num_points=101)
    for t, w in zip(traj.t, traj.weight, strict=True):
        want = 0.0 if t < 20 else _wlr_mirror_factor(opts, float(t))
        assert w == pytest.approx(want, rel=1e-12, abs=1e-12), t


def test_shares_mass_and_the_limits_of_each_phase():
    load, n, j = 0.6, 10, 2
    opts = {"join-count": j, "join-time": 400, "slow-start-window": 40, "active-request-bias": 0}
    traj = slow_start_trajectory(load, n, opts, horizon=800, num_points=801)
    before = traj.t < 400
    assert np.all(traj.share_joining[before] == 0.0)
    assert np.all(traj.mean_joining[before] == 0.0)
    # before the join: P2C (with replacement, Envoy's draws) over the old servers at their
    # load; its N -> infinity limit is pod(2)'s mean field
    old_load = load * n / (n - j)
    want = predict("pod", old_load, d=2).mean_response_time[0]
    assert traj.response[traj.t == 399][0] == pytest.approx(want, rel=1e-6)
    # with bias 0 the share follows the factor alone: j g / (n - j + j g)
    during = (traj.t >= 400) & (traj.t < 440)
    g = traj.weight[during]
    assert np.allclose(traj.share_joining[during], j * g / (n - j + j * g), rtol=1e-9)
    # after the window every server weighs the same: the joining share is their count's
    assert traj.share_joining[-1] == pytest.approx(j / n, rel=1e-9)
    assert traj.mean_old[-1] == pytest.approx(traj.mean_joining[-1], rel=1e-3)


def _simulated_windows(n, j, load, opts, horizon, edges, reps):
    """Mean response time of the requests sent in each window, one row per replication."""
    rows = []
    for seed in range(reps):
        g = np.random.default_rng([2026, seed])
        count = g.poisson(load * n * horizon)
        arrivals = np.sort(np.r_[0.0, g.uniform(0.0, horizon, count - 1)])
        services = g.exponential(1.0, count)
        services /= services.mean()  # the run's time unit is the trace's mean service time
        res = simulate(
            "wlr", servers=n, load=None, trace=Trace(arrivals, services), warmup=0.0,
            keep_response_times=True, options=opts, rng=seed, initial="empty",
        )  # fmt: skip
        rt = res.response_times
        # the replay ends at the last arrival: every earlier request is measured, in order
        assert rt.size == count - 1
        which = np.digitize(arrivals[: rt.size], edges) - 1
        rows.append([rt[which == i].mean() for i in range(len(edges) - 1)])
    return np.array(rows)


def _window_means(traj, edges):
    return np.array(
        [traj.response[(traj.t >= a) & (traj.t < b)].mean() for a, b in itertools.pairwise(edges)]
    )


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_scale_up_after_overload_follows_the_fluid():
    """40 of 200 servers join while the old ones are overloaded (load 1.125 each): backlogs
    of ten and more requests, where Envoy's EDF and the ODE follow the same fluid.

    Every window before the join, and every window from one schedule round after it while
    the old servers hold at least three requests, must contain the ODE's value within the
    simulation's 99% interval (Bonferroni over the windows, t over 16 replications).  A
    model without the active-request bias (a share by the slow-start factor alone) is
    outside it, so the check tells the two apart.
    """
    n, j, load, horizon = 200, 40, 0.9, 250.0
    opts = {"join-count": j, "join-time": 100, "slow-start-window": 50}
    edges = np.arange(0.0, horizon + 1e-9, 12.5)
    traj = slow_start_trajectory(load, n, opts, horizon=horizon, num_points=2501)
    sim = _simulated_windows(n, j, load, opts, horizon, edges, reps=16)
    mean, se = sim.mean(axis=0), sim.std(axis=0, ddof=1) / np.sqrt(sim.shape[0])
    ode = _window_means(traj, edges)
    old = np.array(
        [traj.mean_old[(traj.t >= a) & (traj.t < b)].min() for a, b in itertools.pairwise(edges)]
    )
    tested = (edges[:-1] >= 12.5) & (edges[:-1] < 100) | (edges[:-1] >= 112.5) & (old >= 3.0)
    assert tested.sum() >= 12
    half = stats.t.ppf(1 - 0.01 / (2 * tested.sum()), sim.shape[0] - 1) * se
    gap = np.abs(mean - ode)
    assert np.all(gap[tested] <= half[tested]), (mean[tested], ode[tested], half[tested])
    no_bias = slow_start_trajectory(
        load, n, {**opts, "active-request-bias": 0}, horizon=horizon, num_points=2501
    )
    assert np.any(np.abs(mean - _window_means(no_bias, edges))[tested] > half[tested])


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_below_overload_edf_queues_are_shorter_than_the_odes():
    """At load 0.7 Envoy's EDF sends each server requests more regularly than the ODE's
    independent picks: once the window is over the simulation stays below the ODE (the
    module's notes say so)."""
    n, j, load, horizon = 200, 20, 0.7, 200.0
    opts = {"join-count": j, "join-time": 50, "slow-start-window": 25}
    edges = np.array([100.0, 150.0, 200.0])
    traj = slow_start_trajectory(load, n, opts, horizon=horizon, num_points=801)
    sim = _simulated_windows(n, j, load, opts, horizon, edges, reps=8)
    upper = sim.mean(axis=0) + stats.t.ppf(0.995, 7) * sim.std(axis=0, ddof=1) / np.sqrt(8)
    assert np.all(upper < _window_means(traj, edges))


def test_bad_input():
    with pytest.raises(ParameterError, match="join-count"):
        slow_start_trajectory(0.5, 10, {"join-count": 0})
    with pytest.raises(ParameterError, match="join-count"):
        slow_start_trajectory(0.5, 10, {"join-count": 10})
    with pytest.raises(ParameterError, match="subset"):
        slow_start_trajectory(0.5, 10, {"join-count": 2, "subset": 4})
    with pytest.raises(ParameterError, match="load"):
        slow_start_trajectory(1.0, 10, {"join-count": 2})
    with pytest.raises(ParameterError, match="decay"):
        slow_start_trajectory(0.5, 10, {"join-count": 2, "decay": "1s"})
    with pytest.raises(ParameterError, match="options must be given"):
        slowstart.slow_start_trajectory(0.5, 10, {"join-count": 2.0})
