"""``check-lb`` on logs as production writes them: rotated windows, the upstream's own times,
lines that do not parse, draws with unequal probability, and p-values calibrated over many
logs.

The logs come from :mod:`cloudsched.testing.balancer_logs` (a proxy simulated with a known
policy); the statistical checks over many logs are in the slow tier.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from cloudsched.cli import main
from cloudsched.dispatch.workload.logfiles import TraceError
from cloudsched.dispatch.workload.upstreams import read_upstream_log
from cloudsched.experiments.checklb import check_lb
from cloudsched.experiments.checklb_counts import levels_at_arrivals, levels_by_numpy, window_edges
from cloudsched.experiments.checklb_laws import uniforms
from cloudsched.testing.balancer_logs import balancer_log


def _log(tmp_path, name, lines, fmt="nginx", **kw):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    if fmt == "nginx":
        kw.setdefault("end_slack", 0.0)  # the simulated proxy's times are exact
    return read_upstream_log(path, fmt, **kw)


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_counts_are_the_reference_counts(seed):
    """Whole milliseconds (many sends and ends at one instant), any slack, any order."""
    rng = np.random.default_rng(seed)
    n, k = 3000, int(rng.integers(2, 12))
    sent = 1.7e9 + rng.integers(0, 2000, n) / 1e3
    end = sent + rng.integers(0, 50, n) / 1e3
    up = rng.integers(0, k, n)
    for slack in (0.0, 1e-3, 0.0125):
        fast = levels_at_arrivals(sent, end, up, k, slack)
        assert np.array_equal(fast, levels_by_numpy(sent, end, up, k, slack))


def test_a_window_knows_the_counts_of_every_arrival_it_keeps(tmp_path):
    """A rotated log (the lines written in the middle 40% of a run) rebuilds, at every
    arrival away from its edges, the counts the whole run gives; arrivals at the edges
    (some of whose counts the window gets wrong) are the ones left out."""
    common = dict(k=6, load=0.95, requests=4000, seed=8, mean_service=0.05)
    full = _log(tmp_path, "full.log", balancer_log("pod:2", **common))
    part = _log(tmp_path, "part.log", balancer_log("pod:2", **common, window=(0.3, 0.7)))
    names = list(full.names)
    rows = np.searchsorted(full.sent, part.sent, sorter=np.argsort(full.sent))
    rows = np.argsort(full.sent)[rows]
    assert np.allclose(full.sent[rows], part.sent, atol=1e-6, rtol=0)
    whole = levels_at_arrivals(full.sent, full.end, full.upstream, len(names))[rows]
    perm = [names.index(u) for u in part.names]  # the window's upstream order in the full's
    window = levels_at_arrivals(part.sent, part.end, part.upstream, len(names))
    seen = whole[:, perm[: window.shape[1]]]
    edges = window_edges(part.sent, part.end, 0.0)
    wrong = np.any(seen != window[:, : len(part.names)], axis=1)
    assert not np.any(wrong & ~edges)  # every arrival kept has the run's counts
    assert wrong.sum() > 10 and edges.sum() < 0.2 * part.sent.size  # the edges were needed


def test_unequal_draws_in_power_of_two_choices_are_caught(tmp_path):
    """Envoy's P2C draws from a host list in which a host can appear twice: upstream 0
    drawn twice as often as each other one is found on 3,000 requests at 4 and 16
    upstreams, with and without replacement, by how often each upstream is chosen given
    the counts it had; the same logs drawn fairly pass."""
    for law, k in [("pod:2r", 4), ("pod:2", 16), ("pod:2r", 16)]:
        common = dict(k=k, load=0.8, requests=3000, seed=k)
        res = check_lb(_log(tmp_path, "b.log", balancer_log(law, **common, bias=2.0)), law)
        assert not res.consistent and res.draws_p < 1e-6, (law, k, res.verdict)
        assert f"the upstreams are not drawn as {law} draws them" in res.verdict
        fair = check_lb(_log(tmp_path, "f.log", balancer_log(law, **common)), law)
        assert fair.consistent, (law, k, fair.verdict)


def test_nginx_counts_a_request_for_its_upstream_response_time(tmp_path):
    """NGINX writes the line after the response reached the client; the upstream is free
    (its connection count one less) when the upstream request ends.  With a mean 10 ms of
    client time on 100 ms of service, the upstream's own time gives least request back;
    the client's time alone rejects it, and the note says why."""
    lines = balancer_log("least-request", k=8, load=0.8, requests=6000, seed=2, client_time=0.01)
    upstream = _log(tmp_path, "u.log", lines)
    assert not upstream.client_times
    assert check_lb(upstream, "least-request").consistent
    client = _log(tmp_path, "c.log", lines, log_format="$msec $request_time $upstream_addr $rest")
    res = check_lb(client, "least-request")
    assert client.client_times and not res.consistent
    assert any("only the client's times" in n for n in res.notes)


