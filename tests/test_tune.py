"""cloudsched tune: mean-field quantiles, the p99 interval, and the search end to end."""

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from cloudsched.cli import main
from cloudsched.experiments.compare import meanfield_quantile
from cloudsched.experiments.tune import metric_interval, tune


@pytest.mark.parametrize("load", [0.3, 0.7, 0.95])
def test_meanfield_p99_is_exact_where_the_law_is_known(load):
    # random routing: M/M/1 per server, response time Exp(1 - load)
    assert meanfield_quantile("random", load, 10, 1) == pytest.approx(
        math.log(100) / (1 - load), rel=1e-9
    )
    # JSQ in the limit never queues: the response time is the service time, Exp(1)
    assert meanfield_quantile("jsq", load, 10, 2) == pytest.approx(math.log(100), rel=1e-9)
    # JIQ with r -> infinity would be JSQ; with r = 10 its p99 lies between JSQ and random
    jiq = meanfield_quantile("jiq", load, 10, 1)
    assert math.log(100) < jiq < math.log(100) / (1 - load)


def test_meanfield_quantile_orders_the_policies_like_their_means():
    q = {p: meanfield_quantile(p, 0.9, 10, 2, q=0.9) for p in ("pod", "jiq", "jiq-pod")}
    assert q["jiq-pod"] < q["jiq"] < q["pod"]


def test_sectioned_p99_interval_covers_the_true_quantile():
    """Exp(1) samples: true p99 = ln 100; 95% intervals cover it about 95% of the time."""
    rng = np.random.default_rng(5)
    hits = 0
    for _ in range(200):
        run = SimpleNamespace(response_times=rng.exponential(size=20_000), steady_state=True)
        _, lo, hi = metric_interval(run, "p99")
        hits += lo <= math.log(100) <= hi
    # binomial(200, 0.95): below 182 has probability < 0.2% (a wrong width fails)
    assert hits >= 182


def test_tune_finds_the_exact_answer_for_random_routing():
    """Random routing at total rate R on N servers: p99 = ln(100) / (1 - R/N) exactly, so the
    smallest N meeting the target is known; the search must find it or just above it."""
    rate, target = 400.0, 12.0
    exact = math.ceil(rate / (1 - math.log(100) / target))
    res = tune(
        rate=rate, target=target, servers=(401, 2000), policies=["random"], seed=1, precision=0.02
    )
    (best,) = res.certified
    assert best["servers"] >= exact and best["high"] <= target
    # certified, not wasteful: the true p99 there is within three half-widths of the target
    # (certification needs the upper end below it, and noise near the boundary adds steps)
    true_p99 = math.log(100) / (1 - rate / best["servers"])
    assert true_p99 >= target - 3 * (best["high"] - best["low"]) / 2
    assert best["messages_per_task"] == 0
    assert any(f"N >= {exact}" in line for line in res.log)  # the mean-field bound is exact


def test_tune_respects_the_message_limit():
    res = tune(
        rate=90.0,
        target=3.0,
        metric="mean",
        servers=(91, 400),
        policies=["pod", "jiq"],
        ds=[2],
        max_messages=1.0,
        seed=2,
    )
    assert [c["policy"] for c in res.certified] == ["jiq"]
    pod = next(c for c in res.candidates if c["policy"] == "pod")
    assert pod["status"].startswith("pruned: mean field sends 2")


def test_a_message_limit_met_only_on_more_servers_is_searched_for():
    """jiq-pod sends fewer probes per task on more servers (more idle ones): a limit it
    misses at its mean-field bound but meets further up is found by stepping up."""
    res = tune(
        rate=90.0,
        target=3.0,
        metric="mean",
        servers=(91, 400),
        policies=["jiq-pod"],
        ds=[2],
        max_messages=1.5,
        seed=2,
    )
    (best,) = res.certified
    assert best["messages_per_task"] <= 1.5
    assert any("messages per task" in line for line in res.log)  # it did fail lower down


def test_tune_on_a_shipped_access_log_meets_the_target(capsys):
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "tune",
                "--trace",
                "haproxy-sample",
                "--p99",
                "300",
                "--unit",
                "ms",
                "--rate",
                "200",
                "--servers",
                "1:100",
                "--policy",
                "jiq-pod",
                "--policy",
                "pod",
                "--d",
                "2",
                "--format",
                "json",
            ]
        )
    doc = json.loads(capsys.readouterr().out)
    assert exc.value.code == 0 and doc["unit"] == "ms" and doc["target"] == 300
    assert [c["policy"] for c in doc["certified"]] == ["jiq-pod", "pod"]
    for c in doc["certified"]:
        assert c["high"] <= 300 and c["replay"] <= 300  # certified, and on the log itself
    assert doc["certified"][0]["servers"] < doc["certified"][1]["servers"]


