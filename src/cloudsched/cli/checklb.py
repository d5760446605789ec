"""``cloudsched check-lb``: whether a balancer's access log follows the law its config names."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import check_outputs, emit, format_frame, resolve_format
from cloudsched.cli.options import BalancerOptions, FormatJson, Out, opt
from cloudsched.errors import check_choice, check_real

__all__ = ["register"]


def check_lb(
    log: Annotated[
        list[Path],
        typer.Argument(
            help="The access log (gzip or plain; several files are read in order as one "
            "log, or with --view proxy as one proxy's log each), or a shipped log's name "
            "(envoy-sample, haproxy-sample)."
        ),
    ],
    *,
    expect: Annotated[
        str | None,
        opt(
            "--expect",
            help="The law the config names: random, least-request, "
            "round-robin, jiq (an idle upstream when one is idle), pod:D (D sampled "
            "without replacement, as NGINX's random two least_conn) or pod:Dr (with "
            "replacement, as HAProxy's random(2) and Envoy's LEAST_REQUEST choice_count), "
            "wlr (Envoy's LEAST_REQUEST as configured: --weights, -o; unequal weights "
            "keep an EDF schedule), least-time (NGINX least_time: averages rebuilt from the "
            "logged times; -o fail-timeout, mode), ewma (peak EWMA behind power of two "
            "choices, Linkerd's and tower's; -o decay, default-rtt); "
            "default: the most likely law is named (with its choice count, sampling and "
            "any unequal draws) and then checked.",
        ),
    ] = None,
    log_type: Annotated[
        str | None,
        opt(
            "--trace-format",
            help="haproxy (option httplog), nginx, envoy (the default text format) or "
            "envoy-json (start_time, duration, upstream_host); default: from the first line.",
        ),
    ] = None,
    log_format: Annotated[
        str | None,
        opt(
            "--log-format",
            help="The NGINX log_format (it must hold $msec, $request_time and $upstream_addr).",
        ),
    ] = None,
    end_slack: Annotated[
        float | None,
        opt(
            "--end-slack",
            help="Seconds a request may still count at its upstream "
            "after its logged end, with --resolution 0 (default: 0.001 for NGINX, whose "
            "logged times lag, and Envoy; 0 for HAProxy).",
        ),
    ] = None,
    resolution: Annotated[
        float | None,
        opt(
            "--resolution",
            help="Seconds the log's times are truncated to: arrivals it cannot order "
            "against another request's start or end are left out (default: the log's "
            "clock step, 0.001 for all three formats; 0 tests every arrival, for exact "
            "times).",
        ),
    ] = None,
    alpha: Annotated[
        float,
        opt(
            "--alpha",
            help="Consistent when the p-value is at least this (the transform's and the "
            "draws' tests each at half of it).",
        ),
    ] = 0.01,
    margin: Annotated[
        float,
        opt(
            "--margin",
            help="Called close to the law (not NOT) when |mean F - 0.5| is within this, KS D "
            "within twice it and the draws pass: a departure too small to matter; 0: off.",
        ),
    ] = 0.015,
    whole_run: Annotated[
        bool,
        opt(
            "--whole-run",
            help="The log holds the proxy's whole run (from its start, every request "
            "ended): test the arrivals at its edges too (default: read as a window of a "
            "longer run, as a rotated log is).",
        ),
    ] = False,
    view: Annotated[
        str | None,
        opt(
            "--view",
            help="Whose counts the balancer reads: shared (all its requests), worker (each "
            "worker process its own, as NGINX's without a shared zone; the log must name the "
            "worker, $pid) or proxy (each file given is one proxy's log, each proxy counting "
            "its own). Default: shared with --expect; without it, shared and worker where the "
            "log names the worker, and the likelier is named (an NGINX log that does not: "
            "the number of workers is inferred).",
        ),
    ] = None,
    advise: Annotated[
        bool,
        opt(
            "--advise",
            help="Replay the log under the law found and under every law the same balancer "
            "offers, and write the configuration change with the predicted p99 before and "
            "after (95% intervals; no change when they overlap).",
        ),
    ] = False,
    weights: Annotated[
        str | None,
        opt(
            "--weights",
            help="With --expect wlr: the hosts' load_balancing_weight, HOST=W,... as the "
            "log names them (others 1, Envoy's default).",
        ),
    ] = None,
    option: BalancerOptions = None,
    seed: Annotated[
        int,
        opt(
            "--seed",
            help="Seed of the randomised transform (with the log's content) and of --advise.",
        ),
    ] = 0,
    fmt: FormatJson = None,
    out: Out = (None),
) -> None:
    """Test whether a balancer's choices, in its access log, follow the expected law.

    Without --expect, name the law they follow; with --advise, the configuration change
    that lowers the p99, replayed on the log.
    """
    from cloudsched.dispatch.workload.logs import resolve_files

    log, shipped = resolve_files(log)
    check_outputs(out=out, inputs=log)
    from cloudsched.dispatch.workload.upstreams import detect_upstream_format, read_upstream_log
    from cloudsched.experiments.checklb import check_lb as run_check

    fmt = resolve_format(fmt, out, ("table", "json"))
    alpha = check_real("--alpha", alpha, low=0.0, high=1.0, low_open=True, high_open=True)
    if log_type is None:
        log_type = shipped or ("nginx" if log_format is not None else detect_upstream_format(log))
    bar = LazyProgress("check-lb: reading the log")
    try:
        data = read_upstream_log(
            log,
            log_type,
            log_format=log_format,
            end_slack=end_slack,
            resolution=resolution,
            progress=bar,
        )
    finally:
        bar.close()
    margin = check_real("--margin", margin, low=0.0, high=0.5)
    if view is not None:
        view = check_choice("--view", view, ("shared", "worker", "proxy"))
    found = None
    if expect is None:
        from cloudsched.experiments.checklb_identify import identify

        found = identify(
            data, whole_run=whole_run, alpha=alpha, view=view, workers=log_type == "nginx"
        )
        expect, view = found.law, found.view
    res = run_check(
        data,
        expect,
        alpha=alpha,
        margin=margin,
        seed=seed,
        whole_run=whole_run,
        view=view or "shared",
        weights=weights,
        options=option or (found.options if found is not None else None),
    )
    if found is not None:
        res.notes[:0] = [
            "the law was chosen from this log, so its check is a check of fit, not an "
            "independent test",
            *found.notes,
        ]
    advice = None
    if advise:
        from cloudsched.experiments.checklb_advise import advise_from_log
        from cloudsched.experiments.checklb_edf import sampled_law

        advice = advise_from_log(
            data,
            log_type,
            sampled_law(expect, weights, option, data.names),
            seed=seed,
            options=option or (found.options if found is not None else None),
        )
    emit(_report(res, found, log_type, fmt, advice), out)


def _report(res: Any, found: Any, log_type: str, fmt: str, advice: Any) -> str:
    """Return the output of one check: JSON, or the tables and the verdict's lines."""
    import pandas as pd

    fits = pd.DataFrame({"law": list(res.fits), "loglik": list(res.fits.values())})
    fits = fits.sort_values("loglik", ascending=False, ignore_index=True)
    load = res.load
    upstreams = pd.DataFrame(
        {
            "upstream": list(load.names),
            "share": load.share,
            "in_flight": load.mean_in_flight,
            "latency_ms": load.mean_latency * 1e3,
            "p99_ms": load.p99_latency * 1e3,
        }
    )
    payload = {
        "expect": res.expect,
        "consistent": res.consistent,
        "close": res.small,
        "p_value": res.p_value,
        "transform_p": res.transform_p,
        "draws_p": res.draws_p,
        "statistic": res.statistic,
        "mean_f": res.mean_f,
        "requests": res.requests,
        "left_out": res.left_out,
        "left_out_at_edges": res.edges,
        "trace_format": log_type,
        "view": res.view,
        "upstreams": res.upstreams,
        "dropped": res.dropped,
        "best_fit": res.best_fit,
        "schedule": res.schedule or None,
        "inconsistent": res.inconsistent if res.schedule else None,
        "share_least_loaded": res.share_least_loaded,
        "shares": res.shares,
        "fits": res.fits,
        "in_flight_mean": load.mean,
        "in_flight_max_over_avg": load.max_over_avg,
        "in_flight_p99": load.p99,
        "in_flight_p99_over_avg": load.p99_over_avg,
        "per_upstream": upstreams.to_dict(orient="records"),
        "notes": res.notes,
        "verdict": res.verdict,
        "identified": None if found is None else found.summary(),
        "advice": None
        if advice is None
        else {
            "current": advice.current,
            "advice": advice.advice,
            "load": advice.load,
            "laws": advice.rows,
            "sentence": advice.sentence(log_type),
        },
    }
    text = format_frame(fits.head(6), fmt, "fit of each law, best first", payload)
    if fmt != "table":
        return text
    shown = upstreams.sort_values("in_flight", ascending=False, kind="stable")
    shown = shown.round({"share": 3, "in_flight": 2, "latency_ms": 1, "p99_ms": 1})
    title = "each upstream, busiest first: share, in flight at arrivals, latency"
    return (
        text
        + format_frame(shown, fmt, title, {})
        + f"in flight at arrivals: {load.mean:.2f} per upstream on average, {load.p99:g} at "
        f"the p99; the busiest upstream's average {load.max_over_avg:.2f}x the mean\n"
        f"least-loaded upstream chosen: {res.share_least_loaded:.1%} of requests; each "
        f"upstream {min(res.shares.values()):.1%} to {max(res.shares.values()):.1%}\n"
        + (f"identified: {found.sentence}\n" if found is not None else "")
        + f"verdict: {res.verdict}\n"
        + (f"{advice.sentence(log_type)}\n" if advice is not None else "")
        + "".join(f"note: {n}\n" for n in res.notes)
    )


def register(app: typer.Typer) -> None:
    """Add ``check-lb`` to ``app``."""
    app.command("check-lb")(check_lb)
