"""``cloudsched reproduce PAPER``: every table and figure of one paper, in one command.

The two papers (under ``shared/seeds``):

``jiq``
    Chunpu Wang, Chen Feng and Julian Cheng, "Distributed Join-the-Idle-Queue for Low
    Latency Cloud Services": Figure 4 and its table (mean field), Table II (occupancy,
    N = 500), Figure 5 (prediction against simulation, N = 1000), Figure 6 (request messages
    of JIQ-Original and JIQ), Figure 7 (tails of JIQ-Pod(2), JIQ-Threshold(z = 1),
    JIQ-SQ(2)), Figure 8 (mean response time of the five JIQ variants), Figures 9 and 10
    (Google trace replay), and the simulation error against N (100 to 100,000) for JIQ and
    JIQ-Pod(2) (:mod:`cloudsched.experiments.jiq_figures`).
``dgp``
    Javad Ghaderi, Sanjay Shakkottai and R. Srikant, "Scheduling Storms and Streams in the
    Cloud": DGP's cost/queue trade-off over beta for several alpha, Storm default, greedy
    and the static optimum, and MaxWeight's migrations against its frame length
    (:mod:`cloudsched.experiments.dgp_figures`).

Three sizes (:data:`~cloudsched.experiments.common.LEVELS`): ``demo`` (inside
``cloudsched demo``), ``quick`` (``--quick``, under five minutes on 2 cores) and ``full``.
Simulation grids run through :func:`cloudsched.experiments.sweep.run_sweep` into
``OUT/sweeps/<name>/`` (one Parquet file per run), so an interrupted reproduction resumes
where it stopped, and every run's random numbers follow from the root ``seed`` (an RNG
seed, nothing to do with the papers) and its parameters.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from cloudsched.errors import check_choice
from cloudsched.experiments.dgp_figures import dgp_sections
from cloudsched.experiments.jiq_figures import jiq_sections
from cloudsched.experiments.report import Report, ensure_dir

__all__ = ["PAPERS", "reproduce", "reproduce_dgp", "reproduce_jiq"]

#: Paper name -> (report title, the function appending its sections).
PAPERS = {
    "jiq": ("Task dispatch (Wang, Feng and Cheng: distributed JIQ)", jiq_sections),
    "dgp": ("Graph placement (Ghaderi, Shakkottai and Srikant: DGP)", dgp_sections),
}


def reproduce(
    paper: str,
    out: str | os.PathLike[str],
    *,
    quick: bool = False,
    workers: int = 2,
    seed: int = 2026,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Reproduce ``paper`` (``jiq`` or ``dgp``) into ``out``; return the path of ``report.md``.

    ``seed`` is the root RNG seed of every run; ``log`` is called with each section's title.
    """
    paper = check_choice("paper", paper, tuple(PAPERS))
    level = "quick" if quick else "full"
    out_dir = ensure_dir(out)
    title, sections = PAPERS[paper]
    report = Report(f"cloudsched reproduce {paper}: {title}", out_dir, log=log)
    report.text(
        f"Size `{level}`; every run's random numbers follow from the root seed {seed} "
        "and its parameters; simulation grids are stored run by run under "
        "`sweeps/`."
    )
    sections(report, out_dir, level, workers, seed)
    cmd = f"cloudsched reproduce {paper}{' --quick' if quick else ''} --seed {seed}"
    return report.write({"size": level, "seed": seed, "workers": workers, "command": cmd})


def reproduce_jiq(out: str | os.PathLike[str], **kw: object) -> Path:
    """Reproduce the JIQ paper (``reproduce("jiq", out, ...)``)."""
    return reproduce("jiq", out, **kw)  # type: ignore[arg-type]


def reproduce_dgp(out: str | os.PathLike[str], **kw: object) -> Path:
    """Reproduce the placement paper (``reproduce("dgp", out, ...)``)."""
    return reproduce("dgp", out, **kw)  # type: ignore[arg-type]
