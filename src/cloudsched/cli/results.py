"""How dispatch results are shown and written: compact tables, inputs, mean field, Parquet."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudsched.cli.common import emit, render_table, to_json, wrote
from cloudsched.errors import ParameterError

if TYPE_CHECKING:
    import pandas as pd

    from cloudsched.dispatch.result import SimulationResult
    from cloudsched.dispatch.workload.traces import TraceLog

__all__ = [
    "FRAME_FORMATS",
    "emit_simulation",
    "flat_inputs",
    "meanfield_value",
    "per_second",
    "readable",
    "run_inputs",
    "simulation_table",
    "write_frame",
]

FRAME_FORMATS = ("table", "csv", "json", "parquet")


def per_second(rate: float) -> str:
    """``2.55 M`` events/s, not ``2.55e+06`` (k, M, G; three digits)."""
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if rate >= scale:
            return f"{rate / scale:.3g} {unit}"
    return f"{rate:.3g}"


def readable(x: Any, digits: int = 4) -> str:
    """Write ``x`` as a reader wants it: ``digits`` significant digits, thousands grouped.

    No e-notation from 1e-4 to 1e15 (``198,400``, ``0.503``, ``5,870``); tuples in
    parentheses; None or a non-finite float as ``-``.
    """
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    if isinstance(x, tuple | list):
        return "(" + ", ".join(readable(v, digits) for v in x) + ")"
    if isinstance(x, float):
        if x != 0 and 1e-4 <= abs(x) < 1e15:
            places = max(0, digits - 1 - math.floor(math.log10(abs(x))))
            out = f"{float(f'{x:.{digits}g}'):,.{places}f}"
            return out.rstrip("0").rstrip(".") if "." in out else out
        return f"{x:.{digits}g}"
    return str(x)


def _iqueues(res: Any) -> bool:
    """Whether the run's policy keeps I-queues (else p0 means nothing and is not shown)."""
    from cloudsched.dispatch.plugin import registered

    policy = registered().get(res.policy)
    return policy is None or bool(policy.iqueues)


def run_inputs(
    *,
    service: str | None,
    arrivals: str | None,
    speeds: Any,
    log: TraceLog | None,
    service_scale: float,
    load_given: bool,
) -> dict[str, Any]:
    """Describe a run's inputs for its record: laws, speeds, trace, rescaling, time unit."""
    import numpy as np

    out: dict[str, Any] = {"service": service or "exp", "arrivals": arrivals or "poisson"}
    if speeds is not None:
        s = np.asarray(speeds, dtype=float)
        out["speeds"] = {
            "count": int(s.size),
            "mean": float(s.mean()),
            "min": float(s.min()),
            "max": float(s.max()),
        }
    if log is not None:
        from cloudsched.dispatch.workload.logs import log_inputs

        out["service"] = out["arrivals"] = "trace"
        out["trace"] = log_inputs(log)
        out["service_scale"] = service_scale
        out["rescaled_to_load"] = load_given
        out["time_unit"] = f"{service_scale:g} s" if service_scale != 1 else "s"
    else:
        out["time_unit"] = "mean service time"
    return out


def flat_inputs(inputs: dict[str, Any]) -> dict[str, Any]:
    """Return the inputs as flat columns (``input_service``, ``input_trace_sha256``, ...)."""
    row: dict[str, Any] = {
        "input_service": inputs["service"],
        "input_arrivals": inputs["arrivals"],
        "input_time_unit": inputs["time_unit"],
    }
    if "speeds" in inputs:
        row["input_speeds"] = "count={count} mean={mean:g} min={min:g} max={max:g}".format(
            **inputs["speeds"]
        )
    if "trace" in inputs:
        files = inputs["trace"]["files"]
        row["input_trace"] = ";".join(f["file"] for f in files)
        row["input_trace_sha256"] = ";".join(f["sha256"] for f in files)
        row["input_trace_format"] = inputs["trace"]["format"]
        row["input_service_scale"] = inputs["service_scale"]
        row["input_rescaled_to_load"] = inputs["rescaled_to_load"]
    return row


def meanfield_value(res: SimulationResult, inputs: dict[str, Any]) -> float | None:
    """Return the mean-field response time of a simulated setting, where a model covers it.

    The live mean field; with ``--refresh T`` the bulletin-board model of pod and jsq
    (:mod:`~cloudsched.dispatch.theory.board`); with ``--view own`` the model of proxies
    with their own counts (:mod:`~cloudsched.dispatch.theory.proxies`).
    """
    from cloudsched.experiments.compare import meanfield_mean

    if (
        res.plugin
        or res.delay != "none"
        or res.options
        or res.slowdown
        or inputs["service"] != "exp"
        or inputs["arrivals"] != "poisson"
        or "speeds" in inputs
    ):
        return None
    if res.refresh:
        from cloudsched.dispatch.theory.board import BOARD_POLICIES, board_meanfield

        if res.policy not in BOARD_POLICIES or res.view != "shared" or res.load >= 1:
            return None
        return board_meanfield(res.policy, res.load, res.refresh, d=res.d).mean_response_time
    if res.view == "own":
        from cloudsched.dispatch.theory.proxies import OWN_POLICIES, own_meanfield

        if res.policy not in OWN_POLICIES or res.load >= 1:
            return None
        return own_meanfield(res.policy, res.load, res.dispatchers, d=res.d).mean_response_time
    if res.view != "shared":
        return None
    return meanfield_mean(res.policy, res.load, res.servers / res.dispatchers, res.d)


