"""What ``cloudsched tune`` prints: the answer, the runners-up, the search, the replays."""

from __future__ import annotations

import math
import textwrap
from typing import Any

from cloudsched.cli.common import render_table, to_json
from cloudsched.policy_table import TABLE

__all__ = ["explain", "log_replay"]


def log_replay(log: Any, metric: str) -> Any:
    """Return ``replay(candidate, n, load, rng)``, the metric of a setting on ``log``.

    The log is replayed as it is (every request, rescaled to the load); the metric is in
    mean service times of the log.
    """
    from cloudsched.dispatch.simulation import simulate
    from cloudsched.experiments.compare import setting_args

    mean_s = float(log.trace.services.mean())

    def replay(cand: dict[str, Any], n: int, load: float, rng: Any) -> float:
        run = simulate(load=load, **setting_args(cand, n), trace=log.trace, warmup=0.0, rng=rng)
        value = (
            run.percentiles.get("p99", math.nan) if metric == "p99" else (run.mean_response_time)
        )
        return float(value) / mean_s

    return replay


def _u(v: float, scale: float) -> str:
    return f"{v * scale:.4g}" if math.isfinite(v) else "-"


def explain(res: Any, scale: float, unit: str, fmt: str, trace: list[str] | None) -> str:
    """Render the answer (table with the search log, or JSON); ``scale``: units per time."""
    if fmt == "json":
        conv = {k: v * scale for k, v in (("target", res.target),)}
        return to_json(
            {
                "metric": res.metric,
                **conv,
                "unit": unit,
                "rate_per_mean_service_time": res.rate,
                "certified": [
                    {
                        **c,
                        "estimate": c["estimate"] * scale,
                        "low": c["low"] * scale,
                        "high": c["high"] * scale,
                        "mean_response_time": c["mean_response_time"] * scale,
                        "replay": c["replay"] * scale,
                    }
                    for c in res.certified
                ],
                "candidates": [
                    {k: v for k, v in c.items() if k in ("candidate", "status", "servers")}
                    for c in res.candidates
                ],
                "search": res.log,
                "trace": trace,
            }
        )
    shown_unit = "mean service times" if unit == "service" else unit
    what = f"{res.metric} <= {res.target * scale:g} {shown_unit}"
    if not res.certified:
        text = f"tune: no candidate was certified to meet {what}\n"
    else:
        names = [
            "",
            "policy",
            "N",
            "load",
            res.metric,
            "± 95%",
            *(["mean"] if res.metric != "mean" else []),
            "msg/task",
        ]
        cols: dict[str, list[str]] = {k: [] for k in names + (["log replay"] if trace else [])}
        for i, c in enumerate(res.certified):
            cols[""].append("best" if i == 0 else f"#{i + 1}")
            cols["policy"].append(c["candidate"])
            cols["N"].append(str(c["servers"]))
            cols["load"].append(f"{c['load']:.3f}")
            cols[res.metric].append(_u(c["estimate"], scale))
            cols["± 95%"].append(_u((c["high"] - c["low"]) / 2, scale))
            if res.metric != "mean":
                cols["mean"].append(_u(c["mean_response_time"], scale))
            cols["msg/task"].append(f"{c['messages_per_task']:.3g}")
            if trace:
                cols["log replay"].append(_u(c["replay"], scale))
        text = render_table(cols, f"tune: cheapest settings with {what} (certified)")
    others = [c for c in res.candidates if c["status"] != "certified"]
    text += "".join(f"not kept: {c['candidate']}: {c['status']}\n" for c in others)
    notes = []
    if trace:
        notes.append(
            "certified on the log's laws (i.i.d. inter-arrival and service times "
            "resampled from it), and checked on the log itself replayed as it is "
            "(log replay: every request, one sample path, no interval)"
        )
    if any(c["policy"] in TABLE and TABLE[c["policy"]].probes == "all" for c in res.certified):
        notes.append(
            "jsq is the ideal: it reads every queue length for free (no messages "
            "counted), which no real dispatcher does"
        )
    notes.append(
        "how: the mean field gives a lower bound on N where a model applies; "
        "simulations then step up N until the upper end of the 95% interval meets "
        "the target, and bisect back; cheapest = fewest servers, then fewest "
        "messages per task"
    )
    text += "".join(textwrap.fill(n, 80, subsequent_indent="  ") + "\n" for n in notes)
    text += "search:\n"
    return text + "".join(f"  {line}\n" for line in res.log)
