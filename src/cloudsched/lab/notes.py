"""The warnings printed under a live run's numbers: what the lab could not keep to, and why.

Each names what went differently from the run asked for (requests not answered, a load the
servers did not carry, a busy machine, a forwarding path slower under load than when it was
calibrated) so that a number is never shown without what qualifies it.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from cloudsched.lab.spec import LabSpec

__all__ = ["run_warnings"]


def _overhead_warning(lab: dict[str, Any], half: float | None) -> list[str]:
    """Flag ``mean - overhead`` when the path took longer or shorter under load than idle.

    The net mean less the servers' own sojourn mean is the forwarding time under load less
    the calibrated overhead; where that exceeds the interval's half-width, the net mean is
    off by more than the interval says (a busy machine slows the proxies, for one).
    """
    gap = lab["net_mean_response_time"] - lab["backend_sojourn_mean"]
    if half is None or not (math.isfinite(gap) and math.isfinite(half)) or abs(gap) <= half:
        return []
    return [
        f"the forwarding path took {lab['forwarding_ms']:.2f} ms a request under load against "
        f"{lab['overhead_ms']:.2f} ms at calibration: 'mean - overhead' is {gap:+.3f} units "
        f"from the servers' own sojourn mean ({lab['backend_sojourn_mean']:.3f}), more than "
        f"the interval's +- {half:.3f}"
    ]


def run_warnings(
    spec: LabSpec, frame: pd.DataFrame, lab: dict[str, Any], steady: bool, half: float | None
) -> list[str]:
    """List what a reader of a live run's numbers must know.

    ``half`` is the half-width of the mean's interval (None when it is withheld).
    """
    out: list[str] = []
    m = frame[frame["measured"]]
    if not (m["status"] == "ok").any():
        return ["no request was answered in the measurement: lengthen --duration or raise --load"]
    for status in ("refused", "error", "unfinished"):
        k = int((m["status"] == status).sum())
        if k:
            out.append(
                f"{k} of {len(m)} measured requests {status} "
                f"({'--max-inflight reached' if status == 'refused' else 'see status'})"
            )
    if spec.load >= 1.0:
        out.append(f"load {spec.load:g} >= 1: no steady state, the mean grows with the run")
    elif not steady:
        out.append(
            "the latency series is not steady over the run (drift or batches too "
            "short for their correlation): the interval is not certified"
        )
    carried = lab["achieved_load"]
    steady_load = not spec.kill and spec.load < 1.0
    if steady_load and math.isfinite(carried) and abs(carried / spec.load - 1) > 0.05:
        out.append(
            f"the servers carried load {lab['achieved_load']:.3f}, not {spec.load:g}: "
            "compare with a simulation at the achieved load"
        )
    busy = lab["cpu"].get("machine_busy", math.nan)
    if max(lab["cpu"].get("machine_share", 0.0), busy if math.isfinite(busy) else 0.0) > 0.8:
        out.append(
            f"the machine was {busy:.0%} busy (the lab: {lab['cpu']['machine_share']:.0%}): "
            "latencies include waiting for a core"
        )
    refused = lab.get("rejected", {})
    if any(refused.values()):
        out.append(
            f"refused {refused['datagrams']} datagrams and {refused['requests']} requests "
            f"without the run's key, and {refused['bad_requests']} requests out of range: "
            "something else on this machine sent to the lab's ports (none of it was acted on)"
        )
    if lab["send_lag_ms"] > 0.5 * spec.unit * 1e3:
        out.append(
            f"the generator sent {lab['send_lag_ms']:.2f} ms late on average "
            "(counted in the latency, from the scheduled time)"
        )
    return out + _overhead_warning(lab, half)
