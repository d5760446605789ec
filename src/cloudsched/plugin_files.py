"""Plug-in files, dispatch's and placement's: executed once each, every failure one line.

A plug-in file is ordinary Python that registers policies as it runs; :func:`exec_plugin`
executes it under a module name private to the file, records the names it registered and,
when it fails to load (a syntax error, an exception, ``sys.exit``) or registers nothing,
forgets what it registered and raises the caller's error with one line.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cloudsched.errors import ParameterError

__all__ = ["PluginError", "exec_plugin", "hook"]


class PluginError(ParameterError):
    """A plug-in policy could not be loaded, compiled or run; the message says why."""

    def __init__(self, policy: str, problem: str) -> None:
        super().__init__("policy", policy, problem)
        self.problem = problem
        self.args = (f"policy {policy}: {problem}",)

    def __str__(self) -> str:
        return str(self.args[0])


def hook(fn: Callable[..., Any]) -> staticmethod:
    """Mark ``fn`` as a hook of a policy class (it is compiled when the class is registered)."""
    fn.__cloudsched_hook__ = True  # type: ignore[attr-defined]
    return staticmethod(fn)


def exec_plugin(
    path: str | Path,
    *,
    prefix: str,
    files: dict[str, list[str]],
    loading: list[str],
    forget: Callable[[str], None],
    error: type[Exception],
    none: str,
) -> list[str]:
    """Execute the plug-in file ``path`` once and return the names it registered.

    ``files`` maps each file executed to the names it registered (a registering decorator
    appends to ``files[loading[-1]]``); ``forget(key)`` unregisters a file's names;
    ``error(ref, problem)`` builds the exception (one the file raises itself, a name
    already taken, passes unchanged); ``none`` says what to register when the
    file registers nothing.
    """
    file = Path(path).expanduser()
    ref = str(path)
    if not file.is_file():
        raise error(ref, "no such file" if not file.exists() else "not a file")
    key = str(file.resolve())
    if key in files:
        return list(files[key])
    module = f"{prefix}_{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(module, key)
    if spec is None or spec.loader is None:
        raise error(ref, "not a Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    loading.append(key)
    files[key] = []

    def drop() -> None:
        forget(key)
        files.pop(key, None)
        sys.modules.pop(module, None)

    try:
        spec.loader.exec_module(mod)
    except error:
        drop()
        raise
    except SyntaxError as exc:
        drop()
        raise error(ref, f"line {exc.lineno}: SyntaxError: {exc.msg}") from None
    except SystemExit as exc:  # the plug-in tried to end the program while loading
        drop()
        raise error(ref, f"loading failed: it called sys.exit({exc.code!r})") from None
    except Exception as exc:  # the plug-in's own code failed while loading
        drop()
        raise error(ref, f"loading failed: {type(exc).__name__}: {exc}") from None
    finally:
        loading.pop()
    if not files[key]:
        drop()
        raise error(ref, none)
    return list(files[key])
