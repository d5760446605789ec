"""The max-weight configuration exactly, by pieces and machine patterns, for small graphs.

Where every broken edge costs the same (one rack, or a cross-rack cost of 1) and no machine
limits CPU or memory, a template is, as far as weight goes, a split of its graph into
*pieces* (the nodes on one machine): its cost is the traffic between pieces, and which
machines the pieces go to only has to respect the slots.  So the configuration problem
becomes a small integer program over

* ``n[j, s]``: templates of type ``j`` split by *profile* ``s`` (the multiset of its piece
  sizes), each at the least cut of any split with that profile (found by enumerating every
  split of the graph's nodes: at most Bell(8) = 4,140 for 8 nodes);
* ``y[t, p]``: machines of slot count ``t`` filled by *pattern* ``p`` (a multiset of piece
  sizes summing to at most ``t``);

maximising ``sum n[j, s] (value_j - cut[j, s])`` subject to ``sum_s n[j, s] <= cap_j``,
``sum_p y[t, p] <= machines with t slots`` and, for every piece size ``q``, at least as many
size-``q`` places in the patterns as size-``q`` pieces in the profiles.  Any configuration
gives such counts, and any counts give a configuration of that weight (put the pieces in
the places), so the optimum is the max-weight configuration's.  This program has tens of
integer variables where the per-node MILP (:mod:`cloudsched.placement.milp`) has
copies x nodes x machines binaries: a MaxWeight frame on 6x4 with four types takes
milliseconds instead of 0.1 to 3 s.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy.optimize import Bounds, LinearConstraint

from cloudsched.placement._highs import solve_milp
from cloudsched.placement.cluster import Cluster
from cloudsched.placement.topology import Topology

__all__ = ["MAX_NODES", "Splits", "applies", "pattern_max_weight", "splits"]

#: Largest graph whose splits are enumerated.
MAX_NODES = 8
#: Least cut per profile, with a split reaching it (:func:`splits`).
Splits = dict[tuple[int, ...], tuple[float, tuple[int, ...]]]


def applies(cluster: Cluster, topologies: Sequence[Topology]) -> bool:
    """Whether the pattern program is exact here (uniform distance, slots only, small graphs)."""
    uniform = cluster.racks == 1 or cluster.cross_rack_cost == 1.0
    return uniform and not cluster.has_resources and all(t.nodes <= MAX_NODES for t in topologies)


def _partitions(k: int) -> list[list[int]]:
    """Every split of nodes ``0..k-1`` as a block label per node (restricted growth strings)."""
    out: list[list[int]] = []

    def grow(prefix: list[int], top: int) -> None:
        if len(prefix) == k:
            out.append(list(prefix))
            return
        for b in range(top + 2):
            prefix.append(b)
            grow(prefix, max(top, b))
            prefix.pop()

    if k:
        grow([0], 0)
    return out


@functools.lru_cache(maxsize=64)
def _cached_splits(key: tuple[int, tuple[tuple[int, int, float], ...]], largest: int) -> Splits:
    k, edges = key
    best: Splits = {}
    for labels in _partitions(k):
        sizes = Counter(labels)
        if max(sizes.values()) > largest:
            continue
        profile = tuple(sorted(sizes.values(), reverse=True))
        cut = sum(w for a, b, w in edges if labels[a] != labels[b])
        if profile not in best or cut < best[profile][0] - 1e-12:
            best[profile] = (cut, tuple(labels))
    return best


def splits(topology: Topology, largest: int) -> Splits:
    """Return the least cut of ``topology`` for each profile, with a split that reaches it.

    A profile is the piece sizes, largest first, each at most ``largest``; a split is a
    block label per node.
    """
    edges = tuple(
        (int(a), int(b), float(w))
        for (a, b), w in zip(topology.edge_array(), topology.edge_weights(), strict=True)
    )
    return _cached_splits((topology.nodes, edges), int(largest))


def _patterns(slots: int) -> list[tuple[int, ...]]:
    """Every multiset of piece sizes (largest first) summing to ``1..slots``."""
    out: list[tuple[int, ...]] = []

    def grow(prefix: list[int], left: int, most: int) -> None:
        if prefix:
            out.append(tuple(prefix))
        for q in range(min(left, most), 0, -1):
            prefix.append(q)
            grow(prefix, left - q, q)
            prefix.pop()

    grow([], slots, slots)
    return out


def pattern_max_weight(
    cluster: Cluster,
    topologies: Sequence[Topology],
    values: Sequence[float] | np.ndarray,
    caps: Sequence[int] | np.ndarray | None = None,
    *,
    time_limit: float | None = None,
) -> tuple[list[tuple[int, np.ndarray]], bool, float]:
    """Solve the configuration problem by patterns (module notes); as ``exact_max_weight``.

    Only where :func:`applies` holds.  Returns the templates (type, machine of each node),
    whether proven optimal, and an upper bound on the best weight.
    """
    largest = int(cluster.slots.max())
    total = cluster.total_slots
    kinds = sorted(set(cluster.slots.tolist()))
    cols: list[tuple[str, int, tuple[int, ...]]] = []  # ("n", j, profile) or ("y", t, pattern)
    obj: list[float] = []
    upper: list[float] = []
    best: list[Splits] = []
    for j, top in enumerate(topologies):
        cap = total // top.nodes if caps is None else min(int(caps[j]), total // top.nodes)
        best.append(splits(top, largest))
        if values[j] <= 0 or cap <= 0:
            continue
        for profile, (cut, _) in best[j].items():
            if values[j] - cut > 0:
                cols.append(("n", j, profile))
                obj.append(-(float(values[j]) - cut))
                upper.append(float(cap))
    if not cols:
        return [], True, 0.0
    for t in kinds:
        for pattern in _patterns(t):
            cols.append(("y", t, pattern))
            obj.append(0.0)
            upper.append(float(np.count_nonzero(cluster.slots == t)))
    rows, lo, hi = [], [], []
    for j in {c[1] for c in cols if c[0] == "n"}:
        cap = total // topologies[j].nodes if caps is None else int(caps[j])
        rows.append({i: 1.0 for i, c in enumerate(cols) if c[0] == "n" and c[1] == j})
        lo.append(-np.inf)
        hi.append(float(cap))
    for t in kinds:
        rows.append({i: 1.0 for i, c in enumerate(cols) if c[0] == "y" and c[1] == t})
        lo.append(-np.inf)
        hi.append(float(np.count_nonzero(cluster.slots == t)))
    for q in range(1, largest + 1):  # places of size q >= pieces of size q
        row = {}
        for i, (kind, _, sizes) in enumerate(cols):
            count = sizes.count(q)
            if count:
                row[i] = float(count) if kind == "y" else -float(count)
        rows.append(row)
        lo.append(0.0)
        hi.append(np.inf)
    a = np.zeros((len(rows), len(cols)))
    for r, row in enumerate(rows):
        for i, v in row.items():
            a[r, i] = v
    res = solve_milp(
        "HiGHS (max-weight patterns)",
        np.asarray(obj),
        constraints=LinearConstraint(a, lo, hi),
        integrality=np.ones(len(cols)),
        bounds=Bounds(np.zeros(len(cols)), np.asarray(upper)),
        time_limit=time_limit,
    )
    bound = -float(res.mip_dual_bound) if res.mip_dual_bound is not None else np.inf
    if res.x is None:
        return [], False, max(bound, 0.0)
    counts = np.round(res.x).astype(np.int64)
    templates = _place(cluster, topologies, cols, counts, best)
    optimal = res.status == 0
    return templates, optimal, (-float(res.fun) if optimal else bound)


def _place(
    cluster: Cluster,
    topologies: Sequence[Topology],
    cols: Sequence[tuple[str, int, tuple[int, ...]]],
    counts: np.ndarray,
    best: Sequence[Splits],
) -> list[tuple[int, np.ndarray]]:
    """Put the pieces of the chosen templates into the places of the chosen patterns."""
    places: dict[int, list[int]] = {}  # piece size -> machines with a place of that size
    for (kind, t, pattern), n in zip(cols, counts, strict=True):
        if kind != "y" or n == 0:
            continue
        free = [m for m in np.flatnonzero(cluster.slots == t) if not _used(places, int(m))][
            : int(n)
        ]
        for m in free:
            for q in pattern:
                places.setdefault(q, []).append(int(m))
    out: list[tuple[int, np.ndarray]] = []
    for (kind, j, profile), n in zip(cols, counts, strict=True):
        if kind != "n":
            continue
        labels = np.asarray(best[j][profile][1])
        for _ in range(int(n)):
            machines = np.empty(labels.size, dtype=np.int64)
            for block in np.unique(labels):
                size = int(np.count_nonzero(labels == block))
                machines[labels == block] = places[size].pop()
            out.append((j, machines))
    return out


def _used(places: dict[int, list[int]], m: int) -> bool:
    return any(m in ms for ms in places.values())
