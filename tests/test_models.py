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


@pytest.mark.parametrize("name", list(TABLE))
def test_mean_field_and_relaxation_of_every_row(name):
    from cloudsched.dispatch.theory.relaxation import relaxation_time

    pred = predict(name, [0.7], d=2, r=5.0)
    assert 1.0 <= pred.mean_response_time[0] < 10.0
    assert math.isfinite(relaxation_time(name, 0.7, servers=100, r=5.0, d=2))


@pytest.mark.parametrize("name", list(TABLE))
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


@pytest.mark.parametrize("name", list(TABLE))
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
        if model.meanfield == "limit":
            continue
        a, b = (predict(name, [0.8], r=5.0, d=d).mean_response_time[0] for d in (1, 3))
        assert (a != b) == (model.probes == "d" or name == "jiq-sq"), name


def _membership_lists(tree: ast.AST) -> list[tuple[int, list[str]]]:
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.In | ast.NotIn) and isinstance(
                right, ast.Tuple | ast.List | ast.Set
            ):
                names = [
                    e.value for e in right.elts if isinstance(e, ast.Constant) and e.value in TABLE
                ]
                if len(names) >= 2:
                    out.append((node.lineno, names))
    return out


def test_no_module_keeps_its_own_list_of_model_facts():
    """``policy in ("jiq", "jiq-pod")`` is a fact of the table; only the independent
    oracles in ``cloudsched.testing`` (which must not read what they check) name lists."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "testing":
            continue
        lists = _membership_lists(ast.parse(path.read_text()))
        if lists:
            found[str(rel)] = lists
    assert not found, f"policy lists that belong in theory/models.py: {found}"


def test_sweep_predict_kind_covers_every_row(tmp_path):
    """A sweep of kind predict reaches every model (jiq-sq failed before: the kind called
    the closed forms only), and the finite-N models at ``servers``."""
    from cloudsched.experiments.sweep import run_sweep
    from cloudsched.experiments.sweep_spec import load_spec

    path = tmp_path / "p.yaml"
    path.write_text(
        f"kind: predict\nfixed: {{load: 0.8, r: 5.0}}\ngrid: {{policy: [{', '.join(TABLE)}]}}\n"
    )
    df = run_sweep(load_spec(path), tmp_path / "s").set_index("param.policy")
    assert sorted(df.index) == sorted(TABLE)
    for name in TABLE:
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
