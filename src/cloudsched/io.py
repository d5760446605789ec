"""File input and output.

Output is atomic: write to a temporary file in the same folder, then rename.  A crash or a
validation error half-way never leaves a truncated file behind, and an earlier result at
the same path stays intact until the new one is complete.  Input helpers turn unreadable or
malformed files into one-line :class:`~cloudsched.errors.InputError` messages.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import yaml

from cloudsched.errors import InputError

__all__ = ["atomic_path", "atomic_write_bytes", "atomic_write_text", "read_yaml", "read_yaml_text"]


def _default_mode() -> int:
    """Permissions of a newly created file under the current umask (mkstemp uses 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    Use for writers that want a file name (``savefig``, ``to_parquet``).  If the body
    raises, the temporary file is removed and ``path`` is untouched.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, _default_mode())
        os.replace(tmp_path, target)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically and return the path."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically and return the path."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        _write_all(fh, data)
    return Path(path)


def _write_all(fh: IO[bytes], data: bytes) -> None:
    fh.write(data)
    fh.flush()
    os.fsync(fh.fileno())


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """Parse a YAML file; raise :class:`InputError` naming the file (and line) on failure."""
    where = str(path)
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(where, f"cannot open ({exc.strerror})") from None
    return read_yaml_text(text, where)


def read_yaml_text(text: str, where: str) -> Any:
    """Parse YAML text read from ``where``; errors name ``where`` (and the line)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise InputError(where + line, f"malformed YAML ({problem})") from None
