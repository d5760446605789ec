"""Column readers for large logs: pyarrow's streaming CSV parser and vectorised rules.

:func:`read_google_fast` gives exactly what the line-by-line reader of
:mod:`~cloudsched.dispatch.workload.traces` gives (same tasks, same order, same counts, which
``traces.finish_log`` builds into the same log; the tests check it on the shipped part and
on generated logs), five to ten times faster.  It reads the
four columns it needs (time, job, task, event type) in blocks, 32 bytes a row.  Anything
it cannot take as it is (a row with the wrong number of fields, an empty or non-numeric
field, a time that goes backwards, an unknown event type, a job id too large to pair with
its task index) makes it return None, and the caller runs the line-by-line reader, which
stops at the faulty line with its file and line number.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

__all__ = ["GoogleColumns", "read_google_fast"]

_COLS = {"c0": "time", "c2": "job", "c3": "task", "c5": "kind"}
SUBMIT, SCHEDULE, FINISH = 0, 1, 4
ENDED = (2, 3, 5, 6)  # EVICT, FAIL, KILL, LOST


def _columns(path: Path) -> dict[str, np.ndarray] | None:
    import pyarrow as pa
    import pyarrow.csv as pc

    read = pc.ReadOptions(column_names=[f"c{i}" for i in range(13)], block_size=1 << 22)
    # as strict as the line reader: no quoting, and an empty line is a row of one field
    parse = pc.ParseOptions(
        quote_char=False, double_quote=False, escape_char=False, ignore_empty_lines=False
    )
    convert = pc.ConvertOptions(
        include_columns=list(_COLS), column_types={c: pa.int64() for c in _COLS}
    )
    parts: dict[str, list[np.ndarray]] = {k: [] for k in _COLS.values()}
    try:
        with open(path, "rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"
        stream = pa.input_stream(str(path), compression="gzip" if gz else None)
        with pc.open_csv(
            stream, read_options=read, parse_options=parse, convert_options=convert
        ) as reader:
            for batch in reader:
                for col, name in _COLS.items():
                    arr = batch.column(col)
                    if arr.null_count:
                        return None
                    parts[name].append(arr.to_numpy(zero_copy_only=False))
    except (pa.ArrowInvalid, OSError, EOFError):
        return None
    return {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in parts.items()}


def _group_first(mask: np.ndarray, starts: np.ndarray, n: int) -> np.ndarray:
    """Return each group's first row where ``mask`` holds (``n``: none).

    Group ``g`` is the rows from ``starts[g]`` to the next start.
    """
    pos = np.where(mask, np.arange(mask.size), n)
    return np.minimum.reduceat(pos, starts) if mask.size else np.zeros(0, np.int64)


def _group_last(mask: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Return each group's last row where ``mask`` holds (-1: none)."""
    pos = np.where(mask, np.arange(mask.size), -1)
    return np.maximum.reduceat(pos, starts) if mask.size else np.zeros(0, np.int64)


#: What :func:`read_google_fast` returns: the arguments of ``traces.finish_log`` but the
#: format, files and header (arrivals, services, records, submitted, censored, first, last).
GoogleColumns = tuple[list[float], list[float], int, int, int, float, float]


def read_google_fast(paths: Sequence[str | Path], unfinished: str) -> GoogleColumns | None:
    """Read Google ``task_events`` files by columns (None: let the line reader decide)."""
    cols = [_columns(Path(p)) for p in paths]
    if any(c is None for c in cols):
        return None
    t, job, task, kind = (
        np.concatenate([c[k] for c in cols if c is not None])
        for k in ("time", "job", "task", "kind")
    )
    n = t.size
    if n == 0 or t.min() < 0 or np.any(np.diff(t) < 0) or kind.min() < 0 or kind.max() > 8:
        return None
    if task.min() < 0 or job.min() < 0 or task.max() >= 2**20 or job.max() >= 2**42:
        return None
    order = np.argsort((job << 20) | task, kind="stable")  # by task, file order within it
    key = ((job << 20) | task)[order]
    ts, ks = t[order], kind[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    group = np.cumsum(np.r_[False, key[1:] != key[:-1]])
    skipped = np.maximum.reduceat((ts == 0).astype(np.int8), starts) > 0
    first = _group_first(ks == SUBMIT, starts, n)  # a task's first SUBMIT
    live = ~skipped & (first < n)
    inside = np.arange(n) >= first[group]  # events from the first SUBMIT on
    sched = inside & (ks == SCHEDULE)
    last_sched = np.maximum.accumulate(np.where(sched, np.arange(n), -1))
    last_sched = np.where(last_sched >= starts[group], last_sched, -1)  # within the task
    finish = _group_first(inside & (ks == FINISH) & (last_sched >= 0), starts, n)
    finished = live & (finish < n)
    f_rows = finish[finished]
    runs = ts[f_rows] / 1e6 - ts[last_sched[f_rows]] / 1e6  # as the line reader rounds
    arrival_f = ts[first[finished]]
    done_order = np.argsort(order[f_rows], kind="stable")  # in the order the FINISHes came
    keep = runs[done_order] > 0
    arrivals = list((arrival_f[done_order][keep] / 1e6).tolist())
    services = list(runs[done_order][keep].tolist())
    zero = int((~keep).sum())
    open_ = live & ~finished
    arrival_u = ts[first[open_]] / 1e6
    submitted = len(arrivals) + int(open_.sum()) + zero
    every = np.r_[np.asarray(arrivals), arrival_u]
    first_submit, last_submit = (float(every.min()), float(every.max())) if every.size else (0, 0)
    censored = 0
    if unfinished == "censor" and open_.any():
        end = t[-1] / 1e6
        g_open = np.flatnonzero(open_)
        by_submit = g_open[np.argsort(order[first[g_open]], kind="stable")]
        ls = _group_last(sched, starts)[by_submit]
        le = _group_last(inside & np.isin(ks, ENDED), starts)[by_submit]
        has = ls >= 0
        stop = np.where(le >= 0, ts[np.maximum(le, 0)] / 1e6, end)
        run = stop - np.where(has, ts[np.maximum(ls, 0)] / 1e6, end)
        take = has & (run > 0)
        arrivals += (ts[first[by_submit]][take] / 1e6).tolist()
        services += run[take].tolist()
        censored = int(take.sum())
    return arrivals, services, n, submitted, censored, first_submit, last_submit
