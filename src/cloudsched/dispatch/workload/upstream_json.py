"""Envoy JSON access logs read a batch at a time (see :mod:`.upstream_fast`).

Arrow's JSON reader reads the batch's keys as one table; a line is plain when its
``start_time`` is ``YYYY-MM-DDTHH:MM:SS.mmmZ``, its ``duration`` a number in [0, 1e9], its
``upstream_host`` a string other than ``-``, its ``us_tx_beg`` and ``us_rx_end`` both absent
or both numbers in order, and each key is written once in lower case (the per-line reader
lower-cases keys, and its ``json.loads`` keeps a key's last value).  A batch Arrow cannot
read as one table (a key of two types, a key twice, a line not an object) is read line by
line.  The times are computed as the per-line reader computes them (a test reads logs
both ways).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cloudsched.dispatch.workload.upstream_fast import FastRows, flags, stamps

__all__ = ["read_json_fast"]

_JSON_KEYS = ("start_time", "duration", "upstream_host", "us_tx_beg", "us_rx_end")
_ISO_MS = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"


def read_json_fast(texts: list[str]) -> FastRows | None:
    """Read the plain lines of a batch of Envoy JSON lines (None: none; see the notes)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = [i for i, t in enumerate(texts) if t.strip()]
    table = _json_table([texts[i] for i in rows])
    if table is None:
        return None
    raw = pa.array([texts[i] for i in rows], type=pa.string())
    col = {key: table.column(key).combine_chunks() for key in _JSON_KEYS}
    ok = np.ones(len(rows), dtype=bool)
    for key in _JSON_KEYS:  # each key once, in lower case: as json.loads and lower() read it
        exact = pc.count_substring(raw, f'"{key}"')
        any_case = pc.count_substring_regex(raw, f'(?i)"{key}"')
        ok &= np.asarray(pc.equal(exact, any_case).to_numpy(zero_copy_only=False), dtype=bool)
    text = pc.utf8_trim_whitespace(col["start_time"])
    iso = pc.match_substring_regex(text, _ISO_MS).fill_null(False)
    ok &= np.asarray(iso.to_numpy(zero_copy_only=False), dtype=bool)
    text = pc.if_else(iso, text, pa.scalar(None, pa.string()))  # the date's fields are digits
    m = pa.StructArray.from_arrays(
        [pc.utf8_slice_codeunits(text, 0, 19), pc.utf8_slice_codeunits(text, 20, 23)],
        names=["date", "ms"],
    )
    host = pc.utf8_trim_whitespace(col["upstream_host"])
    ok &= ~flags(pc.match_substring_regex(host, "^-?$"))
    stamp = stamps(m, ok, "envoy")  # the date's checks (into ok) and the stamp
    total = _json_number(col["duration"], ok)
    with np.errstate(invalid="ignore"):
        ok &= (total >= 0) & (total <= 1e9)
    beg, rx = _json_number(col["us_tx_beg"], None), _json_number(col["us_rx_end"], None)
    own = ~np.isnan(beg) & ~np.isnan(rx)
    ok &= own | (np.isnan(beg) & np.isnan(rx))
    span = rx - beg
    with np.errstate(invalid="ignore"):
        ok &= ~own | ((beg >= 0) & (span >= 0) & (span <= 1e9))
    sent = np.where(own, stamp + np.where(own, beg, 0.0) / 1e3, stamp)
    end = np.where(own, sent + np.where(own, span, 0.0) / 1e3, stamp + total / 1e3)
    n = len(texts)
    full_ok, full_sent, full_end = np.zeros(n, dtype=bool), np.zeros(n), np.zeros(n)
    full_ok[rows], full_sent[rows], full_end[rows] = ok, sent, end
    names: list[str | None] = [None] * n
    for i, name in zip(rows, host.to_pylist(), strict=True):
        names[i] = name
    full_own = np.zeros(n, dtype=bool)
    full_own[rows] = own
    return FastRows(full_ok, full_sent, full_end, np.full(n, 1e-3), names, None, full_own)


def _json_table(lines: list[str]) -> Any:
    """Return Arrow's table of the keys, numbers as numbers or as strings (None: neither)."""
    import pyarrow as pa
    import pyarrow.json as pj

    if not lines:
        return None
    data = pa.py_buffer(("\n".join(lines) + "\n").encode())
    for number in (pa.float64(), pa.string()):
        schema = pa.schema(
            [
                (k, pa.string() if k in ("start_time", "upstream_host") else number)
                for k in _JSON_KEYS
            ]
        )
        options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
        read = pj.ReadOptions(use_threads=False, block_size=max(len(data) + 1, 1 << 20))
        try:
            table = pj.read_json(data, read_options=read, parse_options=options)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        if table.num_rows == len(lines):
            return table
    return None


def _json_number(column: Any, ok: np.ndarray | None) -> np.ndarray:
    """Return a key's numbers (NaN: null, or a string that is not a plain decimal number)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_string(column.type):
        text = pc.utf8_trim_whitespace(column)
        plain = pc.match_substring_regex(text, r"^\d{1,12}(\.\d{1,9})?$").fill_null(False)
        column = pc.cast(pc.if_else(plain, text, pa.scalar(None, pa.string())), pa.float64())
    values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
    return values if ok is None else np.where(ok, values, np.nan)
