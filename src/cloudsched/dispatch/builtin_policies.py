"""The nine built-in dispatch policies, written as plug-ins are (:mod:`.plugin`).

What each one needs from a run (dispatchers, ``d``, a threshold, I-queues, memory) and which
model describes it are its row of :mod:`cloudsched.policy_table`: :func:`_builtin` registers
the hooks below with those options.

Bookkeeping (the paper leaves these open; ``CHOICE`` marks our rules):

* ``random``: a uniform server.  ``round-robin``: each dispatcher cycles over all N servers
  on its own, starting at a uniformly drawn server (CHOICE).  ``jsq``: a uniform server
  among the shortest queues (bucket structure, O(1)).
* ``pod``: probe ``d`` distinct servers (``with_replacement``: independent draws, the
  classic supermarket model) and join the first least loaded in the random sample order,
  i.e. ties are broken uniformly.  ``d`` probes are counted per task.
* ``jiq``: I-queues with delete requests; a server that becomes idle joins a uniform
  I-queue (one join message).  A dispatcher with a non-empty I-queue takes a uniform entry
  and removes it; otherwise it picks a uniform server, and if that server is idle it sends a
  delete request to the server's I-queue.  So listed <=> idle, and no server is listed twice.
* ``jiq-pod``: as ``jiq`` but an empty I-queue probes ``d`` servers as ``pod`` does.
* ``jiq-original``: no delete requests.  A listed server that receives a task from a random
  dispatch stays listed (a stale entry); a dispatcher that takes a stale entry sends the task
  to a busy server (counted as ``stale``).  CHOICE: a server that becomes idle while still
  listed does not join again (it knows its entry was never consumed), so every server is in
  at most one I-queue.
* ``jiq-threshold`` (z): CHOICE: a server is listed exactly while it holds at most ``z``
  tasks.  It joins a uniform I-queue when its queue drops to ``z``; a dispatcher removes the
  entry it uses and the server joins again if it still holds at most ``z`` tasks; a listed
  server pushed above ``z`` by a random dispatch sends a delete request.  ``z = 0`` is ``jiq``.
* ``jiq-sq`` (d): as ``jiq``, but a server that becomes idle samples ``d`` distinct I-queues
  and joins the shortest (first in sample order on ties); those ``d`` queries are counted as
  probe messages.

Initial I-queues (when a run does not give them): every server with at most ``z`` tasks
(``z = 0`` but for ``jiq-threshold``) joins an I-queue chosen as at a join, in server order;
these joins are not counted.
"""

from __future__ import annotations

from typing import Any

from cloudsched._jit import kernel
from cloudsched.dispatch import view as v
from cloudsched.dispatch.plugin import hook, register_policy
from cloudsched.policy_table import TABLE

__all__: list[str] = []  # the policies are reached through the registry


def _builtin(name: str) -> Any:
    """Register the decorated hooks as built-in ``name``, with the needs of its table row."""
    row = TABLE[name]
    needs = ("dispatchers", "d", "threshold", "with_replacement", "iqueues", "memory", "relaxation")
    meanfield = name if row.closed_form else None
    return register_policy(name, meanfield=meanfield, **{k: getattr(row, k) for k in needs})


@kernel(nrt=False, inline=True)
def _take_or_uniform(st, rng, m):
    """Take a uniform entry of I-queue ``m``, or a uniform server if it is empty."""
    if v.iqueue_size(st, m) > 0:
        return v.iqueue_take(st, rng, m)
    return v.uniform(rng, v.servers(st))


@kernel(nrt=False, inline=True)
def _delete_if_busy(st, s, z):
    """Send a delete request for a listed server that now holds more than ``z`` tasks."""
    if v.listed(st, s) >= 0 and v.queue_length(st, s) > z:
        v.iqueue_leave(st, s)
        v.count(st, v.DELETE, 1)


@kernel(nrt=False, inline=True)
def _join_if_idle(st, rng, s, z):
    """List an unlisted server holding at most ``z`` tasks in a uniform I-queue."""
    if v.listed(st, s) < 0 and v.queue_length(st, s) <= z:
        v.iqueue_join(st, v.random_iqueue(st, rng), s)
        v.count(st, v.JOIN, 1)


@kernel(nrt=False, inline=True)
def _list_idle(st, rng, z):
    """List every server with at most ``z`` tasks in a uniform I-queue (time 0)."""
    for s in range(v.servers(st)):
        if v.queue_length(st, s) <= z:
            v.iqueue_join(st, v.random_iqueue(st, rng), s)


@_builtin("random")
class Random:
    """A uniform server."""

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        return v.uniform(rng, par.n)


