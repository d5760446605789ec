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

__all__ = ["ASSIGNMENT_COLUMNS", "assignment_table", "snapshot"]

ASSIGNMENT_COLUMNS = ("job", "type", "node", "component", "machine", "rack", "slot", "start",
                      "end", "cost")  # fmt: skip


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
    st = pd.DataFrame({"job": ev[start, 3], "type": ev[start, 2], "start": t[start],
                       "row": order[start]})  # fmt: skip
    en = pd.DataFrame({"job": ev[end, 3], "end": t[end]})
    st["k"] = st.groupby("job").cumcount()
    en["k"] = en.groupby("job").cumcount()
    runs = st.merge(en, on=["job", "k"], how="left")
    knodes = eng.mo.knodes[runs["type"].to_numpy()]
    rep = np.repeat(np.arange(len(runs)), knodes)
    node = np.concatenate([np.arange(k) for k in knodes]) if len(knodes) else np.array([])
    node = node.astype(np.int64)
    slot = slots[runs["row"].to_numpy()[rep], node]
    machine = eng.mo.slot_machine[slot]
    names = [jt.name for jt in eng.job_types]
    comps = [[str(jt.topology.graph.nodes[v].get("component", v))
              for v in range(jt.topology.nodes)] for jt in eng.job_types]  # fmt: skip
    types = runs["type"].to_numpy()[rep]
    cost = np.array([eng.cluster.cost(eng.job_types[j].topology, machine[rep == i])
                     for i, j in enumerate(runs["type"].to_numpy())])  # fmt: skip
    return pd.DataFrame({
        "job": runs["job"].to_numpy()[rep], "type": [names[j] for j in types], "node": node,
        "component": [comps[j][v] for j, v in zip(types, node, strict=True)],
        "machine": machine, "rack": eng.cluster.rack[machine],
        "slot": slot - eng.mo.slot_first[machine], "start": runs["start"].to_numpy()[rep],
        "end": runs["end"].to_numpy()[rep], "cost": cost[rep] if cost.size else cost,
    })  # fmt: skip


def snapshot(table: Any, t: float) -> Any:
    """Return the rows of an assignment table running at time ``t``."""
    end = table["end"].fillna(np.inf)
    return table[(table["start"] <= t) & (end > t)]
