"""``cloudsched predict POLICY --servers N``: the finite-N table, its JSON and its figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cloudsched.cli.common import emit, format_frame, wrote

__all__ = ["finite_predict", "heterogeneous_predict"]


def finite_predict(
    policy: str,
    servers: int,
    loads: Any,
    *,
    r: float,
    d: int,
    replace: bool,
    method: str,
    fmt: str,
    out: Path | None,
    plot: Path | None,
    z: int = 1,
) -> None:
    """Print (or write) mean field, refined and exact values at ``servers`` servers."""
    import pandas as pd

    from cloudsched.cli.bars import LazyProgress
    from cloudsched.dispatch.theory.finite import as_arrays
    from cloudsched.dispatch.theory.prediction import predict
    from cloudsched.policy_table import get_row

    bar = LazyProgress(f"predict {policy} N={servers}", delay=1.0)
    try:
        preds = predict(
            policy,
            loads,
            servers=servers,
            r=r,
            d=d,
            replace=replace,
            method=method,
            z=z,
            progress=bar,
        )
    finally:
        bar.close()
    first = preds[0]
    cols = as_arrays(preds)
    df = pd.DataFrame(
        {
            "load": cols["load"],
            "meanfield": cols["meanfield"],
            "refined": cols["refined"],
            "exact": cols["exact"],
            "truncation": cols["truncation"],
            "T": cols["value"],
            "from": [p.source for p in preds],
        }
    )
    params = {
        "servers": first.servers,
        "dispatchers": first.dispatchers,
        "d": first.d,
        "with_replacement": replace,
        "method": method,
    }
    notes = _refined_notes(preds)
    payload = {
        "policy": policy,
        "params": params,
        "points": [p.to_dict() for p in preds],
        "notes": notes,
    }
    probes = ""
    if get_row(policy).probes == "d":
        probes = f", d={first.d} {'with' if replace else 'without'} replacement"
    title = f"{policy} at N={first.servers}, M={first.dispatchers}{probes}: mean response time"
    shown = df.astype(object).where(df.notna(), "-") if fmt == "table" else df
    emit(format_frame(shown, fmt, title, payload), out)
    limits = sorted({p.load for p in preds if p.source == "meanfield"})
    if limits and fmt == "table" and out is None:
        print(
            f"note: T is the N -> infinity limit at load {', '.join(map(str, limits))}: "
            f"{policy} has no refined model"
            f"{' small enough here (a smaller --r has one)' if get_row(policy).refined else ''}"
            f" and its exact chain at N={servers} is too large (--method exact tries it)"
        )
    if fmt == "table" and out is None:
        for note in notes:
            print(f"note: {note}")
    if plot is not None:
        from cloudsched.plotting import plot_response_time

        series = {
            f"{name}": (cols["load"], cols[name])
            for name in ("meanfield", "refined", "exact")
            if not all(v != v for v in cols[name])
        }
        plot_response_time(series, plot, title=title)
        wrote(plot)


#: The largest remainder of the refined value against simulation, as a share of its 1/N
#: term: 0.62 (0.67 counting the simulations' half-widths) over 76 settings of pod (N = 10
#: to 100, d = 2 to 32, with and without replacement, loads 0.9 and 0.95), at most 0.13
#: over 12 of jiq and jiq-pod (benchmarks/refined_remainder.py, runs in
#: benchmarks/results/refined-remainder.csv).
REMAINDER_SHARE = 0.67


def _refined_notes(preds: Any) -> list[str]:
    """Say what a refined value leaves out, where it may be 1% of the value or more."""
    rows = [p for p in preds if p.source == "refined" and p.refined is not None]
    if not rows:
        return []
    worst = max(rows, key=lambda p: abs(p.refined - p.meanfield) / p.refined)
    term = abs(worst.refined - worst.meanfield)
    left = REMAINDER_SHARE * term
    if left < 0.01 * worst.refined:
        return []
    return [
        f"refined = the mean field + its 1/N term ({term:.3g} at load {worst.load:g}); the "
        "1/N^2 term is not computed: against simulation (76 settings of pod, N = 10-100, d "
        "up to 32; 12 of jiq and jiq-pod, N = 20-100; loads 0.9-0.95) what is left was at "
        f"most {REMAINDER_SHARE:g} of the 1/N term, here {left:.3g} "
        f"({100 * left / worst.refined:.2g}% of {worst.refined:.4g}); simulate for an interval"
    ]


def heterogeneous_predict(
    policy: str, speeds: Any, loads: Any, *, r: float, d: int, fmt: str, out: Path | None
) -> None:
    """Mean field with speed classes: T, and each class's utilisation and mean tasks."""
    import pandas as pd

    from cloudsched.dispatch.theory.prediction import predict

    preds = predict(policy, loads, speeds=speeds, r=r, d=d)
    rows = []
    for p in preds:
        row: dict[str, Any] = {"load": p.load, "T": p.mean_response_time, "p0": p.p0}
        for mu, util, tasks in zip(p.speeds, p.utilisation, p.tasks, strict=True):
            row[f"busy@{mu:g}"] = util
            row[f"tasks@{mu:g}"] = tasks
        rows.append(row)
    shares = ", ".join(
        f"{a:.3g} at speed {mu:g}" for mu, a in zip(preds[0].speeds, preds[0].shares, strict=True)
    )
    title = f"mean field: {policy} with speed classes ({shares}; r={r:g}, d={d})"
    payload = {
        "policy": policy,
        "params": {
            "r": r,
            "d": d,
            "classes": [
                {"speed": float(mu), "share": float(a)}
                for mu, a in zip(preds[0].speeds, preds[0].shares, strict=True)
            ],
        },
        "points": rows,
    }
    emit(format_frame(pd.DataFrame(rows), fmt, title, payload), out)