def test_nginx_retries_count_for_the_last_upstream_from_the_end_of_the_others(tmp_path):
    path = tmp_path / "r.log"
    path.write_text(
        "1700000000.500 0.300 10.0.0.1:80, 10.0.0.2:80 502 0.100, 0.150\n"
        "1700000000.600 0.100 10.0.0.1:80 200 0.050\n"
    )
    log = read_upstream_log(path, "nginx")
    assert log.names == ("10.0.0.2:80", "10.0.0.1:80")
    assert log.sent == pytest.approx([1700000000.3, 1700000000.5], abs=1e-6)
    assert log.end - log.sent == pytest.approx([0.150, 0.050], abs=1e-6)


def test_lines_that_do_not_parse_are_counted_and_a_log_mostly_of_them_refused(tmp_path):
    good = balancer_log("random", k=4, load=0.7, requests=2000, seed=1)
    mixed = good + ["garbage line"] * 300
    log = _log(tmp_path, "m.log", mixed)
    assert log.unparsed == 300 and log.upstream.size == 2000
    res = check_lb(log, "random")
    assert "300 lines not in the log's format skipped" in res.notes
    with pytest.raises(TraceError, match=r"2001 of 4001 lines are not in the nginx format"):
        _log(tmp_path, "g.log", good + ["garbage"] * 2001)


def test_an_absurd_request_time_is_left_out_and_the_rest_still_ordered(tmp_path):
    """A request held 1e14 s used to make the rounding margin of the times huge, which
    switched off the rule that leaves out arrivals the clock cannot order."""
    lines = balancer_log("pod:2r", k=8, load=0.8, requests=3000, seed=5, mean_service=0.02)
    lines = [
        f"{float(a):.3f} {float(b):.3f} {rest}" for a, b, rest in (x.split(" ", 2) for x in lines)
    ]
    plain = check_lb(_log(tmp_path, "p.log", lines), "pod:2r")
    log = _log(tmp_path, "a.log", [*lines, "1700000999.000 100000000000000.000 10.0.0.1:8080 200"])
    assert log.absurd == 1 and log.upstream.size == 3000 and log.resolution == 1e-3
    res = check_lb(log, "pod:2r")
    assert any("held longer than a day" in n for n in res.notes)
    assert plain.left_out - plain.edges > 500  # milliseconds at 20 ms of service
    assert res.left_out - res.edges == plain.left_out - plain.edges  # the rule still applies


def test_the_transform_draws_differ_between_logs_and_repeat_on_one():
    class Log:
        def __init__(self, shift):
            self.sent = np.arange(10.0) + shift
            self.end = self.sent + 1
            self.upstream = np.arange(10) % 2

    a, b = uniforms(0, Log(0.0), 50), uniforms(0, Log(1e-3), 50)
    assert np.array_equal(a, uniforms(0, Log(0.0), 50)) and not np.allclose(a, b)
    assert not np.allclose(a, uniforms(1, Log(0.0), 50))


def test_the_cli_reads_windows_and_reports_each_upstream(tmp_path, capsys):
    path = tmp_path / "w.log"
    lines = balancer_log("least-request", k=6, load=0.9, requests=3000, seed=4, window=(0.2, 0.8))
    path.write_text("\n".join(lines) + "\n")
    argv = ["check-lb", str(path), "--expect", "least-request", "--end-slack", "0"]
    with pytest.raises(SystemExit):
        main([*argv, "--out", str(tmp_path / "w.json")])
    payload = json.loads((tmp_path / "w.json").read_text())
    assert payload["consistent"] and payload["left_out_at_edges"] > 0
    assert len(payload["per_upstream"]) == 6 and payload["in_flight_max_over_avg"] >= 1.0
    assert sum(row["share"] for row in payload["per_upstream"]) == pytest.approx(1.0)
    with pytest.raises(SystemExit):
        main([*argv, "--whole-run", "--out", str(tmp_path / "whole.json")])
    whole = json.loads((tmp_path / "whole.json").read_text())
    assert whole["left_out_at_edges"] == 0
    assert whole["requests"] > payload["requests"]  # the edges tested too
    with pytest.raises(SystemExit):
        main(argv)
    out = capsys.readouterr().out
    assert "each upstream, busiest first" in out and "p99_ms" in out
    assert "arrivals at the log's edges left out" in out


