"""The event loop of a placement plug-in: Storm's schedulers' loop with the plug-in's hook.

:func:`loop` compiles, around a plug-in's ``place`` hook, the loop that
:func:`cloudsched.placement._kernel.run_baseline` runs for the built-in schedulers: after
each arrival and departure, queue heads in order of entry time are offered to the hook
while it places them (a type whose head it refuses waits until the next event).  The
hook's placement is checked before anything changes (:func:`check`: machines in range,
free slots, CPU and memory); a bad one returns a status ``S.BAD_*`` with the job type,
node and machine in ``st.iwork[5][:3]``, which :func:`run_plugin` turns into one line.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from cloudsched._jit import kernel, source_fingerprint, specialised
from cloudsched.placement import state as S
from cloudsched.placement._kernel import (
    EVENT,
    add_template,
    baseline_event,
    fill,
    next_head,
    template_cost,
)
from cloudsched.placement.plugin import PlacementPlugin, PluginError
from cloudsched.placement.policies import STORM_DEFAULT

__all__ = ["check", "loop", "run_plugin"]


@kernel(nrt=False)
def _refuse(st, j, v, m, status):
    st.iwork[5, 0], st.iwork[5, 1], st.iwork[5, 2] = j, v, m
    return status


@kernel(nrt=False)
def check(st, mo, j, k, where):
    """Return 0 and the nodes' slots in ``st.scratch[:k]``, or the status of a bad node."""
    nm = st.mfree.size
    used = st.iwork[0]
    for m in range(nm):
        used[m] = 0
    for v in range(k):
        m = where[v]
        if m < 0 or m >= nm:
            return _refuse(st, j, v, m, S.BAD_MACHINE)
        if used[m] >= st.mfree[m]:
            return _refuse(st, j, v, m, S.BAD_SLOTS)
        used[m] += 1
    if mo.par[S.P_RES] != 0.0:
        res = st.fwork
        for m in range(nm):
            res[0, m] = st.mres[m, 0]
            res[1, m] = st.mres[m, 1]
        base = mo.node_off[j]
        for v in range(k):
            m = where[v]
            res[0, m] -= mo.ndem[base + v, 0]
            res[1, m] -= mo.ndem[base + v, 1]
            if res[0, m] < -1e-9 or res[1, m] < -1e-9:
                return _refuse(st, j, v, m, S.BAD_RESOURCES)
    for m in range(nm):
        used[m] = 0
    for v in range(k):  # the machines' free slots, taken from the top of their stacks
        m = where[v]
        st.scratch[v] = st.mslots[m, st.mfree[m] - 1 - used[m]]
        used[m] += 1
    return 0


def loop(place: Any, key: str, name: str = "a plug-in") -> Callable[..., Any]:
    """Compile ``run(st, mo, mt, lg, budget, rng)`` around the hook ``place``."""

    @kernel(nrt=False, inline=True, cache=False)
    def place_waiting(st, mo, mt, lg, now, measuring):  # pragma: no cover - compiled
        blocked = st.iwork[5]
        where = st.iwork[4]
        for j in range(mo.knodes.size):
            blocked[j] = 0
        while True:  # as _kernel._place_waiting, with the hook's placement checked
            j = next_head(st, mo, blocked)
            if j < 0:
                return 0
            k = mo.knodes[j]
            if k > st.ist[S.I_FREE_SLOTS]:
                blocked[j] = 1
                continue
            for v in range(k):
                where[v] = -1
            if not place(st, mo, j, k, where[:k]):
                blocked[j] = 1
                continue
            bad = check(st, mo, j, k, where)
            if bad != 0:
                return bad
            b = template_cost(mo, j, st.scratch)
            add_template(st, mo, j, S.VIRTUAL, st.scratch, k, b)
            fill(st, mo, mt, lg, j, now, measuring)

    def run(st, mo, mt, lg, budget, rng):  # pragma: no cover - compiled
        now = st.fst[S.F_NOW]
        for _ in range(budget):
            status, now, measuring = baseline_event(st, mo, mt, lg, now, STORM_DEFAULT, rng)
            if status != EVENT:
                return status
            bad = place_waiting(st, mo, mt, lg, now, measuring)
            if bad != 0:
                st.fst[S.F_NOW] = now
                return bad
        st.fst[S.F_NOW] = now
        return S.CHUNK

    return specialised(run, key, f"{name}'s placement loop", _nrt=False, boundscheck=True)


def _compiled(plugin: PlacementPlugin) -> Callable[..., Any]:
    if plugin.compiled is None:
        # the hook's module and everything it refers to (a plug-in's own helper files too)
        module = getattr(plugin.hook, "py_func", plugin.hook).__module__
        key = hashlib.sha256(
            f"{plugin.fingerprint}:{source_fingerprint(module)}".encode()
        ).hexdigest()
        plugin.compiled = loop(plugin.hook, key, plugin.name)
    return plugin.compiled


def run_plugin(eng: Any, budget: int) -> int:
    """Advance the engine ``eng`` by at most ``budget`` events under its plug-in.

    Returns the kernel's status; a placement the checks refuse, an exception in the hook
    or a failure to compile raises :class:`PluginError` naming the policy.
    """
    plugin = eng.params.plugin
    try:
        run = _compiled(plugin)
        status = int(run(eng.st, eng.mo, eng.mt, eng.lg, budget, eng.rng))
    except PluginError:
        raise
    except Exception as exc:  # the hook raised, indexed outside an array, or did not compile
        text = str(exc).strip().splitlines()
        first = text[0] if text else ""
        if type(exc).__name__ in ("TypingError", "UnsupportedError", "LoweringError"):
            raise PluginError(plugin.name, f"does not compile: {first}") from None
        raise PluginError(plugin.name, f"{type(exc).__name__} in place: {first}") from None
    if status in (S.BAD_MACHINE, S.BAD_SLOTS, S.BAD_RESOURCES):
        j, v, m = (int(x) for x in eng.st.iwork[5, :3])
        if status == S.BAD_MACHINE:
            why = f"machine {m}, outside [0, {eng.cluster.machines})"
        elif status == S.BAD_SLOTS:
            why = f"machine {m}, which has {int(eng.st.mfree[m])} free slots for more nodes"
        else:
            why = f"machine {m}, beyond its free CPU or memory"
        raise PluginError(
            plugin.name, f"place put node {v} of a {eng.job_types[j].name!r} job on {why}"
        )
    return status
