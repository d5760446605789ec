"""The theory's model table: one row per built-in policy, and every claim in it holds.

Each capability a row claims is exercised (the solver runs and gives a finite answer), and
each one it denies is refused with a one-line ParameterError: the table is what the code
does, not a description beside it.  The registry of simulated policies and the lab agree
with it, and no module keeps its own list of which policies have which model.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from cloudsched.dispatch import predict
from cloudsched.dispatch.plugin import registered
from cloudsched.dispatch.policies import POLICIES
from cloudsched.errors import ParameterError
from cloudsched.policy_table import TABLE, get_row, with_capability

SRC = Path(__file__).resolve().parents[1] / "src" / "cloudsched"


def test_every_builtin_policy_has_a_row_and_the_registry_agrees():
    assert list(TABLE) == list(POLICIES)
    for name, policy in registered().items():
        if policy.source:  # a plug-in loaded by another test
            continue
        model = TABLE[name]
        assert policy.iqueues == model.iqueues, name
        assert policy.meanfield == (name if model.closed_form else None), name
        assert policy.relaxation == model.relaxation, name
        assert TABLE[model.relaxation].relaxation == model.relaxation  # a proxy has its own
        assert (policy.d == "servers") == (model.probes == "d"), name
        lacks = not (model.fluid and model.refined and model.speed_classes and model.exact == "any")
        assert bool(model.why) == lacks, f"{name}: say why a model is missing, and only then"


def test_unknown_policy_is_refused_naming_the_models():
    with pytest.raises(ParameterError, match="policy must be one of random, round-robin"):
        get_row("nope")
    with pytest.raises(ValueError, match="capability must be one of"):
        with_capability("nope")


#: The rows with a mean field: every theory test below covers each of them.
MODELLED = [p for p, row in TABLE.items() if row.meanfield != "none"]


@pytest.mark.parametrize("name", list(TABLE))
def test_mean_field_and_relaxation_of_every_row(name):
    from cloudsched.dispatch.theory.relaxation import relaxation_time

    assert math.isfinite(relaxation_time(name, 0.7, servers=100, r=5.0, d=2))
    if TABLE[name].meanfield == "none":  # a row without a model yet: refused in one line
        with pytest.raises(ParameterError, match=f"for theory \\({name}: "):
            predict(name, [0.7], d=2, r=5.0)
        return
    pred = predict(name, [0.7], d=2, r=5.0)
    assert 1.0 <= pred.mean_response_time[0] < 10.0


NEW_ROW = """
from dataclasses import replace
from cloudsched import policy_table
from cloudsched.dispatch import builtin_policies, predict, simulate
from cloudsched.errors import ParameterError

row = replace(policy_table.TABLE["jiq"], policy="jiq-copy", meanfield="none", why="not yet")
policy_table.TABLE["jiq-copy"] = row
copy = type("JiqCopy", (builtin_policies.JoinIdleQueue,), {"__doc__": "A copy of jiq."})
builtin_policies._builtin("jiq-copy")(copy)
try:
    predict("jiq-copy", [0.7], r=5.0)
except ParameterError as exc:
    print(exc)
for engine in ("servers", "counts"):
    res = simulate("jiq-copy", servers=40, r=5, load=0.7, tasks=20000, rng=1, engine=engine)
    same = simulate("jiq", servers=40, r=5, load=0.7, tasks=20000, rng=1, engine=engine,
                    initial="empty")
    print(engine, res.initial, res.mean_response_time == same.mean_response_time)
