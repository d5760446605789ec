"""Message delays and stale views: the delay engine, its mirror, its mean field, the study."""

from __future__ import annotations

import math

import numpy as np
import pytest
from typer.testing import CliRunner

from cloudsched.cli import app, main
from cloudsched.dispatch import simulate
from cloudsched.dispatch.delays import Delay, Delays, parse_delays
from cloudsched.dispatch.engines.delay.engine import DelayRun
from cloudsched.dispatch.engines.delay.mirror import mirror_delay
from cloudsched.dispatch.engines.replication import RunSpec, initial_width
from cloudsched.dispatch.policies import get_policy
from cloudsched.dispatch.theory.delayed import delayed_meanfield
from cloudsched.dispatch.theory.meanfield import predict
from cloudsched.errors import ParameterError
from cloudsched.experiments.stale import stale_study

runner = CliRunner()
Z = 3.29  # two-sided 99.9%: a seeded check that fails one time in a thousand by chance


def _engine(policy, n, m, load, d, replace, delays, own, tasks, seed):
    spec = RunSpec(
        get_policy(policy), n, m, load, d, replace=replace, end_tasks=tasks, record=False
    )
    eng = DelayRun(spec, np.random.default_rng(seed), parse_delays(delays), own)
    while not eng.advance(10**7):
        pass
    return eng, eng.result(), initial_width(spec)


CASES = [
    ("pod", 12, 1, 0.9, 2, False, "info=0.5", False),
    ("pod", 12, 1, 0.9, 3, True, "info=exp:0.7", False),
    ("jsq", 12, 1, 0.9, 1, False, "info=1", False),
    ("jsq", 12, 1, 0.9, 1, False, "info=exp:1", False),
    ("jiq", 12, 3, 0.9, 1, False, "join=0.5", False),
    ("jiq", 12, 3, 0.9, 1, False, "join=exp:0.5,delete=exp:0.3", False),
    ("jiq-pod", 12, 3, 0.9, 2, False, "info=0.3,join=0.5,delete=0.2", False),
    ("pod", 12, 3, 0.9, 2, False, "", True),
    ("jsq", 12, 3, 0.9, 1, False, "", True),
    # tables that grow: the message heap, the levels, an I-queue, the task pool
    ("pod", 200, 1, 0.9, 2, False, "info=3", False),
    ("jsq", 10, 1, 0.99, 1, False, "info=20", False),
    ("jiq", 100, 1, 0.5, 1, False, "delete=0.5", False),
    ("jsq", 800, 4, 0.95, 1, False, "", True),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[6] or 'own'}-{c[1]}")
def test_engine_matches_its_plain_python_mirror_bit_for_bit(case):
    policy, n, m, load, d, replace, delays, own = case
    tasks = 4000
    eng, run, width = _engine(policy, n, m, load, d, replace, delays, own, tasks, 5)
    ref = mirror_delay(
        policy,
        n,
        m,
        load,
        d,
        replace,
        parse_delays(delays),
        own,
        tasks,
        width,
        np.random.default_rng(5),
    )
    used = run.batch_sum.size
    assert np.array_equal(run.batch_sum, ref.bsum[:used])
    assert np.array_equal(run.batch_count, ref.bcnt[:used])
    assert int(run.batch_count.sum()) == tasks
    assert np.array_equal(run.messages, ref.msg)
    assert np.array_equal(eng.st.q, ref.queues)
    levels = eng.st.cnt.size
    assert np.array_equal(run_joins(eng), ref.joins[:, :levels].sum(axis=0))
    if policy.startswith("jiq"):
        held = [sorted(eng.st.lists.entries[k, : eng.st.lists.size[k]].tolist()) for k in range(m)]
        assert held == [sorted(x) for x in ref.iqueues]
    if not own and policy != "jiq":
        assert np.array_equal(eng.st.board.val, ref.board)


