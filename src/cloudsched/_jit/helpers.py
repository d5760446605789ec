"""How a kernel's helpers are compiled: once, inlined by LLVM, typed without literals.

numba can inline a helper into each caller's IR (``inline="always"``), but it then reads,
types and copies the helper's code again at every call site, and again for every helper
that one inlines in turn: a kernel built of small helpers compiles in a time that grows
with its call sites (least-time's kernel had 312 of them and took 23 s).  Here a helper is
compiled once per argument types, cached on disk like any kernel, and marked for LLVM to
inline (``forceinline``): the call sites get the same machine code, for one compile.  A
helper that Python never calls is compiled without numba's Python wrapper, whose code for
records of 25 arrays cost more than many helpers themselves.

Three rules keep that safe and cheap (:func:`as_helper`):

* arguments that numba types as literals (a constant, ``True``) are typed as their plain
  types, so a helper called with the constants 3 and 5 compiles once, not twice;
* a helper is compiled without the Python wrapper; a call from Python (which would crash
  the interpreter) goes to a twin compiled with it, made at the first such call;
* a kernel compiled with bounds checking (a plug-in's, :func:`inlined_by_numba`) gets every
  helper inlined into its own IR, as before, so their indexing is checked too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from numba.core import types
from numba.core.compiler_lock import global_compiler_lock

__all__ = ["as_helper", "inlined_by_numba"]

_CLASSES: dict[tuple[type, bool], type] = {}
_INLINED: list[Any] = []  # the helpers LLVM inlines (numba inlines them in checked kernels)


def _plain(args: Any, kws: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return tuple(types.unliteral(a) for a in args), {k: types.unliteral(v) for k, v in kws.items()}


def _helper_class(base: type, python: bool) -> type:
    """Return the dispatcher class of a helper.

    It types calls without literals and, unless ``python`` (the helper has numba's Python
    wrapper), sends a call from Python to the helper's twin (module notes).
    """
    key = (base, python)
    if key not in _CLASSES:

        class Helper(base):
            def get_call_template(self, args: Any, kws: Any) -> Any:
                return super().get_call_template(*_plain(args, kws))

        if not python:

            def from_python(self: Any, *args: Any, **kws: Any) -> Any:
                twin = self.__dict__.get("_python_twin")
                if twin is None:
                    twin = self.__dict__["_python_twin"] = self._make_twin()
                return twin(*args, **kws)

            Helper.__call__ = from_python
        Helper.__name__ = Helper.__qualname__ = f"{base.__name__}Helper"
        _CLASSES[key] = Helper
    return _CLASSES[key]


def as_helper(
    dispatcher: Any, *, python: bool, inline: bool, twin: Callable[[], Any] | None = None
) -> Any:
    """Give ``dispatcher`` the helper rules (module notes) and return it.

    ``python``: it has numba's Python wrapper (an entry point Python calls); else ``twin``
    makes the dispatcher that Python's calls go to.  ``inline``: it is compiled with
    ``forceinline`` (a kernel compiled with bounds checking inlines it into its IR instead).
    """
    dispatcher.__class__ = _helper_class(type(dispatcher), python)
    if not python:
        dispatcher._make_twin = twin
    if inline:
        _INLINED.append(dispatcher)
    return dispatcher


@contextlib.contextmanager
def inlined_by_numba() -> Iterator[None]:
    """Within: numba inlines every LLVM-inlined helper into the IR of what it compiles.

    Used around the compile of a kernel with bounds checking, so that the helpers its hooks
    call are checked too.  Holds numba's compiler lock, so no other thread compiles under
    the switched options.
    """
    with global_compiler_lock:
        helpers = list(_INLINED)
        saved = [h.targetoptions.get("inline") for h in helpers]
        for h in helpers:
            h.targetoptions["inline"] = "always"
        try:
            yield
        finally:
            for h, old in zip(helpers, saved, strict=True):
                if old is None:
                    h.targetoptions.pop("inline", None)
                else:
                    h.targetoptions["inline"] = old