"""


@pytest.mark.slow  # 20-140 s cold (its own kernels, or end to end): in the slow tier
def test_a_new_row_without_a_model_is_refused_by_theory_and_simulated():
    """A new built-in whose theory is not written yet (meanfield="none"): predict refuses it
    naming why; both engines its row lists run it (from an empty start), here a copy of jiq
    with jiq's numbers."""
    import subprocess
    import sys
    from dataclasses import replace

    out = subprocess.run(
        [sys.executable, "-c", NEW_ROW], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert "for theory (jiq-copy: not yet)" in out[0]
    assert out[1:] == ["servers empty True", "counts empty True"]
    with pytest.raises(ValueError, match="none: say why"):
        replace(TABLE["jiq"], meanfield="none", why="")


@pytest.mark.parametrize("name", MODELLED)
def test_finite_n_methods_follow_the_table(name):
    model = TABLE[name]
    kw = {"servers": 3, "r": 3.0, "d": 2}  # one dispatcher: round-robin's E_N/M/1 applies
    for method, has in (("refined", model.refined), ("exact", model.exact_at(1))):
        if has:
            (p,) = predict(name, [0.6], method=method, **kw)
            assert p.source == method and 1.0 <= p.value < 5.0
        else:
            with pytest.raises(ParameterError, match=f"method must be meanfield.* for {name}"):
                predict(name, [0.6], method=method, **kw)


@pytest.mark.parametrize("name", MODELLED)
def test_fluid_and_speed_classes_follow_the_table(name):
    from cloudsched.dispatch.theory.fluid import fluid_steady_state

    model = TABLE[name]
    if model.fluid:
        tasks = fluid_steady_state(name, 0.6, r=5.0, d=2).mean_tasks[-1]
        want = predict(name, [0.6], r=5.0, d=2).mean_response_time[0]
        assert tasks / 0.6 == pytest.approx(want, rel=1e-3)
    else:
        with pytest.raises(ParameterError, match="policy must be one of"):
            fluid_steady_state(name, 0.6, r=5.0, d=2)
    if model.speed_classes:
        (p,) = predict(name, [0.6], speeds=[2.0, 2.0], r=5.0)  # one class: the mean field / 2
        want = predict(name, [0.6], r=5.0).mean_response_time[0] / 2
        assert p.mean_response_time == pytest.approx(want, rel=1e-4)
    else:
        with pytest.raises(ParameterError, match="with speeds"):
            predict(name, [0.6], speeds=[1, 1, 2], r=5.0)


def test_effective_d_is_the_table_s():
    """pod and jiq-pod use d; the others behave as d = 1 whatever d is given."""
    for name, model in TABLE.items():
        if model.meanfield in ("limit", "none"):
            continue
        a, b = (predict(name, [0.8], r=5.0, d=d).mean_response_time[0] for d in (1, 3))
        assert (a != b) == (model.d is not None), name  # jiq-sq's d: the I-queues sampled


#: Modules that may name policies, and why: the independent oracles (they must not read
#: what they check) and the papers' figures, which name the curves each figure shows.
NAMING_ALLOWED = {
    "policy_table.py": "the table itself",
    "testing/": "independent oracles and checks for plug-in authors",
    "dispatch/engines/servers/mirror.py": "the per-server kernel's independent mirror",
    "dispatch/engines/servers/mirror_reports.py": "the mirror of the balancers fed by reports",
    "dispatch/engines/counts/mirror.py": "the count kernels' independent mirror",
    "dispatch/engines/delay/mirror.py": "the delay kernel's independent mirror",
    "experiments/jiq_figures.py": "the JIQ paper's figures: the curves each one shows",
    "experiments/demo_questions.py": "the README's first question: the policies it compares",
    "experiments/jiq_data.py": "the data behind those figures, curve by curve",
    "experiments/jiq_captions.py": "the captions of those figures, read off their curves",
    "experiments/trace_replay.py": "the paper's trace figure: the policies it replays",
    "experiments/reproduce.py": "'jiq' names the paper there (its section of the report)",
    "experiments/common.py": "'jiq' names the paper there (its citation)",
    "placement/": "graph placement: its own vocabulary (a 'random' workload), not these rows",
    "experiments/checklb.py": (
        "check-lb's own laws (random, least-request, round-robin, jiq, pod:D), parsed from "
        "--expect: what a log is tested against, not rows of the table"
    ),
    "experiments/checklb_laws.py": "check-lb's own laws (as experiments/checklb.py)",
    "warmup.py": "check-lb's laws whose checks run kernels of their own, compiled ahead",
    "experiments/checklb_identify.py": "check-lb's own laws (as experiments/checklb.py)",
    "experiments/checklb_panels.py": "check-lb's own laws (as experiments/checklb.py)",
    "experiments/checklb_edf.py": "check-lb's own laws: Envoy's wlr (as experiments/checklb.py)",
    "experiments/checklb_ewma.py": "check-lb's own laws: peak EWMA as pod:2 on costs (as above)",
    "experiments/checklb_advise.py": (
        "check-lb's own laws and each balancer's directive for them (as experiments/checklb.py)"
    ),
}


def _named_policies(tree: ast.AST) -> list[tuple[int, str, list[str]]]:
    """Policy names in tuples, lists, sets, dict keys and comparisons (either side)."""

    def names(nodes: list[ast.expr | None]) -> list[str]:
        return [
            n.value
            for n in nodes
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in TABLE
        ]

    out = []
    for node in ast.walk(tree):
        found: list[tuple[str, list[str]]] = []
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            found.append(("sequence", names(list(node.elts))))
        elif isinstance(node, ast.Dict):
            found.append(("dict key", names(list(node.keys))))
        elif isinstance(node, ast.Compare):
            found.append(("comparison", names([node.left, *node.comparators])))
        out += [(node.lineno, kind, hit) for kind, hit in found if hit]
    return out


def test_the_guard_catches_every_way_of_naming_a_policy():
    src = """
if policy == "jsq": pass
if "pod" != p: pass
if p in ("jiq", "jiq-pod"): pass
COUNTS = {"random": 0, "other": 1}
FOR_LAB = ["round-robin"]
SOME = {"jiq-sq"}
call("jiq-threshold")  # naming a policy to run it is not a fact about it
"""
    kinds = {(line, kind, tuple(hit)) for line, kind, hit in _named_policies(ast.parse(src))}
    assert kinds == {
        (2, "comparison", ("jsq",)),
        (3, "comparison", ("pod",)),
        (4, "sequence", ("jiq", "jiq-pod")),
        (5, "dict key", ("random",)),
        (6, "sequence", ("round-robin",)),
        (7, "sequence", ("jiq-sq",)),
    }


def test_no_module_keeps_its_own_list_of_policy_facts():
    """``policy in ("jiq", "jiq-pod")``, ``policy == "jsq"`` or ``{"pod": ...}`` state a fact
    the policy table holds (``cloudsched/policy_table.py``): the engines, theory, lab and
    commands read the table, or branch on what a row says (its pick, I-queues, probes).
    Only the modules of NAMING_ALLOWED may name policies, each for the reason given."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = str(path.relative_to(SRC))
        if any(rel == key or (key.endswith("/") and rel.startswith(key)) for key in NAMING_ALLOWED):
            continue
        hits = _named_policies(ast.parse(path.read_text()))
        if hits:
            found[rel] = hits
    assert not found, f"policy facts that belong in cloudsched/policy_table.py: {found}"


def test_every_allowed_module_still_names_policies():
    """An exception that is no longer needed is removed (the list stays honest)."""
    for key in NAMING_ALLOWED:
        if key == "policy_table.py":  # the rows name themselves by position
            continue
        paths = [SRC / key] if not key.endswith("/") else sorted((SRC / key).rglob("*.py"))
        assert any(_named_policies(ast.parse(p.read_text())) for p in paths), key


def test_sweep_predict_kind_covers_every_row(tmp_path):
    """A sweep of kind predict reaches every model (jiq-sq failed before: the kind called
    the closed forms only), and the finite-N models at ``servers``."""
    from cloudsched.experiments.sweep import run_sweep
    from cloudsched.experiments.sweep_spec import load_spec

    path = tmp_path / "p.yaml"
    path.write_text(
        f"kind: predict\nfixed: {{load: 0.8, r: 5.0}}\ngrid: {{policy: [{', '.join(MODELLED)}]}}\n"
    )
    df = run_sweep(load_spec(path), tmp_path / "s").set_index("param.policy")
    assert sorted(df.index) == sorted(MODELLED)
    for name in MODELLED:
        want = predict(name, [0.8], r=5.0).mean_response_time[0]
        assert df.loc[name, "mean_response_time"] == pytest.approx(want, rel=1e-12)
    path.write_text(
        "kind: predict\nfixed: {load: 0.8, servers: 3, r: 3.0}\ngrid: {policy: [jiq, jsq]}\n"
    )
    df = run_sweep(load_spec(path), tmp_path / "f").set_index("param.policy")
    assert set(df["source"]) == {"exact"}
    assert df.loc["jiq", "value"] == pytest.approx(predict("jiq", [0.8], servers=3, r=3.0)[0].value)


def test_predict_refuses_mixed_questions():
    with pytest.raises(ParameterError, match="speeds must be without servers"):
        predict("pod", [0.5], servers=10, speeds=np.array([1.0, 2.0]))
    with pytest.raises(ParameterError, match="method must be given with servers"):
        predict("pod", [0.5], method="exact")