def run_joins(eng):
    return eng.mt.hist.sum(axis=0)


def test_growth_cases_really_grow():
    """The last four cases above exercise each table's growth (else they prove nothing)."""
    eng, *_ = _engine("pod", 200, 1, 0.9, 2, False, "info=3", False, 4000, 5)
    assert eng.st.msgs.time.size > 1024
    eng, *_ = _engine("jsq", 10, 1, 0.99, 1, False, "info=20", False, 4000, 5)
    assert eng.st.cnt.size > 64
    eng, *_ = _engine("jiq", 100, 1, 0.5, 1, False, "delete=0.5", False, 4000, 5)
    assert eng.st.lists.entries.shape[1] > 64
    eng, *_ = _engine("jsq", 800, 4, 0.95, 1, False, "", True, 4000, 5)
    assert eng.st.tasks.next.size > 1024


@pytest.mark.parametrize("policy", ["pod", "jsq", "jiq", "jiq-pod"])
def test_no_delay_changes_nothing(policy):
    """Zero delays run the engines that always ran, with the same numbers."""
    kw = {"servers": 40, "load": 0.8, "tasks": 20_000, "rng": 3}
    kind = "join" if policy.startswith("jiq") else "info"
    plain = simulate(policy, **kw)
    zero = simulate(policy, delay=f"{kind}=0", **kw)
    assert zero.engine == plain.engine != "delay"
    a, b = plain.to_dict(), zero.to_dict()
    for key in ("events_per_second", "wall_seconds"):
        a.pop(key), b.pop(key)
    assert a == b


@pytest.mark.parametrize(
    ("policy", "delay"),
    [("pod", "info=1e-9"), ("jsq", "info=1e-9"), ("jiq", "join=1e-9"), ("jiq-pod", "join=1e-9")],
)
def test_vanishing_delay_gives_the_law_of_the_engine_without_delays(policy, delay):
    kw = {"servers": 50, "load": 0.85, "precision": 0.01}
    fresh = simulate(policy, rng=1, **kw)
    late = simulate(policy, rng=2, delay=delay, **kw)
    assert late.engine == "delay"
    h = [(r.ci95[1] - r.ci95[0]) / 2 / 1.96 for r in (fresh, late)]
    assert abs(fresh.mean_response_time - late.mean_response_time) <= Z * math.hypot(*h)
    if policy.startswith("jiq"):
        assert late.messages["stale"] < 1e-3


def test_stale_jsq_herds_while_pod2_stays_stable():
    """Mitzenmacher (2000), "How useful is old information?": with information a couple of
    service times old, sending to the least loaded server (as it looked) herds, worse than
    choosing at random, while the best of two stays close to its fresh value."""
    kw = {"servers": 100, "load": 0.9, "precision": 0.01}
    lo = {}
    for policy in ("jsq", "pod"):
        for delay in (0.0, 2.0):
            r = simulate(policy, rng=7, delay=f"info={delay}", **kw)
            lo[policy, delay] = r.ci95
    random_mean = 1.0 / (1.0 - 0.9)
    assert lo["jsq", 0.0][1] < lo["pod", 0.0][0]  # fresh: JSQ is better
    assert lo["jsq", 2.0][0] > lo["pod", 2.0][1]  # stale: JSQ is worse than pod(2)
    assert lo["jsq", 2.0][0] > random_mean  # ... and worse than reading nothing
    assert lo["pod", 2.0][1] < 0.5 * random_mean  # pod(2) keeps most of its benefit
    assert lo["pod", 2.0][1] < 1.5 * lo["pod", 0.0][0]


def test_own_counts_per_proxy_sit_between_global_and_random():
    kw = {"servers": 100, "load": 0.9, "precision": 0.01}
    glob = simulate("jsq", rng=1, **kw).ci95
    own = simulate("jsq", rng=2, dispatchers=10, view="own", **kw).ci95
    assert glob[1] < own[0] and own[1] < 1.0 / (1.0 - 0.9)


