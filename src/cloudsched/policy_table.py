"""The one table of built-in dispatch policies: what each needs, who runs it, what theory holds.

One row per built-in policy (:data:`TABLE`, in the order the policies are registered).  The
registry (:mod:`cloudsched.dispatch.builtin_policies` registers each built-in with its row's
needs), the engines (:mod:`cloudsched.dispatch.engines`), the theory
(:mod:`cloudsched.dispatch.theory`), the live lab and the command line read their facts
here; no other module keeps a list of policy names or a code per policy
(``tests/test_models.py`` checks).  A row says

**What a run must give it** (the options of :func:`~cloudsched.dispatch.plugin.register_policy`):

* ``dispatchers``: ``required`` (M or r), ``optional`` or ``unused``;
* ``d``: what ``d`` counts: ``servers`` probed, ``dispatchers`` (I-queues) sampled, or None;
* ``threshold``: it takes ``z``; ``with_replacement``: its probes may be drawn with
  replacement; ``memory``: its own memory (``dispatchers``, ``servers`` or a number).

**How it dispatches** (what the engines that do not run its hooks implement):

* ``pick``: where a task goes when no I-queue entry serves it: ``uniform`` (a uniform
  server), ``cycle`` (each dispatcher's own round), ``least of d`` (the least loaded of d
  probed servers, ties uniform) or ``least`` (a uniform server among the least loaded);
* ``iqueues``: dispatchers keep I-queues of idle servers, and a task goes to an entry first;
  ``join``: where an idle server lists itself: ``uniform`` (a uniform I-queue) or
  ``shortest of d`` (the shortest of d sampled I-queues); ``deletes``: a server that gets a
  task otherwise sends a delete request (so listed means idle), else its entry goes stale;
* ``engines``: the simulator's engines that run it (``servers``, ``counts``, ``classes``,
  ``delay``; :mod:`cloudsched.dispatch.engines`); ``views``: what its dispatchers may read
  (``shared``: the published lengths; ``own``: each dispatcher's own active requests);
* ``lab``: the live lab's dispatchers run it; ``nginx`` / ``haproxy``: the directive that
  makes that proxy balance this way (None: no such directive);
* ``colour``: its colour in every figure; ``defaults``: the commands that try it when no
  policy is named (``tune``; ``stale info`` and ``stale join``, the studies of late
  information and of late I-queue messages; ``verdict`` and its ``verdict baseline``, the
  balancers the verdict map compares), read by :func:`default_policies`.

**What the theory knows** (:mod:`cloudsched.dispatch.theory`):

* ``meanfield``: how its mean field is solved: ``closed`` (closed forms), ``fixed-point``
  (a numerical fixed point), ``limit`` (round-robin: its many-dispatcher limit is
  random's) or ``none`` (no model yet: ``predict`` refuses it, saying ``why``; the
  simulator runs it, from an empty start, with the relaxation time of ``relaxation``);
* ``fluid``: a fluid ODE; ``exact``: the exact chain at finite N, ``any``, ``one
  dispatcher`` (round-robin's ``E_N/M/1``) or ``""``; ``refined``: the refined (1/N) mean
  field; ``speed_classes``: a mean field with speed classes;
* ``relaxation``: the policy whose relaxation time the simulator uses (itself, or a proxy);
* ``delayed``: the delayed mean field: ``join`` (joins late; exact), ``info closure`` or
  ``""``; ``polled``: one with lengths read from a board (``exact`` or ``""``); ``own_counts``:
  one of K proxies with their own counts (``exact``, ``closure``, ``""``);
* ``why``: what the theory lacks for it, and why.

**What production balancer it is** (:mod:`cloudsched.dispatch.balancers`): ``balancer``
(its rule, and the file and function it was read from) and ``options``, named and
defaulted as it ships them (both in :mod:`cloudsched.policy_options`).

Derived facts (properties): ``probes`` (how many servers a decision looks at: ``one``,
``d`` or ``all``), ``messages`` (the kinds of message it sends that can be late:
``info``, ``join``, ``delete``) and ``independent`` (its servers are independent M/M/1
queues).
"""

from __future__ import annotations

from dataclasses import dataclass

from cloudsched.errors import ParameterError
from cloudsched.policy_options import (
    EWMA_OPTIONS,
    EWMA_RULE,
    LEAST_TIME_OPTIONS,
    LEAST_TIME_RULE,
    PREQUAL_OPTIONS,
    PREQUAL_RULE,
    WLR_OPTIONS,
    WLR_RULE,
    WRR_OPTIONS,
    WRR_RULE,
    PolicyOption,
)