LAWS = ["random", "pod:2", "pod:2r", "least-request", "jiq", "round-robin"]


@pytest.mark.slow
def test_windows_of_every_law_are_accepted_at_the_nominal_rate(tmp_path):
    """Forty rotated logs per law (the middle 40% of a run: 16 upstreams, load 0.95, 20 ms
    of service, Envoy's millisecond clock): at alpha 0.01 a true law is rejected about once
    in a hundred logs (at most 8 of 240 with probability 0.999).  Read as whole runs, the
    same logs are rejected far more often (the edges' counts are wrong)."""
    rejected = whole = 0
    for law in LAWS:
        for seed in range(40):
            lines = balancer_log(
                law, k=16, load=0.95, requests=6000, seed=seed, mean_service=0.02,
                window=(0.3, 0.7), fmt="envoy",
            )  # fmt: skip
            log = _log(tmp_path, "w.log", lines, fmt="envoy")
            rejected += not check_lb(log, law).consistent
            whole += not check_lb(log, law, whole_run=True).consistent
    assert rejected <= stats.binom.ppf(0.999, 240, 0.01), rejected
    assert whole > 60, whole


@pytest.mark.slow
@pytest.mark.parametrize("law", ["random", "pod:2", "pod:2r", "pod:3", "least-request", "jiq"])
def test_p_values_are_uniform_over_conforming_logs(tmp_path, law):
    """Sixty conforming logs of different lengths: the level transform's p-values are
    uniform (KS), and the draws' are uniform or larger (the chi-square is conservative
    where choices are nearly certain).  Drawn from one stream per seed, as before, the
    transform's p-values of a deterministic law were fixed by the log's length alone."""
    transform, draws, old = [], [], []
    for seed in range(60):
        lines = balancer_log(law, k=8, load=0.8, requests=1500 + 10 * seed, seed=100 + seed)
        res = check_lb(_log(tmp_path, "c.log", lines), law)
        transform.append(res.transform_p)
        draws.append(res.draws_p)
        old.append(stats.kstest(np.random.default_rng(0).random(res.requests), "uniform").pvalue)
    assert stats.kstest(transform, "uniform").pvalue > 1e-3
    assert np.mean(np.array(draws) < 0.05) <= stats.binom.ppf(0.999, 60, 0.05) / 60
    assert stats.kstest(draws, "uniform", alternative="greater").pvalue > 1e-3  # not small
    if law == "least-request":
        assert stats.kstest(old, "uniform").pvalue < 1e-6


def test_the_batch_reader_reads_as_the_line_reader(tmp_path, monkeypatch):
    """Plain lines are read a batch at a time, every other line by the per-line reader:
    retries, a '-' upstream, garbage, blank lines, a colon-ended address, an absurd time,
    $msec of 0 (an error either way) and both NGINX formats give the same requests."""
    import cloudsched.dispatch.workload.upstream_fast as upstreams

    monkeypatch.setattr(upstreams, "BATCH", 97)  # batches end everywhere
    lines = balancer_log("pod:2", k=5, load=0.9, requests=1500, seed=6, milliseconds=True)
    odd = [
        "1700000001.500 0.300 10.0.0.1:80, 10.0.0.2:80 502 0.100, 0.150",
        "1700000001.600 0.100 - 502 -",
        "garbage",
        "",
        "1700000001.700 0.020 unix:/run/app.sock: 200 0.010",
        "1700000001.800 99999999.000 10.0.0.3:80 200 99999999.000",
        "1700000001.900 0.0200 10.0.0.4:80 200 0.0100",  # a finer clock in one line
    ]
    mixed = [x for pair in zip(lines, odd * 300, strict=False) for x in pair]
    path = tmp_path / "mixed.log"
    path.write_text("\n".join(mixed) + "\n")
    for fmt in (None, "$msec $request_time $upstream_addr $status $rest"):
        fast = read_upstream_log(path, "nginx", log_format=fmt)
        slow = read_upstream_log(path, "nginx", log_format=fmt, fast=False)
        for name in ("sent", "end", "upstream"):
            assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
        assert fast.names == slow.names and fast.resolution == slow.resolution == 1e-3
        assert (fast.dropped, fast.unparsed, fast.absurd) == (
            slow.dropped,
            slow.unparsed,
            slow.absurd,
        )
        assert fast.unparsed > 0 and fast.dropped > 0
    assert read_upstream_log(path, "nginx").absurd == mixed.count(odd[5])
    zero = tmp_path / "zero.log"
    zero.write_text(lines[0] + "\n0.000 0.010 10.0.0.1:80 200 0.005\n")
    for fast_path in (True, False):
        with pytest.raises(TraceError, match=r"zero.log:2: \$msec must be positive"):
            read_upstream_log(zero, "nginx", fast=fast_path)


