"""Which slot each node of each job held, and when: the placement log as a table.

With ``record=True`` the kernel logs every time a job takes a template (``LOG_START``, with
the template's slots) and leaves it (``LOG_END``); MaxWeight's frames log the jobs they move.
:func:`assignment_table` pairs them into one row per node of each placement:

``job`` (a number per job, kept when MaxWeight moves the job; a preempted job gets a new
number when it is placed again), ``type`` (job type name), ``node`` (graph node),
``component`` (Flux component, or the node number), ``machine``, ``rack``, ``slot`` (index of
the slot on its machine), ``start``, ``end`` (NaN: still running at the end of the run) and
``cost`` (the placement's partitioning cost, the same on each of its rows).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cloudsched.placement import state as S
from cloudsched.placement.engine import PlacementEngine

__all__ = ["ASSIGNMENT_COLUMNS", "assignment_table", "final_table", "snapshot"]

ASSIGNMENT_COLUMNS = (
    "job",
    "type",
    "node",
    "component",
    "machine",
    "rack",
    "slot",
    "start",
    "end",
    "cost",
)


def assignment_table(eng: PlacementEngine) -> Any:
    """Return the placements of a recorded run as a DataFrame (see the module notes)."""
    import pandas as pd

    eng.empty_log()
    if not eng.log_chunks:
        return pd.DataFrame({c: [] for c in ASSIGNMENT_COLUMNS})
    t = np.concatenate([c[0] for c in eng.log_chunks])
    ev = np.concatenate([c[1] for c in eng.log_chunks])
    slots = np.concatenate([c[2] for c in eng.log_chunks])
    order = np.arange(t.size)
    start, end = ev[:, 0] == S.LOG_START, ev[:, 0] == S.LOG_END
    st = pd.DataFrame(
        {"job": ev[start, 3], "type": ev[start, 2], "start": t[start], "row": order[start]}
    )
    en = pd.DataFrame({"job": ev[end, 3], "end": t[end]})
    st["k"] = st.groupby("job").cumcount()
    en["k"] = en.groupby("job").cumcount()
    runs = st.merge(en, on=["job", "k"], how="left")
    knodes = eng.mo.knodes[runs["type"].to_numpy()]
    rep = np.repeat(np.arange(len(runs)), knodes)
    node = np.concatenate([np.arange(k) for k in knodes]) if len(knodes) else np.array([])
    node = node.astype(np.int64)
    slot = slots[runs["row"].to_numpy()[rep], node].astype(np.int64)
    types = runs["type"].to_numpy()[rep]
    cost = _costs(eng, runs["type"].to_numpy(), slots[runs["row"].to_numpy()])
    return _frame(
        eng,
        runs["job"].to_numpy()[rep],
        types,
        node,
        slot,
        {
            "start": runs["start"].to_numpy()[rep],
            "end": runs["end"].to_numpy()[rep],
            "cost": cost[rep] if cost.size else cost,
        },
    )


def _frame(
    eng: PlacementEngine,
    job: np.ndarray,
    types: np.ndarray,
    node: np.ndarray,
    slot: np.ndarray,
    extra: dict[str, np.ndarray],
) -> Any:
    """Build the table (type and component names as categories: there may be millions)."""
    import pandas as pd

    names = [jt.name for jt in eng.job_types]
    comps = [
        [str(jt.topology.graph.nodes[v].get("component", v)) for v in range(jt.topology.nodes)]
        for jt in eng.job_types
    ]
    labels = sorted({c for cs in comps for c in cs})
    code = {c: i for i, c in enumerate(labels)}
    comp_code = [np.array([code[c] for c in cs], dtype=np.int64) for cs in comps]
    comp = np.zeros(node.size, dtype=np.int64)
    for j in range(len(names)):
        mine = types == j
        comp[mine] = comp_code[j][node[mine]]
    machine = eng.mo.slot_machine[slot]
    return pd.DataFrame(
        {
            "job": job,
            "type": pd.Categorical.from_codes(types, names),
            "node": node,
            "component": pd.Categorical.from_codes(comp, labels),
            "machine": machine,
            "rack": eng.cluster.rack[machine],
            "slot": slot - eng.mo.slot_first[machine],
            **extra,
        }
    )


def final_table(eng: PlacementEngine) -> Any:
    """Return the jobs running at the end of a run, one row per node (no log needed).

    Columns as :func:`assignment_table` but ``start`` and ``end``.
    """
    tids = [(j, int(t)) for j in range(len(eng.job_types)) for t in eng.templates(j, True)]
    knodes = np.array([eng.mo.knodes[j] for j, _ in tids], dtype=np.int64)
    rep = np.repeat(np.arange(len(tids)), knodes)
    node = (
        np.concatenate([np.arange(k) for k in knodes]) if len(tids) else np.zeros(0, dtype=np.int64)
    )
    tid = np.array([t for _, t in tids], dtype=np.int64)
    types = np.array([j for j, _ in tids], dtype=np.int64)
    slot = eng.st.t_slots[tid[rep], node] if len(tids) else np.zeros(0, dtype=np.int64)
    return _frame(
        eng, eng.st.t_job[tid][rep], types[rep], node, slot, {"cost": eng.st.t_cost[tid][rep]}
    )


def _costs(eng: PlacementEngine, types: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Partitioning cost of each placement (row ``i``: type ``types[i]``, its slots)."""
    out = np.zeros(types.size)
    dist = eng.cluster.distance
    for j, jt in enumerate(eng.job_types):
        mine = np.flatnonzero(types == j)
        edges = jt.topology.edge_array()
        if mine.size == 0 or edges.size == 0:
            continue
        machine = eng.mo.slot_machine[slots[mine][:, : jt.topology.nodes]]
        broken = dist[machine[:, edges[:, 0]], machine[:, edges[:, 1]]]
        out[mine] = broken @ jt.topology.edge_weights()
    return out


def snapshot(table: Any, t: float) -> Any:
    """Return the rows of an assignment table running at time ``t``."""
    end = table["end"].fillna(np.inf)
    return table[(table["start"] <= t) & (end > t)]
