"""``cloudsched place static``: where running Storm topologies should go, written to a file."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated, Any

import typer

from cloudsched.cli.common import check_outputs, emit, format_frame, resolve_format, wrote
from cloudsched.cli.console import warn
from cloudsched.cli.options import (
    CrossRackCost,
    FluxProperties,
    FluxTraffic,
    FormatJson,
    Out,
    Racks,
    opt,
)
from cloudsched.cli.place_model import check_not_read
from cloudsched.errors import ParameterError, check_choice, check_int, check_real

__all__ = ["place_static", "place_storm_scheduler"]

_SHIPPED = ("wordcount", "exclamation", "rolling-top-words")


def _topologies(
    items: list[str], traffic: str, properties: Path | None = None, ackers: int | str = "storm"
) -> list[Any]:
    """Read each Flux file (or shipped storm-starter name), one node per executor.

    ``properties``: a Java properties file filling every file's ``${name}`` (Flux's
    ``--filter``).
    """
    from cloudsched.data import flux_path
    from cloudsched.placement.flux import TRAFFIC_MODELS, load_flux, read_properties

    traffic = check_choice("--flux-traffic", traffic, TRAFFIC_MODELS)
    props = None if properties is None else read_properties(properties)
    tops = []
    for item in items:
        path = flux_path(item) if item in _SHIPPED else Path(item)
        if not path.is_file():
            raise ParameterError(
                "--topology", item, "a Flux YAML file or one of " + ", ".join(_SHIPPED)
            )
        with warnings.catch_warnings(record=True) as caught:  # said once, as a note
            warnings.simplefilter("always", UserWarning)
            tops.append(load_flux(path, traffic=traffic, properties=props, ackers=ackers))
        for w in caught:
            warn(str(w.message), "note")
    names = [t.name for t in tops]
    if len(set(names)) != len(names):
        raise ParameterError("--topology", ", ".join(names), "topologies of distinct names")
    return tops


def place_static(
    *,
    cluster: Annotated[
        str,
        opt(
            "--cluster",
            help="MACHINESxSLOTS (a slot holds one executor), groups (10x4,5x8) or a cluster file.",
        ),
    ],
    topology: Annotated[
        list[str],
        opt(
            "--topology",
            help="A running topology: a Flux YAML file, or a shipped "
            "storm-starter one (wordcount, exclamation, rolling-top-words); "
            "repeatable.",
        ),
    ],
    racks: Racks = None,
    cross_rack_cost: CrossRackCost = None,
    flux_traffic: FluxTraffic = "edges",
    solver: Annotated[
        str, opt("--solver", help="exact (MILP), fast (packing with a bound) or auto.")
    ] = "auto",
    time_limit: Annotated[
        float, opt("--time-limit", help="Seconds for the search and its bound (> 0).")
    ] = 60.0,
    assignment: Annotated[
        Path | None,
        opt(
            "--assignment",
            help="Write the placement per worker (.json for cloudsched's Storm scheduler, "
            "or .yaml): host, port and executors' tasks.",
        ),
    ] = None,
    hosts: Annotated[
        str | None,
        opt(
            "--hosts",
            help="Host names of the machines, in order, comma-separated (as Storm's "
            "supervisors report them); or 'hosts' in the cluster file.",
        ),
    ] = None,
    properties: FluxProperties = None,
    worker_ports: Annotated[
        int,
        opt(
            "--worker-ports",
            help="Worker slots (supervisor.slots.ports) of each supervisor, for Storm's "
            "EvenScheduler and the assignment (Storm's default 4).",
        ),
    ] = 4,
    ackers: Annotated[
        str,
        opt(
            "--ackers",
            help="Acker executors of each topology: storm (topology.acker.executors, else "
            "topology.workers, as Storm adds them) or a number (0: none).",
        ),
    ] = "storm",
    fmt: FormatJson = None,
    out: Out = (None),
) -> None:
    """Place running topologies once at the least traffic cost, beside Storm's schedulers."""
    inputs = [cluster, *topology, *([str(properties)] if properties is not None else [])]
    check_outputs(out=out, inputs=inputs, others={"--assignment": assignment})
    if assignment is not None:
        from cloudsched.cli.common import check_not_input
        from cloudsched.io import check_output_file

        check_output_file(assignment, "--assignment", ("yaml", "yml", "json"))
        check_not_input("--assignment", assignment, inputs)
    from cloudsched.placement.cluster import cluster_from_text
    from cloudsched.placement.configuration import SOLVERS
    from cloudsched.placement.static import BASELINES, place_baseline
    from cloudsched.placement.static import place_static as solve
    from cloudsched.placement.storm_assignment import storm_assignment

    fmt = resolve_format(fmt, out, ("table", "json"))
    solver = check_choice("--solver", solver, SOLVERS)
    time_limit = check_real("--time-limit", time_limit, low=0.0, high=1e6, low_open=True)
    cl = cluster_from_text(
        cluster, None if racks is None else check_int("--racks", racks, low=1), cross_rack_cost
    )
    ports = check_int("--worker-ports", worker_ports, low=1, high=10_000)
    names = _hosts(hosts, cl, assignment)
    if assignment is not None and _ackers(ackers) != "storm":
        raise ParameterError(
            "--ackers", ackers, "storm with --assignment (Storm's task ids count its ackers)"
        )
    tops = _topologies(topology, flux_traffic, properties, _ackers(ackers))
    check_not_read({"--out": out, "--assignment": assignment}, tops)  # includes too
    for top in tops:  # what a Flux include brought in is said, once
        if len(top.sources) > 1:
            warn(f"{top.sources[0]} includes {', '.join(top.sources[1:])}", "note")
    best = solve(cl, tops, solver=solver, time_limit=time_limit)
    runs = [best, *(place_baseline(cl, tops, b, ports) for b in BASELINES)]
    if assignment is not None:
        _write_assignment(assignment, storm_assignment(cl, tops, best, names, ports))
    rows = [_row(p, tops, best) for p in runs]
    title = (
        f"{len(tops)} running topologies on {cluster} ({cl.total_slots} slots): traffic "
        "cost of the edges broken across machines"
    )
    payload = {"cluster": cluster, "topologies": [t.name for t in tops], "rows": rows}
    text = format_frame(_frame(rows, fmt), fmt, title, payload)
    if fmt == "table":
        text += _summary(best, runs[1:])
    emit(text, out)
    if assignment is not None:
        wrote(assignment)


