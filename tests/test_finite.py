"""Finite-N predictions: the lumped exact chain, the refined mean field, the JIQ variants'
mean fields, round-robin's E_N/M/1 and speed classes (fast checks against oracles)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cloudsched.cli import main
from cloudsched.dispatch import predict
from cloudsched.dispatch.theory.exact import solve_exact
from cloudsched.dispatch.theory.finite import predict_finite
from cloudsched.dispatch.theory.finite_models import population_model
from cloudsched.dispatch.theory.population import refine
from cloudsched.dispatch.theory.speeds import predict_heterogeneous
from cloudsched.dispatch.theory.variants import round_robin_one_dispatcher, solve_variant
from cloudsched.testing.exact_chain import solve as brute_force


@pytest.mark.parametrize(
    ("policy", "n", "m", "replace"),
    [
        ("pod", 3, 1, True),
        ("pod", 3, 1, False),
        ("jsq", 3, 1, False),
        ("jiq", 3, 2, False),
        ("jiq-pod", 3, 2, False),
        ("jiq-pod", 3, 3, True),
        ("jiq", 3, 3, False),
        ("pod", 2, 1, True),
    ],
)
@pytest.mark.parametrize("load", [0.45, 0.8])
def test_lumped_chain_equals_the_labelled_chain(policy, n, m, replace, load):
    lumped = solve_exact(policy, n, load, m=m, d=2, replace=replace, cap=9)
    t, blocked = brute_force(policy, n, load, m=m, d=2, replace=replace, cap=9)
    assert lumped.mean_response_time == pytest.approx(t, rel=1e-10)
    assert lumped.truncation == pytest.approx(blocked, rel=1e-8, abs=1e-15)


def test_truncation_is_below_tol_and_grows_the_cap():
    sol = solve_exact("jsq", 3, 0.8, tol=1e-8)
    assert sol.truncation <= 1e-8 and sol.cap > 8
    assert solve_exact("random", 7, 0.8).mean_response_time == pytest.approx(5.0)


def _slope(policy, load, replace, r, sizes):
    """``N (exact_N - meanfield)`` in tasks per server, and the refined coefficient V."""
    model, pi = population_model(policy, load, r=r, d=2, replace=replace)
    ref = refine(model, pi)
    v = ref.tasks(1) - ref.tasks()
    m_of = (lambda n: round(n / r)) if policy.startswith("jiq") else (lambda n: 1)
    a = [
        n
        * (
            solve_exact(
                policy, n, load, m=m_of(n), d=2, replace=replace, tol=1e-11
            ).mean_response_time
            * load
            - ref.tasks()
        )
        for n in sizes
    ]
    return np.array(a), v


@pytest.mark.parametrize(
    ("policy", "replace", "r", "sizes", "tol"),
    [
        ("pod", True, 10.0, (3, 4), 2e-4),
        ("pod", False, 10.0, (4, 6), 1.5e-2),
        ("jiq-pod", True, 1.0, (3, 4), 1e-2),
    ],
)
def test_refined_coefficient_is_the_exact_chains_1_over_n_slope(policy, replace, r, sizes, tol):
    """E_N = MF + V/N + C/N^2: N (E_N - MF) -> V with an error ~ 1/N, so Richardson on two
    sizes must land on V (with and without replacement: the rate correction matters)."""
    a, v = _slope(policy, 0.5, replace, r, sizes)
    n1, n2 = sizes
    richardson = (n2 * a[1] - n1 * a[0]) / (n2 - n1)
    assert abs(richardson - v) < tol
    assert abs(a[1] - v) < abs(a[0] - v)  # the gap closes as N grows


def test_refined_is_exact_for_random_and_matches_the_known_pod2_values():
    model, pi = population_model("random", 0.7)
    assert refine(model, pi).tasks(5) == pytest.approx(0.7 / 0.3, rel=1e-9)
    model, pi = population_model("pod", 0.9, d=2, replace=True)
    ref = refine(model, pi)
    assert ref.tasks() == pytest.approx(2.3527, abs=1e-4)  # mean field, N -> infinity
    # the 1/N value at N = 10 (its V is checked against the exact chain above)
    assert ref.tasks(10) == pytest.approx(2.7513, abs=1e-4)


def test_predict_finite_picks_exact_when_small_and_refined_otherwise():
    small = predict_finite("pod", 3, [0.6], replace=True)[0]
    assert small.source == "exact" and small.refined is not None
    assert abs(small.exact - small.refined) < abs(small.exact - small.meanfield)
    big = predict_finite("jiq-pod", 200, [0.9], r=10)[0]
    assert big.source == "refined" and big.dispatchers == 20 and big.exact is None
    assert big.refined > big.meanfield  # finite N is worse than the limit


def test_variants_reduce_to_jiq():
    jiq = predict("jiq", [0.7, 0.95], r=5).mean_response_time
    for policy, kw in (("jiq-threshold", {"z": 0}), ("jiq-sq", {"d": 1})):
        got = [solve_variant(policy, lam, r=5, **kw).tasks / lam for lam in (0.7, 0.95)]
        assert got == pytest.approx(jiq, rel=1e-8)


def test_variant_messages_balance():
    """Every join is undone by a take or a delete: join = lam (1 - p0) + delete."""
    for policy, z in (("jiq-sq", 0), ("jiq-threshold", 1), ("jiq-threshold", 2)):
        s = solve_variant(policy, 0.8, r=10, z=z)
        assert s.join == pytest.approx(0.8 * (1 - s.p0) + s.delete, rel=1e-7)


def test_round_robin_one_dispatcher_is_e_n_m_1():
    assert round_robin_one_dispatcher(0.8, 1) == pytest.approx(5.0, rel=1e-12)  # M/M/1
    sigma = 1 - 1 / round_robin_one_dispatcher(0.8, 10**6)  # D/M/1: sigma = e^{-(1-s)/lam}
    assert sigma == pytest.approx(np.exp(-(1 - sigma) / 0.8), rel=1e-5)
    # E_2/M/1 in closed form: sigma solves sigma (2 lam + 1 - sigma)^2 = 4 lam^2
    lam = 0.6
    sig = 1 - 1 / round_robin_one_dispatcher(lam, 2)
    assert sig * (2 * lam + 1 - sig) ** 2 == pytest.approx(4 * lam**2, rel=1e-10)
    row = predict_finite("round-robin", 8, [lam], r=8)[0]
    assert row.source == "exact" and row.exact == pytest.approx(round_robin_one_dispatcher(lam, 8))


@pytest.mark.parametrize("policy", ["random", "pod", "jiq", "jiq-pod"])
def test_equal_speeds_reproduce_the_homogeneous_mean_field(policy):
    het = predict_heterogeneous(policy, 0.85, np.array([2.0, 2.0, 2.0]))
    assert het.mean_response_time * 2.0 == pytest.approx(
        predict(policy, [0.85]).mean_response_time[0], rel=1e-7
    )
    assert het.utilisation == pytest.approx([0.85], rel=1e-7)


def test_random_with_speeds_is_independent_mm1_queues():
    het = predict_heterogeneous("random", 0.4, np.array([0.5, 1.5]))  # lam = 0.4 per server
    t = (1 / (0.5 - 0.4) + 1 / (1.5 - 0.4)) / 2
    assert het.mean_response_time == pytest.approx(t, rel=1e-5)  # the solver's stated accuracy


def _cli(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def test_a_refined_value_says_what_it_leaves_out(capsys):
    """Pod(8) on 20 servers at load 0.9: refined 1.569 against 1.654 simulated
    (benchmarks/results/refined-remainder.csv), 0.086 off, within the 0.67 of its 1/N
    term (0.138) the note quotes; at N = 1000 what is left is under 1% and
    no note."""
    code, out, _ = _cli(capsys, "predict", "pod", "--servers", "20", "--d", "8", "--load", "0.9")
    assert code == 0 and "1/N term (0.138 at load 0.9)" in out
    assert "here 0.0922 (5.9% of 1.569)" in out
    code, out, _ = _cli(
        capsys, "predict", "pod", "--servers", "20", "--d", "8", "--load", "0.9", "--format", "json"
    )
    assert "at most 0.67 of the 1/N term" in json.loads(out)["notes"][0]
    code, out, _ = _cli(capsys, "predict", "pod", "--servers", "1000", "--load", "0.9")
    assert code == 0 and "refined" in out and "1/N^2" not in out


def test_cli_predict_at_n_servers(capsys):
    code, out, _ = _cli(
        capsys,
        "predict",
        "pod",
        "--servers",
        "3",
        "--load",
        "0.6",
        "--with-replacement",
        "--format",
        "json",
    )
    assert code == 0
    doc = json.loads(out)
    point = doc["points"][0]
    assert point["source"] == "exact" and point["truncation"] < 1e-6
    assert doc["params"]["with_replacement"] is True
    code, out, _ = _cli(capsys, "predict", "jsq", "--servers", "40", "--load", "0.6")
    assert code == 0 and "N -> infinity limit" in out
    code, _, err = _cli(
        capsys, "predict", "jiq-sq", "--servers", "40", "--load", "0.6", "--method", "refined"
    )
    assert code == 2 and "--method" in err
    code, _, err = _cli(capsys, "predict", "pod", "--load", "0.6", "--method", "exact")
    assert code == 2 and "--servers" in err
    code, out, _ = _cli(
        capsys, "predict", "jiq-pod", "--speeds", "1,3", "--load", "0.7", "--format", "csv"
    )
    header = out.splitlines()[0]
    assert code == 0 and "busy@1" in header and "busy@3" in header
    code, _, err = _cli(capsys, "predict", "random", "--speeds", "1,3", "--load", "0.7")
    assert code == 2 and "slowest class" in err


@pytest.mark.parametrize(
    ("policy", "n", "m", "cap"),
    [
        ("pod", 4, 1, 5),
        ("jsq", 3, 1, 7),
        ("jiq", 3, 3, 4),
        ("jiq", 4, 2, 3),
        ("jiq-pod", 5, 2, 3),
        ("jiq-pod", 3, 1, 6),
    ],
)
def test_the_state_count_is_the_chain_built(policy, n, m, cap):
    """Counted before building (levels, and partitions of the idle servers into I-queues)."""
    from cloudsched.dispatch.theory.exact import _solve_once, state_count

    assert state_count(policy, n, m, cap) == _solve_once(policy, n, m, 0.6, 2, False, cap).states


def test_an_exact_chain_too_large_is_refused_before_it_is_built(capsys, monkeypatch):
    """The issue's case printed nothing for minutes; now the count decides at once."""
    import cloudsched.dispatch.theory.exact as exact

    built = []
    monkeypatch.setattr(exact, "_solve_once", lambda *a: built.append(a))
    code, out, err = _cli(
        capsys, "predict", "pod", "--servers", "20", "--load", "0.9", "--method", "exact"
    )
    assert code == 2 and err.count("\n") == 1 and not out
    assert "at 8 tasks per server it has 3,108,105" in err and "refined" in err
    assert built == []


