"""Writing a dispatch policy: the :func:`register_policy` decorator and its hooks.

A policy is a class of compiled hooks, written against the view of the state in
:mod:`cloudsched.dispatch.view` and registered under a name::

    from cloudsched.dispatch import hook, register_policy, view as v

    @register_policy("my-pod", d="servers", with_replacement=True, meanfield="pod")
    class MyPod:
        '''Probe d servers and send the task to the first least loaded.'''

        @hook
        def choose(st, par, rng, m):
            v.count(st, v.PROBE, par.d)
            return v.least_loaded(st, rng, par.d, par.replace)

Hooks (all but ``choose`` optional; each is compiled by numba in nopython mode):

``choose(st, par, rng, m) -> int``
    The server (in ``[0, N)``) that receives a task arriving at dispatcher ``m``.
``on_arrival(st, par, rng, s, m)``
    After the task has joined server ``s`` (``queue_length(st, s)`` already counts it).
``on_departure(st, par, rng, s)``
    After a task has left server ``s``.
``on_start(st, par, rng, given)``
    At time 0, after the initial tasks are placed; ``given`` says whether the I-queues
    were given too (a start drawn from the mean field), else the policy lists its idle
    servers itself.

The simulator compiles its event loop once per policy with the hooks as compile-time
constants and caches it on disk, so a policy runs at the speed of its own code.  A file of
such classes is a plug-in: ``cloudsched simulate path/to/policy.py:NAME`` loads it (also in
``compare``, sweeps and ``simulate(policy="path.py:NAME")``).  A plug-in's kernel is
compiled with bounds checking: an index outside an array (``st.mem`` beyond its size, a
server outside ``[0, N)`` given to a view function) ends the run with a one-line
:class:`PluginError` instead of corrupting memory.  ``unchecked=True`` (``--unchecked``)
compiles it without the checks, at the built-ins' speed, for a plug-in already tested.  An
exception raised in a hook, a server outside ``[0, N)`` returned by ``choose`` or code
numba cannot compile also ends the run with a :class:`PluginError` naming the policy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cloudsched._jit import kernel
from cloudsched.plugin_files import PluginError, exec_plugin, hook
from cloudsched.policy_table import with_capability

__all__ = [
    "SCRATCH",
    "PluginError",
    "Policy",
    "hook",
    "load_plugin",
    "register_policy",
    "registered",
]

_DISPATCHERS = ("required", "optional", "unused")
#: Scratch entries per dispatcher in the ``slots`` layout (ints and floats).
SCRATCH = 8
_D_MEANINGS = ("servers", "dispatchers", None)
_HOOKS = ("choose", "on_arrival", "on_departure", "on_start")
#: Models a policy may borrow: built-in policies with a closed-form mean field (the table).
BORROWABLE = with_capability("closed_form")


def _noop_choose(st: Any, par: Any, rng: Any, m: int) -> int:  # pragma: no cover - replaced
    return 0


def _no_arrival(st: Any, par: Any, rng: Any, s: int, m: int) -> None:
    pass


def _no_departure(st: Any, par: Any, rng: Any, s: int) -> None:
    pass


def _no_start(st: Any, par: Any, rng: Any, given: bool) -> None:
    pass


_DEFAULTS = {"on_arrival": _no_arrival, "on_departure": _no_departure, "on_start": _no_start}


@dataclass(frozen=True)
class Policy:
    """A registered dispatch policy: its hooks and what it needs from a run.

    ``dispatchers``: ``required`` (the run must give M or r), ``optional`` (M = 1 unless
    given) or ``unused``; a policy that uses dispatchers draws one per arrival in the
    event-list engine.  ``d``: what ``d`` counts (``servers`` probed, in ``[1, N]``;
    ``dispatchers`` sampled, in ``[1, M]``; None: unused).  ``threshold``,
    ``with_replacement``: whether those parameters mean anything to it.  ``iqueues``: it
    lists idle servers in I-queues (p0 is measured).  ``memory``: size of ``st.mem``
    (``dispatchers``, ``servers``, a number, or ``slots``: the production balancers' layout
    of :mod:`cloudsched.dispatch.balancers`, ``slot_memory`` = (ints, floats) per
    dispatcher and server it balances over, floats per server, floats per dispatcher).
    ``meanfield``: the built-in model that describes it (a start drawn from its steady
    state, its relaxation time, predictions); ``relaxation``: the model whose relaxation
    time stands in for its own (default: the mean-field model, else ``random``, the
    slowest).  ``source`` is the plug-in file (None for a built-in).
    """

    name: str
    description: str
    hooks: dict[str, Callable[..., Any]] = field(repr=False, compare=False, hash=False)
    dispatchers: str = "unused"
    d: str | None = None
    threshold: bool = False
    with_replacement: bool = False
    iqueues: bool = False
    memory: str | int = 0
    meanfield: str | None = None
    relaxation: str = "random"
    slot_memory: tuple[int, int, int, int] = (0, 0, 0, 0)
    source: str | None = None
    fingerprint: str = field(default="", repr=False)

    @property
    def builtin(self) -> bool:
        """Whether the policy ships with cloudsched."""
        return self.source is None

    @property
    def per_dispatcher(self) -> bool:
        """Whether its decisions depend on the dispatcher."""
        return self.dispatchers != "unused"

    def memory_size(self, n: int, m: int, slots: int = 0) -> int:
        """Entries of ``st.mem`` for N servers and M dispatchers (at least 1).

        ``slots``: servers each dispatcher balances over (0: all N).
        """
        if self.memory == "slots":
            return m * (slots or n) * (1 + self.slot_memory[0]) + m * SCRATCH
        size = {"dispatchers": m, "servers": n}.get(str(self.memory), self.memory)
        return max(1, int(size))

    def fmemory_size(self, n: int, m: int, slots: int = 0) -> int:
        """Entries of ``st.fmem`` (float64): per slot and per server (at least 1)."""
        if self.memory != "slots":
            return 1
        per_slot, per_server, per_dispatcher = self.slot_memory[1:]
        return m * (slots or n) * per_slot + n * per_server + m * (per_dispatcher + SCRATCH)

    def kernels(
        self, general: bool, unchecked: bool = False
    ) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """Return the compiled ``init`` and ``run`` of this policy for one engine.

        ``general``: the event-list engine, else the Markov-chain one.  A plug-in's kernels
        are compiled with bounds checking unless ``unchecked`` (the built-ins, whose indexing
        is tested, never are).  Each pair is built once per process (and loaded from the
        disk cache when it can be).
        """
        from cloudsched._jit import source_fingerprint
        from cloudsched.dispatch.engines.servers.kernel import build

        checked = not self.builtin and not unchecked
        key = (self.fingerprint, bool(general), checked)
        if key not in _COMPILED:
            h = self.hooks
            # the hooks' module and everything it refers to (a plug-in's own helper files
            # too): the kernel's own module is added by the cache itself
            module = getattr(h["choose"], "py_func", h["choose"]).__module__
            fingerprint = hashlib.sha256(
                f"{self.fingerprint}:{source_fingerprint(module)}".encode()
            ).hexdigest()
            _COMPILED[key] = build(
                h["choose"],
                h["on_arrival"],
                h["on_departure"],
                h["on_start"],
                iqueues=self.iqueues,
                per_dispatcher=self.per_dispatcher,
                general=bool(general),
                fingerprint=fingerprint,
                name=self.name,
                checked=checked,
            )
        return _COMPILED[key]


_COMPILED: dict[tuple[str, bool, bool], tuple[Callable[..., Any], Callable[..., Any]]] = {}
_REGISTRY: dict[str, Policy] = {}
_PLUGIN_NAMES: dict[str, list[str]] = {}  # plug-in file -> names it registered
_LOADING: list[str] = []  # the plug-in file being executed (set by load_plugin)


def registered() -> dict[str, Policy]:
    """Every registered policy by name (built-ins first, in their order)."""
    return dict(_REGISTRY)


def _check_options(name: str, options: dict[str, Any]) -> None:
    if options["dispatchers"] not in _DISPATCHERS:
        raise ValueError(f"{name}: dispatchers must be one of {_DISPATCHERS}")
    if options["d"] not in _D_MEANINGS:
        raise ValueError(f"{name}: d must be 'servers', 'dispatchers' or None")
    memory = options["memory"]
    if memory not in ("dispatchers", "servers", "slots") and (
        isinstance(memory, bool) or not isinstance(memory, int) or not 0 <= memory <= 2**20
    ):
        raise ValueError(
            f"{name}: memory must be 'dispatchers', 'servers', 'slots' or an int in [0, 2^20]"
        )
    for key in ("meanfield", "relaxation"):
        if options[key] is not None and options[key] not in BORROWABLE:
            raise ValueError(f"{name}: {key} must be one of {BORROWABLE} or None")


def _fingerprint(name: str, cls: type, options: dict[str, Any]) -> str:
    """Hash of the policy's name, options and module (the sources are added when it compiles)."""
    parts = [name, repr(sorted(options.items(), key=str)), cls.__module__]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def register_policy(
    name: str,
    *,
    dispatchers: str = "unused",
    d: str | None = None,
    threshold: bool = False,
    with_replacement: bool = False,
    iqueues: bool = False,
    memory: str | int = 0,
    meanfield: str | None = None,
    relaxation: str | None = None,
    slot_memory: tuple[int, int, int, int] = (0, 0, 0, 0),
) -> Callable[[type], type]:
    """Register the decorated class of hooks as the dispatch policy ``name``.

    The options say what the policy needs (see :class:`Policy`); the class docstring's
    first line describes it.  Returns the class unchanged (with ``policy`` set to the
    :class:`Policy`).
    """
    options = {
        "dispatchers": dispatchers,
        "d": d,
        "threshold": threshold,
        "with_replacement": with_replacement,
        "iqueues": iqueues,
        "memory": memory,
        "meanfield": meanfield,
        "relaxation": relaxation,
        "slot_memory": tuple(slot_memory),
    }
    if not isinstance(name, str) or not name or ":" in name or name != name.strip():
        raise ValueError(f"policy name {name!r}: a non-empty string without ':' or spaces")
    _check_options(name, options)

    def decorate(cls: type) -> type:
        source = _LOADING[-1] if _LOADING else None
        if name in _REGISTRY and _REGISTRY[name].source != source:
            where = _REGISTRY[name].source or "cloudsched"
            raise PluginError(name, f"the name is already taken by a policy of {where}")
        raw = {k: getattr(cls, k) for k in _HOOKS if callable(getattr(cls, k, None))}
        if "choose" not in raw:
            raise PluginError(name, f"class {cls.__name__} has no 'choose' hook")
        jit = kernel(nrt=False, inline=True, cache=False)
        hooks = {k: jit(raw.get(k, _DEFAULTS.get(k, _noop_choose))) for k in _HOOKS}
        doc = (cls.__doc__ or "").strip().splitlines()
        policy = Policy(
            name=name,
            description=doc[0] if doc else "",
            hooks=hooks,
            dispatchers=dispatchers,
            d=d,
            threshold=threshold,
            with_replacement=with_replacement,
            iqueues=iqueues,
            memory=memory,
            meanfield=meanfield,
            relaxation=relaxation or meanfield or "random",
            slot_memory=tuple(slot_memory),  # type: ignore[arg-type]
            source=source,
            fingerprint=_fingerprint(name, cls, options),
        )
        _REGISTRY[name] = policy
        if source is not None:
            _PLUGIN_NAMES.setdefault(source, []).append(name)
        cls.policy = policy  # type: ignore[attr-defined]
        return cls

    return decorate


def load_plugin(path: str | Path) -> list[str]:
    """Execute the plug-in file ``path`` (once per file) and return the names it registered."""
    return exec_plugin(
        path,
        prefix="cloudsched_plugin",
        files=_PLUGIN_NAMES,
        loading=_LOADING,
        forget=_forget,
        error=PluginError,
        none="registers no policy (decorate a class with @register_policy)",
    )


def _forget(key: str) -> None:
    for name in _PLUGIN_NAMES.get(key, []):
        _REGISTRY.pop(name, None)
