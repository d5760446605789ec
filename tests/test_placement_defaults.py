"""DGP's defaults, the epsilon floor, and MaxWeight's weights, each against an independent value."""

import math

import numpy as np
import pytest

from cloudsched.placement import JobType, chain, parse_cluster, star, tree
from cloudsched.placement import _kernel as K
from cloudsched.placement.baselines import greedy
from cloudsched.placement.defaults import cost_unit, dgp_defaults
from cloudsched.placement.engine import EngineParams, PlacementEngine
from cloudsched.placement.policies import get_placement_policy
from cloudsched.placement.simulation import simulate_placement
from cloudsched.testing.placement_mirror import ReferencePlacement

SMALL = [JobType("chain3", 1.0, 1.0, chain(3)), JobType("star4", 0.5, 1.0, star(4))]


def _par(alpha=1.0, eps=0.5, f="identity"):
    return EngineParams(get_placement_policy("dgp").code, alpha=alpha, epsilon=eps, f=f).par()


@pytest.mark.parametrize(
    ("qlen", "j", "expected"),
    [
        # Q_j = 0: no floor, however long the other queue: alpha * (0 + h)
        ([0, 100], 0, 1.0),
        # Q_j > 0: the floor eps / (4 |J|) * (max Q + h) = 0.5 / 8 * 101 wins over 1 + 1
        ([1, 100], 0, 0.5 / 8 * 101),
        # Q_j > 0 and the own term larger than the floor
        ([50, 100], 0, 51.0),
        ([50, 100], 1, 101.0),
    ],
)
def test_epsilon_floor_applies_only_to_types_with_waiting_jobs(qlen, j, expected):
    wpar = np.zeros((2, 2))
    wpar[1] = 1.0  # h_j
    got = K.queue_weight(j, np.array(qlen, dtype=np.int64), _par(), wpar)
    assert got == pytest.approx(expected)
    ref = ReferencePlacement(
        parse_cluster("2x2"),
        [JobType("a", 1, 1, chain(2))] * 2,
        "dgp",
        np.random.default_rng(0),
        alpha=1.0,
        h=1.0,
        f="identity",
    )
    ref.queues = [list(range(n)) for n in qlen]
    assert ref._weight(j) == pytest.approx(expected)


def test_per_type_bias_is_used_per_type():
    wpar = np.array([[0.0, 0.0], [0.5, 3.0]])
    q = np.array([0, 0], dtype=np.int64)
    assert K.queue_weight(0, q, _par(), wpar) == pytest.approx(0.5)
    assert K.queue_weight(1, q, _par(), wpar) == pytest.approx(3.0)
    assert K.queue_weight(1, q, _par(f="log"), wpar) == pytest.approx(math.log1p(3.0))


def test_no_starvation_by_empty_templates_of_another_type():
    """The issue's case: alpha 1, beta 0.05, log weights, no bias.

    With the floor applied to empty types too, every empty chain template stayed alive while
    the star queue grew (98,649 waiting); now both types are served.
    """
    res = simulate_placement(
        "dgp",
        parse_cluster("3x3"),
        SMALL,
        horizon=2000,
        alpha=1.0,
        beta=0.05,
        h=0.0,
        f="log",
        epsilon=0.5,
        compare_bound=False,
        rng=4,
    )
    star4 = res.per_type[1]
    assert star4["served_fraction"] > 0.95
    assert star4["mean_queue_length"] < 100


def test_defaults_follow_the_rule():
    cluster = parse_cluster("4x2", racks=2, cross_rack_cost=3.0)
    got = dgp_defaults(cluster, SMALL, "uniform")  # the paper's proposals: h from greedy
    assert cost_unit(cluster) == 1.0
    expected_h = []
    for jt in SMALL:
        m = greedy(jt.topology, cluster.slots.copy(), cluster)
        expected_h.append(cluster.cost(jt.topology, m) + 0.5)
    assert got["h"] == pytest.approx(tuple(expected_h))
    assert got["f"] == "identity" and got["beta"] == pytest.approx(0.1)
    # one unit of cost is 3 when the only positive distance is 3
    assert cost_unit(parse_cluster("4x2", racks=4, cross_rack_cost=3.0)) == 3.0
    apart = parse_cluster("4x2", racks=4, cross_rack_cost=3.0)
    assert dgp_defaults(apart, SMALL, "uniform")["beta"] == pytest.approx(0.3)