def test_reading_a_long_log_reports_its_progress(tmp_path, monkeypatch):
    import cloudsched.dispatch.workload.upstream_fast as upstreams

    monkeypatch.setattr(upstreams, "BATCH", 500)
    path = tmp_path / "long.log.gz"
    import gzip

    lines = balancer_log("random", k=4, load=0.5, requests=5000, seed=1, milliseconds=True)
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    seen: list[float] = []
    read_upstream_log(path, "nginx", progress=seen.append)
    assert len(seen) == 10 and seen == sorted(seen) and 0.9 < seen[-1] <= 1.0


@pytest.mark.parametrize(
    ("law", "k"),
    [("random", 8), ("pod:2", 8), ("pod:2r", 8), ("pod:3", 6), ("least-request", 8), ("jiq", 8)],
)
def test_without_expect_the_law_is_named(tmp_path, law, k):
    """Each law is the most likely one on 5,000 requests (millisecond clock, load 0.8), by
    a clear margin, and equal draws are not called unequal."""
    from cloudsched.experiments.checklb_identify import CLEAR, identify

    lines = balancer_log(law, k=k, load=0.8, requests=5000, seed=3, milliseconds=True)
    found = identify(_log(tmp_path, "i.log", lines))
    assert found.law == law and found.evidence >= CLEAR, found.sentence
    assert found.draws is None, found.sentence


def test_identification_names_round_robin_and_unequal_draws(tmp_path):
    """Round robin by its sequence; pod:2r over 4 upstreams with upstream 0 drawn twice as
    often as each other (2/5 of the draws: 1.6x the average), and a random balancer with
    one of 8 drawn twice as often (2/9: 1.78x), both from the likelihood of the choices."""
    from cloudsched.experiments.checklb_identify import identify

    rr = balancer_log("round-robin", k=8, load=0.8, requests=3000, seed=3, milliseconds=True)
    assert identify(_log(tmp_path, "rr.log", rr)).law == "round-robin"
    lines = balancer_log("pod:2r", k=4, load=0.8, requests=5000, seed=3, bias=2.0)
    found = identify(_log(tmp_path, "b.log", lines))
    assert found.law == "pod:2r" and found.draws_p < 1e-6
    assert found.draws["10.0.0.1:8080"] == pytest.approx(1.6, abs=0.1), found.draws
    skewed = balancer_log("skewed", k=8, load=0.8, requests=5000, seed=3)
    found = identify(_log(tmp_path, "s.log", skewed))
    assert found.law == "random" and found.draws["10.0.0.1:8080"] == pytest.approx(16 / 9, abs=0.1)
    assert "drawn 1.7" in found.sentence or "drawn 1.8" in found.sentence


def test_the_cli_names_the_law_when_none_is_expected(tmp_path, capsys):
    path = tmp_path / "p.log"
    path.write_text("\n".join(balancer_log("pod:2r", k=6, load=0.8, requests=3000, seed=2)))
    with pytest.raises(SystemExit):
        main(["check-lb", str(path), "--end-slack", "0", "--out", str(tmp_path / "p.json")])
    payload = json.loads((tmp_path / "p.json").read_text())
    assert payload["identified"]["law"] == payload["expect"] == "pod:2r"
    assert payload["consistent"] and "check of fit" in payload["notes"][0]


