"""What a placement run records: the placement log, MaxWeight's frames and their gaps."""

from pathlib import Path

import numpy as np
import pytest

from cloudsched.placement import JobType, chain, load_workload, parse_cluster, star
from cloudsched.placement.engine import EngineParams, PlacementEngine
from cloudsched.placement.maxweight import FrameController
from cloudsched.placement.policies import get_placement_policy
from cloudsched.placement.simulation import simulate_placement

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SMALL = [JobType("chain3", 1.0, 1.0, chain(3)), JobType("star4", 0.5, 1.0, star(4))]


def _running(table, t):
    return table[(table.start <= t) & (table.end.fillna(np.inf) > t)]


@pytest.mark.parametrize(
    ("policy", "kw"),
    [
        ("greedy", {}),
        ("dgp", {"proposal": "local"}),
        ("maxweight", {"frame": 0.3}),
        ("resource-aware", {}),
    ],
)
def test_the_placement_log_agrees_with_the_run(policy, kw):
    cluster = parse_cluster("3x3,1x2", racks=2)
    horizon = 400.0
    res = simulate_placement(
        policy,
        cluster,
        SMALL,
        horizon=horizon,
        warmup=0.0,
        record=True,
        compare_bound=False,
        rng=6,
        **kw,
    )
    tab = res.assignments
    assert len(tab) and set(tab.columns) >= {"job", "machine", "slot", "start", "end", "cost"}
    for t in np.linspace(0.5, horizon - 0.5, 80):
        now = _running(tab, t)
        assert not now.duplicated(["machine", "slot"]).any(), t
        held = now.groupby("machine").size()
        assert np.all(held.to_numpy() <= cluster.slots[held.index.to_numpy()])
    # the log's cost, integrated over the run, is the run's cost rate
    runs = tab.groupby(["job", "start"]).agg(end=("end", "first"), cost=("cost", "first"))
    ends = runs["end"].fillna(horizon).clip(upper=horizon).to_numpy()
    starts = runs.index.get_level_values("start").to_numpy()
    area = float(np.sum(runs["cost"].to_numpy() * (ends - starts)))
    assert area / horizon == pytest.approx(res.cost_rate, rel=1e-9, abs=1e-9)
    if policy != "maxweight":  # (MaxWeight also logs a moved job's new placement)
        assert tab.groupby("job")["start"].nunique().max() == 1
        assert len(runs) == res.placed


def test_a_moved_job_keeps_its_number():
    res = simulate_placement(
        "maxweight",
        parse_cluster("3x3"),
        SMALL,
        horizon=300,
        frame=0.2,
        alpha=1.0,
        f="log",
        record=True,
        warmup=0.0,
        rng=3,
    )
    assert res.migrations > 0
    tab = res.assignments
    moved = tab.groupby("job")["start"].nunique()
    assert (moved > 1).sum() > 0
    for job in moved[moved > 1].index[:20]:
        rows = tab[tab.job == job].groupby("start")["end"].first().sort_index()
        assert np.allclose(rows.to_numpy()[:-1], rows.index.to_numpy()[1:])  # back to back


def _frames(keep, solver):
    cluster = parse_cluster("50x12", racks=5)
    jobs = load_workload(EXAMPLES / "workload.yaml", rng=1)
    params = EngineParams(get_placement_policy("maxweight").code, alpha=9.5, f="identity")
    eng = PlacementEngine(cluster, jobs, params, 600.0, 0.0, 2, np.random.default_rng(4))
    ctl = FrameController(1.0, 9.5, "identity", 10.0, solver=solver, keep_proven=keep)
    ctl.start(eng)
    eng.advance(10**7)
    ctl.fill_kept(eng)
    return eng, ctl


def test_frames_kept_by_the_kernel_change_nothing():
    fast, ctl = _frames(True, "fast")
    slow, ref = _frames(False, "fast")
    assert ctl.solves < ref.solves  # some frames were kept without solving
    np.testing.assert_array_equal(fast.mt.cnt, slow.mt.cnt)
    np.testing.assert_allclose(fast.mt.acc, slow.mt.acc, rtol=1e-12)
    assert ctl.migrations == ref.migrations == 0  # running jobs on least-cost templates stay
    a, b = ctl.table(["x", "y", "z"]), ref.table(["x", "y", "z"])
    assert len(a) == len(b) == 599
    np.testing.assert_allclose(a["weight"], b["weight"])
    assert np.all(a["upper_bound"] >= a["weight"] - 1e-9) and np.all(a["gap"] >= 0)


def test_maxweight_records_every_frame_with_its_gap():
    res = simulate_placement(
        "maxweight",
        parse_cluster("4x4"),
        SMALL,
        horizon=200,
        frame=0.5,
        solver="fast",
        warmup=0.0,
        rng=1,
    )
    tab = res.frame_table
    assert len(tab) == 399 and np.allclose(np.diff(tab.time), 0.5)
    assert np.all(tab.upper_bound >= tab.weight - 1e-9)
    assert np.all((tab.gap >= 0) & (tab.gap <= 1.0 + 1e-12))
    assert np.all(tab.gap[tab.proven] == 0)
    assert res.frames == 399 and res.frame_gap_max == pytest.approx(tab.gap.max())


def test_the_final_placement_is_the_log_at_the_end():
    # alpha 0.5: templates are kept eagerly, so jobs run at the end
    res = simulate_placement(
        "dgp",
        parse_cluster("4x3"),
        SMALL,
        horizon=300,
        proposal="local",
        alpha=0.5,
        record=True,
        compare_bound=False,
        rng=8,
    )
    from cloudsched.placement.assignments import snapshot

    cols = ["job", "type", "node", "machine", "slot", "cost"]
    logged = snapshot(res.assignments, 300.0 - 1e-9)[cols].sort_values(["job", "node"])
    final = res.final_placement[cols].sort_values(["job", "node"])
    assert len(final) > 0
    np.testing.assert_array_equal(logged.to_numpy(), final.to_numpy())