@_builtin("round-robin")
class RoundRobin:
    """Each dispatcher cycles over all servers, from a uniformly drawn start."""

    @hook
    def on_start(st: Any, par: Any, rng: Any, given: bool) -> None:
        for m in range(par.m):
            st.mem[m] = v.uniform(rng, par.n)

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        s = st.mem[m]
        st.mem[m] = s + 1 if s + 1 < par.n else 0
        return s


@_builtin("jsq")
class JoinShortestQueue:
    """A uniform server among the shortest queues."""

    @hook
    def on_start(st: Any, par: Any, rng: Any, given: bool) -> None:
        for s in range(par.n):
            for k in range(v.queue_length(st, s)):
                v.buckets_up(st, s, k)

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        if v.polled(st):  # the shortest on the last published board
            return v.board_shortest(st, rng)
        return v.shortest_queue(st, rng)

    @hook
    def on_arrival(st: Any, par: Any, rng: Any, s: int, m: int) -> None:
        v.buckets_up(st, s, v.queue_length(st, s) - 1)

    @hook
    def on_departure(st: Any, par: Any, rng: Any, s: int) -> None:
        v.buckets_down(st, s, v.queue_length(st, s) + 1)


@_builtin("pod")
class PowerOfD:
    """Probe d servers and join the first least loaded."""

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        s = v.least_loaded(st, rng, par.d, par.replace)
        v.count(st, v.PROBE, par.d)
        return s


class _ListsIdle:
    """Hooks of the JIQ family: idle servers listed at the start and when they empty."""

    @hook
    def on_start(st: Any, par: Any, rng: Any, given: bool) -> None:
        if not given:
            _list_idle(st, rng, 0)

    @hook
    def on_departure(st: Any, par: Any, rng: Any, s: int) -> None:
        _join_if_idle(st, rng, s, 0)


class _ListsAndDeletes(_ListsIdle):
    """JIQ hooks with delete requests: a listed server that gets a task otherwise leaves."""

    @hook
    def on_arrival(st: Any, par: Any, rng: Any, s: int, m: int) -> None:
        _delete_if_busy(st, s, 0)


@_builtin("jiq")
class JoinIdleQueue(_ListsAndDeletes):
    """Distributed JIQ with delete requests: idle servers listed in I-queues."""

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        return _take_or_uniform(st, rng, m)


@_builtin("jiq-pod")
class JoinIdleQueuePod(_ListsAndDeletes):
    """JIQ, and Pod(d) when the dispatcher's I-queue is empty."""

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        if v.iqueue_size(st, m) > 0:
            return v.iqueue_take(st, rng, m)
        s = v.least_loaded(st, rng, par.d, par.replace)
        v.count(st, v.PROBE, par.d)
        return s


@_builtin("jiq-original")
class JoinIdleQueueOriginal(_ListsIdle):
    """JIQ without delete requests: listed servers may be busy (stale entries)."""

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        if v.iqueue_size(st, m) > 0:
            s = v.iqueue_take(st, rng, m)
            if v.queue_length(st, s) > 0:
                v.count(st, v.STALE, 1)
            return s
        return v.uniform(rng, par.n)


@_builtin("jiq-threshold")
class JoinIdleQueueThreshold:
    """JIQ where a server is listed while it holds at most z tasks."""

    @hook
    def on_start(st: Any, par: Any, rng: Any, given: bool) -> None:
        if not given:
            _list_idle(st, rng, par.z)

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        return _take_or_uniform(st, rng, m)

    @hook
    def on_arrival(st: Any, par: Any, rng: Any, s: int, m: int) -> None:
        if v.listed(st, s) >= 0:
            _delete_if_busy(st, s, par.z)
        else:  # taken from the I-queue (a listed server is never above z)
            _join_if_idle(st, rng, s, par.z)

    @hook
    def on_departure(st: Any, par: Any, rng: Any, s: int) -> None:
        _join_if_idle(st, rng, s, par.z)


@_builtin("jiq-sq")
class JoinIdleQueueShortest:
    """JIQ where an idle server joins the shortest of d sampled I-queues."""

    @hook
    def on_start(st: Any, par: Any, rng: Any, given: bool) -> None:
        if not given:
            for s in range(par.n):
                if v.queue_length(st, s) == 0:
                    v.iqueue_join(st, v.shortest_iqueue(st, rng, par.d), s)

    @hook
    def choose(st: Any, par: Any, rng: Any, m: int) -> int:
        return _take_or_uniform(st, rng, m)

    @hook
    def on_arrival(st: Any, par: Any, rng: Any, s: int, m: int) -> None:
        _delete_if_busy(st, s, 0)

    @hook
    def on_departure(st: Any, par: Any, rng: Any, s: int) -> None:
        if v.listed(st, s) < 0 and v.queue_length(st, s) == 0:
            v.iqueue_join(st, v.shortest_iqueue(st, rng, par.d), s)
            v.count(st, v.JOIN, 1)
            v.count(st, v.PROBE, par.d)
