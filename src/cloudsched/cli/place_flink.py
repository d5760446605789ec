"""``cloudsched place flink``: slot-sharing groups for a Flink job, from what it did."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from cloudsched.cli.common import check_outputs, emit, format_frame, resolve_format, wrote
from cloudsched.cli.options import FormatJson, Out, opt
from cloudsched.errors import ParameterError, check_int, check_real, check_seed

__all__ = ["place_flink"]

CONFIG_FORMAT = "cloudsched-flink-config/1"


def place_flink(
    job: Annotated[
        str,
        typer.Argument(
            help="The job: its REST address (http://HOST:PORT/jobs/JOBID, a running or "
            "finished job), a file written by --save, or example (a run of the test job "
            "on 3 TaskManagers x 2 slots, shipped)."
        ),
    ],
    *,
    taskmanagers: Annotated[
        str | None,
        opt(
            "--taskmanagers",
            help="TaskManagers to place on, or several to choose from (2,3,4) (default: the "
            "job's cluster).",
        ),
    ] = None,
    slots: Annotated[
        str | None,
        opt(
            "--slots",
            help="Slots per TaskManager, or several to choose from (1,2) (default: the job's "
            "cluster).",
        ),
    ] = None,
    cpu: Annotated[
        float | None,
        opt(
            "--cpu",
            help="Cores of a TaskManager: no configuration may put more busy subtasks on "
            "one, whatever order Flink places slots in (default: no limit).",
        ),
    ] = None,
    cpu_of: Annotated[
        list[str] | None,
        opt(
            "--cpu-of",
            help="VERTEX=CORES: cores per subtask of a vertex (* for all), instead of the "
            "measured busy time; repeatable, later ones win.",
        ),
    ] = None,
    records: Annotated[
        list[str] | None,
        opt(
            "--records",
            help="FROM=>TO=N: records on the edge between two vertices, instead of the "
            "measured counts; needed for every edge of a plan alone; repeatable.",
        ),
    ] = None,
    modes: Annotated[
        str,
        opt("--modes", help="taskmanager.load-balance.mode values to try: NONE, SLOTS or both."),
    ] = "NONE,SLOTS",
    save: Annotated[
        Path | None, opt("--save", help="Write what was read from the REST API (JSON).")
    ] = None,
    write: Annotated[
        Path | None,
        opt("--write", help="Write the chosen slot-sharing groups and Flink settings (JSON)."),
    ] = None,
    rest_ca: Annotated[
        Path | None, opt("--rest-ca", help="PEM certificates to trust for an https address.")
    ] = None,
    rest_cert: Annotated[
        Path | None,
        opt("--rest-cert", help="PEM client certificate, for a REST endpoint that asks for one."),
    ] = None,
    rest_key: Annotated[
        Path | None, opt("--rest-key", help="PEM key of --rest-cert (if not in that file).")
    ] = None,
    samples: Annotated[
        int, opt("--samples", help="Random slot orders sampled for the range (10..100000).")
    ] = 2000,
    seed: Annotated[int, opt("--seed", help="Seed of the sampled orders.")] = 1,
    time_limit: Annotated[
        float, opt("--time-limit", help="Seconds for the lower bound's MILP (> 0).")
    ] = 20.0,
    fmt: FormatJson = None,
    out: Out = None,
) -> None:
    """Choose slot-sharing groups that send the fewest records across TaskManagers."""
    import numpy as np

    from cloudsched.placement.flink import MODES, crossing_samples, measured_crossing
    from cloudsched.placement.flink_rest import (
        cluster_from_bundle,
        job_from_bundle,
        placement_from_bundle,
    )
    from cloudsched.placement.flink_search import advise

    check_outputs(out=out, inputs=[job], others={"--save": save, "--write": write})
    fmt = resolve_format(fmt, out, ("table", "json"))
    mode_list = tuple(m.strip().upper() for m in modes.split(",") if m.strip())
    if not mode_list or any(m not in MODES for m in mode_list):
        raise ParameterError("--modes", modes, "NONE, SLOTS or NONE,SLOTS")
    samples = check_int("--samples", samples, low=10, high=100_000)
    seed = check_seed("--seed", seed)
    time_limit = check_real("--time-limit", time_limit, low=0.0, high=1e5, low_open=True)
    if cpu is not None:
        cpu = check_real("--cpu", cpu, low=0.0, high=1e6, low_open=True)
    bundle = _read(job, save, rest_ca, rest_cert, rest_key)
    given = _records(records or [])
    flink_job = _override_cpu(job_from_bundle(bundle, job, given), cpu_of or [])
    known = cluster_from_bundle(bundle)
    tms_all = _sizes("--taskmanagers", taskmanagers, known[0] if known else None)
    per_all = _sizes("--slots", slots, known[1] if known else None)
    tms, per = tms_all[0], per_all[0]
    sizes = [(t, p) for t in tms_all for p in per_all]
    if len(sizes) > 16:
        raise ParameterError("--slots", slots, "with --taskmanagers, at most 16 sizes in all")
    if save is not None:
        from cloudsched.io import atomic_write_text

        atomic_write_text(save, json.dumps(bundle, indent=1) + "\n")
        wrote(save)
    advice = advise(flink_job, tms, per, cpu, mode_list, time_limit, sizes)
    rng = np.random.default_rng(seed)
    # each sample shuffles the slots and walks the subtasks: keep a run to seconds
    work = max(1, sum(flink_job.parallelism) + max(t * p for t, p in sizes))
    samples = max(10, min(samples, 20_000_000 // work))
    rows = []
    for label, conf in _labelled(advice):
        t, p = conf.taskmanagers, conf.per_tm
        spread = (
            crossing_samples(flink_job, conf.groups, conf.mode, t, p, rng, samples)
            if conf.placed
            else np.array([np.nan])
        )
        rows.append(_row(label, conf, spread, flink_job))
    try:
        ran = measured_crossing(flink_job, placement_from_bundle(bundle, flink_job))
    except (KeyError, ValueError):
        ran = None
    payload = _payload(advice, rows, ran, job)
    import pandas as pd

    frame = pd.DataFrame([_table_row(r) for r in rows])
    where = (
        f"{tms} TaskManagers x {per} slots"
        if len(sizes) == 1
        else "TaskManagers x slots of " + ", ".join(f"{t}x{p}" for t, p in sizes)
    )
    title = (
        f"{flink_job.name or 'job'} ({len(flink_job.names)} vertices, "
        f"{flink_job.total_records:,.0f} records between them) on {where}: records across "
        "TaskManagers (mean, 5-95% over Flink's slot order) and the busiest TaskManager's cores"
    )
    text = format_frame(frame, fmt, title, payload)
    if fmt == "table":
        text += _summary(advice, rows, ran)
    emit(text, out)
    if write is not None:  # after the table: a configuration that fits none is still shown
        _write_config(write, advice)
        wrote(write)


def _read(
    job: str, save: Path | None, ca: Path | None, cert: Path | None, key: Path | None
) -> dict[str, Any]:
    """Read the job: from its address (with TLS files) or a file; check the options."""
    from cloudsched.placement.flink_rest import fetch_job, read_job, rest_context

    remote = job.startswith(("http://", "https://"))
    if not remote and (ca or cert or key):
        raise ParameterError("--rest-cert", str(cert or ca or key), "used with an address")
    if save is not None and not remote:
        raise ParameterError("--save", str(save), "used with an address (it keeps what was read)")
    if key is not None and cert is None:
        raise ParameterError("--rest-key", str(key), "given with --rest-cert")
    if not remote:
        return read_job(_job_path(job))
    return fetch_job(job, rest_context(ca, cert, key))


def _job_path(job: str) -> Path:
    if job == "example":
        from cloudsched.data import flink_path

        return flink_path()
    return Path(job)


def _sizes(name: str, given: str | None, known: int | None) -> list[int]:
    if given is None:
        if known is None:
            raise ParameterError(name, None, "given (the saved job has no cluster)")
        return [known]
    try:
        values = [int(v) for v in given.split(",")]
    except ValueError:
        raise ParameterError(name, given, "a count or counts separated by commas") from None
    if not 1 <= len(values) <= 16:
        raise ParameterError(name, given, "1 to 16 counts")  # and 16 sizes in all
    return list(dict.fromkeys(check_int(name, v, low=1, high=4096) for v in values))


def _override_cpu(job: Any, items: list[str]) -> Any:
    import dataclasses

    import numpy as np

    cpu = list(job.cpu)
    for item in items:
        name, _, value = item.rpartition("=")
        if name != "*" and name not in job.names:
            raise ParameterError("--cpu-of", item, "VERTEX=CORES with a vertex of the job, or *")
        cores = check_real("--cpu-of", _float(item, value), low=0.0, high=1e3)
        for v in range(len(job.names)) if name == "*" else [job.names.index(name)]:
            cpu[v] = np.full(job.parallelism[v], cores)
    return dataclasses.replace(job, cpu=tuple(cpu))


def _float(item: str, value: str, option: str = "--cpu-of") -> float:
    try:
        return float(value)
    except ValueError:
        form = "VERTEX=CORES" if option == "--cpu-of" else "FROM=>TO=N"
        raise ParameterError(option, item, f"{form} (a number)") from None


def _records(items: list[str]) -> dict[tuple[str, str], float]:
    out = {}
    for item in items:
        pair, _, value = item.rpartition("=")
        source, arrow, target = pair.partition("=>")
        if not arrow or not source or not target:
            raise ParameterError("--records", item, "FROM=>TO=N with two vertices of the job")
        count = check_real("--records", _float(item, value, "--records"), low=0.0, high=1e18)
        out[(source.strip(), target.strip())] = count
    return out


def _labelled(advice: Any) -> list[tuple[str, Any]]:
    out = [("default", advice.default), ("evenly spread", advice.spread)]
    best = advice.best
    if best is not None:
        key = (best.groups, best.mode, best.taskmanagers, best.per_tm)
        same = [label for label, c in out if (c.groups, c.mode, c.taskmanagers, c.per_tm) == key]
        out.append((f"best (= {same[0]})" if same else "best", best))
    return out


def _groups_text(groups: tuple[int, ...], names: tuple[str, ...]) -> str:
    if len(set(groups)) == 1:
        return "one group"
    parts: dict[int, list[str]] = {}
    for g, name in zip(groups, names, strict=False):
        parts.setdefault(g, []).append(name)
    return " | ".join(", ".join(v) for v in parts.values())


def _row(label: str, conf: Any, spread: Any, job: Any) -> dict[str, Any]:
    import numpy as np

    total = job.total_records
    lo, hi = np.nanpercentile(spread, [5, 95]) if conf.placed else (np.nan, np.nan)
    return {
        "configuration": label,
        "groups": _groups_text(conf.groups, job.names),
        "groups_by_vertex": dict(zip(job.names, (f"g{g}" for g in conf.groups), strict=False)),
        "mode": conf.mode,
        "size": f"{conf.taskmanagers}x{conf.per_tm}",
        "slots": conf.slots,
        "across_mean": conf.crossing_mean,
        "across_p5": float(lo),
        "across_p95": float(hi),
        "across_share": conf.crossing_mean / total if total > 0 else 0.0,
        # whether the order Flink places the groups in changes the records across
        "varies": bool(conf.placed and np.ptp(spread) > 1e-6 * max(1.0, total)),
        "busiest_tm_cores": conf.busiest_cpu,
        "fits": conf.fits,
    }


def _table_row(row: dict[str, Any]) -> dict[str, Any]:
    placed = math.isfinite(row["across_mean"])

    def n(x: float) -> str:
        return f"{x:,.0f}" if placed else "-"

    return {
        "configuration": row["configuration"],
        "size": row["size"],
        "mode": row["mode"],
        "slots": row["slots"],
        "across": n(row["across_mean"]),
        "p5": n(row["across_p5"]),
        "p95": n(row["across_p95"]),
        "cores": round(row["busiest_tm_cores"], 2) if placed else "-",
        "fits": row["fits"],
    }


def _payload(
    advice: Any, rows: list[dict[str, Any]], ran: float | None, job: str
) -> dict[str, Any]:
    return {
        "job": job,
        "taskmanagers": advice.taskmanagers,
        "slots": advice.slots,
        "cpu_per_tm": advice.cpu_per_tm,
        "rows": rows,
        "measured_as_ran": ran,
        "lower_bound": advice.bound,
        "lower_bound_proved": advice.bound_exact,
        "gap": advice.gap,
        "searched": advice.searched,
        "notes": advice.notes,
    }


def _summary(advice: Any, rows: list[dict[str, Any]], ran: float | None) -> str:
    lines = [f"{r['configuration'].split(' (')[0]}: {r['groups']}" for r in rows]
    if ran is not None:
        lines.append(f"As the job ran: {ran:,.0f} records crossed TaskManagers.")
    best = advice.best
    if best is None:
        lines.extend(advice.notes)
    else:
        gap = advice.gap
        lines.append(
            f"Lower bound over every placement within the slots"
            f"{' and CPU' if advice.cpu_per_tm is not None else ''}: {advice.bound:,.0f}"
            f"{'' if advice.bound_exact else ' (the MILP stopped at its time limit)'};\n"
            f"gap of the best {100 * (gap or 0):.1f}%."
        )
        if any(r["varies"] for r in rows if r["configuration"].startswith("best")):
            lines.append(
                "Flink does not fix which slot each group gets: the best's records across\n"
                "TaskManagers vary from run to run (p5 to p95 above)."
            )
    lines.append(f"Searched {advice.searched}.")
    return "\n" + "\n".join(lines) + "\n"


def _write_config(path: Path, advice: Any) -> None:
    from cloudsched.io import atomic_write_text

    best = advice.best
    if best is None:
        raise ParameterError("--write", str(path), "used when a configuration fits")
    job = advice.job
    doc = {
        "format": CONFIG_FORMAT,
        "job": job.name,
        "slot_sharing_groups": {n: f"g{g}" for n, g in zip(job.names, best.groups, strict=False)},
        "flink_config": {"taskmanager.load-balance.mode": best.mode},
        "taskmanagers": best.taskmanagers,
        "slots_per_taskmanager": best.per_tm,
        "slots_needed": best.slots,
        "records_across_taskmanagers": best.crossing_mean,
    }
    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")
