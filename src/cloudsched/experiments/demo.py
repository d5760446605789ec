"""``cloudsched demo``: a short report on built-in defaults.

The report is the "demo"-sized version of both reproductions
(:mod:`cloudsched.experiments.reproduce`): the same figure functions at the smallest size.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from cloudsched.experiments.dgp_figures import dgp_sections
from cloudsched.experiments.jiq_figures import jiq_sections
from cloudsched.experiments.report import Report, ensure_dir

__all__ = ["DEFAULT_OUT", "run_demo"]

DEFAULT_OUT = Path("cloudsched-report")


def run_demo(
    out: str | os.PathLike[str] = DEFAULT_OUT,
    seed: int = 2026,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Write the demo report: the quick ("demo"-sized) versions of both reproductions.

    ``log`` is told when each section starts and ends (with its time).

    Returns
    -------
    pathlib.Path
        Path of ``report.md``.
    """
    out_dir = ensure_dir(out)
    report = Report("cloudsched demo report", out_dir, log=log)
    report.text(
        "Built-in defaults, small sizes; regenerate with `cloudsched demo`, or run "
        "`cloudsched reproduce jiq|dgp [--quick]` for the papers' full-size versions. Service "
        "times have mean 1, so response times are in units of the mean service time."
    )
    jiq_sections(report, out_dir, "demo", 1, seed)
    dgp_sections(report, out_dir, "demo", 1, seed + 3)
    return report.write({"size": "demo", "seed": seed, "command": "cloudsched demo"})
