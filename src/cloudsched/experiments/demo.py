"""``cloudsched demo``: a short report on built-in defaults.

The report opens with the README's three questions answered on a small example
(:mod:`cloudsched.experiments.demo_questions`), then gives the "demo"-sized version of both
reproductions (:mod:`cloudsched.experiments.reproduce`: the same figure functions at the
smallest size), and ends with next steps.  A rerun into a folder that already holds the
report of the same code and seed reuses it and says so (``fresh=True`` recomputes).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

from cloudsched.experiments.demo_questions import question_sections
from cloudsched.experiments.dgp_figures import dgp_sections
from cloudsched.experiments.jiq_figures import jiq_sections
from cloudsched.experiments.report import Report, ensure_dir
from cloudsched.io import atomic_write_text

__all__ = ["DEFAULT_OUT", "SEED", "STAMP", "code_stamp", "reusable", "run_demo"]

DEFAULT_OUT = Path("cloudsched-report")
#: The demo's seed.
SEED = 2026
#: Beside the report: the code and seed it was made from (a rerun reuses a match).
STAMP = "demo.json"

NEXT_STEPS = [
    "Your own farm: `cloudsched compare POLICY... --servers N --load L`; the cheapest "
    "setting under a p99 target: `cloudsched tune --p99 X --rate R --servers A:B`.",
    "Your own balancer's logs: `cloudsched check-lb access.log --expect pod:2` says whether "
    "it does what its config says; `cloudsched verdict` maps the production balancers "
    "against least request.",
    "Your own topologies: `cloudsched place static --topology your.flux.yaml`; over time: "
    "`cloudsched place simulate dgp`.",
    "The papers at full size: `cloudsched reproduce jiq` and `cloudsched reproduce dgp`; a "
    "live run beside NGINX and HAProxy: `cloudsched lab compare`.",
    "The first run compiled the simulator's kernels (once per machine and version of "
    "cloudsched); `cloudsched warmup --all` compiles every one ahead.",
]


def code_stamp(seed: int) -> dict[str, object]:
    """Return the code (every source file of the package) and seed a report comes from."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return {"seed": seed, "code": digest.hexdigest()}


def reusable(out: str | os.PathLike[str], seed: int) -> bool:
    """Return whether ``out`` holds a whole demo report of this code and ``seed``."""
    folder = Path(out)
    try:
        stamp = json.loads((folder / STAMP).read_text())
    except (OSError, ValueError):
        return False
    whole = all((folder / name).is_file() for name in ("report.md", "report.html"))
    return whole and stamp == code_stamp(seed)


def run_demo(
    out: str | os.PathLike[str] = DEFAULT_OUT,
    seed: int = SEED,
    log: Callable[[str], None] | None = None,
    *,
    fresh: bool = False,
) -> Path:
    """Write the demo report (module notes), or reuse the one ``out`` holds.

    ``log`` is told when each section starts and ends (with its time).  Unless ``fresh``,
    a report of the same code and seed already in ``out`` (:func:`reusable`) is kept.

    Returns
    -------
    pathlib.Path
        Path of ``report.md``.
    """
    out_dir = ensure_dir(out)
    if not fresh and reusable(out_dir, seed):
        return out_dir / "report.md"
    (out_dir / STAMP).unlink(missing_ok=True)  # a half-made report is never reused
    report = Report("cloudsched demo report", out_dir, log=log)
    report.text(
        "The README's three questions first, answered on small built-in examples with the "
        "command that asks them of your own numbers; then the papers' figures at small "
        "sizes (`cloudsched reproduce jiq|dgp [--quick]` gives them at full size). Service "
        "times have mean 1, so response times are in units of the mean service time."
    )
    question_sections(report, out_dir, seed + 5)
    jiq_sections(report, out_dir, "demo", 1, seed)
    dgp_sections(report, out_dir, "demo", 1, seed + 3)
    report.heading("Next steps")
    report.bullets(NEXT_STEPS)
    path = report.write({"size": "demo", "seed": seed, "command": "cloudsched demo"})
    atomic_write_text(out_dir / STAMP, json.dumps(code_stamp(seed)) + "\n")
    return path