def _both_readers(path, fmt):
    """The log read a batch at a time and line by line (an error: its one-line message)."""
    got = []
    for fast_path in (True, False):
        try:
            got.append(read_upstream_log(path, fmt, fast=fast_path))
        except TraceError as exc:
            got.append(str(exc))
    return got


@pytest.mark.parametrize("fmt", ["envoy", "haproxy"])
def test_envoy_and_haproxy_batches_read_as_their_lines(tmp_path, monkeypatch, fmt):
    """The batch reader's Envoy and HAProxy lines against the per-line reader, with lines
    it must leave to that reader: no upstream, aborted timers, another date first, a
    finer clock, an impossible date, seconds since the epoch, garbage."""
    import cloudsched.dispatch.workload.upstream_fast as upstreams

    monkeypatch.setattr(upstreams, "BATCH", 89)
    lines = balancer_log("least-request", k=5, load=0.9, requests=1200, seed=7, fmt=fmt)
    head = '"GET / HTTP/1.1" 200 - 0 10'
    odd = {
        "envoy": [
            f'[2023-11-14T22:13:21.100Z] {head} 25 24 "-" "curl" "id1" "api" "-"',
            f'[2023-11-14T22:13:21.100123Z] {head} 25 24 "-" "curl" "id1" "api" "h:1"',
            f'[2023-11-31T22:13:21.100Z] {head} 25 24 "-" "curl" "id1" "api" "h:2"',
            f'[2023-11-14T22:13:60.100Z] {head} 25 24 "-" "curl" "id1" "api" "h:2"',
            f'[1700000001.250] {head} 25 24 "-" "curl" "id1" "api" "h:3"',
            f'[2023-11-14T22:13:21.300Z] {head} 25 24 "-" "curl" "id1" "api" " h:4 "',
            "garbage",
        ],
        "haproxy": [
            "h[1]: 1.2.3.4:5 [14/Nov/2023:22:13:21.100] fe be/<NOSRV> -1/-1/-1/-1/0 503 0 - - "
            'SC-- 1/1/0/0/0 0/0 "GET / HTTP/1.1"',
            "h[1]: 1.2.3.4:5 [14/Nov/2023:22:13:21.100] fe be/s9 5/-1/-1/-1/12 504 0 - - "
            'SC-- 1/1/0/0/0 0/0 "GET / HTTP/1.1"',
            "x [14/Nov/2023:22:13:21.123456] y [14/Nov/2023:22:13:21.200] fe be/s8 1/2/0/5/9 "
            '200 9 - - ---- 1/1/0/0/0 0/0 "GET / HTTP/1.1"',
            "h[1]: 1.2.3.4:5 [14/Nov/2023:22:13:21.300] fe be/s7 1/2/0/5/+9 200 9 - - ---- "
            '1/1/0/0/0 0/0 "GET / HTTP/1.1"',
            "h[1]: 1.2.3.4:5 [31/Nov/2023:22:13:21.300] fe be/s6 1/2/0/5/9 200 9 - - ---- "
            '1/1/0/0/0 0/0 "GET / HTTP/1.1"',
            "h[1]: 1.2.3.4:5 [14/Nov/2023:22:13:60.300] fe be/s6 1/2/0/5/9 200 9 - - ---- "
            '1/1/0/0/0 0/0 "GET / HTTP/1.1"',
            "garbage",
        ],
    }[fmt]
    mixed = [x for pair in zip(lines, odd * 200, strict=False) for x in pair]
    path = tmp_path / f"{fmt}.log"
    path.write_text("\n".join(mixed) + "\n")
    fast, slow = _both_readers(path, fmt)
    impossible = ("-11-31", "31/Nov", ":13:60")
    while isinstance(slow, str):  # an impossible date: both readers stop at the same line
        assert fast == slow
        bad = next(x for x in impossible if x in mixed[int(slow.split(":")[1]) - 1])
        mixed = [x for x in mixed if bad not in x]
        path.write_text("\n".join(mixed) + "\n")
        fast, slow = _both_readers(path, fmt)
    for name in ("sent", "end", "upstream"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert fast.names == slow.names and fast.resolution == slow.resolution
    assert (fast.dropped, fast.unparsed) == (slow.dropped, slow.unparsed)
    path.write_text("\n".join(lines) + "\n")  # the simulated proxy alone: its true law
    assert check_lb(read_upstream_log(path, fmt), "least-request").consistent


def test_envoy_json_counts_a_request_for_its_upstream_stream(tmp_path):
    """Envoy's rq_active counts a request from attaching its stream to an upstream
    connection until the stream closes (ConnPoolImplBase::attachStreamToClient and
    onStreamClosed, source/common/conn_pool/conn_pool_base.cc), before the response has
    reached the client, where DURATION ends: with 10 ms of client time on 100 ms of
    service, us_tx_beg and us_rx_end give least request back; DURATION alone is noted."""
    lines = balancer_log(
        "least-request", k=8, load=0.8, requests=6000, seed=2, client_time=0.01, fmt="envoy-json"
    )
    log = _log(tmp_path, "e.log", lines, fmt="envoy-json")
    assert not log.client_times and check_lb(log, "least-request").consistent
    bare = [
        json.dumps({k: v for k, v in json.loads(x).items() if not k.startswith("us_")})
        for x in lines
    ]
    log = _log(tmp_path, "b.log", bare, fmt="envoy-json")
    res = check_lb(log, "least-request")
    assert "DURATION runs until the response reached the client" in log.client_times
    assert not res.consistent and any("only the client's times" in n for n in res.notes)


def test_nginx_workers_without_a_shared_zone_count_their_own_requests(tmp_path):
    """Four NGINX workers, each least_conn over its own requests (no zone): read with the
    shared counts the log looks like power of two with replacement and least request is
    rejected; with each worker's own counts ($pid) it is least request, and without
    --expect that view is named.  Both readers give the same workers."""
    from cloudsched.experiments.checklb_identify import identify

    lines = balancer_log("least-request", k=8, load=0.8, requests=8000, seed=1, workers=4)
    path = tmp_path / "w.log"
    path.write_text("\n".join(lines) + "\n")
    log = read_upstream_log(path, "nginx", end_slack=0.0)  # the $pid format, detected
    slow = read_upstream_log(path, "nginx", end_slack=0.0, fast=False)
    assert len(log.workers) == 4 and np.array_equal(log.worker, slow.worker)
    assert log.workers == slow.workers
    shared = check_lb(log, "least-request")
    assert not shared.consistent and shared.best_fit != "least-request"
    assert any("--view worker" in n for n in shared.notes)
    assert check_lb(log, "least-request", view="worker").consistent
    found = identify(log)
    assert (found.law, found.view, found.workers) == ("least-request", "worker", 4)
    one = balancer_log("least-request", k=8, load=0.8, requests=8000, seed=1)
    found = identify(_log(tmp_path, "one.log", one))
    assert (found.law, found.view) == ("least-request", "shared")


def test_many_proxies_each_with_its_own_counts_one_file_each(tmp_path):
    """Three proxies, each least_conn over the requests it sent, in front of the same 8
    upstreams, one log file each: read together with shared counts least request is
    rejected; --view proxy (each file a proxy) accepts it."""
    lines = balancer_log("least-request", k=8, load=0.8, requests=9000, seed=2, workers=3)
    paths = []
    for pid in ("4000", "4001", "4002"):
        path = tmp_path / f"proxy-{pid}.log"
        mine = [x.rsplit(" ", 1)[0] for x in lines if x.endswith(f" {pid}")]
        path.write_text("\n".join(mine) + "\n")
        paths.append(path)
    log = read_upstream_log(paths, "nginx", end_slack=0.0)
    assert log.files == tuple(map(str, paths)) and set(np.unique(log.file)) == {0, 1, 2}
    assert not check_lb(log, "least-request").consistent
    assert check_lb(log, "least-request", view="proxy").consistent


def test_proxies_that_balance_over_subsets_are_read_within_them(tmp_path):
    """Two proxies, each least_conn over its own 4 of 8 upstreams (its subset) with its own
    counts: per proxy, each law is applied within the proxy's subset, and least request
    is accepted and named; over all 8, an idle upstream of the other subset would always
    look like the least loaded."""
    from cloudsched.experiments.checklb_identify import identify

    paths = []
    for p, seed in ((0, 5), (1, 6)):
        lines = balancer_log("least-request", k=4, load=0.8, requests=4000, seed=seed)
        if p:  # the second proxy's subset: upstreams 5-8
            lines = [x.replace(":8080", ":9090") for x in lines]
        path = tmp_path / f"proxy-{p}.log"
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    log = read_upstream_log(paths, "nginx", end_slack=0.0)
    assert len(log.names) == 8
    assert check_lb(log, "least-request", view="proxy").consistent
    assert not check_lb(log, "least-request").consistent
    assert identify(log, view="proxy").law == "least-request"


def test_a_request_ending_when_it_was_sent_counts_at_no_arrival(tmp_path):
    """HAProxy logs 0 ms for fast requests: such a request never makes a count of -1."""
    sent = 1.7e9 + np.array([0.0, 0.0, 0.001, 0.001])
    end = sent + np.array([0.0, 0.005, 0.0, 0.0])
    up = np.array([0, 1, 0, 1])
    want = np.array([[0, 0], [0, 0], [0, 1], [0, 1]])
    for levels in (levels_at_arrivals, levels_by_numpy):
        assert (levels(sent, end, up, 2) == want).all(), levels.__name__
    lines = balancer_log("least-request", k=4, load=0.9, requests=3000, seed=1, fmt="haproxy")
    log = _log(tmp_path, "h.log", lines, "haproxy")
    assert ((log.end - log.sent) == 0).sum() > 0  # the case arises
    assert levels_at_arrivals(log.sent, log.end, log.upstream, 4).min() == 0


def test_envoy_json_batches_read_as_the_line_reader(tmp_path, monkeypatch):
    """Arrow's JSON reader for plain lines, the per-line reader for the rest: the same
    requests from plain lines with and without the upstream's span, and lines it must leave
    to the per-line reader (string numbers, a key in upper case or twice, a '-' or null
    host, an epoch start, one us_* key, blank lines); an impossible date is refused both
    ways."""
    import cloudsched.dispatch.workload.upstream_fast as upstreams

    monkeypatch.setattr(upstreams, "BATCH", 53)  # batches end everywhere
    plain = balancer_log("pod:2r", k=5, load=0.9, requests=1200, seed=8, fmt="envoy-json")
    span = balancer_log(
        "pod:2r", k=5, load=0.9, requests=1200, seed=9, fmt="envoy-json", client_time=0.004
    )
    host = '"upstream_host":"10.0.0.2:8080"'
    odd = [
        '{"start_time":"2023-11-14T22:13:21.131Z","duration":"12",' + host + "}",
        '{"START_TIME":"2023-11-14T22:13:21.140Z","duration":12,' + host + "}",
        '{"start_time":"2023-11-14T22:13:21.150Z","duration":3,"duration":12,' + host + "}",
        '{"start_time":"2023-11-14T22:13:21.160Z","duration":12,"upstream_host":"-"}',
        '{"start_time":"2023-11-14T22:13:21.170Z","duration":12,"upstream_host":null}',
        '{"start_time":"1700000001.180","duration":12,' + host + "}",
        '{"start_time":"2023-11-14T22:13:21.200Z","duration":12,"us_tx_beg":1,' + host + "}",
        "",
    ]
    mixed = [x for trio in zip(plain, span, odd * 200, strict=False) for x in trio]
    path = tmp_path / "mixed.json.log"
    path.write_text("\n".join(mixed) + "\n")
    fast = read_upstream_log(path, "envoy-json")
    slow = read_upstream_log(path, "envoy-json", fast=False)
    for name in ("sent", "end", "upstream"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert fast.names == slow.names and fast.resolution == slow.resolution
    assert (fast.dropped, fast.unparsed, fast.absurd, fast.client_times) == (
        slow.dropped,
        slow.unparsed,
        slow.absurd,
        slow.client_times,
    )
    bad = tmp_path / "bad.json.log"
    bad.write_text(
        plain[0] + '\n{"start_time":"2023-11-31T22:13:21.190Z","duration":1,' + host + "}\n"
    )
    for fast_path in (True, False):
        with pytest.raises(TraceError, match="start_time is not a time"):
            read_upstream_log(bad, "envoy-json", fast=fast_path)
    clean = tmp_path / "plain.json.log"
    clean.write_text("\n".join(span) + "\n")
    calls = []
    real = read_upstream_log.__globals__["read_line"]
    monkeypatch.setitem(
        read_upstream_log.__globals__, "read_line", lambda *a: calls.append(1) or real(*a)
    )
    both = read_upstream_log(clean, "envoy-json")
    assert not calls and both.upstream.size == 1200  # every plain line read by Arrow
