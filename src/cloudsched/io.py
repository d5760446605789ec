"""File input and output.

Output is atomic: write to a temporary file in the same folder, then rename.  A crash or a
validation error half-way never leaves a truncated file behind, and an earlier result at
the same path stays intact until the new one is complete.  Output never damages what is
there: a symbolic link is followed (its target is written, the link stays), a device, pipe,
socket or directory is refused, and an existing file keeps its permissions.
:func:`check_output_file` and :func:`check_output_dir` say so before any work starts.
Input helpers turn unreadable or malformed files into one-line
:class:`~cloudsched.errors.InputError` messages.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from cloudsched.errors import InputError, ParameterError

__all__ = [
    "PLOT_FORMATS",
    "YAML_MAX_BYTES",
    "atomic_path",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_output_dir",
    "check_output_file",
    "open_input",
    "read_input",
    "read_yaml",
    "read_yaml_text",
]

#: Figure formats chosen by the file extension.
PLOT_FORMATS = ("png", "pdf", "svg")


def _target(path: str | os.PathLike[str]) -> Path:
    """Return the file that writing ``path`` would replace (symbolic links followed)."""
    p = Path(path)
    return Path(os.path.realpath(p)) if p.is_symlink() else p


def check_output_file(
    path: str | os.PathLike[str], option: str, formats: tuple[str, ...] | None = None
) -> Path:
    """Check that ``path`` can receive a result, before any work; return the file to write.

    Refuses an empty path, a directory, anything that exists and is not a regular file
    (device, pipe, socket), a folder that cannot be created or written, and, when
    ``formats`` is given, an extension outside it.  A symbolic link resolves to its target.
    """
    raw = os.fspath(path)
    if not str(raw).strip():
        raise ParameterError(option, raw, "a file path")
    target = _target(raw)
    if formats is not None:
        ext = target.suffix.lower().lstrip(".")
        if ext not in formats:
            raise ParameterError(option, raw, "a file ending in ." + ", .".join(formats))
    if target.exists() or target.is_symlink():
        if target.is_dir():
            raise ParameterError(option, raw, "a file path (this is a directory)")
        if not target.is_file():
            raise ParameterError(option, raw, "a regular file (this is a device, pipe or socket)")
    _probe_dir(target.parent, option, raw)
    return target


def check_output_dir(path: str | os.PathLike[str], option: str) -> Path:
    """Check that ``path`` is, or can become, a writable directory (nothing is created)."""
    raw = os.fspath(path)
    if not str(raw).strip():
        raise ParameterError(option, raw, "a directory path")
    p = Path(raw)
    if p.exists() and not p.is_dir():
        raise ParameterError(option, raw, "a directory (this exists and is not one)")
    _probe_dir(p, option, raw)
    return p


def _probe_dir(folder: Path, option: str, raw: str) -> None:
    """Make sure ``folder`` exists or can be created, and that a file can be created in it.

    Nothing is left behind: the probe file is removed and no folder is created (the nearest
    existing ancestor is probed instead).
    """
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        if not probe.is_dir():
            raise NotADirectoryError(20, "a file is in the way")
        fd, tmp = tempfile.mkstemp(prefix=".cloudsched-probe.", dir=probe)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        allowed = f"a path in a writable folder ({probe}: {why})"
        raise ParameterError(option, raw, allowed) from None


def _default_mode() -> int:
    """Permissions of a newly created file under the current umask (mkstemp uses 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` on success.

    Use for writers that want a file name (``savefig``, ``to_parquet``).  If the body
    raises, the temporary file is removed and ``path`` is untouched.  A symbolic link is
    followed (its target is replaced, the link stays); an existing file keeps its mode; a
    directory, device, pipe or socket is never replaced.
    """
    target = _target(path)
    if target.exists() and not target.is_file():
        kind = "a directory" if target.is_dir() else "not a regular file"
        raise InputError(str(path), f"will not replace it: it is {kind}")
    mode = (target.stat().st_mode & 0o7777) if target.exists() else _default_mode()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, mode)
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


def open_input(path: str | os.PathLike[str]) -> IO[bytes]:
    """Open a regular file for reading (binary); anything else is an :class:`InputError`.

    A pipe, device, socket or directory is refused without blocking (``/dev/zero`` never
    ends, and a FIFO with no writer would wait for ever); a symbolic link is followed.
    """
    where = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(where, f"cannot open ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a pipe, device or socket"
            raise InputError(where, f"not a regular file (this is {kind})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: str | os.PathLike[str], limit: int, what: str = "input") -> bytes:
    """Return the bytes of a regular file of at most ``limit`` bytes (:class:`InputError`)."""
    with open_input(path) as fh:  # never more than the limit is read
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(str(path), f"too large for {what} (more than {limit} bytes)")
    return data


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """Parse a YAML file; raise :class:`InputError` naming the file (and line) on failure."""
    where = str(path)
    data = read_input(path, YAML_MAX_BYTES, "a YAML input")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{where}:{line}", f"not UTF-8 text (byte {exc.start})") from None
    return read_yaml_text(text, where)


#: Limits of an input YAML file: size, nesting, and nodes and characters once aliases are
#: expanded ("billion laughs": aliases of aliases expand exponentially while the file stays
#: tiny; one long string aliased many times does the same to a program that copies it).
YAML_MAX_BYTES = 16 * 2**20
YAML_MAX_DEPTH = 64
YAML_MAX_NODES = 1_000_000
YAML_MAX_EXPANDED = 4 * YAML_MAX_BYTES


def _line(event: Any) -> str:
    mark = getattr(event, "start_mark", None)
    return f":{mark.line + 1}" if mark is not None else ""


def read_yaml_text(text: str, where: str) -> Any:
    """Parse YAML text read from ``where``; errors name ``where`` (and the line).

    Only ``yaml.safe_load`` is used, after a pass over the event stream that refuses files
    larger than :data:`YAML_MAX_BYTES`, nested deeper than :data:`YAML_MAX_DEPTH`, or with
    more than :data:`YAML_MAX_NODES` nodes or :data:`YAML_MAX_EXPANDED` characters of
    scalars once every alias is expanded.
    """
    import yaml  # 13 ms: only the commands that read YAML pay for it

    try:
        if len(text) > YAML_MAX_BYTES:
            raise InputError(
                where,
                f"too large for a YAML input ({len(text)} characters; at most {YAML_MAX_BYTES})",
            )
        # per open collection: nodes and characters inside it, aliases expanded
        counts: list[list[int]] = [[0, 0]]
        anchors: list[str | None] = [None]
        sizes: dict[str, tuple[int, int]] = {}
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                counts.append([0, 0])
                anchors.append(event.anchor)
                if len(counts) - 1 > YAML_MAX_DEPTH:
                    raise InputError(
                        where + _line(event), f"nested deeper than {YAML_MAX_DEPTH} levels"
                    )
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                (n, chars), name = counts.pop(), anchors.pop()
                n += 1
                if name is not None:
                    sizes[name] = (n, chars)
            elif isinstance(event, yaml.AliasEvent):
                n, chars = sizes.get(event.anchor or "", (1, 0))
            elif isinstance(event, yaml.ScalarEvent):
                n, chars = 1, len(event.value)
                if event.anchor is not None:
                    sizes[event.anchor] = (n, chars)
            else:
                continue
            counts[-1][0] += n
            counts[-1][1] += chars
            if counts[-1][0] > YAML_MAX_NODES or counts[-1][1] > YAML_MAX_EXPANDED:
                raise InputError(
                    where + _line(event),
                    f"expands to more than {YAML_MAX_NODES} values or "
                    f"{YAML_MAX_EXPANDED} characters (aliases of aliases?): refused",
                )
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise InputError(where + line, f"malformed YAML ({problem})") from None
