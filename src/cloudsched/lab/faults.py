"""What the faults did: per-server shares under a slow server, and the story of a kill.

For a killed server the report gives the mean latency before and after the kill, how many
requests were retried elsewhere because of it and when the last of them was sent (the
dispatchers stop choosing a server once a forward to it fails: this is how long "not
forever" was), and the errors seen.  Times are seconds of the measurement.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from cloudsched.lab.spec import LabSpec

__all__ = ["fault_report"]


def _mean(x: pd.Series) -> float:
    return float(x.mean()) if len(x) else math.nan


def _per_server(spec: LabSpec, ok: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    total = max(len(ok), 1)
    for s in range(spec.servers):
        mine = ok[ok["server"] == s]
        out.append(
            {
                "server": s,
                "slowdown": spec.slow.get(s, 1.0),
                "share": len(mine) / total,
                "mean_latency": _mean(mine["latency"]) / spec.unit,
                "mean_sojourn": _mean(mine["wait"] + mine["service"]) / spec.unit,
            }
        )
    return out


def _killed(
    spec: LabSpec, frame: pd.DataFrame, s: int, at: float, last_failure: float | None
) -> dict[str, Any]:
    m = frame[frame["measured"]]
    ok = m[m["status"] == "ok"]
    before = ok[ok["scheduled"] < at]
    after = ok[ok["scheduled"] >= at]
    retried = m[(m["done"] >= at) & (m["tries"] > 1)]
    last = last_failure - at if last_failure is not None else math.nan
    return {
        "server": s,
        "killed_at": at - spec.warmup_seconds,
        "mean_latency_before": _mean(before["latency"]) / spec.unit,
        "mean_latency_after": _mean(after["latency"]) / spec.unit,
        "p99_before": float(np.percentile(before["latency"], 99)) / spec.unit
        if len(before)
        else math.nan,
        "p99_after": float(np.percentile(after["latency"], 99)) / spec.unit
        if len(after)
        else math.nan,
        "retried": len(retried),
        "last_forward_after_seconds": last,
        "served_after": int((after["server"] == s).sum()),
        "errors_after": int((m[m["scheduled"] >= at]["status"] != "ok").sum()),
    }


def fault_report(
    spec: LabSpec, frame: pd.DataFrame, kills: dict[int, float], last_failure: dict[int, float]
) -> dict[str, Any]:
    """Per-server shares and latencies, and for each kill (server -> second of the load).

    ``last_failure`` maps a server to the last time (seconds of the load) any dispatcher
    failed to forward to it: after that, no dispatcher sent it anything.
    """
    ok = frame[frame["measured"] & (frame["status"] == "ok")]
    return {
        "per_server": _per_server(spec, ok),
        "killed": [
            _killed(spec, frame, s, t, last_failure.get(s)) for s, t in sorted(kills.items())
        ],
    }
