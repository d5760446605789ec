"""``cloudsched lab``: ``run`` one live setting on loopback, ``compare`` it with the models."""

from __future__ import annotations

import contextlib
import dataclasses
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from cloudsched.cli.bars import LazyProgress
from cloudsched.cli.common import check_outputs, render_table, to_json, wrote
from cloudsched.cli.options import opt

__all__ = ["register"]

Servers = Annotated[int, opt("--servers", help="Backend servers N (1-64).")]
Dispatchers = Annotated[int, opt("--dispatchers", help="Dispatchers M (1-min(N, 16)).")]
Load = Annotated[float, opt("--load", help="Offered load per unit of capacity.")]
D = Annotated[int, opt("--d", help="Probes of pod and jiq-pod.")]
Service = Annotated[str, opt("--service", help="Service law SPEC, mean 1 unit.")]
Unit = Annotated[str, opt("--unit", help="Wall time of one unit: 20ms, 0.5s.")]
Duration = Annotated[float, opt("--duration", help="Seconds measured.")]
Warmup = Annotated[
    str,
    opt(
        "--warmup",
        help="Fraction of the run discarded first, in [0, 0.9] (as in simulate), or "
        "seconds with their unit (3s).",
    ),
]
Balancer = Annotated[str, opt("--balancer", help="lab (ours), nginx or haproxy.")]
Workers = Annotated[
    int, opt("--workers", help="NGINX worker processes per dispatcher (1-16; --balancer nginx).")
]
Zone = Annotated[
    bool, opt("--zone", help="NGINX workers share their counts (an upstream zone); default: own.")
]
Mode = Annotated[str, opt("--mode", help="sleep, or cpu: tasks compute.")]
Slow = Annotated[list[str] | None, opt("--slow", help="SERVER:FACTORx, e.g. 2:5x; repeatable.")]
Kill = Annotated[
    list[str] | None, opt("--kill", help="SERVER@SECONDS of the measurement; repeatable.")
]
Drop = Annotated[float, opt("--drop", help="Probability a join message is lost.")]
Inflight = Annotated[int, opt("--max-inflight", help="Cap on requests in flight.")]
MaxReq = Annotated[int, opt("--max-requests", help="Cap on requests in the run.")]
ProbeTimeout = Annotated[str, opt("--probe-timeout", help="Wait for probe replies.")]
Seed = Annotated[int, opt("--seed", help="Seed of the workload and the choices.")]
Fmt = Annotated[str, opt("--format", help="table or json (standard output).")]
Options = Annotated[
    list[str] | None,
    opt(
        "--option",
        "-o",
        help="The policy's option NAME=VALUE, as simulate takes it (repeatable; ewma: decay, "
        "default-rtt; prequal: probe-rate, pool, reuse, max-age, q-rif); durations in units "
        "or with their unit (10s); --unit is the mean service time.",
    ),
]


def _spec(args: dict[str, Any], **given: Any) -> Any:
    """Check and build the :class:`LabSpec` from a command's arguments and ``given`` fields.

    ``args`` is the command's ``locals()``: the names that are the spec's fields are taken.
    """
    from cloudsched.errors import check_int, check_real
    from cloudsched.lab.spec import MAX_SERVERS, LabSpec, parse_kill, parse_slow, parse_unit

    kw = {f.name: args[f.name] for f in dataclasses.fields(LabSpec) if f.name in args} | given
    servers = kw["servers"]
    duration = check_real("--duration", kw["duration"], low=0.5, high=3600.0)
    check_int("--servers", servers, low=1, high=MAX_SERVERS)
    kw["slow"] = parse_slow(kw.get("slow") or [], servers)
    kw["kill"] = parse_kill(kw.get("kill") or [], servers, duration)
    kw["options"] = tuple(kw.get("options") or ())
    kw["unit"] = parse_unit(kw["unit"])
    kw["probe_timeout"] = parse_unit(kw["probe_timeout"], "probe_timeout", low=1e-4)
    with contextlib.suppress(ValueError):  # a bare number is a fraction; 3s is seconds
        kw["warmup"] = float(kw["warmup"])
    return LabSpec(**kw)


