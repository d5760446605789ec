"""The table of graph-placement policies and what each one does with the configuration.

``storm-default``, ``greedy``, ``resource-aware``
    Place queue heads as soon as they fit (FIFO within a type; across types by entry time,
    and a type whose head does not fit does not block the others); a template is deleted
    when its job leaves.  Storm's EvenScheduler order, a traffic-aware greedy, or Storm's
    ResourceAwareScheduler (:mod:`cloudsched.placement.baselines`).
``dgp``
    Dynamic Graph Partitioning: at each arrival the Random Partition Procedure proposes a
    template, added (virtual) with probability ``e^(w/beta) / (1 + e^(w/beta))``; at each
    departure the template is kept with that probability.  ``w = f_j(Q) - b_A``.
``dgp-clock``
    The same decisions, but proposals happen at the ticks of a Poisson clock per queue
    (rate ``clock_rate``, by default the type's arrival rate) instead of at arrivals.
``maxweight``
    Frame-based MaxWeight (:mod:`cloudsched.placement.maxweight`).
``path/to/file.py:NAME``
    A plug-in (:mod:`cloudsched.placement.plugin`): queue heads placed where its ``place``
    hook says, as the baselines do.

The compiled kernel receives the policy's ``code``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cloudsched.errors import check_choice

__all__ = [
    "DGP",
    "DGP_CLOCK",
    "FRAME",
    "GREEDY",
    "PLACEMENT_POLICIES",
    "PLUGIN",
    "RESOURCE_AWARE",
    "STORM_DEFAULT",
    "PlacementPolicy",
    "get_placement_policy",
]

# Codes the kernel branches on.
DGP, DGP_CLOCK, STORM_DEFAULT, GREEDY, FRAME, RESOURCE_AWARE, PLUGIN = range(7)


@dataclass(frozen=True)
class PlacementPolicy:
    """A placement policy: its name, kernel code, and family.

    ``dgp``: it is one of the DGP chains (``beta``, ``alpha``, ``h``, ``epsilon``, ``f``,
    ``virtual_clock`` apply); ``frames``: it replaces the configuration at frame boundaries
    (``frame``, ``alpha``, ``f``); ``baseline``: it places queue heads as they fit and
    never moves a running job.
    """

    name: str
    code: int
    description: str
    dgp: bool = False
    frames: bool = False
    baseline: bool = False
    #: a plug-in's :class:`~cloudsched.placement.plugin.PlacementPlugin` (code PLUGIN)
    plugin: Any = None


_TABLE = (
    PlacementPolicy("dgp", DGP, "Dynamic Graph Partitioning, proposals at arrivals", dgp=True),
    PlacementPolicy(
        "dgp-clock", DGP_CLOCK, "DGP with a Poisson proposal clock per queue", dgp=True
    ),
    PlacementPolicy("storm-default", STORM_DEFAULT, "Storm's EvenScheduler order", baseline=True),
    PlacementPolicy(
        "greedy", GREEDY, "traffic-aware greedy: neighbours on one machine", baseline=True
    ),
    PlacementPolicy(
        "resource-aware",
        RESOURCE_AWARE,
        "Storm's ResourceAwareScheduler: packs by CPU, memory and racks",
        baseline=True,
    ),
    PlacementPolicy(
        "maxweight",
        FRAME,
        "frame-based MaxWeight (max-weight configuration per frame, exact MILP or fast packing)",
        frames=True,
    ),
)

#: Every placement policy.
PLACEMENT_POLICIES: tuple[str, ...] = tuple(p.name for p in _TABLE)


def get_placement_policy(name: str) -> PlacementPolicy:
    """Return the policy named ``name`` (a ParameterError for an unknown name).

    ``path/to/file.py:NAME`` (or ``path/to/file.py``) loads a plug-in.
    """
    from cloudsched.placement.plugin import is_plugin_ref, load_placement_plugin

    if is_plugin_ref(name):
        plugin = load_placement_plugin(name)
        return PlacementPolicy(name, PLUGIN, plugin.description, baseline=True, plugin=plugin)
    check_choice("policy", name, PLACEMENT_POLICIES)
    return next(p for p in _TABLE if p.name == name)