def _hosts(text: str | None, cl: Any, assignment: Path | None) -> list[str] | None:
    """Return the machines' host names: ``--hosts``, else the cluster file's (or None)."""
    from cloudsched.placement.hosts import check_hosts

    if text is None:
        if assignment is not None and cl.hosts is None:
            warn(
                "the assignment names the machines machine-0, machine-1, ...: give --hosts "
                "(or 'hosts' in the cluster file) for the scheduler to find the supervisors",
                "note",
            )
        return None
    if assignment is None:
        raise ParameterError("--hosts", text, "given with --assignment (the file they name)")
    if cl.hosts is not None:
        raise ParameterError("--hosts", text, "not given with a cluster file that names hosts")
    return check_hosts(text.split(","), cl.machines)


def _ackers(text: str) -> int | str:
    if str(text).strip().lower() == "storm":
        return "storm"
    try:
        return check_int("--ackers", int(text), low=0, high=1_000_000)
    except ValueError:
        raise ParameterError("--ackers", text, "storm or an integer in [0, 1000000]") from None


def _row(p: Any, tops: list[Any], best: Any) -> dict[str, Any]:
    placed = [(t, m) for t, m in zip(tops, p.machines, strict=True) if m is not None]
    total = sum(t.total_traffic for t, _ in placed)
    broken = sum(_broken(t, m) for t, m in placed)
    bound = best.lower_bound
    gap = None  # the bound is for every topology placed: no gap for a partial placement
    if bound is not None and p.placed == len(tops) and p.fits:
        gap = max(p.cost - bound, 0.0) / p.cost if p.cost > 0 else 0.0
    return {
        "scheduler": p.policy,
        "placed": f"{p.placed}/{len(tops)}",
        "cost": p.cost,
        "broken": broken / total if total > 0 else 0.0,
        "machines": len({int(x) for m in p.machines if m is not None for x in m}),
        "bound": bound,
        "gap": gap,
        "notes": "; ".join(p.notes),
    }


