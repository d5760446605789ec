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

import numba

__all__ = ["import_pairs", "module_file", "source_fingerprint", "source_modules"]

_FINGERPRINTS: dict[str, str] = {}
_IMPORTS: dict[str, frozenset[tuple[str, str]]] = {}  # per source file, computed once a process


def _library_paths() -> tuple[str, ...]:
    """Folders of the standard library and of installed packages (not a user's own code)."""
    paths = set(site.getsitepackages()) | {site.getusersitepackages()}
    paths |= {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(os.path.join(os.path.realpath(p), "") for p in paths if p)


def _tracked(name: str, file: str | None, libraries: tuple[str, ...]) -> bool:
    """Whether a module's source can change under a cached kernel: cloudsched's, or a user's."""
    if not isinstance(file, str) or not file.endswith(".py"):
        return False
    if name == "cloudsched" or name.startswith("cloudsched."):
        return True
    return not os.path.realpath(file).startswith(libraries)


def module_file(name: str) -> str | None:
    """Return the source file of the module ``name``, imported or not, or None.

    An imported module: its ``__file__``.  Else the file is looked for below the nearest
    package that is imported (``x/y/__init__.py`` or ``x/y.py``), or on ``sys.path`` for a
    top-level name, without importing anything: what a kernel's key covers must not depend
    on what happens to be imported when it is computed.
    """
    module = sys.modules.get(name)
    if module is not None:
        file = getattr(module, "__file__", None)
        return file if isinstance(file, str) else None
    parts = name.split(".")
    for i in range(len(parts) - 1, -1, -1):
        if i == 0:
            roots = list(sys.path)
        else:
            parent = sys.modules.get(".".join(parts[:i]))
            if parent is None:
                continue
            roots = list(getattr(parent, "__path__", None) or [])
            if not roots:
                return None  # the parent is a module, not a package
        for root in roots:
            found = _below(root or os.curdir, parts[i:])
            if found is not None:
                return found
        return None
    return None


def _below(root: str, parts: list[str]) -> str | None:
    """Return ``root/a/b/c.py`` or ``root/a/b/c/__init__.py`` for ``parts`` a, b, c."""
    folder = os.path.join(root, *parts[:-1])
    for candidate in (
        os.path.join(folder, parts[-1], "__init__.py"),
        os.path.join(folder, parts[-1] + ".py"),
    ):
        if os.path.isfile(candidate) and all(
            os.path.isfile(os.path.join(root, *parts[:k], "__init__.py"))
            for k in range(1, len(parts))
        ):
            return candidate
    return None


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


def import_pairs(name: str, file: str) -> frozenset[tuple[str, str]]:
    """Return (module, name) for every ``from module import name`` ("" for ``import module``).

    ``name`` and ``file``: the module whose source is read (relative imports are resolved
    against its package).
    """
    if file not in _IMPORTS:
        try:
            with open(file, "rb") as fh:
                tree = ast.parse(fh.read(), filename=file)
        except (OSError, SyntaxError, ValueError):
            return frozenset()
        package = name if file.endswith("__init__.py") else name.rpartition(".")[0]
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


def _referenced(name: str, file: str) -> set[str]:
    """Names of the modules ``name``'s source imports, and that its globals were defined in.

    An import ``from base import x`` names the module ``base.x`` where there is one, else
    ``base`` (``x`` a function or a constant).  Globals count where the module is imported
    (a function imported through a package is followed to its own module); modules among
    the globals do not (importing a submodule anywhere makes it an attribute of its
    package, which would make the answer depend on what else ran).
    """
    out: set[str] = set()
    for base, attr in import_pairs(name, file):
        sub = f"{base}.{attr}"
        out.add(sub if attr and module_file(sub) is not None else base)
    module = sys.modules.get(name)
    for value in list(vars(module).values()) if module is not None else []:
        if isinstance(value, ModuleType):
            continue
        inner = getattr(value, "py_func", None)  # a numba dispatcher: its Python function
        try:
            owner = getattr(value if inner is None else inner, "__module__", None)
        except Exception:  # an object whose attribute lookup fails: refers to nothing
            continue
        if isinstance(owner, str):
            out.add(owner)
    return out


def source_modules(root: str) -> list[tuple[str, str]]:
    """Return (name, file) of the modules ``root`` refers to, transitively, sorted by name.

    cloudsched's own modules and a user's (not the standard library or installed packages),
    ``root`` included; imported or not (:func:`module_file`).
    """
    libraries = _library_paths()
    seen: dict[str, str] = {}
    stack = [root]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        file = module_file(name)
        if file is None or not _tracked(name, file, libraries):
            continue
        seen[name] = file
        stack.extend(_referenced(name, file) - seen.keys())
    return sorted(seen.items())


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
        for name, file in source_modules(root):
            h.update(b"\0" + name.encode() + b"\0")
            try:
                with open(file, "rb") as fh:
                    h.update(fh.read())
            except OSError:
                h.update(b"<unreadable>")
        _FINGERPRINTS[root] = h.hexdigest()
    return _FINGERPRINTS[root]