@pytest.mark.parametrize("delay", [0.5, 2.0])
def test_jiq_pod_mean_field_with_join_delay_matches_the_simulator(delay):
    """The join-delay mean field is the limit of the simulated model (no closure)."""
    theory = delayed_meanfield("jiq-pod", 0.9, delay, r=10, d=2)
    assert theory.converged and not theory.approximate
    sim = simulate(
        "jiq-pod", servers=1000, load=0.9, r=10, d=2, delay=f"join={delay}", rng=4, precision=0.004
    )
    half = (sim.ci95[1] - sim.ci95[0]) / 2 / 1.96
    assert abs(sim.mean_response_time - theory.mean_response_time) <= Z * half


@pytest.mark.slow
def test_jiq_mean_field_with_join_delay_matches_a_large_simulation():
    theory = delayed_meanfield("jiq", 0.9, 1.0, r=10)
    sim = simulate("jiq", servers=10_000, load=0.9, r=10, delay="join=1", rng=4, precision=0.003)
    half = (sim.ci95[1] - sim.ci95[0]) / 2 / 1.96
    assert abs(sim.mean_response_time - theory.mean_response_time) <= Z * half


def test_delayed_mean_field_limits():
    for policy, kw in (("pod", {"d": 2}), ("jiq", {}), ("jiq-pod", {"d": 3})):
        zero = delayed_meanfield(policy, 0.8, 0.0, **kw)
        assert zero.mean_response_time == pytest.approx(
            float(predict(policy, [0.8], d=kw.get("d", 1), r=10).mean_response_time[0]), rel=1e-12
        )
    # as the join delay grows, jiq-pod's I-queues run dry: it becomes pod(d)
    far = delayed_meanfield("jiq-pod", 0.8, 30.0, d=2)
    pod = float(predict("pod", [0.8], d=2).mean_response_time[0])
    assert far.mean_response_time == pytest.approx(pod, rel=2e-3)
    assert delayed_meanfield("pod", 0.8, 1.0).approximate
    with pytest.raises(ParameterError, match="herds"):
        delayed_meanfield("jsq", 0.8, 1.0)


def test_pod_closure_is_close_for_short_delays():
    """The closure's error, measured: within 2% of the simulator at delay 0.5 (N = 1000)."""
    theory = delayed_meanfield("pod", 0.9, 0.5, d=2)
    sim = simulate("pod", servers=1000, load=0.9, delay="info=0.5", rng=6, precision=0.005)
    assert abs(theory.mean_response_time / sim.mean_response_time - 1.0) < 0.02


def test_parse_and_refuse():
    d = parse_delays("info=0.5, join=exp:2")
    assert d.info == Delay(0.5, False) and d.join == Delay(2.0, True) and d.delete == Delay()
    assert parse_delays(["info=1", "delete=0"]) == Delays(info=Delay(1.0))
    assert str(parse_delays({"join": "exp:1"})) == "join=exp:1"
    for bad in ("info", "late=1", "info=-1", "info=exp:x", "info=nan"):
        with pytest.raises(ParameterError):
            parse_delays(bad)
    with pytest.raises(ParameterError, match="a kind jiq sends"):
        simulate("jiq", servers=10, load=0.5, tasks=100, delay="info=1")
    with pytest.raises(ParameterError, match="random"):
        simulate("round-robin", servers=10, load=0.5, tasks=100, delay="info=1")
    with pytest.raises(ParameterError, match="dispatchers"):
        simulate("pod", servers=10, load=0.5, tasks=100, view="own")
    with pytest.raises(ParameterError, match="never late"):
        simulate("pod", servers=10, load=0.5, tasks=100, view="own", dispatchers=2, delay="info=1")
    with pytest.raises(ParameterError, match="exp service"):
        simulate("pod", servers=10, load=0.5, tasks=100, delay="info=1", service="det")
    with pytest.raises(ParameterError, match="engine"):
        simulate("pod", servers=10, load=0.5, tasks=100, engine="delay")


