"""Hypothesis strategies for the CLI fuzz tier: a fast, valid command line with one option
replaced by a hostile value (huge, negative, NaN, infinite, empty, garbage, or a bad path).

The contract checked for every example: exit 0 with valid output (strict JSON when asked),
or exit 2 with exactly one line on standard error, never a traceback; a run still going
after 20 s must have shown progress and must stop cleanly on Ctrl-C (see run_contract).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from hypothesis import strategies as st

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DEMO = str(EXAMPLES / "demo-placement.yaml")
TRACE = str(Path(__file__).resolve().parent / "data" / "small-log.csv")

#: Fast, valid base commands and the options the fuzzer may replace (run-length options
#: are replaced by hostile values too, but the alarm bounds them).
BASES = {
    "predict": (
        ["predict", "jiq", "--load", "0.5", "--r", "10", "--format", "json"],
        ["--load", "--r", "--d", "--tail", "--loads"],
    ),
    "fluid": (
        ["fluid", "jiq-pod", "--load", "0.5", "--r", "10", "--horizon", "5", "--format", "json"],
        ["--load", "--r", "--d", "--horizon", "--points", "--initial-tasks", "--initial-load"],
    ),
    "simulate": (
        [
            "simulate",
            "jiq-pod",
            "--servers",
            "20",
            "--load",
            "0.5",
            "--r",
            "5",
            "--tasks",
            "5000",
            "--seed",
            "1",
            "--format",
            "json",
        ],
        [
            "--servers",
            "--load",
            "--r",
            "--d",
            "--threshold",
            "--seed",
            "--batches",
            "--replications",
            "--precision",
            "--service",
            "--arrivals",
            "--speeds",
            "--service-scale",
            "--tail",
            "--dispatchers",
        ],
    ),
    "place": (
        [
            "place",
            "simulate",
            "--cluster",
            "3x3",
            "--workload",
            DEMO,
            "--policy",
            "greedy",
            "--horizon",
            "50",
            "--seed",
            "1",
            "--format",
            "json",
        ],
        [
            "--cluster",
            "--racks",
            "--cross-rack-cost",
            "--horizon",
            "--seed",
            "--beta",
            "--alpha",
            "--h",
            "--epsilon",
            "--frame",
            "--precision",
            "--target-gap",
            "--executors-per-slot",
            "--policy",
            "--f",
        ],
    ),
    "bound": (
        ["place", "bound", "--cluster", "3x3", "--workload", DEMO, "--format", "json"],
        ["--cluster", "--racks", "--cross-rack-cost", "--seed"],
    ),
    "general": (
        [
            "simulate",
            "pod",
            "--servers",
            "30",
            "--load",
            "0.7",
            "--tasks",
            "4000",
            "--seed",
            "3",
            "--service",
            "lognormal:cv=2",
            "--arrivals",
            "h2:cv=2",
            "--format",
            "json",
        ],
        [
            "--service",
            "--arrivals",
            "--d",
            "--load",
            "--warmup",
            "--speeds",
            "--initial",
            "--engine",
            "--tail",
            "--batches",
        ],
    ),
    "trace": (
        [
            "simulate",
            "jiq",
            "--servers",
            "20",
            "--r",
            "5",
            "--trace",
            TRACE,
            "--trace-format",
            "csv",
            "--seed",
            "1",
            "--format",
            "json",
        ],
        [
            "--load",
            "--tasks",
            "--service-scale",
            "--trace-format",
            "--unfinished",
            "--trace",
            "--warmup",
        ],
    ),
    "stats": (
        ["trace", "stats", TRACE, "--trace-format", "csv", "--format", "json"],
        ["--trace-format", "--unfinished", "--format"],
    ),
    "access": (
        ["trace", "stats", "nginx-sample", "--format", "json"],
        ["--trace-format", "--log-format", "--log-service", "--format"],
    ),
    "compare": (
        [
            "compare",
            "jiq",
            "pod",
            "--servers",
            "20",
            "--load",
            "0.5",
            "--tasks",
            "5000",
            "--seed",
            "1",
            "--format",
            "json",
        ],
        [
            "--servers",
            "--load",
            "--d",
            "--r",
            "--precision",
            "--tasks",
            "--seed",
            "--service",
            "--arrivals",
            "--max-tasks",
            "--loads",
        ],
    ),
    "tune": (
        [
            "tune",
            "--mean",
            "3",
            "--rate",
            "10",
            "--servers",
            "11:40",
            "--policy",
            "jiq",
            "--precision",
            "0.1",
            "--format",
            "json",
        ],
        [
            "--mean",
            "--rate",
            "--servers",
            "--d",
            "--r",
            "--max-messages",
            "--precision",
            "--seed",
            "--unit",
            "--load",
        ],
    ),
}

NUMBERS = [
    "0",
    "-1",
    "1",
    "2",
    "-0",
    "0.5",
    "1e-320",
    "1e308",
    "1e309",
    "-1e309",
    "nan",
    "inf",
    "-inf",
    "99999999999999999999999",
    "-99999999999999999999",
    "1.5",
    "3",
    "1e6",
    "1e12",
    "0x10",
    "",
    " ",
    "abc",
    "1,2",
    "1:2:3",
    "0.1:0.9:3",
    "2x2",
    "0x0",
    "3x0",
    "1000000000x1000000000",
    "exp",
    "det:mean=0",
    "pareto:alpha=0",
    "lognormal:cv=-1",
    "empirical:/nonexistent",
    "h2:cv=0.5",
    "uniform:cv=2",
    "exp:mean=nan",
    "\u00e9\u00e8",
    "--load",
]


VALUES = st.one_of(
    st.sampled_from(NUMBERS),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(min_size=0, max_size=12),
)


@st.composite
def hostile_argv(draw, most: int = 1) -> list[str]:
    """A base command with 1..``most`` options' values replaced (or added) by hostile values
    (``most`` > 1 also repeats or drops an option now and then)."""
    name = draw(st.sampled_from(sorted(BASES)))
    base, options = BASES[name]
    argv = list(base)
    for option in draw(st.lists(st.sampled_from(options), min_size=1, max_size=most)):
        value = draw(VALUES)
        action = draw(st.sampled_from(["set"] * 4 + ["repeat", "drop"])) if most > 1 else "set"
        if action == "drop" and option in argv and option != argv[-2]:
            i = argv.index(option)
            del argv[i : i + 2]
        elif option in argv and action == "set":
            argv[argv.index(option) + 1] = value
        else:
            argv += [option, value]
        if option == "--loads" and "--load" in argv:
            i = argv.index("--load")
            del argv[i : i + 2]
    return argv


def run_contract(main, capture, argv: list[str], seconds: int = 20) -> None:
    """Run ``argv`` in-process and check the contract (see the module docstring).

    ``capture`` is pytest's ``capfd`` (progress lines are written to descriptor 2).  A run
    still going after ``seconds`` gets a Ctrl-C (the alarm raises SIGINT); it
    passes if it had written progress lines and stopped with one ``interrupted:`` line and
    exit status 130 (long but feasible work), and fails otherwise (a hang).
    """

    def alarm(signum, frame):
        signal.raise_signal(signal.SIGINT)  # a user's Ctrl-C, through the CLI's own handler

    capture.readouterr()  # drop what an earlier (failing, shrunk) example left behind
    if os.environ.get("CLOUDSCHED_FUZZ_ECHO"):
        print("FUZZ", argv, file=sys.__stderr__, flush=True)
    saved = os.environ.get("CLOUDSCHED_PROGRESS_SECONDS")
    os.environ["CLOUDSCHED_PROGRESS_SECONDS"] = "2"
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        try:
            main(argv)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        if saved is None:
            os.environ.pop("CLOUDSCHED_PROGRESS_SECONDS", None)
        else:
            os.environ["CLOUDSCHED_PROGRESS_SECONDS"] = saved
    out, err = capture.readouterr()
    assert "Traceback" not in err, (argv, err)
    lines = [
        line
        for line in err.splitlines()
        if line.strip() and not line.startswith(("warning:", "progress:"))
    ]
    if code == 130:  # stopped by the alarm's Ctrl-C: long, but it must have said so
        assert "progress: " in err, ("no progress line before Ctrl-C (a hang)", argv, err)
        assert lines and lines[-1].startswith("interrupted: "), (argv, err)
        return
    if code == 0:
        if "--format" in argv and argv[argv.index("--format") + 1] == "json":
            json.loads(
                out,
                parse_constant=lambda c: (_ for _ in ()).throw(
                    AssertionError(f"non-standard JSON constant {c} for {argv}")
                ),
            )
        return
    assert code == 2, (argv, code, err)
    assert len(lines) == 1 and lines[0].startswith("error: "), (argv, err)
