"""Initial states for the simulator: empty, or drawn from the mean field.

A run that starts empty at high load spends a long time filling up, and a fixed warm-up
fraction does not know how long.  Starting from a state drawn from the mean-field steady
state (``docs/explanation/design/dispatch-meanfield.md``) makes the warm-up short at any N: for
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

from cloudsched.dispatch.engines.replication import InitialState
from cloudsched.dispatch.policies import MEANFIELD_POLICIES
from cloudsched.dispatch.theory.meanfield import predict
from cloudsched.dispatch.workload.distributions import Distribution
from cloudsched.policy_table import TABLE

__all__ = ["has_meanfield_start", "meanfield_counts", "meanfield_state"]

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
    if TABLE[policy].iqueues:
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


def _multinomial(total: int, probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    p = np.clip(probs, 0.0, None)
    return rng.multinomial(total, p / p.sum()).astype(np.int64)


def meanfield_counts(
    policy: str,
    servers: int,
    dispatchers: int,
    load: float,
    *,
    r: float,
    d: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Draw a start from the mean field: servers per queue length, and I-queues per size.

    The same law as :func:`cloudsched.dispatch.initial.meanfield_state`, as multinomial
    draws: O(levels), not O(N).  Without I-queues every server's queue is drawn from the
    occupancy ``q_i``; for jiq and jiq-pod each of the M I-queue sizes from the I-queue law
    ``p_j``, that many idle servers, and every other server busy with a queue drawn from
    ``q_i`` given ``i >= 1`` (when the sizes add up to more than N, as in a tiny farm, N of
    the entries are kept at random and every server is idle).
    """
    iqueues = TABLE[policy].iqueues
    pred = predict(policy, [load], r=r if iqueues else 1.0, d=d, tail_tol=1e-300, max_tail=10_000)
    occupancy = pred.occupancy(0)
    if not iqueues:
        return _multinomial(servers, occupancy, rng), None
    sizes = _multinomial(dispatchers, pred.iqueue(0), rng)
    idle = int(np.arange(sizes.size) @ sizes)
    if idle > servers:  # more listed than servers: entries dropped at random, as there
        each = np.repeat(np.arange(sizes.size), sizes)  # the M sizes (their order is moot)
        members = rng.permutation(np.repeat(np.arange(dispatchers), each))[:servers]
        kept = np.bincount(members, minlength=dispatchers)
        return np.array([servers], np.int64), np.bincount(kept)
    queues = np.zeros(occupancy.size + 1, np.int64)
    queues[0] = idle
    busy = occupancy[1:]
    if busy.sum() > 0:
        queues[1 : busy.size + 1] = _multinomial(servers - idle, busy, rng)
    else:
        queues[1] = servers - idle
    return queues, sizes