def test_cli_simulate_and_stale():
    res = runner.invoke(
        app,
        [
            "simulate",
            "jiq",
            "--servers",
            "30",
            "--load",
            "0.8",
            "--delay",
            "join=1",
            "--tasks",
            "20000",
            "--seed",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "join=1 / shared" in res.output and "cloudsched stale" in res.output
    res = runner.invoke(
        app,
        [
            "stale",
            "--servers",
            "30",
            "--load",
            "0.8",
            "--delays",
            "0,2",
            "--no-theory",
            "--format",
            "json",
        ],
    )
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["simulate", "pod", "--servers", "9", "--load", "0.8", "--delay", "info=x"], "--delay"),
        (["simulate", "jsq", "--servers", "9", "--load", "0.8", "--view", "all"], "--view"),
        (
            ["stale", "--policy", "jiq"],
            "--policy must be one of jsq, pod, jiq-pod (pod and jiq-pod as pod:D)",
        ),
        (["stale", "--kind", "probe"], "--kind must be one of info, join"),
        (["stale", "--delays", "0,x"], "--delays must be comma-separated numbers"),
        (["stale", "--delays", "-1"], "--delays must be in [0"),
    ],
)
def test_bad_input_is_one_line(capsys, argv, fragment):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and fragment in err, err


def test_stale_study_findings_follow_the_rows(tmp_path):
    study = stale_study(servers=50, load=0.9, delays=[0.0, 3.0], theory=False, seed=2)
    by = {(r["policy"], r["delay"]): r for r in study.rows}
    assert by["jsq", 0.0]["ci95_high"] < by["pod(2)", 0.0]["ci95_low"]
    assert by["jsq", 3.0]["ci95_low"] > by["pod(2)", 3.0]["ci95_high"]
    assert any("jsq is better than pod(2)" in f and "3 mean" in f for f in study.findings)
    from cloudsched.plotting import plot_stale

    plot_stale(study.rows, study.random_mean, tmp_path / "s.png", kind="info")
    assert (tmp_path / "s.png").stat().st_size > 1000


def test_a_theory_outside_the_simulated_interval_is_named():
    """The delayed mean field is the N -> infinity limit (a closure for pod): where it
    leaves the simulated interval the rows are marked and a finding says so."""
    from cloudsched.experiments.stale import StaleStudy, findings

    def row(delay, mean, theory, source="approximate (closure)"):
        inside = None if theory is None else abs(theory - mean) <= 0.05
        return {
            "policy": "pod(2)",
            "delay": delay,
            "ci95_low": mean - 0.05,
            "ci95_high": mean + 0.05,
            "theory": source,
            "theory_in_interval": inside,
        }

    study = StaleStudy(100, 0.9, "info", False)
    study.rows = [row(0.0, 2.64, 2.614, "mean field (N = inf)"), row(1.0, 3.22, 3.10)]
    (got,) = findings(study)
    assert "pod(2) is outside the simulated mean's 95% interval at delay 1 (marked *)" in got
    assert "N -> infinity limit and a closure" in got and "N = 100" in got
    study.rows = [row(0.0, 2.64, 2.614, "mean field (N = inf)"), row(1.0, 3.22, None, "-")]
    assert findings(study) == []


def test_every_delayed_row_of_the_model_table_runs_and_the_others_refuse():
    from cloudsched.policy_table import TABLE

    for policy, model in TABLE.items():
        if model.delayed:
            p = delayed_meanfield(policy, 0.7, 0.5, d=2)
            assert math.isfinite(p.mean_response_time) and p.converged
            assert p.approximate == model.delayed.endswith("closure")
        else:
            with pytest.raises(ParameterError):
                delayed_meanfield(policy, 0.7, 0.5)
