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
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cloudsched._jit import kernel
from cloudsched.errors import ParameterError

__all__ = [
    "PlacementPlugin",
    "PluginError",
    "is_plugin_ref",
    "load_placement_plugin",
    "place_hook",
    "register_placement",
]


class PluginError(ParameterError):
    """A placement plug-in could not be loaded, compiled or run; the message says why."""

    def __init__(self, policy: str, problem: str) -> None:
        super().__init__("policy", policy, problem)
        self.problem = problem
        self.args = (f"policy {policy}: {problem}",)

    def __str__(self) -> str:
        return str(self.args[0])


def place_hook(fn: Callable[..., Any]) -> staticmethod:
    """Mark ``fn`` as the ``place`` hook of a placement policy class."""
    fn.__cloudsched_hook__ = True  # type: ignore[attr-defined]
    return staticmethod(fn)


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
    file = Path(path).expanduser()
    if not file.is_file():
        raise PluginError(path, "no such file" if not file.exists() else "not a file")
    key = str(file.resolve())
    if key in _FILES:
        return list(_FILES[key])
    module = f"cloudsched_placement_plugin_{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(module, key)
    if spec is None or spec.loader is None:
        raise PluginError(path, "not a Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    _LOADING.append(key)
    _FILES[key] = []
    try:
        spec.loader.exec_module(mod)
    except PluginError:
        _forget(key, module)
        raise
    except SyntaxError as exc:
        _forget(key, module)
        raise PluginError(path, f"line {exc.lineno}: SyntaxError: {exc.msg}") from None
    except SystemExit as exc:
        _forget(key, module)
        raise PluginError(path, f"loading failed: it called sys.exit({exc.code!r})") from None
    except Exception as exc:  # the plug-in's own code failed while loading
        _forget(key, module)
        raise PluginError(path, f"loading failed: {type(exc).__name__}: {exc}") from None
    finally:
        _LOADING.pop()
    if not _FILES[key]:
        _forget(key, module)
        raise PluginError(path, "registers no placement policy (use @register_placement)")
    return list(_FILES[key])


def _forget(key: str, module: str) -> None:
    for name in _FILES.pop(key, []):
        _REGISTRY.pop(name, None)
    sys.modules.pop(module, None)
