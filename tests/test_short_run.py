"""Short replications at large N (cloudsched.dispatch.short_run): a cost set by the
precision, not by N, and intervals that cover the steady-state mean."""

from __future__ import annotations

import pytest
from scipy.stats import binom

from cloudsched.dispatch.short_run import SHORT_MIN_SERVERS, response_moments, short_run
from cloudsched.dispatch.simulation import simulate
from cloudsched.dispatch.spec import SimulationSpec
from cloudsched.dispatch.theory.finite import refined_mean
from cloudsched.dispatch.theory.meanfield import predict


def _spec(policy: str, servers: int, **kw) -> SimulationSpec:
    if policy.startswith("jiq"):
        kw.setdefault("r", 10.0)
    return SimulationSpec(policy, servers, kw.pop("load", 0.9), **kw)


def test_the_route_applies_only_where_its_argument_holds():
    assert short_run(_spec("pod", SHORT_MIN_SERVERS)) is not None
    assert short_run(_spec("jiq-pod", 10**9)) is not None
    # jsq: its gap to the mean field is its mean wait at N, which no bound here holds (the
    # M/M/N queue's Erlang-C wait, once used, is below it)
    assert short_run(_spec("jsq", 10**7)) is None
    assert short_run(_spec("pod", SHORT_MIN_SERVERS - 1)) is None  # below the smallest N
    assert short_run(_spec("jiq-sq", 10**9)) is None  # no 1/N model
    assert short_run(_spec("pod", 10**9, replications=2)) is None  # replications asked
    assert short_run(_spec("pod", 10**9, tasks=10**6)) is None  # a run of a chosen length
    assert short_run(_spec("pod", 10**9, initial="empty")) is None  # no mean-field start
    # an I-queue model too large for the 1/N allowance (r = N: one dispatcher; it once
    # filled 24 GB): the usual rule, which refuses the run under the default budget
    assert short_run(_spec("jiq", 10**6, r=1e6)) is None
    assert short_run(_spec("jiq-pod", 10**6, r=1000.0, load=0.5)) is None
    # a span holds twice the arrivals the precision needs: longer than 0.05 where N or the
    # precision asks for it (at N = 10^6, 0.1%), never shorter
    longer = short_run(_spec("pod", 10**6, precision=0.001))
    assert longer is not None and longer.span > 0.05
    assert short_run(_spec("pod", 10**9, precision=0.001)).span == 0.05
    # where the usual rule costs fewer events it runs instead: pod at N = 10^5 costs about
    # 6.6e4 events short (the arrivals 1% needs, 20 times) against 5e8 by the usual rule.
    # On the per-server engine each replication's start draws every server (2e6 events in
    # all): with a relaxation time ten thousand times shorter the usual rule's floor would
    # be the cheaper
    from cloudsched.dispatch.short_run import short_events, usual_events
    from cloudsched.dispatch.theory.relaxation import relaxation_time

    spec = _spec("pod", 10**5)
    relax = relaxation_time("pod", 0.9, servers=10**5, d=2)
    route = short_run(spec, relax)
    assert route is not None
    assert short_events(spec, route) < usual_events(spec, relax, route.tasks) / 1000
    assert short_run(spec, relax / 10**4) is not None  # counts: starts cost no events
    per_server = _spec("pod", 10**5, engine="servers")
    assert short_run(per_server, relax) is not None
    assert short_run(per_server, relax / 10**4) is None
    # at 0.01% the 1/N allowance at 10^5 is more than a quarter of the half-width: the
    # usual rule
    assert short_run(_spec("pod", 10**5, precision=0.0001)) is None


def test_response_moments_against_closed_forms():
    for load in (0.5, 0.9):  # random: each server an M/M/1 queue, R ~ Exp(1 - load)
        mean, var = response_moments("random", load, r=1.0, d=2)
        assert mean == pytest.approx(1 / (1 - load), rel=1e-9)
        assert var == pytest.approx(1 / (1 - load) ** 2, rel=1e-6)
    assert response_moments("jsq", 0.9, r=1.0, d=2) == pytest.approx((1.0, 1.0))
    mean, _ = response_moments("jiq-pod", 0.9, r=10.0, d=2)
    assert mean == pytest.approx(predict("jiq-pod", [0.9], r=10.0).mean_response_time[0])


def test_a_billion_servers_cost_what_ten_million_do():
    """The default run at 10^9 certifies, covers the steady state (the mean field within
    3e-9 there) and measures exactly as many tasks as at 10^7: the count depends on the
    precision, not on N."""
    runs = {n: simulate("pod", servers=n, load=0.9, rng=7) for n in (10**7, 10**9)}
    res = runs[10**9]
    assert res.replications == 20 and res.stop_reason == "precision" and res.steady_state
    assert res.ci_method.startswith("short replications (20)")
    lo, hi = res.ci95
    assert lo <= predict("pod", [0.9]).mean_response_time[0] <= hi
    assert (hi - lo) / 2 <= 0.01 * res.mean_response_time
    assert runs[10**7].measured_tasks == res.measured_tasks < 100_000
    assert res.measured_time < 20 * 0.05 * 1.2  # every replication within about its span


def test_a_run_the_route_does_not_cover_is_still_refused_with_the_reason():
    from cloudsched.errors import ParameterError

    for policy in ("jiq-sq", "jsq"):  # no 1/N model; no bound on the gap
        with pytest.raises(ParameterError, match="short replications, whose cost"):
            simulate(policy, servers=10**9, load=0.9, r=10.0)
    # jsq from 10^6: the floor costs more than a default run spends (its precision needs
    # ten thousand times fewer events); 10^5 still runs (4e7 events)
    with pytest.raises(ParameterError, match=r"needs about .* events .* beyond a default run"):
        simulate("jsq", servers=10**6, load=0.9)


@pytest.mark.slow  # 200 runs at N = 10^5 and 10^6: about 45 s cold
def test_short_replications_cover_the_steady_state_mean():
    """Pooled coverage of the 95% intervals over 4 policies x 50 seeds, half at N = 10^5
    (the smallest farm on the route, where its 1/N allowance is widest; pod there on the
    per-server engine, whose starts draw every server) and half at 10^6.  Truth: the
    refined mean field at N (random: exact).  Under 95% coverage, 200 runs cover at least
    181 with probability 0.999; intervals 30% too narrow (about 86% coverage) would fail
    almost always."""
    load, runs = 0.9, 50
    covered, total = 0, 0
    for n in (10**5, 10**6):
        truths = {
            "pod": refined_mean("pod", n, load, 1.0, 2, replace=False),
            "jiq": refined_mean("jiq", n, load, 10.0, 2, replace=False),
            "random": predict("random", [load]).mean_response_time[0],
            "jiq-pod": refined_mean("jiq-pod", n, load, 10.0, 2, replace=False),
        }
        for policy, truth in truths.items():
            extra: dict = {"r": 10.0} if policy.startswith("jiq") else {}
            if policy == "pod" and n == 10**5:
                extra["engine"] = "servers"
            for seed in range(runs // 2):
                res = simulate(policy, servers=n, load=load, rng=500 + seed + n, **extra)
                assert res.ci_method.startswith("short replications"), res.ci_method
                lo, hi = res.ci95
                covered += lo <= truth <= hi
                total += 1
    assert covered >= binom.ppf(0.001, total, 0.95), (covered, total)