@pytest.mark.parametrize("spec", ["3x3", "4x2"])
def test_default_dgp_is_stable_and_near_the_optimum_on_the_demo(spec):
    """The demo workload (55-75% of the slots): served >= 99%, cost within 15% of the bound."""
    res = simulate_placement("dgp", parse_cluster(spec), SMALL, rng=11)
    assert res.params["chosen"] == "calibrated against the bound"
    assert res.bound is not None and res.bound_proven
    assert res.served_fraction >= 0.99
    assert res.bound_gap is not None and res.bound_gap <= 0.15
    low, high = res.cost_rate_ci95
    assert res.cost_rate >= res.bound - 3 * (high - low) / 2  # a lower bound, up to noise


def test_a_gap_above_the_target_is_flagged():
    res = simulate_placement(
        "dgp", parse_cluster("3x3"), SMALL, horizon=3000, alpha=0.05, rng=2, proposal="uniform"
    )
    assert res.bound_gap is not None and res.bound_gap > 0.15
    assert any("above the static optimum" in w for w in res.warnings)
    assert res.to_dict()["bound"] == pytest.approx(0.5)


@pytest.mark.parametrize("spec", ["3x3", "4x2"])
def test_maxweight_cost_is_near_the_optimum(spec):
    res = simulate_placement("maxweight", parse_cluster(spec), SMALL, horizon=600, rng=3)
    assert res.served_fraction >= 0.98
    assert res.bound_gap is not None and res.bound_gap <= 0.15


def test_maxweight_weights_count_waiting_and_running_jobs(monkeypatch):
    """Each frame's weights are alpha f(Q_j + jobs of type j in service)."""
    import cloudsched.placement.maxweight as mw

    real = mw.max_weight_configuration
    checked = []

    def frame(e):
        want = [int(e.st.qlen[j] + e.st.ntl[j, 0]) for j in range(2)]

        def spy(cluster, topologies, values, present, **kw):
            checked.append((want, [int(x) for x in present], int(e.st.ntl[:, 0].sum())))
            assert values == pytest.approx([math.log1p(q) for q in want])
            return real(cluster, topologies, values, present, **kw)

        monkeypatch.setattr(mw, "max_weight_configuration", spy)
        ctl(e)

    cluster = parse_cluster("3x3")
    params = EngineParams(get_placement_policy("maxweight").code, alpha=1.0, f="log")
    eng = PlacementEngine(cluster, SMALL, params, 40.0, 0.0, 2, np.random.default_rng(5))
    ctl = mw.FrameController(0.5, 1.0, "log", None, 0.0)
    ctl.start(eng)
    eng.on_stop = frame
    while not eng.advance(10_000):
        pass
    assert len(checked) >= 5
    assert all(want == present for want, present, _ in checked)
    assert any(running > 0 for _, _, running in checked)  # frames with jobs in service


@pytest.mark.parametrize("solver", ["exact", "fast"])
def test_maxweight_places_a_template_only_when_its_weight_is_positive(solver):
    """Weight alpha f(Q_j) - b_A with Q_j the type-j jobs present, nothing added.

    A 4-node star costs at least 1 on 3-slot machines; with alpha 0.8 and f the identity a
    lone star is worth 0.8 - 1 < 0 (it waits, or is preempted), two are worth 1.6 - 1 > 0
    each and both fit.  Weighting by Q_j + 1 would place the lone star.
    """
    jobs = [JobType("star4", 0.3, 1.0, star(4))]
    res = simulate_placement(
        "maxweight",
        parse_cluster("3x3"),
        jobs,
        horizon=400.0,
        alpha=0.8,
        f="identity",
        frame=0.25,
        solver=solver,
        compare_bound=False,
        rng=2,
    )
    t = res.frame_table
    alone, pair = t[t["present.star4"] == 1], t[t["present.star4"] == 2]
    assert len(alone) >= 20 and len(pair) >= 20
    assert (alone["templates.star4"] == 0).all()
    assert (pair["templates.star4"] == 2).all()


def _demo(spec):
    return parse_cluster(spec), SMALL