def _meanfield_text(res: SimulationResult, mf: float) -> str:
    """Return the card's mean-field cell: the value, and the closure's bound where one gives it."""
    from cloudsched.policy_table import TABLE

    closure = res.policy in TABLE and TABLE[res.policy].own_counts == "closure"
    if res.view == "own" and closure and res.dispatchers > 1:
        from cloudsched.dispatch.theory.proxies import POD_CLOSURE_ERROR

        return f"{_num(mf)} (closure: measured high by <= {POD_CLOSURE_ERROR:.0%})"
    return _num(mf)


def _num(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.{digits}g}" if isinstance(v, float) else str(v)


def simulation_table(res: SimulationResult, inputs: dict[str, Any], mf: float | None) -> str:
    """One simulation as a key/value table that fits 80 columns (JSON has every field)."""
    m = res.messages
    ci = f"[{res.ci95[0]:.4g}, {res.ci95[1]:.4g}]" if res.ci95 else "none (see warnings)"
    late = res.delay != "none" or res.view != "shared"
    no_model = (
        "with delays: cloudsched stale" if res.delay != "none" else "no model for this setting"
    )
    kinds = ("join", "delete", "probe", "stale") if late else ("join", "delete", "probe")
    # messages are rates per server and time unit (JSON); the table gives them per task,
    # as compare and tune do
    tasks = res.measured_tasks / (res.measured_time * res.servers) if res.measured_time else 0.0

    def per_task(kind: str) -> float | None:
        rate = m.get(kind)
        return None if rate is None or tasks <= 0 else rate / tasks

    rows: list[tuple[str, str]] = [
        ("policy", res.policy + (f" ({res.plugin})" if res.plugin else "")),
        (
            "servers N / dispatchers M",
            f"{res.servers} / {res.dispatchers} (r = {res.servers / res.dispatchers:g})",
        ),
        ("load", _num(res.load)),
        *(
            [("options", res.options)]
            if res.options
            else [("d / threshold", f"{res.d} / {res.threshold}")]
        ),
        ("mean response time", _num(res.mean_response_time)),
        ("95% interval", ci),
        ("mean field (N = inf)", _meanfield_text(res, mf) if mf is not None else no_model),
        (
            "p50 / p90 / p99",
            " / ".join(_num(res.percentiles.get(k)) for k in ("p50", "p90", "p99")),
        ),
        *([("p0 (empty I-queues)", _num(res.p0))] if _iqueues(res) else []),
        ("messages/task " + "/".join(kinds), " / ".join(_num(per_task(k)) for k in kinds)),
        ("steady state", "yes" if res.steady_state else "NO"),
        ("warm-up / measured time", f"{_num(res.warmup_time)} / {_num(res.measured_time)}"),
        ("measured tasks", str(res.measured_tasks)),
        ("stopped by", res.stop_reason),
        ("engine, events/s", f"{res.engine} ({res.clock}), {per_second(res.events_per_second)}"),
        ("engine chosen", res.engine_reason),
        *([("delays / view", f"{res.delay} / {res.view}")] if late else []),
        *([("lengths published every", f"{res.refresh:g}")] if res.refresh else []),
        *([("slowdown", res.slowdown)] if res.slowdown else []),
        ("seed", str(res.seed)),
        ("service / arrivals", f"{inputs['service']} / {inputs['arrivals']}"),
        ("time unit", inputs["time_unit"]),
    ]
    if "trace" in inputs:
        rows.append(("trace", ", ".join(f["file"] for f in inputs["trace"]["files"])))
    title = f"simulation: {res.policy}"
    if not res.steady_state:
        title += " - NOT STEADY: no interval"
    elif res.ci95 is None:
        title += " - interval withheld"
    text = render_table({"field": [k for k, _ in rows], "value": [v for _, v in rows]}, title)
    return text + "".join(f"WARNING: {note}\n" for note in res.warnings)


def write_frame(
    df: pd.DataFrame, fmt: str, out: Path | None, title: str, payload: dict[str, Any]
) -> None:
    """Write a command's rows as a table, CSV, JSON (``payload``) or Parquet (``df``)."""
    if fmt == "parquet":
        if out is None:
            raise ParameterError("--format", fmt, "used with --out FILE (Parquet is binary)")
        from cloudsched.io import atomic_write_bytes

        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        atomic_write_bytes(out, buf.getvalue())
        wrote(out)
        return
    if fmt == "json":
        emit(to_json(payload), out)
    elif fmt == "csv":
        emit(df.to_csv(index=False), out)
    else:
        emit(render_table(df, title), out)


def emit_simulation(
    res: SimulationResult, inputs: dict[str, Any], fmt: str, out: Path | None, tail: int
) -> None:
    """Print or write one simulation's result (table, or a frame with its inputs)."""
    mf = meanfield_value(res, inputs)
    if fmt == "table":
        emit(simulation_table(res, inputs, mf), out)
        return
    import pandas as pd

    row = {**res.to_row(tail), "meanfield_response_time": mf, **flat_inputs(inputs)}
    payload = {**res.to_dict(), "meanfield_response_time": mf, "inputs": inputs}
    write_frame(pd.DataFrame([row]), fmt, out, "", payload)
