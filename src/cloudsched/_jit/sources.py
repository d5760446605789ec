"""What a kernel is compiled from: every source module it refers to, and their hash.

numba keys its disk cache on the kernel's own file only, so a kernel whose helpers (inlined
or called), records or constants live in another module would keep running its old machine
code after that module changed.  :func:`source_fingerprint` hashes the package version and
the source of every module the kernel's module refers to, transitively (cloudsched's own
modules, and a user's modules outside the installed libraries, such as a plug-in and the
files it imports); every cache key holds it, so editing any of them recompiles the kernel.
"""

from __future__ import annotations

import ast
import hashlib
import os
import site
import sys
import sysconfig
from collections.abc import Iterator
from types import ModuleType
from typing import cast

import numba

__all__ = ["import_pairs", "source_fingerprint", "source_modules"]

_FINGERPRINTS: dict[str, str] = {}
_IMPORTS: dict[str, frozenset[tuple[str, str]]] = {}  # per source file, computed once a process


def _library_paths() -> tuple[str, ...]:
    """Folders of the standard library and of installed packages (not a user's own code)."""
    paths = set(site.getsitepackages()) | {site.getusersitepackages()}
    paths |= {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.join(os.path.realpath(p), "") for p in paths if p)


def _tracked(module: ModuleType, libraries: tuple[str, ...]) -> bool:
    """Whether a module's source can change under a cached kernel: cloudsched's, or a user's."""
    file = getattr(module, "__file__", None)
    if not isinstance(file, str) or not file.endswith(".py"):
        return False
    name = module.__name__
    if name == "cloudsched" or name.startswith("cloudsched."):
        return True
    return not os.path.realpath(file).startswith(libraries)


def _statements(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Yield every statement in ``body``, nested ones included.

    Imports are statements: walking only statements, not expressions, finds them all at a
    tenth of ``ast.walk``'s cost.  (An except clause or a match case is yielded too.)
    """
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                stack.extend(reversed([n for n in inner if isinstance(n, ast.AST)]))


def import_pairs(module: ModuleType) -> frozenset[tuple[str, str]]:
    """Return (module, name) for every ``from module import name`` ("" for ``import module``)."""
    file = cast(str, module.__file__)
    if file not in _IMPORTS:
        try:
            with open(file, "rb") as fh:
                tree = ast.parse(fh.read(), filename=file)
        except (OSError, SyntaxError, ValueError):
            return frozenset()
        package = (
            module.__name__ if file.endswith("__init__.py") else module.__name__.rpartition(".")[0]
        )
        pairs: set[tuple[str, str]] = set()
        for node in _statements(tree.body):
            if isinstance(node, ast.Import):
                pairs.update((alias.name, "") for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                pairs.update((base, alias.name) for alias in node.names)
        _IMPORTS[file] = frozenset(pairs)
    return _IMPORTS[file]


def _imported(module: ModuleType) -> set[str]:
    """Names of the modules ``module``'s source imports (a constant imported by name counts)."""
    out: set[str] = set()
    for base, name in import_pairs(module):
        sub = f"{base}.{name}"  # a submodule, else a name defined in ``base``
        out.add(sub if name and sub in sys.modules else base)
    return out


def _referenced(module: ModuleType) -> set[str]:
    """Names of the modules ``module`` imports, and that its globals are or were defined in."""
    out = _imported(module)
    for value in list(vars(module).values()):
        if isinstance(value, ModuleType):
            out.add(value.__name__)
            continue
        inner = getattr(value, "py_func", None)  # a numba dispatcher: its Python function
        try:
            owner = getattr(value if inner is None else inner, "__module__", None)
        except Exception:  # an object whose attribute lookup fails: refers to nothing
            continue
        if isinstance(owner, str):
            out.add(owner)
    return out


def source_modules(root: str) -> list[ModuleType]:
    """Return the modules ``root`` refers to, transitively, whose source could change.

    cloudsched's own modules and a user's (not the standard library or installed packages),
    ``root`` included, sorted by name.
    """
    libraries = _library_paths()
    seen: dict[str, ModuleType] = {}
    stack = [root]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        module = sys.modules.get(name)
        if module is None or not _tracked(module, libraries):
            continue
        seen[name] = module
        stack.extend(_referenced(module) - seen.keys())
    return [seen[k] for k in sorted(seen)]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cloudsched")
    except PackageNotFoundError:
        return "unknown"


def source_fingerprint(root: str) -> str:
    """Hash of cloudsched's and numba's versions and of every source :func:`source_modules` finds.

    Computed once per module and process (sources do not change under a running program).
    """
    if root not in _FINGERPRINTS:
        h = hashlib.sha256(f"cloudsched {_version()} numba {numba.__version__}".encode())
        for module in source_modules(root):
            h.update(b"\0" + module.__name__.encode() + b"\0")
            try:
                with open(cast(str, module.__file__), "rb") as fh:
                    h.update(fh.read())
            except OSError:
                h.update(b"<unreadable>")
        _FINGERPRINTS[root] = h.hexdigest()
    return _FINGERPRINTS[root]