def _workers_text(spec: Any) -> str:
    """`` x K workers`` (and whether they share a zone) for NGINX with several workers."""
    if spec.balancer != "nginx" or (spec.workers == 1 and not spec.zone):
        return ""
    return f" x {spec.workers} workers" + (", shared zone" if spec.zone else ", own counts")


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v:.{digits}g}" if isinstance(v, float) else str(v)


def _iqueues(policy: str) -> bool:
    """Whether the policy keeps I-queues (its p0 means something)."""
    from cloudsched.policy_table import TABLE

    return policy in TABLE and TABLE[policy].iqueues


def _iqueue_items(rec: Any, lab: dict[str, Any]) -> list[tuple[str, str]]:
    if lab["balancer"] != "lab":
        return []
    c = lab["dispatcher_counts"]
    items = []
    from cloudsched.policy_table import TABLE

    if rec.policy in TABLE and TABLE[rec.policy].iqueues:
        items += [
            ("mean I-queue length", _fmt(lab["mean_iqueue"], 3)),
            ("join delay: idle to listed (ms)", _fmt(lab["join_delay_ms"], 3)),
            ("tasks from I-queue / fallback", f"{c['from_iqueue']:.0f} / {c['fallback']:.0f}"),
        ]
    if lab["join_dropped"] > 0:
        items.append(("joins lost per server per unit", _fmt(lab["join_dropped"], 3)))
    if c["marked_dead"] or c["failed_forward"]:
        dead = f"{c['marked_dead']:.0f} / {c['failed_forward']:.0f} / {c['retries']:.0f}"
        items.append(("servers marked dead / failed forwards / retries", dead))
    return items


def _summary(result: Any) -> str:
    rec, lab = result.record, result.lab
    half = (rec.ci95[1] - rec.ci95[0]) / 2 if rec.ci95 else None
    rows: dict[str, list[str]] = {"quantity": [], "value": []}
    items = [
        (
            "mean response time (units)",
            _fmt(rec.mean_response_time) + ("" if rec.steady_state else " (not steady)"),
        ),
        ("± 95%", _fmt(half, 3)),
        ("fixed overhead (ms)", _fmt(lab["overhead_ms"], 3)),
        ("forwarding under load (ms)", _fmt(lab["forwarding_ms"], 3)),
        ("mean - overhead (units)", _fmt(lab["net_mean_response_time"])),
        (
            "p50 / p99 / p99.9",
            " / ".join(_fmt(rec.percentiles[k]) for k in ("p50", "p99", "p99.9")),
        ),
        (
            "messages join/delete/probe",
            " / ".join(_fmt(rec.messages[k], 3) for k in ("join", "delete", "probe")),
        ),
        *([("p0 (empty I-queues)", _fmt(rec.p0, 3))] if _iqueues(rec.policy) else []),
        *_iqueue_items(rec, lab),
        ("achieved load", _fmt(lab["achieved_load"], 4)),
        (
            "requests ok/refused/error/unfinished",
            "/".join(str(v) for v in lab["requests"].values()),
        ),
        (
            "CPU (cores) servers/dispatchers/generator",
            " / ".join(
                _fmt(v, 3)
                for k, v in lab["cpu"].items()
                if k not in ("total", "machine_share", "machine_busy")
            ),
        ),
        (
            "CPU: the lab's share / machine busy",
            f"{lab['cpu']['machine_share']:.1%} / {lab['cpu']['machine_busy']:.1%}",
        ),
    ]
    for k in lab["faults"]["killed"]:
        items.append(
            (
                f"server {k['server']} killed at {k['killed_at']:.3g} s",
                f"mean {_fmt(k['mean_latency_before'])} -> {_fmt(k['mean_latency_after'])}, "
                f"p99 {_fmt(k['p99_before'])} -> {_fmt(k['p99_after'])}, {k['retried']} "
                f"retried; last forward to it {_fmt(k['last_forward_after_seconds'], 3)} s "
                "after the kill",
            )
        )
    for p in lab["faults"]["per_server"]:
        if p["slowdown"] > 1:
            items.append(
                (
                    f"server {p['server']} ({p['slowdown']:g}x slower)",
                    f"share {p['share']:.3f}, mean sojourn {_fmt(p['mean_sojourn'])}",
                )
            )
    for k, v in items:
        rows["quantity"].append(k)
        rows["value"].append(v)
    title = (
        f"{rec.policy} live via {lab['balancer']}: N={rec.servers}, M={rec.dispatchers}"
        + (f" x {lab['workers']} workers" if lab.get("workers", 1) > 1 else "")
        + (" (shared zone)" if lab.get("zone") else "")
        + f", load {rec.load:g}, unit {lab['unit_seconds'] * 1e3:g} ms"
    )
    text = render_table(rows, title)
    return text + "".join(f"warning: {w}\n" for w in rec.warnings)