def test_tune_table_and_bad_input(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["tune", "jiq-pod", "--mean", "2", "--rate", "50", "--servers", "51:200", "--d", "2"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "best" in out and "search:" in out
    with pytest.raises(SystemExit) as exc:  # the older --policy form: the same answer
        main(
            [
                "tune",
                "--mean",
                "2",
                "--rate",
                "50",
                "--servers",
                "51:200",
                "--policy",
                "jiq-pod",
                "--d",
                "2",
            ]
        )
    assert exc.value.code == 0 and capsys.readouterr().out == out
    assert max(len(line) for line in out.splitlines() if not line.startswith(("how", "  "))) <= 80
    for args, name in (
        (["--rate", "5"], "--p99/--mean"),
        (["--p99", "3", "--rate", "5", "--servers", "9:3"], "--servers"),
        (["--p99", "3", "--rate", "5", "--unit", "ms"], "--unit"),
    ):
        with pytest.raises(SystemExit) as exc:
            main(["tune", *args])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and err.startswith(f"error: {name}") and err.count("\n") == 1


def test_a_setting_gets_the_same_numbers_whatever_else_is_searched():
    kw = {"rate": 90.0, "target": 2.0, "metric": "mean", "servers": (91, 300), "seed": 3}
    alone = tune(policies=["jiq-pod"], ds=[2], **kw).certified[0]
    among = next(
        c
        for c in tune(policies=["pod", "jiq-pod"], ds=[3, 2], **kw).certified
        if c["candidate"] == "jiq-pod d=2"
    )
    assert (alone["servers"], alone["estimate"]) == (among["servers"], among["estimate"])


def test_setting_grid_varies_each_parameter_only_where_it_means_something():
    from cloudsched.experiments.compare import setting_grid

    grid = setting_grid(
        ["jiq-threshold", "pod", "random", "jiq"],
        [0.5],
        ds=[2, 3],
        rs=[5.0, 10.0],
        thresholds=[0, 2],
    )
    by = {}
    for g in grid:
        by.setdefault(g["policy"], []).append((g["d"], g["threshold"], g["r"]))
    assert sorted(by["jiq-threshold"]) == [(None, z, r) for z in (0, 2) for r in (5.0, 10.0)]
    assert sorted(by["pod"]) == [(2, None, 5.0), (3, None, 5.0)]  # no dispatcher state
    assert by["random"] == [(None, None, 5.0)]
    assert sorted(by["jiq"]) == [(None, None, 5.0), (None, None, 10.0)]


def test_a_threshold_of_zero_is_run_as_zero():
    """z = 0 is a threshold (servers report only when empty), not 'no threshold'."""
    from cloudsched.experiments.compare import compare

    pairs = compare(["jiq-threshold"], [0.7], servers=50, thresholds=[0, 2], tasks=20_000, seed=1)
    assert [res.threshold for _, res in pairs] == [0, 2]
    assert [row["threshold"] for row, _ in pairs] == [0, 2]


def test_a_small_farm_skips_a_d_that_does_not_fit_yet():
    """The issue's case: --rate 1.5 starts at N = 2, where d = 3 cannot probe 3 servers."""
    res = tune(
        rate=1.5, target=10.0, servers=(1, 50), policies=("pod", "jiq-pod"), ds=(2, 3), seed=1
    )
    names = {(c["policy"], c["d"]): c for c in res.certified}
    assert ("pod", 3) in names and ("jiq-pod", 3) in names
    assert names[("pod", 3)]["servers"] >= 3
    assert any("fits from N = 3" in line for line in res.log)


def test_a_d_that_never_fits_is_skipped_not_fatal():
    res = tune(rate=0.5, target=10.0, servers=(1, 3), policies=("pod",), ds=(2, 8), seed=1)
    skipped = [c for c in res.candidates if c["d"] == 8]
    assert skipped[0]["status"].startswith("skipped: does not fit N <= 3")
    assert [c["d"] for c in res.certified] == [2]


@pytest.mark.parametrize(("metric", "target", "floor"), [("p99", 4.5, "4.605"), ("mean", 1.0, "1")])
def test_a_target_below_the_service_times_alone_is_refused(metric, target, floor):
    from cloudsched.errors import ParameterError

    with pytest.raises(ParameterError, match=f"{metric} must be above {floor} mean service"):
        tune(rate=5.0, target=target, metric=metric, servers=(6, 20))


def test_an_impossible_target_on_a_log_is_refused_in_its_unit(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["tune", "--trace", "nginx-sample", "--p99", "5", "--unit", "ms"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert err.startswith("error: --p99 must be above ") and " ms, the p99 of the service" in err


def test_a_production_balancer_is_tuned_as_one_proxy_with_its_options():
    """As compare runs them: one proxy (r = N) unless --r is given, and -o options reach
    the candidates that have them (a shorter EWMA decay changes the run from the same
    stream; pod, which has no options, is untouched)."""
    kw = {"rate": 20.0, "target": 12.0, "metric": "p99", "servers": (22, 40), "seed": 2}
    plain = tune(policies=["ewma", "pod"], ds=[2], **kw)
    short = tune(policies=["ewma", "pod"], ds=[2], policy_options=["decay=20ms"], **kw)
    proxies = tune(policies=["ewma"], rs=[2.0], **kw)
    by = {
        run: {c["policy"]: c for c in res.certified}
        for run, res in (("plain", plain), ("short", short), ("proxies", proxies))
    }
    ewma = by["plain"]["ewma"]
    assert ewma["r"] == ewma["servers"]  # one proxy
    assert by["proxies"]["ewma"]["r"] == 2.0
    assert by["short"]["ewma"]["estimate"] != ewma["estimate"]
    assert by["short"]["pod"]["estimate"] == by["plain"]["pod"]["estimate"]


@pytest.mark.parametrize(
    ("extra", "name"),
    [
        (["-o", "decay=1s"], "--option"),  # pod takes no options
        (["--slowdown", "2:0.5@1-2"], "--slowdown"),  # a fraction above 1
    ],
)
def test_tune_refuses_bad_options_before_the_first_run(capsys, extra, name):
    with pytest.raises(SystemExit) as exc:
        main(["tune", "pod", "--p99", "9", "--rate", "5", "--servers", "6:20", *extra])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.startswith(f"error: {name}") and err.count("\n") == 1


def test_tune_reports_its_progress_by_candidate():
    """tune's bar stayed at 0% for its whole run; it now moves by candidate (issue 45)."""
    seen: list[float] = []
    tune(
        rate=4.0,
        target=6.0,
        metric="mean",
        servers=(5, 40),
        policies=["random", "pod"],
        ds=(2,),
        progress=lambda f, s="": seen.append(f),
    )
    assert seen == [0.0, 0.5]