__all__ = [
    "ENGINE_NAMES",
    "JOINS",
    "MEANFIELDS",
    "PICKS",
    "TABLE",
    "NoMeanFieldModelError",
    "PolicyRow",
    "check_has_model",
    "check_meanfield_policy",
    "default_policies",
    "get_row",
    "with_capability",
]

#: Where a task goes when no I-queue entry serves it (``PolicyRow.pick``); the last four
#: are the production balancers' rules (the lowest cost of two sampled servers, the lowest
#: cost of all, an earliest-deadline-first schedule, a pool of probes).
PICKS = ("uniform", "cycle", "least of d", "least", "p2c cost", "least cost", "edf", "probes")
#: Where an idle server lists itself (``PolicyRow.join``; "" without I-queues).
JOINS = ("", "uniform", "shortest of d")
#: How a mean field is solved (``PolicyRow.meanfield``).
MEANFIELDS = ("closed", "fixed-point", "limit", "none")
#: The simulator's engines, in the order ``engine="auto"`` prefers them last to first.
ENGINE_NAMES = ("servers", "counts", "classes", "delay")
_PROBES = {"uniform": "one", "cycle": "one", "least of d": "d", "least": "all"}
_PROBES.update(dict.fromkeys(PICKS[4:], "own"))  # a balancer's own estimates


@dataclass(frozen=True)
class PolicyRow:
    """One built-in policy: what it needs, how it dispatches, who runs it, what theory holds."""

    policy: str
    pick: str
    engines: tuple[str, ...]
    meanfield: str
    fluid: bool
    exact: str
    refined: bool
    speed_classes: bool
    relaxation: str
    colour: str
    dispatchers: str = "unused"
    d: str | None = None
    threshold: bool = False
    with_replacement: bool = False
    memory: str | int = 0
    iqueues: bool = False
    join: str = ""
    deletes: bool = False
    views: tuple[str, ...] = ("shared",)
    lab: bool = False
    nginx: str | None = None
    haproxy: str | None = None
    delayed: str = ""
    polled: str = ""
    own_counts: str = ""
    why: str = ""
    defaults: tuple[str, ...] = ()
    balancer: str = ""
    options: tuple[PolicyOption, ...] = ()

    def __post_init__(self) -> None:
        if self.pick not in PICKS or self.join not in JOINS or bool(self.join) != self.iqueues:
            raise ValueError(f"{self.policy}: pick in {PICKS}, join in {JOINS} with I-queues")
        if not set(self.engines) <= set(ENGINE_NAMES) or "servers" not in self.engines:
            raise ValueError(f"{self.policy}: engines among {ENGINE_NAMES}, servers included")
        if self.meanfield not in MEANFIELDS or (self.meanfield == "none" and not self.why):
            raise ValueError(f"{self.policy}: meanfield in {MEANFIELDS} (none: say why)")

    @property
    def probes(self) -> str:
        """Servers a decision looks at: ``one``, ``d``, ``all`` or ``own``.

        ``one``: a uniform server, the next in a cycle or an I-queue's entry; ``d``: the least
        loaded of d probes; ``all``: global state; ``own``: the dispatcher's own estimates
        (a production balancer's requests in flight, latencies, schedule, probes).
        """
        return _PROBES[self.pick]

    @property
    def messages(self) -> tuple[str, ...]:
        """Kinds of message it sends that can be late.

        ``info`` (it reads queue lengths), ``join`` (its idle servers list themselves) and
        ``delete`` (a listed server that gets a task otherwise leaves its I-queue).
        """
        reads = ("info",) if self.probes in ("d", "all") else ()
        return reads + ("join",) * self.iqueues + ("delete",) * self.deletes

    @property
    def independent(self) -> bool:
        """Its servers are independent M/M/1 queues (a uniform split of Poisson arrivals)."""
        return self.pick == "uniform" and not self.iqueues

    def effective_d(self, d: int) -> int:
        """Servers probed per decision as the formulas use it: ``d`` for ``probes="d"``, else 1."""
        return d if self.probes == "d" else 1

    @property
    def closed_form(self) -> bool:
        """The mean field has a closed form (plug-ins may borrow it)."""
        return self.meanfield == "closed"

    def exact_at(self, dispatchers: int) -> bool:
        """Say whether the exact chain applies with ``dispatchers`` dispatchers."""
        return self.exact == "any" or (self.exact == "one dispatcher" and dispatchers == 1)