def _write_run(result: Any, out: Path) -> None:
    from cloudsched.io import atomic_path, atomic_write_text
    from cloudsched.plotting.lab import plot_lab_run

    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / "records.parquet") as tmp:
        result.frame.to_parquet(tmp, index=False)
    atomic_write_text(out / "result.json", to_json(result.to_dict()) + "\n")
    plot_lab_run(result, out / "lab.png")
    atomic_write_text(
        out / "report.md", "# Live lab run\n\n![run](lab.png)\n\n```\n" + _summary(result) + "```\n"
    )
    for name, text in result.access_logs.items():  # NGINX / HAProxy: for check-lb
        atomic_write_text(out / name, text)
    logs = "".join(f", {name}" for name in result.access_logs)
    wrote(out, f"records.parquet, result.json, lab.png, report.md{logs}")


def lab_run(
    policy: Annotated[
        str, typer.Argument(help="random, round-robin, jsq, pod, jiq, jiq-pod, ewma, prequal.")
    ],
    *,
    servers: Servers = 8,
    dispatchers: Dispatchers = 2,
    load: Load = 0.7,
    d: D = 2,
    service: Service = "exp",
    unit: Unit = "20ms",
    duration: Duration = 20.0,
    warmup: Warmup = "0.15",
    balancer: Balancer = "lab",
    workers: Workers = 1,
    zone: Zone = False,
    mode: Mode = "sleep",
    slow: Slow = None,
    kill: Kill = None,
    drop: Drop = 0.0,
    max_inflight: Inflight = 2000,
    max_requests: MaxReq = 500_000,
    probe_timeout: ProbeTimeout = "50ms",
    seed: Seed = 0,
    options: Options = None,
    fmt: Fmt = "table",
    out: Annotated[Path, opt("--out", help="Folder for records, JSON, figure.")] = Path(
        "cloudsched-lab"
    ),
) -> None:
    """Run real servers and dispatchers on 127.0.0.1 under Poisson load and measure them."""
    check_outputs(out_dir=out)
    from cloudsched.errors import check_choice
    from cloudsched.lab.run import run_lab

    fmt = check_choice("--format", fmt, ("table", "json"))
    spec = _spec(locals())
    result = run_lab(spec)
    _write_run(result, out)
    typer.echo(to_json(result.to_dict()) if fmt == "json" else _summary(result), nl=fmt == "json")


def _captions(rows: list[dict[str, Any]]) -> list[str]:
    """One sentence per policy: how far the live mean (less overhead) is from the models."""
    out = []
    for p in dict.fromkeys(r["policy"] for r in rows):
        by = {r["source"]: r for r in rows if r["policy"] == p}
        net, sim = by.get("live - overhead"), by.get("simulation")
        if net is None or sim is None or not sim["mean"]:
            continue
        text = (
            f"{p}: live - overhead {_fmt(net['mean'])} +- {_fmt(net['half_width'], 2)} "
            f"against simulated {_fmt(sim['mean'])} ({net['mean'] / sim['mean'] - 1:+.1%})"
        )
        carried = by.get("sim, carried load")
        if carried is not None and carried["mean"]:
            text += (
                f", {net['mean'] / carried['mean'] - 1:+.1%} against the simulation at "
                f"the carried load {carried['load']:.3g}"
            )
        out.append(text)
    return out


