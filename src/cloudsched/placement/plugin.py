"""Writing a placement policy: :func:`register_placement` and its ``place`` hook.

A placement plug-in is a class with one compiled hook, written against
:mod:`cloudsched.placement.view`, and registered under a name::

    from cloudsched.placement import place_hook, register_placement
    from cloudsched.placement import view as pv

    @register_placement("first-fit")
    class FirstFit:
        '''Every node on the first machine with a free slot (CPU and memory unlimited).'''

        @place_hook
        def place(st, mo, j, k, where):
            m, used = 0, 0
            for v in range(k):
                while m < pv.machines(st) and used >= pv.free_slots(st, m):
                    m, used = m + 1, 0
                if m == pv.machines(st):
                    return False  # the job waits
                where[v] = m
                used += 1
            return True

``place(st, mo, j, k, where) -> bool``
    Called for the job at the head of type ``j``'s queue (``k`` nodes) whenever a job
    arrives or leaves, as for Storm's schedulers (:mod:`cloudsched.placement.policies`:
    queue heads placed as they fit, never moved): write the machine of node ``v`` into
    ``where[v]`` for every ``v < k`` and return True, or return False when the job should
    wait.

The simulator compiles its event loop once per plug-in with the hook as a compile-time
constant and caches it on disk, keyed by the plug-in's file and everything the loop is
compiled from.  It is compiled with bounds checking, and every placement the hook returns
is checked: a machine outside ``[0, L)``, more nodes on a machine than it has free slots,
or more CPU or memory than it has free ends the run with a one-line :class:`PluginError`
naming the policy, the job type, the node and the machine; so does an index outside an
array, an exception raised in the hook or code numba cannot compile.  A plug-in is named
as ``path/to/file.py:NAME`` (or ``path/to/file.py`` when the file registers one policy)
wherever a placement policy is (``place simulate``, ``place compare``,
``simulate_placement``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cloudsched._jit import kernel
from cloudsched.plugin_files import PluginError, exec_plugin, hook

__all__ = [
    "PlacementPlugin",
    "PluginError",
    "is_plugin_ref",
    "load_placement_plugin",
    "place_hook",
    "register_placement",
]


#: Mark a function as the ``place`` hook of a placement policy class.
place_hook = hook


@dataclass
class PlacementPlugin:
    """A registered placement plug-in: its name, hook, file and compiled loop."""

    name: str
    description: str
    hook: Any
    source: str | None
    fingerprint: str
    #: the compiled loop, built once (:func:`cloudsched.placement._kernel_plugin.loop`)
    compiled: Any = field(default=None, repr=False)


_REGISTRY: dict[str, PlacementPlugin] = {}
_FILES: dict[str, list[str]] = {}
_LOADING: list[str] = []


def register_placement(name: str) -> Callable[[type], type]:
    """Register the decorated class (with a ``place`` hook) as the placement policy ``name``."""
    if not isinstance(name, str) or not name or ":" in name or name != name.strip():
        raise ValueError(f"policy name {name!r}: a non-empty string without ':' or spaces")

    def decorate(cls: type) -> type:
        source = _LOADING[-1] if _LOADING else None
        taken = _REGISTRY.get(name)
        if taken is not None and taken.source != source:
            raise PluginError(name, f"the name is already taken by {taken.source or 'cloudsched'}")
        raw = getattr(cls, "place", None)
        if not callable(raw):
            raise PluginError(name, f"class {cls.__name__} has no 'place' hook")
        doc = (cls.__doc__ or "").strip().splitlines()
        fp = hashlib.sha256(f"{name}\0{cls.__module__}".encode()).hexdigest()
        compiled = kernel(nrt=False, inline=True, cache=False)(raw)
        plugin = PlacementPlugin(name, doc[0] if doc else "", compiled, source, fp)
        _REGISTRY[name] = plugin
        if source is not None:
            _FILES.setdefault(source, []).append(name)
        cls.policy = plugin  # type: ignore[attr-defined]
        return cls

    return decorate


def is_plugin_ref(ref: str) -> bool:
    """Whether a policy name refers to a plug-in file (``file.py`` or ``file.py:NAME``)."""
    path, sep, _ = str(ref).rpartition(":")
    return str(ref).endswith(".py") or (bool(sep) and path.endswith(".py"))


def load_placement_plugin(ref: str) -> PlacementPlugin:
    """Load ``path.py:NAME`` (or ``path.py`` registering one policy) and return the policy."""
    ref = str(ref)
    path, _, name = ref.rpartition(":") if not ref.endswith(".py") else (ref, "", "")
    names = _load_file(path)
    if not name:
        if len(names) != 1:
            raise PluginError(ref, f"the file registers {len(names)} policies: name one "
                              f"({', '.join(names)}) as {path}:NAME")  # fmt: skip
        name = names[0]
    if name not in names:
        raise PluginError(ref, f"the file registers {', '.join(names)}, not {name!r}")
    return _REGISTRY[name]


def _load_file(path: str) -> list[str]:
    return exec_plugin(
        path,
        prefix="cloudsched_placement_plugin",
        files=_FILES,
        loading=_LOADING,
        forget=_forget,
        error=PluginError,
        none="registers no placement policy (use @register_placement)",
    )


def _forget(key: str) -> None:
    for name in _FILES.get(key, []):
        _REGISTRY.pop(name, None)