# One line per concern in each row: what the policy does; what runs it; its theory; where
# the defaults use it and its colour.
# fmt: off
_ROWS = (
    PolicyRow(
        "random",
        pick="uniform",
        engines=("servers", "counts", "classes", "delay"), lab=True, nginx="random;",
        haproxy="balance random(1)",
        meanfield="closed", fluid=True, exact="any", refined=True, speed_classes=True,
        relaxation="random",
        defaults=("tune",), colour="#7f7f7f",
    ),
    PolicyRow(
        "round-robin",
        pick="cycle", dispatchers="required", memory="dispatchers",
        engines=("servers",), lab=True, nginx="", haproxy="balance roundrobin",
        meanfield="limit", fluid=False, exact="one dispatcher", refined=False, speed_classes=False,
        relaxation="random",
        colour="#bcbd22",
        why="no finite-N model with several dispatchers; the mean-field limit is random's "
        "(Palm-Khintchine)",
    ),
    PolicyRow(
        "jsq",
        pick="least", views=("shared", "own"),
        engines=("servers", "counts", "classes", "delay"), lab=True, nginx="least_conn;",
        haproxy="balance leastconn",
        meanfield="closed", fluid=False, exact="any", refined=False, speed_classes=False,
        relaxation="jsq", polled="exact", own_counts="exact",
        defaults=("stale info",), colour="#d62728",
        why="its drift is not smooth: no fluid ODE, no 1/N expansion, no speed classes; with "
        "late information it herds, which no delayed mean field here holds",
    ),
    PolicyRow(
        "pod",
        pick="least of d", d="servers", with_replacement=True, views=("shared", "own"),
        # NGINX's random takes two choices, no other d
        engines=("servers", "counts", "classes", "delay"), lab=True, nginx="random two least_conn;",
        haproxy="balance random({d})",
        meanfield="closed", fluid=True, exact="any", refined=True, speed_classes=True,
        relaxation="pod", delayed="info closure", polled="exact", own_counts="closure",
        defaults=("tune", "stale info"), colour="#1f77b4",
    ),
    PolicyRow(
        "jiq",
        pick="uniform", join="uniform", iqueues=True, deletes=True, dispatchers="required",
        engines=("servers", "counts", "delay"), lab=True,
        meanfield="closed", fluid=True, exact="any", refined=True, speed_classes=True,
        relaxation="jiq", delayed="join",
        defaults=("tune", "stale join"), colour="#2ca02c",
    ),
    PolicyRow(
        "jiq-pod",
        pick="least of d", join="uniform", iqueues=True, deletes=True, d="servers",
        with_replacement=True, dispatchers="required",
        engines=("servers", "counts", "delay"), lab=True,
        meanfield="closed", fluid=True, exact="any", refined=True, speed_classes=True,
        relaxation="jiq-pod", delayed="join",
        defaults=("tune", "stale join"), colour="#ff7f0e",
    ),
    PolicyRow(
        "jiq-original",
        pick="uniform", join="uniform", iqueues=True, deletes=False, dispatchers="required",
        engines=("servers",),
        meanfield="fixed-point", fluid=False, exact="", refined=False, speed_classes=False,
        relaxation="jiq",
        colour="#e377c2",
        why="a numerical mean field only (a pair closure of stale entries)",
    ),
    PolicyRow(
        "jiq-threshold",
        pick="uniform", join="uniform", iqueues=True, deletes=True, threshold=True,
        dispatchers="required",
        engines=("servers",),
        meanfield="fixed-point", fluid=False, exact="", refined=False, speed_classes=False,
        relaxation="jiq",
        colour="#8c564b",
        why="a numerical mean field only (a pair closure: level, I-queue size)",
    ),
    PolicyRow(
        "jiq-sq",
        pick="uniform", join="shortest of d", iqueues=True, deletes=True, d="dispatchers",
        dispatchers="required",
        engines=("servers", "counts"),
        meanfield="fixed-point", fluid=False, exact="", refined=False, speed_classes=False,
        relaxation="jiq",
        colour="#9467bd",
        why="a numerical mean field only (joins sample d I-queues)",
    ),
    PolicyRow(
        "ewma",
        pick="p2c cost", dispatchers="optional", memory="slots",
        engines=("servers",), lab=True,
        meanfield="none", fluid=False, exact="", refined=False, speed_classes=False,
        relaxation="pod", colour="#17becf", defaults=("verdict",),
        why="no model of a cost that learns latency (a peak EWMA) yet",
        balancer=EWMA_RULE, options=EWMA_OPTIONS,
    ),
    PolicyRow(
        "least-time",
        pick="least cost", dispatchers="optional", memory="slots",
        engines=("servers",),
        meanfield="none", fluid=False, exact="", refined=False, speed_classes=False,
        relaxation="jsq", colour="#aec7e8", defaults=("verdict",),
        why="no model of a cost that learns latency (NGINX's average) yet",
        balancer=LEAST_TIME_RULE, options=LEAST_TIME_OPTIONS,
    ),
    PolicyRow(
        "prequal",
        pick="probes", dispatchers="optional", memory="slots",
        engines=("servers",), lab=True,
        meanfield="none", fluid=False, exact="", refined=False, speed_classes=False,
        relaxation="pod", colour="#98df8a", defaults=("verdict",),
        why="no model of a pool of reused, ageing probes yet",
        balancer=PREQUAL_RULE, options=PREQUAL_OPTIONS,
    ),
    PolicyRow(
        "wlr",
        pick="edf", dispatchers="optional", memory="slots",
        engines=("servers",),
        meanfield="none", fluid=False, exact="", refined=False, speed_classes=False,
        relaxation="pod", colour="#ff9896", defaults=("verdict baseline",),
        why="no steady-state model of Envoy's EDF yet (equal weights: pod(2) with replacement); "
        "a slow start's transient: cloudsched fluid wlr",
        balancer=WLR_RULE, options=WLR_OPTIONS,
    ),
    PolicyRow(
        "wrr",
        pick="edf", dispatchers="optional", memory="slots",
        engines=("servers",),
        meanfield="none", fluid=False, exact="", refined=False, speed_classes=False,
        relaxation="random", colour="#c49c94", defaults=("verdict",),
        why="no model of weights learnt from polled load reports yet",
        balancer=WRR_RULE, options=WRR_OPTIONS,
    ),
)
# fmt: on