def lab_compare(
    policies: Annotated[list[str], typer.Argument(help="Policies to run, one after another.")],
    *,
    servers: Servers = 8,
    dispatchers: Dispatchers = 2,
    load: Load = 0.7,
    d: D = 2,
    service: Service = "exp",
    unit: Unit = "20ms",
    duration: Duration = 20.0,
    warmup: Warmup = "0.15",
    balancer: Balancer = "lab",
    workers: Workers = 1,
    zone: Zone = False,
    mode: Mode = "sleep",
    slow: Slow = None,
    max_inflight: Inflight = 2000,
    max_requests: MaxReq = 500_000,
    probe_timeout: ProbeTimeout = "50ms",
    seed: Seed = 0,
    options: Options = None,
    fmt: Fmt = "table",
    out: Annotated[Path, opt("--out", help="Folder for the table and figure.")] = Path(
        "cloudsched-lab"
    ),
) -> None:
    """Theory, simulation and the live run of the same setting side by side, with a figure."""
    check_outputs(out_dir=out)
    from cloudsched.errors import ParameterError, check_choice
    from cloudsched.io import atomic_write_text
    from cloudsched.lab.compare import compare_lab, compare_notes
    from cloudsched.plotting.lab import plot_lab_compare

    fmt = check_choice("--format", fmt, ("table", "json"))
    if len(set(policies)) != len(policies):
        raise ParameterError("POLICIES", policies, "distinct policy names")
    spec = _spec(locals(), policy=policies[0])
    bar = LazyProgress("lab compare", delay=1.0)  # as lines every minute when piped
    try:
        rows, cdfs, lives = compare_lab(spec, list(policies), progress=bar)
    finally:
        bar.close()
    notes = compare_notes(spec, list(policies))
    # what qualifies each live number, as lab run prints it under its own table
    warned = [
        f"{p} live: {w}" for p, r in zip(policies, lives, strict=True) for w in r.record.warnings
    ]
    out.mkdir(parents=True, exist_ok=True)
    plot_lab_compare(rows, cdfs, out / "lab-compare.png")
    cols: dict[str, list[str]] = {
        k: []
        for k in (
            "policy",
            "source",
            "mean",
            "± 95%",
            "p99",
            "join",
            "delete",
            "probe",
            "p0",
            "vs sim",
        )
    }
    for r in rows:
        vals = (
            r["policy"],
            f"sim at {r['load']:.3g}" if r["source"] == "sim, carried load" else r["source"],
            _fmt(r["mean"]),
            _fmt(r["half_width"], 3),
            _fmt(r["p99"]),
            _fmt(r["join"], 3),
            _fmt(r["delete"], 3),
            _fmt(r["probe"], 3),
            _fmt(r["p0"], 3),
            f"{r['vs simulation']:+.1%}" if r["vs simulation"] is not None else "-",
        )
        for k, v in zip(cols, vals, strict=True):
            cols[k].append(v)
    title = (
        f"lab compare: N={spec.servers}, M={spec.dispatchers}, load {spec.load:g}, "
        f"{spec.service}, unit {spec.unit * 1e3:g} ms, balancer {spec.balancer}"
        + _workers_text(spec)
    )
    text = render_table(cols, title) + "".join(f"note: {n}\n" for n in notes)
    text += "".join(line + "\n" for line in _captions(rows))
    text += "".join(f"warning: {w}\n" for w in warned)
    payload = to_json({"rows": rows, "notes": notes, "warnings": warned})
    atomic_write_text(out / "lab-compare.json", payload + "\n")
    atomic_write_text(
        out / "lab-compare.md", f"# {title}\n\n![compare](lab-compare.png)\n\n```\n{text}```\n"
    )
    wrote(out, "lab-compare.png, lab-compare.json, lab-compare.md")
    typer.echo(payload if fmt == "json" else text, nl=fmt == "json")


def register(app: typer.Typer) -> None:
    """Add the ``lab`` group (``run``, ``compare``) to ``app``."""
    group = typer.Typer(
        help="Live load-balancing lab on 127.0.0.1 (real processes, NGINX, HAProxy).",
        no_args_is_help=True,
    )
    group.command("run")(lab_run)
    group.command("compare")(lab_compare)
    app.add_typer(group, name="lab")
