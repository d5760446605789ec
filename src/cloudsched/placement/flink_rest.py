"""A Flink job as its REST API describes it: plan, subtasks, where they ran, what they did.

:func:`fetch_job` reads ``/jobs/:id``, ``/jobs/:id/plan``, ``/jobs/:id/vertices/:vid`` and
``/taskmanagers`` from a JobManager's REST endpoint into one JSON document (format
``cloudsched-flink-job/1``) that :func:`read_job` reads back offline.
:func:`job_from_bundle` turns it into a :class:`~cloudsched.placement.flink.FlinkJob`:

* vertices in topological order (the plan lists consumers first), named as ``/jobs/:id``
  names them;
* each subtask's share of its vertex's output (``write-records``) and input
  (``read-records``); equal shares where a vertex wrote or read nothing (sources, sinks);
* an edge's records: what its consumer read, when the consumer has that one input; else
  what its producer wrote, when the producer has that one output; else refused;
* each subtask's cores: ``accumulated-busy-time`` over its time RUNNING, at most 1.

:func:`placement_from_bundle` gives the TaskManager each subtask ran on.
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
import ssl
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

from cloudsched.errors import InputError
from cloudsched.placement.flink import FlinkEdge, FlinkJob

__all__ = [
    "FORMAT",
    "cluster_from_bundle",
    "fetch_job",
    "job_from_bundle",
    "placement_from_bundle",
    "read_job",
    "rest_context",
]

FORMAT = "cloudsched-flink-job/1"
_MAX_BYTES = 64 << 20
_JOB_URL = re.compile(r"^(https?://[^/?#]+(?:/[^?#]*?)?)/jobs/([0-9a-f]{32})/?$")


def _get(url: str, context: ssl.SSLContext | None = None) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=15, context=context) as response:
            data = response.read(_MAX_BYTES + 1)
    except OSError as exc:
        raise InputError(url, f"cannot be read ({exc})") from None
    if len(data) > _MAX_BYTES:
        raise InputError(url, f"answer larger than {_MAX_BYTES >> 20} MiB")
    try:
        return json.loads(data)
    except ValueError:
        raise InputError(url, "answer is not JSON") from None


def rest_context(
    ca: Path | None = None, cert: Path | None = None, key: Path | None = None
) -> ssl.SSLContext | None:
    """Return the TLS client side for a REST endpoint (None: Python's defaults).

    ``ca``: the certificates to trust (PEM); ``cert`` and ``key``: the client's own, for an
    endpoint that authenticates its clients (``security.ssl.rest.authentication-enabled``).
    """
    if ca is None and cert is None:
        return None
    try:
        context = ssl.create_default_context(cafile=None if ca is None else str(ca))
        if cert is not None:
            context.load_cert_chain(str(cert), None if key is None else str(key))
    except (OSError, ssl.SSLError) as exc:
        raise InputError(str(cert or ca), f"not a usable PEM certificate or key ({exc})") from None
    return context


def fetch_job(url: str, context: ssl.SSLContext | None = None) -> dict[str, Any]:
    """Read the REST answers about one job, from ``http(s)://host:port/jobs/<job id>``."""
    match = _JOB_URL.match(url.strip())
    if not match:
        raise InputError(url, "not a job's address (http://host:port/jobs/<32 hex digits>)")
    base = f"{match.group(1)}/jobs/{match.group(2)}"
    job = _get(base, context)
    plan = _get(f"{base}/plan", context)
    vertices = {}
    for vertex in job.get("vertices", []):
        vid = str(vertex.get("id", ""))
        if not re.fullmatch(r"[0-9a-f]{32}", vid):
            raise InputError(url, f"vertex id {vid!r} is not 32 hex digits")
        vertices[vid] = _get(f"{base}/vertices/{urllib.parse.quote(vid)}", context)
    taskmanagers = _get(f"{match.group(1)}/taskmanagers", context)
    return {
        "format": FORMAT,
        "source": base,
        "job": job,
        "plan": plan,
        "vertices": vertices,
        "taskmanagers": taskmanagers,
    }


def cluster_from_bundle(bundle: dict[str, Any]) -> tuple[int, int] | None:
    """Return the TaskManagers and slots of the cluster the job ran on (if recorded)."""
    tms = bundle.get("taskmanagers", {})
    rows = tms.get("taskmanagers") if isinstance(tms, dict) else None
    if not isinstance(rows, list) or not rows:
        return None
    slots = [r.get("slotsNumber") for r in rows if isinstance(r, dict)]
    counts = [s for s in slots if isinstance(s, int) and s > 0]
    if not counts or len(counts) != len(rows):
        return None
    return len(rows), min(counts)


def read_job(path: Path) -> dict[str, Any]:
    """Read a document written by ``place flink --save``, or a plan alone.

    A plan is what ``/jobs/:id/plan`` or ``/jars/:id/plan`` answers (``{"plan": {"nodes":
    ...}}``); read as ``{"format": "plan", "plan": ...}``, with no counts: the records on
    its edges have to be given.
    """
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise InputError(str(path), f"larger than {_MAX_BYTES >> 20} MiB")
        doc = json.loads(path.read_text())
    except OSError as exc:
        raise InputError(str(path), f"cannot be read ({exc.strerror})") from None
    except ValueError:
        raise InputError(str(path), "is not JSON") from None
    if isinstance(doc, dict) and doc.get("format") == FORMAT:
        return doc
    if isinstance(doc, dict) and isinstance(doc.get("plan"), dict) and "nodes" in doc["plan"]:
        return {"format": "plan", "plan": doc}
    raise InputError(str(path), f"is neither a {FORMAT} document nor a Flink job plan")


def _metric(subtask: dict[str, Any], key: str) -> float:
    value = subtask.get("metrics", {}).get(key, 0)
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return float(value) if ok and 0 <= value < 1e18 else 0.0


def _shares(values: np.ndarray) -> np.ndarray:
    total = values.sum()
    return values / total if total > 0 else np.full(values.size, 1.0 / values.size)


def _order(ids: list[str], inputs: dict[str, list[tuple[str, str]]], where: str) -> list[str]:
    order: list[str] = []
    seen: set[str] = set()
    while len(order) < len(ids):
        ready = [v for v in ids if v not in seen and all(u in seen for u, _ in inputs[v])]
        if not ready:
            raise InputError(where, "the plan's edges form a cycle or name unknown vertices")
        for v in ready:
            seen.add(v)
            order.append(v)
    return order


def _subtasks(bundle: dict[str, Any], vid: str, parallelism: int, where: str) -> list[Any]:
    detail = bundle.get("vertices", {}).get(vid)
    subtasks = detail.get("subtasks") if isinstance(detail, dict) else None
    if not isinstance(subtasks, list) or len(subtasks) != parallelism:
        raise InputError(where, f"vertex {vid}: expected {parallelism} subtasks")
    return sorted(subtasks, key=lambda s: int(s.get("subtask", 0)))


def job_from_bundle(
    bundle: dict[str, Any], where: str = "job", records: dict[tuple[str, str], float] | None = None
) -> FlinkJob:
    """Build the job's graph with each subtask's shares and cores (see the module).

    ``records[(producer, consumer)]`` replaces an edge's measured records; a plan alone
    (``format: plan``) needs it for every edge, and its subtasks get equal shares and no
    cores.
    """
    try:
        measured = bundle.get("format") != "plan"
        if not measured:
            bundle = _as_bundle(bundle["plan"], where)
        job = _job_from_bundle(bundle, where, measured)
        return _with_records(job, records or {}, where, measured)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(where, f"is not a Flink job as its REST API gives it ({exc!r})") from None


def _job_from_bundle(bundle: dict[str, Any], where: str, measured: bool = True) -> FlinkJob:
    try:
        nodes = bundle["plan"]["plan"]["nodes"]
        vertices = {str(v["id"]): v for v in bundle["job"]["vertices"]}
        inputs = {
            str(n["id"]): [
                (str(i["id"]), str(i["ship_strategy"]).upper()) for i in n.get("inputs", [])
            ]
            for n in nodes
        }
    except (KeyError, TypeError):
        raise InputError(where, "has no plan nodes and job vertices") from None
    if set(inputs) != set(vertices) or not inputs:
        raise InputError(where, "the plan's nodes and the job's vertices differ")
    names = [str(v["name"]) for v in vertices.values()]
    if len(set(names)) != len(names):
        raise InputError(where, "two job vertices have one name")
    order = _order(list(inputs), inputs, where)
    index = {vid: k for k, vid in enumerate(order)}
    par = [int(vertices[vid]["parallelism"]) for vid in order]
    if any(not 1 <= p <= 32768 for p in par):
        raise InputError(where, "a vertex parallelism is outside 1..32768")
    subs = [_subtasks(bundle, vid, p, where) for vid, p in zip(order, par, strict=False)]
    wrote = [np.array([_metric(s, "write-records") for s in ss]) for ss in subs]
    read = [np.array([_metric(s, "read-records") for s in ss]) for ss in subs]
    cpu = [
        np.array(
            [
                min(
                    1.0,
                    _metric(s, "accumulated-busy-time")
                    / max(1.0, float(s.get("status-duration", {}).get("RUNNING", 0) or 0)),
                )
                for s in ss
            ]
        )
        for ss in subs
    ]
    outputs = {vid: sum(u == vid for v in order for u, _ in inputs[v]) for vid in order}
    edges = []
    for vid in order:
        for uid, ship in inputs[vid]:
            if not measured:
                records = 0.0  # given by the caller
            elif len(inputs[vid]) == 1:
                records = float(read[index[vid]].sum())
            elif outputs[uid] == 1:
                records = float(wrote[index[uid]].sum())
            else:
                raise InputError(where, f"cannot split the records into {vertices[vid]['name']}")
            edges.append(FlinkEdge(index[uid], index[vid], ship, records))
    return FlinkJob(
        name=str(bundle["job"].get("name", "")),
        names=tuple(str(vertices[vid]["name"]) for vid in order),
        parallelism=tuple(par),
        edges=tuple(edges),
        out_share=tuple(_shares(w) for w in wrote),
        in_share=tuple(_shares(r) for r in read),
        cpu=tuple(cpu),
        seconds=float(bundle["job"].get("duration", 0) or 0) / 1000.0,
    )


def _name(node: dict[str, Any]) -> str:
    text = html.unescape(re.sub(r"<[^>]*>", " ", str(node.get("description", ""))))
    return " ".join(text.split()) or str(node["id"])


def _as_bundle(plan: dict[str, Any], where: str) -> dict[str, Any]:
    """Dress a plan as a bundle whose subtasks read and wrote nothing (counts given)."""
    nodes = plan["plan"]["nodes"]
    widths = [int(n["parallelism"]) for n in nodes]
    vertices: list[dict[str, Any]] = [
        {"id": str(n["id"]), "name": _name(n), "parallelism": p}
        for n, p in zip(nodes, widths, strict=True)
    ]
    if any(not 1 <= p <= 32768 for p in widths):
        raise InputError(where, "a vertex parallelism is outside 1..32768")
    subtasks = {
        v["id"]: {"subtasks": [{"subtask": i} for i in range(p)]}
        for v, p in zip(vertices, widths, strict=True)
    }
    job = {"name": str(plan["plan"].get("name", "")), "vertices": vertices}
    return {"format": FORMAT, "job": job, "plan": plan, "vertices": subtasks}


def _with_records(
    job: FlinkJob, records: dict[tuple[str, str], float], where: str, measured: bool
) -> FlinkJob:
    pairs = {(job.names[e.source], job.names[e.target]): k for k, e in enumerate(job.edges)}
    for pair in records:
        if pair not in pairs:
            names = "; ".join(f"{a}=>{b}" for a, b in pairs)
            raise InputError(where, f"has no edge {pair[0]}=>{pair[1]} (its edges: {names})")
    missing = [f"{a}=>{b}" for a, b in pairs if (a, b) not in records]
    if not measured and missing:
        raise InputError(
            where, f"is a plan without counts: give the records of {'; '.join(missing)}"
        )
    edges = list(job.edges)
    for pair, k in pairs.items():
        if pair in records:
            edges[k] = dataclasses.replace(edges[k], records=float(records[pair]))
    return dataclasses.replace(job, edges=tuple(edges))


def placement_from_bundle(bundle: dict[str, Any], job: FlinkJob) -> list[list[str]]:
    """Return the TaskManager each subtask ran on, vertex by vertex in ``job``'s order."""
    by_name = {str(v["name"]): str(v["id"]) for v in bundle["job"]["vertices"]}
    out = []
    for name, p in zip(job.names, job.parallelism, strict=False):
        subs = _subtasks(bundle, by_name[name], p, "job")
        where = [str(s.get("taskmanager-id", "") or "") for s in subs]
        if not all(where) or "(unassigned)" in where:
            raise ValueError(f"a subtask of {name} ran on no TaskManager")
        out.append(where)
    return out