def test_a_chain_the_solver_cannot_finish_is_refused(monkeypatch):
    import cloudsched.dispatch.theory.exact as exact
    from cloudsched.errors import ParameterError

    def stuck(*args):
        raise ArithmeticError("the exact chain's solve did not converge in 1000 iterations")

    monkeypatch.setattr(exact, "_solve_once", stuck)
    with pytest.raises(ParameterError, match=r"did not converge .*use --method refined"):
        solve_exact("pod", 3, 0.9)


def test_the_exact_chain_says_what_it_is_doing():
    calls = []
    predict_finite(
        "pod",
        3,
        [0.8],
        method="exact",
        progress=lambda fraction, status: calls.append((fraction, status)),
    )
    said = [status for _, status in calls]
    assert said and said[0].startswith("exact chain: ")
    assert "states at 8 tasks per server" in said[0]
    assert all(fraction < 0 for fraction, _ in calls)  # a search: no share done to tell


def test_a_refined_model_too_large_to_solve_is_refused_or_skipped_at_once():
    """jiq with r = 1000 at load 0.5 has about 6,000 I-queue equations (tens of GB and
    hours to expand; r = 10^6 filled 24 GB): ``--method refined`` is refused in one line
    naming --r, ``auto`` falls back to the mean field and says why."""
    from cloudsched.dispatch.theory.finite import MAX_REFINED_EQUATIONS
    from cloudsched.dispatch.theory.finite_models import population_size
    from cloudsched.errors import ParameterError

    assert population_size("jiq", 0.5, 1000.0, 1) > MAX_REFINED_EQUATIONS
    with pytest.raises(ParameterError, match="r must be small enough for the refined"):
        predict_finite("jiq", 10**6, [0.5], r=1000.0, method="refined")
    (auto,) = predict_finite("jiq", 10**6, [0.5], r=1000.0)
    assert auto.source == "meanfield" and auto.refined is None
    (small,) = predict_finite("jiq", 10**6, [0.5], r=10.0)  # the same at a size it solves
    assert small.source == "refined" and small.refined is not None