def _broken(t: Any, m: Any) -> float:
    """Traffic on the edges whose ends sit on two machines."""
    edges = t.edge_array()
    if edges.size == 0:
        return 0.0
    apart = m[edges[:, 0]] != m[edges[:, 1]]
    return float(t.edge_weights()[apart].sum())


def _frame(rows: list[dict[str, Any]], fmt: str) -> Any:
    """Build the table: gaps as percents, ``-`` where there is none.

    A partial placement, or one on more than the cluster has, has no gap; notes go below.
    """
    import pandas as pd

    df = pd.DataFrame(rows).drop(columns=["notes"])
    if fmt == "table":
        df["gap"] = ["-" if pd.isna(g) else f"{max(g, 0.0):.1%}" for g in df["gap"]]
    return df


def _summary(best: Any, baselines: list[Any]) -> str:
    lines = [f"{p.policy}: {note}" for p in (best, *baselines) for note in p.notes]
    if best.lower_bound is None:  # some topologies do not fit beside the others
        lines.append(
            f"optimised: {best.placed} of {len(best.machines)} placed together: the "
            "cluster's slots, CPU or memory do not hold them all; no bound"
        )
        return "".join(line + "\n" for line in lines)
    proof = "proven optimal" if best.proven else f"within {best.gap:.1%} of the best possible"
    lines.append(
        f"optimised ({best.solver} solver, {best.solve_time:.2f} s): cost {best.cost:.4g}, "
        f"{proof} (lower bound {best.lower_bound:.4g})"
    )
    for b in baselines:
        if b.placed == len(b.machines) and best.cost > 0:
            tail = "" if b.fits else ", on more than the cluster has (above)"
            lines.append(f"{b.policy}: {b.cost / best.cost:.2f} x the optimised cost{tail}")
    return "".join(line + "\n" for line in lines)


def _write_assignment(path: Path, doc: dict[str, Any]) -> None:
    import json
    import re

    import yaml

    from cloudsched.io import atomic_write_text

    if path.suffix.lower() == ".json":
        text = json.dumps(doc, indent=2)
        # one line per executor: {"component": "split", "tasks": [21, 21]}
        text = re.sub(r"\[\s+(\d+),\s+(\d+)\s+\]", r"[\1, \2]", text)
        text = re.sub(
            r'\{\s+("component": "(?:[^"\\]|\\.)*"),\s+("tasks": \[\d+, \d+\])\s+\}',
            r"{\1, \2}",
            text,
        )
        atomic_write_text(path, text + "\n")
        return
    atomic_write_text(
        path,
        "# cloudsched place static: Storm assignment\n"
        + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None),
    )


def place_storm_scheduler(
    folder: Annotated[
        Path,
        typer.Argument(
            help="Folder for the Java sources (created; a different file of the same name "
            "there stops the command)."
        ),
    ],
) -> None:
    """Write cloudsched's Storm scheduler (Java) that applies a place static assignment."""
    from importlib import resources

    from cloudsched.io import atomic_write_text

    source = resources.files("cloudsched") / "data" / "storm" / "cloudsched" / "storm"
    files = sorted(
        (p.name, p.read_text(encoding="utf-8"))
        for p in source.iterdir()
        if p.name.endswith(".java")
    )
    target = folder / "cloudsched" / "storm"
    for name, text in files:
        path = target / name
        if path.exists() and path.read_text(encoding="utf-8", errors="replace") != text:
            raise ParameterError("FOLDER", str(folder), f"a folder without another {path}")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError(
            "FOLDER", str(folder), f"a folder that can be made ({exc.strerror})"
        ) from None
    for name, text in files:
        atomic_write_text(target / name, text)
        wrote(target / name)
    emit(_BUILD.format(folder=folder), None)


_BUILD = """\
Build (JDK 8 or later, against the Storm 2.x release nimbus runs):
  cd {folder} && mkdir -p classes
  javac --release 8 -cp "$STORM_HOME/lib/*" -d classes cloudsched/storm/*.java
  jar cf cloudsched-storm-scheduler.jar -C classes .
Deploy on the nimbus host, then restart nimbus:
  cp cloudsched-storm-scheduler.jar "$STORM_HOME/extlib-daemon/"
  # storm.yaml
  storm.scheduler: "cloudsched.storm.AssignmentScheduler"
  cloudsched.assignment.file: "/path/to/placement.json"
"""
