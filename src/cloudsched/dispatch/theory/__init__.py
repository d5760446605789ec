"""The theory of task dispatch: mean field, fluid, exact chain, refined mean field, speeds.

:mod:`cloudsched.policy_table` says what the theory knows about each built-in policy;
:func:`~cloudsched.dispatch.theory.prediction.predict` answers from it (the mean field, the
finite-N models at ``servers=N``, or speed classes).  Modules:

* :mod:`.meanfield`: the closed forms (random, pod, jsq, jiq, jiq-pod);
* :mod:`.variants` and :mod:`.variant_drifts`: the JIQ variants' fixed points, round-robin;
* :mod:`.fluid`: the fluid ODE (trajectories, relaxation);
* :mod:`.exact`: the lumped Markov chain at small N;
* :mod:`.population` and :mod:`.finite_models`: the refined (1/N) mean field;
* :mod:`.finite`: mean field, refined and exact side by side at N servers;
* :mod:`.speeds`: the mean field with speed classes;
* :mod:`.board`: pod and JSQ reading a board refreshed every T (polled information);
* :mod:`.proxies`: K proxies that each count only their own requests;
* :mod:`.relaxation`: how long a farm takes to forget its start (the simulator's run length).
"""

from typing import Any

__all__ = ["check_predict", "meanfield_limit", "predict"]


def __getattr__(name: str) -> Any:
    """Load ``predict`` (and the solvers) on first use.

    The simulator reads the policy table without them: loading them here at once would
    cost every import of the simulator the solvers.
    """
    if name in ("check_predict", "meanfield_limit", "predict"):
        from cloudsched.dispatch.theory import prediction

        return getattr(prediction, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
