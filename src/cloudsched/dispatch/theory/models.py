"""The table of theoretical models: what the theory knows about each built-in policy.

One row per built-in dispatch policy (:data:`MODELS`); every theory module, the sweep's
``predict`` kind, ``compare``, ``tune`` and the lab read their facts here instead of
keeping their own lists of policy names.  A row says

* ``iqueues``: dispatchers keep I-queues of idle servers (``r`` matters; p0, join and delete
  messages are part of the prediction);
* ``probes``: how many servers a decision looks at: ``"one"`` (a uniform server or the head
  of an I-queue), ``"d"`` (the least loaded of ``d`` probes) or ``"all"`` (global state);
* ``meanfield``: how its mean field is solved: ``"closed"`` (the closed forms of
  :mod:`~cloudsched.dispatch.theory.meanfield`), ``"fixed-point"`` (a numerical fixed point,
  :mod:`~cloudsched.dispatch.theory.variants`) or ``"limit"`` (round-robin: its
  many-dispatcher limit is random's);
* ``fluid``: a fluid ODE (:mod:`~cloudsched.dispatch.theory.fluid`);
* ``exact``: the exact Markov chain at finite N (:mod:`~cloudsched.dispatch.theory.exact`),
  ``"any"``, ``"one dispatcher"`` (round-robin's ``E_N/M/1``) or ``""``;
* ``refined``: the refined (1/N) mean field (:mod:`~cloudsched.dispatch.theory.population`);
* ``speed_classes``: a mean field with speed classes (:mod:`~cloudsched.dispatch.theory.speeds`);
* ``relaxation``: the model whose relaxation time the simulator uses (itself, or a proxy);
* ``delayed``: the delayed mean field (:mod:`~cloudsched.dispatch.theory.delayed`): ``"join"``
  (join messages late; exact in the limit), ``"info closure"`` (lengths read late; a closure)
  or ``""``;
* ``why``: what the theory lacks for it, and why.
"""

from __future__ import annotations

from dataclasses import dataclass

from cloudsched.errors import ParameterError

__all__ = [
    "MODELS",
    "Model",
    "NoMeanFieldModelError",
    "check_meanfield_policy",
    "get_model",
    "with_capability",
]


@dataclass(frozen=True)
class Model:
    """What the theory can say about one built-in policy (see the module's docstring)."""

    policy: str
    iqueues: bool
    probes: str
    meanfield: str
    fluid: bool
    exact: str
    refined: bool
    speed_classes: bool
    relaxation: str
    delayed: str = ""
    why: str = ""

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


_ROWS = (
    Model(
        "random",
        iqueues=False,
        probes="one",
        meanfield="closed",
        fluid=True,
        exact="any",
        refined=True,
        speed_classes=True,
        relaxation="random",
    ),
    Model(
        "round-robin",
        iqueues=False,
        probes="one",
        meanfield="limit",
        fluid=False,
        exact="one dispatcher",
        refined=False,
        speed_classes=False,
        relaxation="random",
        why="no finite-N model with several dispatchers; the mean-field limit is "
        "random's (Palm-Khintchine)",
    ),
    Model(
        "jsq",
        iqueues=False,
        probes="all",
        meanfield="closed",
        fluid=False,
        exact="any",
        refined=False,
        speed_classes=False,
        relaxation="jsq",
        why="its drift is not smooth: no fluid ODE, no 1/N expansion, no speed classes; with "
        "late information it herds, which no delayed mean field here holds",
    ),
    Model(
        "pod",
        iqueues=False,
        probes="d",
        meanfield="closed",
        fluid=True,
        exact="any",
        refined=True,
        speed_classes=True,
        relaxation="pod",
        delayed="info closure",
    ),
    Model(
        "jiq",
        iqueues=True,
        probes="one",
        meanfield="closed",
        fluid=True,
        exact="any",
        refined=True,
        speed_classes=True,
        relaxation="jiq",
        delayed="join",
    ),
    Model(
        "jiq-pod",
        iqueues=True,
        probes="d",
        meanfield="closed",
        fluid=True,
        exact="any",
        refined=True,
        speed_classes=True,
        relaxation="jiq-pod",
        delayed="join",
    ),
    Model(
        "jiq-original",
        iqueues=True,
        probes="one",
        meanfield="fixed-point",
        fluid=False,
        exact="",
        refined=False,
        speed_classes=False,
        relaxation="jiq",
        why="a numerical mean field only (a pair closure of stale entries)",
    ),
    Model(
        "jiq-threshold",
        iqueues=True,
        probes="one",
        meanfield="fixed-point",
        fluid=False,
        exact="",
        refined=False,
        speed_classes=False,
        relaxation="jiq",
        why="a numerical mean field only (a pair closure: level, I-queue size)",
    ),
    Model(
        "jiq-sq",
        iqueues=True,
        probes="one",
        meanfield="fixed-point",
        fluid=False,
        exact="",
        refined=False,
        speed_classes=False,
        relaxation="jiq",
        why="a numerical mean field only (joins sample d I-queues)",
    ),
)

#: The models, by policy name, in the order the built-in policies are registered.
MODELS: dict[str, Model] = {m.policy: m for m in _ROWS}

_CAPABILITIES = ("iqueues", "fluid", "exact", "refined", "speed_classes", "closed_form")


def get_model(policy: str) -> Model:
    """Return the model row of ``policy`` (a :class:`ParameterError` lists those there are)."""
    try:
        return MODELS[policy]
    except (KeyError, TypeError):
        raise ParameterError(
            "policy",
            policy,
            "one of "
            + ", ".join(MODELS)
            + " (a plug-in borrows one: register_policy(meanfield=...))",
        ) from None


def with_capability(name: str) -> tuple[str, ...]:
    """Return the policies whose model has capability ``name``.

    ``name`` is one of the boolean facts, or ``exact``: an exact chain at any number of
    dispatchers.
    """
    if name not in _CAPABILITIES:
        raise ValueError(f"capability must be one of {_CAPABILITIES}")
    if name == "exact":
        return tuple(p for p, m in MODELS.items() if m.exact == "any")
    return tuple(p for p, m in MODELS.items() if getattr(m, name))


def check_meanfield_policy(policy: str) -> str:
    """Return ``policy`` if its mean field has a closed form; raise a clear error otherwise."""
    if get_model(policy).closed_form:
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
