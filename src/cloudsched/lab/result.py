"""What a live run measured, in the same record as a simulation, plus what only a lab has.

:func:`summarise` turns the per-request records and the counter snapshots into a
:class:`LabResult`: ``record`` is a :class:`~cloudsched.dispatch.result.SimulationResult`
(times in units of the mean service time, ``engine`` = ``live``) so that live and
simulated numbers line up column for column; the rest is the lab's own: the fixed overhead
of the forwarding path and the mean with it subtracted, the achieved load, CPU use, what
happened to the requests, and what each fault did.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from cloudsched.dispatch.result import PERCENTILES, SimulationResult
from cloudsched.lab.loadgen import STATUS, Load, Records
from cloudsched.lab.notes import run_warnings
from cloudsched.lab.spec import LabSpec
from cloudsched.policy_table import TABLE
from cloudsched.results import half_of
from cloudsched.steadystate import analyse_series

__all__ = ["LabResult", "Snapshot", "records_frame", "summarise"]

MICRO_BATCH_REQUESTS = 8
BATCHES = 20


@dataclass
class Snapshot:
    """Counters of every process and CPU seconds, read at one moment (``now``, perf_counter)."""

    now: float
    cpu: dict[str, float]
    servers: list[dict[str, Any]]
    dispatchers: list[dict[str, Any]]
    machine: tuple[float, float] = (0.0, 0.0)  # busy and total CPU ticks of the machine


@dataclass
class LabResult:
    """A live run: ``record`` (as ``simulate``'s) and the lab's own measurements ``lab``."""

    record: SimulationResult
    lab: dict[str, Any]
    frame: pd.DataFrame = field(repr=False)
    series: dict[str, Any] = field(repr=False, default_factory=dict)
    #: NGINX's or HAProxy's access log per dispatcher (file name -> text; ``check-lb``)
    access_logs: dict[str, str] = field(repr=False, default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """One JSON-ready dict: the simulation record's fields, then the lab's."""
        return {**self.record.to_dict(), **self.lab}

    def to_row(self) -> dict[str, Any]:
        """One flat row (the simulation record's columns, then the lab's scalars)."""
        row = self.record.to_row()
        for k, v in self.lab.items():
            if isinstance(v, int | float | str | bool) or v is None:
                row[k] = v
            elif isinstance(v, dict):
                row.update(
                    {f"{k}_{a}": b for a, b in v.items() if isinstance(b, int | float | str | bool)}
                )
        return row


def records_frame(spec: LabSpec, load: Load, rec: Records, start: float) -> pd.DataFrame:
    """One row per scheduled request (times in seconds from the start of the load)."""
    sched = start + load.times
    f = rec.fields
    warm = spec.warmup_seconds
    measure = (load.times >= warm) & (load.times < warm + spec.duration)
    return pd.DataFrame(
        {
            "request": np.arange(load.times.size),
            "scheduled": load.times,
            "sent": rec.sent - start,
            "done": rec.done - start,
            "latency": rec.done - sched,
            "work": load.work,
            "dispatcher": load.dispatcher,
            "server": f["x-server"],
            "queue_on_arrival": f["x-queue"],
            "wait": f["x-wait"],
            "service": f["x-service"],
            "decision": f["x-decision"],
            "popped": f["x-popped"],
            "tries": f["x-tries"],
            "probed": rec.probed,
            "http_status": rec.http,
            "status": pd.Categorical.from_codes(rec.status, categories=list(STATUS)),
            "measured": measure,
        }
    )


def _delta(a: dict[str, Any], b: dict[str, Any], key: str) -> float:
    if not a or not b or key not in a or key not in b:
        return 0.0
    return float(b[key]) - float(a[key])


def _model_relaxation(spec: LabSpec) -> float:
    """Estimate the relaxation time as the simulator does (a lower bound for the data's)."""
    from cloudsched.dispatch.theory.relaxation import relaxation_time

    return relaxation_time(
        spec.policy,
        spec.load,
        servers=spec.servers,
        r=spec.servers / spec.dispatchers,
        d=spec.d,
        variability=(1.0 + spec.law.cv**2) / 2,
    )


def _interval(
    ok: pd.DataFrame, spec: LabSpec
) -> tuple[float, tuple[float, float] | None, bool, float]:
    # micro-batches of about MICRO_BATCH_REQUESTS answered requests: coarse ones would make
    # the data's autocorrelation time (and so the steadiness verdict) a matter of their width
    k = int(np.clip(len(ok) // MICRO_BATCH_REQUESTS, 20, 5000))
    edges = np.linspace(spec.warmup_seconds, spec.warmup_seconds + spec.duration, k + 1)
    idx = np.clip(np.searchsorted(edges, ok["scheduled"].to_numpy(), side="right") - 1, 0, k - 1)
    lat = ok["latency"].to_numpy() / spec.unit
    sums = np.bincount(idx, weights=lat, minlength=k)
    counts = np.bincount(idx, minlength=k).astype(float)
    if counts.sum() == 0:
        return math.nan, None, False, math.nan
    relax = _model_relaxation(spec)
    est = analyse_series(
        sums,
        counts,
        edges / spec.unit,
        batches=BATCHES,
        truncation=0,
        relaxation=relax if math.isfinite(relax) else 0.0,
    )
    ci = None
    if math.isfinite(est.half_width):
        ci = (est.mean - est.half_width, est.mean + est.half_width)
    steady = est.long_enough and est.independent and not est.drifting and math.isfinite(relax)
    return est.mean, ci, steady, max(est.relaxation, relax)


def _servers_block(spec: LabSpec, a: Snapshot, b: Snapshot, window: float) -> dict[str, Any]:
    pairs = [(x, y) for x, y in zip(a.servers, b.servers, strict=True) if x and y]
    unit_time = window / spec.unit
    n = max(len(pairs), 1)
    levels = max((len(x["state_time"]) for x, _ in pairs), default=1)
    occ = np.zeros(levels)
    for x, y in pairs:
        occ += np.asarray(y["state_time"]) - np.asarray(x["state_time"])
    occ = occ / max(occ.sum(), 1e-12)
    busy = sum(_delta(x, y, "busy_time") * spec.speeds[int(x["index"])] for x, y in pairs)
    count = {
        k: sum(_delta(x, y, k) for x, y in pairs)
        for k in ("join", "join_dropped", "delete", "health", "served")
    }
    return {
        "occupancy": occ,
        "rates": {k: v / (n * unit_time) for k, v in count.items()},
        "achieved_load": busy / (window * sum(spec.speeds[int(x["index"])] for x, _ in pairs))
        if pairs
        else math.nan,
    }


def _dispatchers_block(spec: LabSpec, a: Snapshot, b: Snapshot, window: float) -> dict[str, Any]:
    pairs = [(x, y) for x, y in zip(a.dispatchers, b.dispatchers, strict=True) if x and y]
    keys = (
        "decisions",
        "probe",
        "probe_lost",
        "from_iqueue",
        "fallback",
        "failed_forward",
        "retries",
        "delete_stale",
        "marked_dead",
        "revived",
        "join_received",
    )
    count = {k: sum(_delta(x, y, k) for x, y in pairs) for k in keys}
    delay = sum(_delta(x, y, "join_delay") for x, y in pairs)
    empty = sum(_delta(x, y, "empty_time") for x, y in pairs)
    length = sum(_delta(x, y, "length_time") for x, y in pairs)
    m = max(len(pairs), 1)
    p0 = empty / (m * window) if pairs and TABLE[spec.policy].iqueues else 1.0
    joins = count["join_received"]
    return {
        "count": count,
        "p0": p0,
        "join_delay": delay / joins if joins else math.nan,
        "mean_iqueue": length / (m * window) if pairs else 0.0,
    }


def _cpu(a: Snapshot, b: Snapshot, window: float) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, v in b.cpu.items():
        role = name.rstrip("0123456789")
        out[role] = out.get(role, 0.0) + max(v - a.cpu.get(name, v), 0.0) / window
    out["total"] = sum(out.values())
    out["machine_share"] = out["total"] / (os.cpu_count() or 1)
    total = b.machine[1] - a.machine[1]
    out["machine_busy"] = (b.machine[0] - a.machine[0]) / total if total > 0 else math.nan
    return {k: round(v, 4) for k, v in out.items()}


def _percentiles(lat: np.ndarray) -> dict[str, float]:
    if lat.size == 0:
        return {k: math.nan for k in PERCENTILES}
    return {k: float(np.percentile(lat, q)) for k, q in PERCENTILES.items()}


def _rejected(snap: Snapshot) -> dict[str, int]:
    """Count what the run's processes refused over the whole run (cumulative at the end)."""
    every = [*snap.servers, *snap.dispatchers]
    return {
        "datagrams": int(sum(x.get("rejected_datagrams", 0) for x in every)),
        "requests": int(sum(x.get("rejected_requests", 0) for x in every)),
        "bad_requests": int(sum(x.get("bad_requests", 0) for x in snap.servers)),
    }


def _last_failures(snap: Snapshot) -> dict[int, float]:
    out: dict[int, float] = {}
    for d in snap.dispatchers:
        for k, t in (d.get("last_failure") or {}).items():
            out[int(k)] = max(out.get(int(k), t), t)
    return out


def _lab_block(
    spec: LabSpec,
    frame: pd.DataFrame,
    out: dict[str, Any],
    mean: float,
    servers: dict[str, Any],
    disps: dict[str, Any],
) -> dict[str, Any]:
    from cloudsched.lab.faults import fault_report

    a, b = out["snapshots"]["start"], out["snapshots"]["end"]
    window = b.now - a.now
    ok = frame[frame["measured"] & (frame["status"] == "ok")]
    overhead = out["overhead"]
    sojourn = (ok["wait"] + ok["service"]).to_numpy() / spec.unit
    # what the path outside the servers took under load; the calibration measured it idle
    forwarding = (ok["latency"] - ok["wait"] - ok["service"]).to_numpy()
    return {
        "balancer": spec.balancer,
        "workers": spec.workers,
        "zone": spec.zone,
        "counts": list(spec.counts),
        "unit_seconds": spec.unit,
        "service": spec.service,
        "mode": spec.mode,
        "overhead": overhead / spec.unit,
        "overhead_ms": overhead * 1e3,
        "forwarding_ms": float(np.mean(forwarding)) * 1e3 if forwarding.size else math.nan,
        "net_mean_response_time": mean - overhead / spec.unit,
        "backend_sojourn_mean": float(np.mean(sojourn)) if sojourn.size else math.nan,
        "service_mean_measured": float(ok["service"].mean() / spec.unit) if len(ok) else math.nan,
        "achieved_load": servers["achieved_load"],
        "send_lag_ms": float((ok["sent"] - ok["scheduled"]).mean() * 1e3) if len(ok) else 0.0,
        "cpu": _cpu(a, b, window),
        "requests": {s: int((frame["measured"] & (frame["status"] == s)).sum()) for s in STATUS},
        "dispatcher_counts": disps["count"],
        "mean_iqueue": disps["mean_iqueue"],
        "join_delay_ms": disps["join_delay"] * 1e3,
        "join_dropped": servers["rates"]["join_dropped"],
        "health_checks": servers["rates"]["health"],
        "faults": fault_report(
            spec,
            frame,
            {s: t - out["start"] for s, t in out["kills"].items()},
            {s: t - out["start"] for s, t in _last_failures(b).items()},
        ),
        "window_seconds": window,
        "rejected": _rejected(b),
    }


def summarise(spec: LabSpec, load: Load, out: dict[str, Any], wall: float) -> LabResult:
    """Build the :class:`LabResult` of a finished run (``out``: what the driver collected)."""
    rec, start, snaps = out["records"], out["start"], out["snapshots"]
    frame = records_frame(spec, load, rec, start)
    a, b = snaps["start"], snaps["end"]
    window = b.now - a.now
    ok = frame[frame["measured"] & (frame["status"] == "ok")]
    mean, ci, steady, relaxation = _interval(ok, spec)
    servers = _servers_block(spec, a, b, window)
    disps = _dispatchers_block(spec, a, b, window)
    lab = _lab_block(spec, frame, out, mean, servers, disps)
    warnings = run_warnings(spec, frame, lab, steady, half_of(ci))
    rates = servers["rates"]
    occ = servers["occupancy"]
    tail = [float(x) for x in (1.0 - np.cumsum(occ))[:-1]]
    record = SimulationResult(
        policy=spec.policy,
        plugin=None,
        servers=spec.servers,
        dispatchers=spec.dispatchers,
        load=spec.load,
        d=spec.d,
        threshold=0,
        with_replacement=False,
        tasks=None,
        horizon=spec.duration / spec.unit,
        warmup="fixed",
        replications=1,
        seed=spec.seed,
        mean_response_time=mean,
        ci95=ci,
        ci_method="batch-means",
        steady_state=steady,
        initial="empty",
        warmup_detected=False,
        warmup_time=spec.warmup_seconds / spec.unit,
        measured_time=window / spec.unit,
        relaxation_estimate=relaxation,
        precision_target=None,
        precision_reached=(ci[1] - mean) / mean if ci else None,
        stop_reason="horizon",
        warnings=tuple(warnings),
        percentiles=_percentiles(ok["latency"].to_numpy() / spec.unit),
        tail=tail,
        occupancy=[float(x) for x in occ],
        p0=disps["p0"],
        messages={
            "join": rates["join"],
            "delete": rates["delete"],
            "probe": disps["count"]["probe"] / (spec.servers * window / spec.unit),
            "stale": 0.0,
        },
        measured_tasks=len(ok),
        events=len(frame),
        wall_seconds=wall,
        events_per_second=len(frame) / wall if wall > 0 else 0.0,
        engine="live",
    )
    series = {"iqueue": [[(t - start, q) for t, q in d.get("samples", [])] for d in b.dispatchers]}
    return LabResult(record, lab, frame, series)