@pytest.mark.parametrize("spec", ["3x3", "4x2"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_default_local_dgp_serves_every_type_on_the_demo(spec, seed):
    """The issue's case: star4 starved behind empty chain3 templates (served 0%, queue 75,000).

    Two causes, both fixed: the calibrated alpha ran with the bias h computed for the
    uncalibrated one (so an empty template's keep odds were e^(H / beta), not e^0 as
    intended), and the bias itself kept an empty template with odds e^5.
    """
    cluster, jobs = _demo(spec)
    res = simulate_placement("dgp", cluster, jobs, proposal="local", rng=seed)
    assert min(t["served_fraction"] for t in res.per_type) >= 0.99
    assert res.steady_state
    # the bias follows the alpha used: (H_j + margin) / alpha, the margin the pilots chose
    base = dgp_defaults(cluster, jobs, "local")["bias_base"]
    (chosen,) = [
        p
        for p in res.params["pilots"]
        if p["alpha"] == res.params["alpha"] and tuple(p["h"]) == tuple(res.params["h"])
    ]
    assert res.params["h"] == pytest.approx(
        tuple((b + chosen["margin"]) / chosen["alpha"] for b in base)
    )
    assert res.bound_gap is not None and res.bound_gap <= 0.15


def test_calibration_falls_back_to_even_odds_where_empty_templates_starve_a_type():
    """On 3x3 the default margin (empty templates kept at odds e^5) starves the stars."""
    res = simulate_placement("dgp", parse_cluster("3x3"), SMALL, proposal="local", rng=1)
    pilots = res.params["pilots"]
    assert not any(p["serves"] for p in pilots if p["margin"] > 0)
    assert pilots[-1]["margin"] == 0.0 and pilots[-1]["serves"]


def test_calibration_judges_several_pilots_per_alpha():
    from cloudsched.placement.calibration import PILOT_SEEDS

    res = simulate_placement("dgp", parse_cluster("3x3"), SMALL, proposal="local", rng=5)
    pilots = res.params["pilots"]
    assert pilots and all(len(p["cost_rates"]) == PILOT_SEEDS for p in pilots)
    chosen = [p for p in pilots if tuple(p["h"]) == tuple(res.params["h"])]
    assert len(chosen) == 1 and chosen[0]["serves"]


@pytest.fixture
def sticky_local_bias(monkeypatch):
    """A planted bad default: empty local templates kept with odds e^20 (never dropped)."""
    import cloudsched.placement.calibration as cal
    import cloudsched.placement.defaults as d

    monkeypatch.setattr(d, "LOCAL_MARGINS_UNITS", (2.0,))
    monkeypatch.setattr(cal, "LOCAL_MARGINS_UNITS", (2.0,))


def test_defaults_that_do_not_serve_are_refused(sticky_local_bias):
    from cloudsched.placement import DefaultsRefused

    with pytest.raises(
        DefaultsRefused,
        match=r"dgp's default parameters do not serve "
        r"this workload: .*'star4' was served .*set --alpha and --h",
    ):
        simulate_placement("dgp", parse_cluster("3x3"), SMALL, proposal="local", rng=1)
    # parameters given by the user are theirs: the same run is not refused
    res = simulate_placement(
        "dgp",
        parse_cluster("3x3"),
        SMALL,
        proposal="local",
        rng=1,
        alpha=0.04,
        horizon=2000.0,
        compare_bound=False,
    )
    assert res.params["chosen"] == "given"


def test_an_open_ended_default_run_that_starves_a_type_is_refused():
    from dataclasses import replace

    from cloudsched.placement import DefaultsRefused, PlacementSpec
    from cloudsched.placement.calibration import check_served

    spec = PlacementSpec("greedy", parse_cluster("3x3"), SMALL)
    res = simulate_placement(
        "greedy", parse_cluster("3x3"), SMALL, horizon=200.0, rng=1, compare_bound=False
    )
    starved = replace(res, per_type=[res.per_type[0], {**res.per_type[1], "served_fraction": 0.5}])
    check_served(spec, starved)  # a baseline has no parameters to refuse
    dgp = PlacementSpec("dgp", parse_cluster("3x3"), SMALL)
    with pytest.raises(DefaultsRefused, match="'star4' was served 50% of its jobs") as info:
        check_served(dgp, starved)
    assert info.value.result is starved
    check_served(PlacementSpec("dgp", parse_cluster("3x3"), SMALL, alpha=0.1), starved)
    check_served(PlacementSpec("dgp", parse_cluster("3x3"), SMALL, horizon=100.0), starved)


def test_place_compare_shows_a_refused_policy(sticky_local_bias):
    from cloudsched.experiments.place_compare import compare_placement

    out = compare_placement(
        parse_cluster("3x3"), SMALL, ["greedy", "dgp:local"], seed=1, horizon=None
    )
    assert set(out.refused) == {"dgp:local"}
    row = out.table.set_index("policy").loc["dgp:local"]
    assert math.isnan(row["cost_rate"]) and not row["steady_state"]
    assert "greedy" in out.results


def _wrap_exact_solvers(monkeypatch, wrap):
    """Wrap both exact frame solvers: patterns on one rack without CPU or memory limits,
    the per-node MILP elsewhere."""
    import cloudsched.placement.configuration as conf

    for name in ("exact_max_weight", "pattern_max_weight"):
        monkeypatch.setattr(conf, name, wrap(getattr(conf, name)))


def test_auto_frames_take_the_packing_where_it_is_proven_and_the_milp_otherwise(monkeypatch):
    """Where the MILP is cheap, ``auto`` tries the packing first and solves the MILP only
    when the packing does not reach its bound: every frame stays proven optimal, with fewer
    MILPs than frames (issue 43: 0.2-0.6 s a frame on 6x4 with the MILP alone)."""
    milps = []

    def counting(real):
        def solve(*args, **kwargs):
            milps.append(1)
            return real(*args, **kwargs)

        return solve

    _wrap_exact_solvers(monkeypatch, counting)
    res = simulate_placement(
        "maxweight",
        parse_cluster("3x3"),
        SMALL,
        horizon=200.0,
        rng=3,
        compare_bound=False,
        record=True,
    )
    frames = res.frame_table
    assert len(frames) > 100 and bool(frames["proven"].all())
    assert res.frames_not_optimal == 0
    assert 0 < len(milps) < len(frames)


def test_a_frame_whose_milp_runs_out_of_time_keeps_the_best_found_with_its_gap(monkeypatch):
    """A MILP stopped by ``--solver-time-limit`` may return a worse configuration than the
    packing tried first (here: none at all); the frame runs the packing's, with the
    tighter of the two bounds as its gap (issue 43)."""

    def out_of_time(real):
        def solve(cluster, topologies, values, counts, **kwargs):
            _, _, bound = real(cluster, topologies, values, counts, **kwargs)
            return [], False, bound  # no incumbent within the limit, a proven bound

        return solve

    _wrap_exact_solvers(monkeypatch, out_of_time)
    res = simulate_placement(
        "maxweight",
        parse_cluster("3x3"),
        SMALL,
        horizon=100.0,
        rng=3,
        compare_bound=False,
        record=True,
    )
    frames = res.frame_table
    busy = frames[frames["weight"] > 0]
    # without the packing kept, every frame that needed the MILP would run nothing
    assert len(busy) > 0.5 * len(frames)
    assert bool((frames["upper_bound"] >= frames["weight"] - 1e-9).all())
    assert res.frames_not_optimal > 0  # the MILP did not prove them: said, with the gap
    assert bool((frames.loc[~frames["proven"], "gap"] > 0).all())


def test_place_compare_shows_a_run_refused_after_it_ran_without_cost_or_gap():
    """dgp:uniform's defaults run on this 6x4 instance, far above the proven optimum; the
    row shows no cost or gap (the docs' '-'), the reason carries the cost (issue 45)."""
    tops = [chain(3), chain(4), star(4), tree(5)]
    jobs = [
        JobType(f"t{j}", rate, 1.0, t)
        for j, (t, rate) in enumerate(zip(tops, (1.0, 0.75, 0.75, 0.6), strict=True))
    ]
    from cloudsched.experiments.place_compare import compare_placement

    out = compare_placement(parse_cluster("6x4"), jobs, ["greedy", "dgp:uniform"], seed=1)
    assert (
        set(out.refused) == {"dgp:uniform"}
        and "above the static optimum" in out.refused["dgp:uniform"]
    )
    rows = out.table.set_index("policy")
    assert math.isnan(rows.loc["dgp:uniform", "cost_rate"])
    assert (
        math.isnan(rows.loc["dgp:uniform", "gap"]) and not rows.loc["dgp:uniform", "steady_state"]
    )
    assert rows.loc["greedy", "cost_rate"] > 0 and rows.loc["greedy", "gap"] > 0
    assert "dgp:uniform" in out.results  # the run itself, for JSON


def test_place_compare_progress_moves_within_each_run():
    """The bar moved only between policies (0%, 50%, ...) while each open-ended run took
    minutes; each run's own progress now moves it within the run's share (issue 45)."""
    from cloudsched.experiments.place_compare import compare_placement

    seen: list[tuple[float, str]] = []
    compare_placement(
        parse_cluster("3x3"),
        SMALL,
        ["storm-default", "greedy"],
        seed=1,
        progress=lambda f, s="": seen.append((f, s)),
    )
    second = [f for f, s in seen if s.startswith("greedy") and f >= 0]
    assert len(set(second)) >= 2  # more than the start of the run
    assert all(0.5 <= f <= 1.0 for f in second)
    assert [f for f, _ in seen if f >= 0] == sorted(f for f, _ in seen if f >= 0)