#: The rows, by policy name, in the order the built-in policies are registered.
TABLE: dict[str, PolicyRow] = {row.policy: row for row in _ROWS}

_CAPABILITIES: tuple[str, ...] = ("iqueues", "fluid", "exact", "refined", "speed_classes")
_CAPABILITIES += ("closed_form", "lab", "polled", "own_counts")


def get_row(policy: str) -> PolicyRow:
    """Return the row of ``policy`` (a :class:`ParameterError` lists the rows there are)."""
    try:
        return TABLE[policy]
    except (KeyError, TypeError):
        raise ParameterError(
            "policy",
            policy,
            "one of "
            + ", ".join(TABLE)
            + " (a plug-in borrows one: register_policy(meanfield=...))",
        ) from None


def with_capability(name: str) -> tuple[str, ...]:
    """Return the policies whose row has capability ``name``.

    ``name`` is one of the boolean facts, ``exact`` (an exact chain at any number of
    dispatchers) or an engine's name (the policies that engine runs).
    """
    if name in ENGINE_NAMES:
        return tuple(p for p, row in TABLE.items() if name in row.engines)
    if name not in _CAPABILITIES:
        raise ValueError(f"capability must be one of {_CAPABILITIES + ENGINE_NAMES}")
    if name == "exact":
        return tuple(p for p, row in TABLE.items() if row.exact == "any")
    return tuple(p for p, row in TABLE.items() if getattr(row, name))


def default_policies(command: str) -> tuple[str, ...]:
    """Return the policies ``command`` tries when none is named (the ``defaults`` column)."""
    return tuple(p for p, row in TABLE.items() if command in row.defaults)


def check_has_model(policy: str) -> None:
    """Refuse, in one line, a policy whose row has no mean field (``meanfield="none"``)."""
    row = get_row(policy)
    if row.meanfield == "none":
        models = [p for p, r in TABLE.items() if r.meanfield != "none"]
        raise ParameterError(
            "policy", policy, f"one of {', '.join(models)} for theory ({policy}: {row.why})"
        )


def check_meanfield_policy(policy: str) -> str:
    """Return ``policy`` if its mean field has a closed form; raise a clear error otherwise."""
    if get_row(policy).closed_form:
        return policy
    raise NoMeanFieldModelError(policy)


class NoMeanFieldModelError(ParameterError):
    """The policy is known, but its mean field has no closed form."""

    def __init__(self, policy: str) -> None:
        closed = with_capability("closed_form")
        super().__init__("policy", policy, "one of " + ", ".join(closed))
        self.args = (
            f"no closed-form mean field for {policy}; policies with one: "
            + ", ".join(closed)
            + " (cloudsched.dispatch.predict solves the others numerically)",
        )

    def __str__(self) -> str:
        return str(self.args[0])
