"""What ``cloudsched place simulate`` writes: its table, its bound line, tables and figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cloudsched.cli.common import render_table
from cloudsched.cli.console import warn
from cloudsched.cli.results import per_second, readable

__all__ = ["bound_line", "card", "check_tables", "plot_end", "simulate_text", "write_tables"]

PER_TYPE = [
    "name",
    "nodes",
    "edges",
    "load",
    "mean_queue_length",
    "final_queue_length",
    "mean_in_service",
    "mean_virtual_templates",
    "mean_partition_cost",
    "cost_rate",
    "mean_wait",
    "proposal_success_rate",
]


def _g(x: Any) -> str:
    return readable(x)


def card(res: Any, payload: dict[str, Any]) -> dict[str, str]:
    """Return the rows of ``place simulate``'s card (the rest is in ``--format json``)."""
    ci = res.cost_rate_ci95
    params = {k: v for k, v in res.params.items() if k != "pilots"}
    rows = {
        "policy": res.policy,
        "params": ", ".join(f"{k}={_g(v)}" for k, v in params.items()) or "-",
        "cluster / racks": f"{payload['cluster']} / {payload['racks']}",
        "workload": payload["workload"],
        "cost per unit time": _g(res.cost_rate),
        "95% interval": "none (see warnings)" if ci is None else f"[{ci[0]:.4g}, {ci[1]:.4g}]",
        "mean partition cost": _g(res.mean_partition_cost),
        "queue length / wait": f"{_g(res.mean_queue_length)} / {_g(res.mean_wait)}",
        "served fraction": _g(res.served_fraction),
        "slots reserved": _g(res.reserved_fraction),
    }
    if res.frames:
        rows["frames (not proven)"] = f"{res.frames:,} ({res.frames_not_optimal:,})"
        rows["migrations / preemptions"] = f"{res.migrations:,} / {res.preemptions:,}"
    if res.proposals_tried:
        rows["proposals tried / failed"] = f"{res.proposals_tried:,} / {res.proposals_failed:,}"
    rows["steady state"] = "yes" if res.steady_state else "NO"
    rows["warm-up / measured time"] = f"{_g(res.warmup_time)} / {_g(res.measured_time)}"
    rows["stopped by"] = str(res.stop_reason)
    rows["events, events/s"] = f"{res.events:,}, {per_second(res.events_per_second)}"
    rows["seed"] = str(res.seed)
    return rows


def simulate_text(res: Any, payload: dict[str, Any], title: str) -> str:
    """Render what ``place simulate`` prints: its card, per job type, frames, bound."""
    import pandas as pd

    summary = card(res, payload)
    rows = pd.DataFrame({"field": list(summary), "value": list(summary.values())})
    if not res.steady_state:
        title += " — NOT STEADY: no intervals"
    text = render_table(rows, title)
    per = pd.DataFrame(res.per_type)[PER_TYPE]
    # one column per job type (the table fits 80 columns for a few types; JSON has it all)
    by_type: dict[str, list[Any]] = {"field": PER_TYPE[1:]}
    by_type.update({str(r["name"]): [r[k] for k in PER_TYPE[1:]] for _, r in per.iterrows()})
    text += render_table(by_type, "per job type")
    if res.frames:
        text += (
            f"frames: {res.frames} ({res.params.get('solver')} solver), optimality gap "
            f"mean {res.frame_gap_mean:.3g}, largest {res.frame_gap_max:.3g}\n"
        )
    if res.bound is not None:
        text += bound_line(
            res.cost_rate, res.cost_rate_ci95, res.bound, res.bound_gap, bool(res.bound_proven)
        )
    elif res.bound_note:
        text += f"static optimum not available: {res.bound_note}\n"
    else:
        text += "static optimum not computed (--no-compare-bound)\n"
    text += "".join(f"WARNING: {note}\n" for note in res.warnings)
    return text


def bound_line(
    cost: float, ci: tuple[float, float] | None, bound: float, gap: float | None, proven: bool
) -> str:
    """``cost 0.531 [0.52, 0.54], optimum 0.5, gap 6%`` (the gap is relative to the bound)."""
    pm = f" [{ci[0]:.4g}, {ci[1]:.4g}]" if ci is not None else " (no interval)"
    if gap is None and cost < bound:
        rel = "n/a (the cost is below it: not yet a long-run rate, run longer)"
    elif gap is None:
        rel = "n/a"
    elif gap == float("inf"):
        rel = f"{cost - bound:.3g} above a zero bound"
    else:
        rel = f"{100 * gap:.1f}%"
    what = "optimum" if proven else "lower bound of the optimum (not proven)"
    return f"cost {cost:.4g}{pm}, {what} {bound:.4g}, gap {rel}\n"


def check_tables(inputs: list[Any], **paths: Path | None) -> None:
    """Refuse, before any work, a Parquet output that cannot be written (or is an input)."""
    from cloudsched.cli.common import check_not_input
    from cloudsched.io import check_output_file

    for name, path in paths.items():
        if path is not None:
            check_output_file(path, f"--{name}", ("parquet",))
            check_not_input(f"--{name}", path, inputs)


def write_tables(res: Any, assignments: Path | None, frames: Path | None) -> None:
    """Write the placement log and MaxWeight's frames as Parquet (atomically)."""
    from cloudsched.io import atomic_path

    for path, table, what in (
        (assignments, res.assignments, "placements"),
        (frames, res.frame_table, "frames"),
    ):
        if path is None:
            continue
        if table is None:
            warn(f"no {what} to write ({res.policy} has no frames); {path} not written")
            continue
        with atomic_path(path) as tmp:
            table.to_parquet(tmp, index=False)


def plot_end(res: Any, cluster: Any, path: Path, label: str) -> None:
    """Draw the slots' jobs at the end of a recorded run."""
    from cloudsched.plotting.placement import plot_snapshots

    end = float(res.warmup_time + res.measured_time)
    plot_snapshots(
        {label: (res.final_placement, end)},
        cluster.slots,
        cluster.rack,
        path,
        title="placement at the end of the run (machines as rows, slots "
        "coloured by job type, one shade per job)",
    )
