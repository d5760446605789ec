"""Initial states for the simulator: empty, or drawn from the mean field.

A run that starts empty at high load spends a long time filling up, and a fixed warm-up
fraction does not know how long.  Starting from a state drawn from the mean-field steady
state (``shared/design/dispatch-meanfield.md``) makes the warm-up short at any N: for
``random`` the draw is exactly stationary (N independent M/M/1 queues); for the other
policies it is exact in the large-N limit.

Draw for ``jiq`` and ``jiq-pod`` (a state consistent with ``p0``): the size of each of the M
I-queues is drawn independently from the mean-field I-queue distribution ``p_j``; that many
servers (a uniformly random set) are idle and listed there, and every other server is busy
with a number of tasks drawn from the mean-field occupancy conditioned on ``i >= 1``.
Without I-queues (``random``, ``pod``, ``jsq``) every server's queue length is drawn from
the occupancy ``q_i``.  Policies without a mean-field model of their own start empty.
"""

from __future__ import annotations

import numpy as np

from cloudsched.dispatch.policies import MEANFIELD_POLICIES
from cloudsched.dispatch.replication import InitialState
from cloudsched.dispatch.theory.meanfield import predict
from cloudsched.dispatch.theory.models import MODELS
from cloudsched.dispatch.workload.distributions import Distribution

__all__ = ["has_meanfield_start", "meanfield_state"]

_NONE = np.zeros(0, dtype=np.int64)


def has_meanfield_start(model: str | None, load: float) -> bool:
    """Whether :func:`meanfield_state` can draw a start from this model at this load."""
    return model in MEANFIELD_POLICIES and 0.0 < load < 1.0


def _draw(probs: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    p = np.clip(probs, 0.0, None)
    return rng.choice(p.size, size=size, p=p / p.sum()).astype(np.int64)


def meanfield_state(
    policy: str,
    servers: int,
    dispatchers: int,
    load: float,
    *,
    r: float,
    d: int,
    rng: np.random.Generator,
    service: Distribution | None = None,
) -> InitialState:
    """Draw an initial state from the mean-field steady state.

    Parameters
    ----------
    policy : str
        A policy with a mean-field model (see :func:`has_meanfield_start`).
    servers, dispatchers : int
        N and M.
    load : float
        Load per server, in (0, 1).
    r, d : float, int
        Parameters of the model (servers per dispatcher, probes).
    rng : numpy.random.Generator
        Source of the draw.
    service : Distribution, optional
        Draw a service size for every initial task from this law (general mode).

    Returns
    -------
    InitialState
    """
    pred = predict(policy, [load], r=r, d=d, tail_tol=1e-300, max_tail=10_000)
    occupancy = pred.occupancy(0)
    iqueue = _NONE
    if MODELS[policy].iqueues:
        sizes = _draw(pred.iqueue(0), dispatchers, rng)
        idle = int(min(sizes.sum(), servers))
        if idle < sizes.sum():  # more listed than servers (tiny farms): trim at random
            members = rng.permutation(np.repeat(np.arange(dispatchers), sizes))[:idle]
            sizes = np.bincount(members, minlength=dispatchers)
        order = rng.permutation(servers)
        iqueue = np.full(servers, -1, dtype=np.int64)
        iqueue[order[:idle]] = np.repeat(np.arange(dispatchers), sizes)
        queues = np.zeros(servers, dtype=np.int64)
        busy = occupancy[1:]
        if busy.sum() > 0 and idle < servers:
            queues[order[idle:]] = 1 + _draw(busy, servers - idle, rng)
        else:
            queues[order[idle:]] = 1
    else:
        queues = _draw(occupancy, servers, rng)
    services = np.zeros(0)
    if service is not None:
        services = service.sample(rng, int(queues.sum()))
    return InitialState(queues, iqueue, services)
