"""The bad-input campaign of issue 12, re-runnable: ~430 bad and edge inputs, counted.

Run it from a checkout (it takes 10-20 minutes on 2 cores)::

    python tests/bad_input_campaign.py [--jobs 2] [--timeout 60] [--only AREA] [--show]

Each case runs ``cloudsched`` in a fresh scratch folder (its files made there), as a
separate process with its address space capped (``--memory-cap``, default 10 GiB) and
``CLOUDSCHED_MAX_MEMORY`` at 4G, so a run that allocates beyond its own estimate ends in a
``MemoryError`` instead of taking the machine.  The outcome of every case is one of:

* ``clean error``: exit 2 and one line ``error: ...`` (``warning:`` and ``progress:`` lines
  aside);
* ``correct run``: exit 0, output valid (strict JSON where asked) and the case's own check
  passes (e.g. a symbolic link is still a link, a file kept its mode);
* ``long run, clean stop``: still running at the timeout, it had written progress lines with
  the time left, and Ctrl-C stopped it with one line and exit 130;
* ``traceback``, ``memory traceback``, ``hang``, ``wrong result`` (exit 0 where the case's
  check fails, or exit 0 where only an error is right), ``messy error`` (exit 2 with more than
  one line, or another exit status), ``crash`` (killed by a signal).

The first three are the contract; the script prints the counts by area and the cases of the
other outcomes, and exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = str(ROOT / "examples" / "demo-placement.yaml")
WORDCOUNT = str(ROOT / "examples" / "wordcount.yaml")
LOG = str(ROOT / "tests" / "data" / "small-log.csv")
GOOD = {"contract": ("clean error", "correct run", "long run, clean stop")}


@dataclass
class Case:
    area: str
    argv: list[str]
    expect: str = "either"  # "error", "ok" or "either"
    files: dict[str, bytes | str] = field(default_factory=dict)  # made in the scratch folder
    setup: Callable[[Path], None] | None = None  # anything else to make there
    check: Callable[[Path, str], str | None] | None = None  # on exit 0: None or what is wrong


# --- the cases -----------------------------------------------------------------------------

NUMBERS = ["99999999999999999999999", "-1", "0", "nan", "inf", "1e20", "abc", ""]
SIM = [
    "simulate",
    "jiq-pod",
    "--servers",
    "50",
    "--load",
    "0.7",
    "--r",
    "5",
    "--tasks",
    "20000",
    "--seed",
    "1",
    "--format",
    "json",
]
PLACE = [
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
]
FLUID = ["fluid", "jiq-pod", "--load", "0.5", "--r", "10", "--horizon", "5", "--format", "json"]
PREDICT = ["predict", "jiq", "--load", "0.5", "--r", "10", "--format", "json"]


def _with(base: list[str], option: str, value: str) -> list[str]:
    argv = list(base)
    if option in argv:
        argv[argv.index(option) + 1] = value
    else:
        argv += [option, value]
    return argv


def _option_cases(area: str, base: list[str], options: list[str], values: list[str]) -> list[Case]:
    return [Case(area, _with(base, o, v)) for o in options for v in values]


def _law_cases() -> list[Case]:
    specs = [
        "pareto:alpha=1e-300",
        "pareto:alpha=1000",
        "det:mean=1e-320",
        "exp:mean=1e300",
        "lognormal:cv=1e9",
        "h2:cv=0.5",
        "uniform:cv=2",
        "pareto:alpha=1.5,max=0.5",
        "pareto:alpha=1.5,max=1e300",
        "exp:mean=nan",
        "weibull",
        "exp:mean=1,x=2",
        "empirical:",
        "empirical:missing.txt",
        "empirical:/dev/zero",
        "empirical:.",
        "empirical:bad.txt",
        "empirical:zero.txt",
        "empirical:tiny.txt",
        "empirical:latin1.txt",
        "empirical:good.txt",
        "det",
        "lognormal:cv=2,mean=3",
    ]
    files = {
        "bad.txt": "1\nx\n",
        "zero.txt": "1\n0\n",
        "tiny.txt": "1e-320\n",
        "latin1.txt": b"\xe9\xe8 1\n",
        "good.txt": "1 2 3\n4,5\n",
    }
    out = []
    for option in ("--service", "--arrivals"):
        for spec in specs:
            out.append(Case("simulate + laws", _with(SIM, option, spec), files=files))
    return out


def _simulate_cases() -> list[Case]:
    options = [
        "--servers",
        "--tasks",
        "--d",
        "--threshold",
        "--seed",
        "--load",
        "--r",
        "--replications",
        "--batches",
        "--precision",
        "--max-tasks",
        "--warmup",
        "--dispatchers",
        "--service-scale",
    ]
    out = _option_cases("simulate + laws", SIM, options, NUMBERS)
    out += [
        Case(
            "simulate + laws",
            ["simulate", "random", "--servers", "1000000000", "--load", "0.5", "--tasks", "1000"],
        ),
        Case("simulate + laws", _with(SIM, "--horizon", "1e12"), expect="either"),
        Case("simulate + laws", [*SIM[:8], "--tasks", "10000000000", "--seed", "1"]),
        Case("simulate + laws", [*SIM[:-2], "--replications", "1000000000"]),
        Case(
            "simulate + laws",
            [
                "simulate",
                "jiq",
                "--servers",
                "100",
                "--r",
                "10",
                "--load",
                "100",
                "--tasks",
                "100000",
            ],
        ),
        Case(
            "simulate + laws",
            [
                "simulate",
                "jiq",
                "--servers",
                "100",
                "--r",
                "10",
                "--load",
                "5",
                "--tasks",
                "100000",
                "--format",
                "json",
            ],
        ),
        Case("simulate + laws", [*SIM, "--speeds", ",".join(["1"] * 50)], expect="ok"),
        Case("simulate + laws", [*SIM, "--speeds", ",".join(["1"] * 49)], expect="error"),
        Case("simulate + laws", [*SIM, "--speeds", "1:2"]),
        Case("simulate + laws", [*SIM, "--speeds", "-1"]),
        Case("simulate + laws", [*SIM, "--with-replacement"], expect="ok"),
        Case(
            "simulate + laws",
            [
                "simulate",
                "jiq-sq",
                "--servers",
                "50",
                "--r",
                "5",
                "--d",
                "11",
                "--load",
                "0.5",
                "--tasks",
                "5000",
            ],
            expect="error",
        ),
        Case(
            "simulate + laws",
            ["simulate", "nope", "--servers", "5", "--load", "0.5"],
            expect="error",
        ),
        Case(
            "simulate + laws",
            ["simulate", "jiq", "--servers", "5", "--load", "0.5"],
            expect="error",
        ),  # jiq needs --r or --dispatchers
        Case("simulate + laws", [*SIM, "--tasks", "10", "--warmup", "0.9"]),
        Case("simulate + laws", [*SIM, "--horizon", "1e-9"]),
        Case("simulate + laws", [*SIM[:-2], "--initial", "meanfield", "--service", "det"]),
        Case("simulate + laws", [*SIM, "--format", "xml"], expect="error"),
        Case("simulate + laws", [*SIM, "--tail", "1000000"], expect="error"),
        Case("simulate + laws", [*SIM, "--engine", "warp"], expect="error"),
    ]
    return out


def _yaml_cases() -> list[Case]:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    deep = "job_types: " + "[" * 5000 + "]" * 5000 + "\n"
    job = (
        "job_types:\n  - name: a\n    arrival_rate: {rate}\n    mean_duration: {dur}\n"
        "    topology: {topo}\n"
    )
    topologies = [
        "{generator: chain, nodes: 3}",
        "{generator: complete, nodes: 100000}",
        "{generator: random, nodes: 1000000000, p: 0.5}",
        "{generator: star, nodes: 0}",
        "{generator: tree, nodes: 7, branching: 0}",
        "{generator: ring, nodes: 3}",
        "{flux: nope.yaml}",
        "{flux: /dev/null}",
        "{flux: /}",
        f"{{flux: {WORDCOUNT}}}",
        "{flux: big.yaml}",
        "{flux: latin1.yaml}",
        "{nodes: [1, 2], edges: [[1, 3]]}",
        "{nodes: 3, edges: [[0, 1, 2]]}",
        "{nodes: [[1]], edges: []}",
        "[1, 2]",
        "7",
        "{generator: chain}",
        f"{{flux: {WORDCOUNT}, slots: workers}}",
        f"{{flux: {WORDCOUNT}, slots: 3}}",
        f"{{flux: {WORDCOUNT}, executors_per_slot: 0}}",
    ]
    big = (
        "name: big\nspouts: [{id: s, className: S, parallelism: 100000}]\n"
        "bolts: [{id: b, className: B, parallelism: 100000}]\n"
        "streams: [{from: s, to: b, grouping: {type: SHUFFLE}}]\n"
    )
    files: dict[str, bytes | str] = {
        "bomb.yaml": bomb,
        "deep.yaml": deep,
        "latin1.yaml": b"name: \xe9\n",
        "big.yaml": big,
        "empty.yaml": "",
        "list.yaml": "- 1\n- 2\n",
        "scalar.yaml": "5\n",
        "types.yaml": "job_types: 5\n",
        "unhashable.yaml": "job_types:\n  - {[1]: 2}\n",
        "tab.yaml": "job_types:\n\t- a\n",
        "dup.yaml": "job_types: []\njob_types: []\n",
        "nul.yaml": b"job_types: [\x00]\n",
        "huge-number.yaml": job.format(rate="1e400", dur="1", topo="{generator: chain, nodes: 3}"),
    }
    for k, topo in enumerate(topologies):
        files[f"topo{k}.yaml"] = job.format(rate="1.0", dur="1.0", topo=topo)
    for k, (rate, dur) in enumerate(
        [
            ("-1", "1"),
            ("0", "1"),
            ("nan", "1"),
            ("1", "-1"),
            ("'x'", "1"),
            ("[1]", "1"),
            ("1", "inf"),
            ("1e-320", "1"),
            ("1", "1e300"),
            ("true", "1"),
        ]
    ):
        files[f"rate{k}.yaml"] = job.format(rate=rate, dur=dur, topo="{generator: chain, nodes: 3}")
    out = []
    for name in sorted(files):
        for cmd in (
            [
                "place",
                "simulate",
                "--cluster",
                "3x3",
                "--policy",
                "greedy",
                "--horizon",
                "20",
                "--seed",
                "1",
                "--no-compare-bound",
            ],
            ["place", "bound", "--cluster", "3x3"],
        ):
            out.append(
                Case("workload YAML", [*cmd, "--workload", name, "--format", "json"], files=files)
            )
    out += [
        Case("workload YAML", [*PLACE[:5], "missing.yaml", *PLACE[6:]], expect="error"),
        Case("workload YAML", [*PLACE[:5], ".", *PLACE[6:]], expect="error"),
    ]
    return out


def _place_cases() -> list[Case]:
    out = _option_cases(
        "place",
        PLACE,
        ["--cluster"],
        [
            "3x1000000000000",
            "0x0",
            "2x",
            "-1x2",
            "abc",
            "1000000x1000000",
            "3x3x3",
            "1x1",
            "99999999999999999999x2",
            "",
        ],
    )
    out += _option_cases(
        "place",
        PLACE,
        [
            "--racks",
            "--cross-rack-cost",
            "--horizon",
            "--beta",
            "--alpha",
            "--h",
            "--epsilon",
            "--frame",
            "--precision",
            "--target-gap",
            "--warmup",
            "--policy",
            "--f",
            "--seed",
        ],
        NUMBERS,
    )
    out += [
        Case("place", [*PLACE, "--policy", "dgp", "--horizon", "1e12"]),
        Case("place", ["place", "bound", "--cluster", "200x16", "--workload", DEMO]),
        Case(
            "place",
            [
                "place",
                "simulate",
                "--cluster",
                "3x3",
                "--workload",
                DEMO,
                "--format",
                "json",
                "--seed",
                "1",
            ],
        ),
    ]
    return out


def _trace_setup(d: Path) -> None:
    with gzip.open(d / "trunc.gz", "wb") as fh:
        fh.write(b"arrival,service\n" + b"".join(b"%d,1\n" % k for k in range(10000)))
    data = (d / "trunc.gz").read_bytes()
    (d / "trunc.gz").write_bytes(data[: len(data) // 2])
    os.mkdir(d / "adir")


def _strict_json(d: Path, out: str) -> str | None:
    try:
        json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except ValueError as exc:
        return f"not strict JSON: {exc}"
    return None


def _trace_cases() -> list[Case]:
    files: dict[str, bytes | str] = {
        "zeros.csv": "arrival,service\n0,1\n0,1\n0,1\n",
        "huge.csv": "arrival,service\n0,1e300\n1e300,1e300\n",
        "empty.csv": "",
        "header.csv": "arrival,service\n",
        "neg.csv": "arrival,service\n1,1\n0,1\n",
        "latin1.csv": b"arrival,service\n\xe9,1\n",
        "nan.csv": "arrival,service\nnan,1\n1,1\n",
        "cols.csv": "a,b\n1,2\n",
        "google.csv": "1,,1,0,,0,u,0,0,0.1,0.1,0,0\n2,,1,0,,1,u,0,0,0.1,0.1,0,0\n",
        "google-bad.csv": "x,y\n",
        "swf.swf": "; x\n1 0 0 5 1\n",
        "bin.csv": b"\x00\x01\x02",
    }
    out = []
    for name in [*sorted(files), "trunc.gz", "adir", "/dev/zero", "/dev/null", "missing.csv"]:
        for fmt in ("csv", "google2011", "swf"):
            out.append(
                Case(
                    "traces",
                    ["trace", "stats", name, "--trace-format", fmt, "--format", "json"],
                    files=files,
                    setup=_trace_setup,
                    check=_strict_json,
                )
            )
    for name in ("zeros.csv", "huge.csv", "neg.csv", "trunc.gz"):
        out.append(
            Case(
                "traces",
                [
                    "simulate",
                    "jiq",
                    "--servers",
                    "20",
                    "--r",
                    "5",
                    "--trace",
                    name,
                    "--trace-format",
                    "csv",
                    "--format",
                    "json",
                ],
                files=files,
                setup=_trace_setup,
                check=_strict_json,
            )
        )
    out += [
        Case(
            "traces",
            [
                "simulate",
                "jiq",
                "--servers",
                "20",
                "--r",
                "5",
                "--trace",
                LOG,
                "--trace-format",
                "csv",
                "--load",
                v,
                "--format",
                "json",
            ],
            check=_strict_json,
        )
        for v in ("0.5", "0", "-1", "nan", "20")
    ]
    return out


def _fluid_predict_cases() -> list[Case]:
    out = _option_cases(
        "fluid",
        FLUID,
        ["--horizon", "--initial-tasks", "--r", "--points", "--load", "--initial-load", "--d"],
        ["1e300", "1e12", "100000", "-1", "nan", "0", "abc"],
    )
    out += _option_cases(
        "predict",
        PREDICT,
        ["--d", "--r", "--load", "--tail"],
        ["65", "100000", "1.2", "-1", "nan", "1e20", "abc"],
    )
    out += [
        Case(
            "predict",
            ["predict", "jiq", "--loads", v, "--r", "10", "--format", "json"],
            check=_strict_json,
        )
        for v in (
            "0.1:0.9:100000000",
            "0.1:0.9:3",
            "0.9:0.1:3",
            "0.1:0.9:0",
            "a:b:c",
            "0.1,0.5",
            "0.1:1.5:3",
        )
    ]
    return out


def _symlink_setup(d: Path) -> None:
    (d / "real.json").write_text("old")
    os.symlink("real.json", d / "link.json")
    (d / "secret.json").write_text("old")
    os.chmod(d / "secret.json", 0o600)
    os.mkdir(d / "ro")
    os.chmod(d / "ro", 0o500)
    os.mkdir(d / "adir")
    (d / "afile").write_text("x")
    if os.geteuid() == 0:
        os.mknod(d / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))


def _link_kept(d: Path, out: str) -> str | None:
    if not (d / "link.json").is_symlink():
        return "the symbolic link was replaced"
    return None if (d / "real.json").read_text().startswith("{") else "target not written"


def _mode_kept(d: Path, out: str) -> str | None:
    mode = stat.S_IMODE((d / "secret.json").stat().st_mode)
    return None if mode == 0o600 else f"mode became {oct(mode)}"


def _device_kept(d: Path, out: str) -> str | None:
    return None if (d / "null").is_char_device() else "the device was replaced"


def _pdf(d: Path, out: str) -> str | None:
    return None if (d / "x.pdf").read_bytes()[:4] == b"%PDF" else "not a PDF"


SPEC = (
    "kind: simulate\nfixed: {servers: 20, r: 5, load: 0.5, tasks: 2000}\n"
    "grid: {policy: [jiq, pod]}\n"
)


def _output_cases() -> list[Case]:
    out = []
    for target in (
        "",
        "adir",
        "ro/x.json",
        "/proc/x.json",
        "/dev/full",
        "null",
        "afile/x.json",
        "missing/x.json",
    ):
        for cmd in (PREDICT, [*SIM[:-2], "--tasks", "2000"]):
            check = _device_kept if target == "null" else None
            out.append(
                Case("output paths", [*cmd, "--out", target], setup=_symlink_setup, check=check)
            )
    out += [
        Case(
            "output paths",
            [*PREDICT, "--out", "link.json"],
            setup=_symlink_setup,
            check=_link_kept,
            expect="ok",
        ),
        Case(
            "output paths",
            [*PREDICT, "--out", "secret.json"],
            setup=_symlink_setup,
            check=_mode_kept,
            expect="ok",
        ),
        Case("output paths", [*PREDICT[:-2], "--plot", "x.pdf"], check=_pdf, expect="ok"),
        Case("output paths", [*PREDICT[:-2], "--plot", "x.txt"], expect="error"),
        Case(
            "output paths", [*PREDICT[:-2], "--plot", "adir"], setup=_symlink_setup, expect="error"
        ),
        Case("output paths", ["demo", "--out", "afile"], setup=_symlink_setup, expect="error"),
        Case(
            "output paths",
            ["reproduce", "jiq", "--quick", "--out", "afile"],
            setup=_symlink_setup,
            expect="error",
        ),
        Case("output paths", ["reproduce", "jiq", "--quick", "--out", "/proc/x"], expect="error"),
        Case(
            "output paths",
            ["sweep", "spec.yaml", "--out", "afile"],
            setup=_symlink_setup,
            files={"spec.yaml": SPEC.replace("[jiq, pod]", "[jiq]")},
            expect="error",
        ),
    ]
    return out


def _sweep_cases() -> list[Case]:
    bodies = [
        "kind: simulate\n",
        "kind: dance\ngrid: {x: [1]}\n",
        "- 1\n",
        "",
        "kind: [1]\n",
        SPEC.replace("tasks: 2000", "tasks: 2000, servers: -1").replace("servers: 20, ", ""),
        SPEC.replace("[jiq, pod]", "[]"),
        SPEC.replace("[jiq, pod]", "jiq"),
        SPEC.replace("policy", "polcy"),
        SPEC + "seed: -3\n",
        SPEC + "seed: 1e40\n",
        SPEC + "replications: 1000000000\n",
        SPEC.replace("load: 0.5", "load: {a: 1}"),
        SPEC.replace("r: 5", "r: 5, d: 50"),
        "kind: predict\ngrid: {policy: [jiq]}\n",
        "kind: place\ngrid: {beta: [0.1]}\n",
        "kind: simulate\nfixed: [1]\ngrid: {a: [1]}\n",
        "kind: simulate\nfixed: {servers: 20, r: 5, load: 0.5, tasks: 2000}\ngrid: {d: "
        + str(list(range(100000)))
        + "}\n",
        "kind: predict\nfixed: {r: 5}\ngrid: {load: " + str([0.5] * 100000) + ", policy: [jiq]}\n",
        "kind: place\nfixed: {cluster: 3x3, workload: nope.yaml}\ngrid: {policy: [greedy]}\n",
        "kind: place\nfixed: {cluster: 3x3, workload: " + DEMO + ", horizon: 20}\ngrid: "
        "{policy: [greedy, teleport]}\n",
        SPEC.replace("load: 0.5", "load: 5"),
        SPEC.replace("tasks: 2000", "service: pareto:alpha=0"),
    ]
    files: dict[str, bytes | str] = {f"s{k}.yaml": b for k, b in enumerate(bodies)}
    files["latin1.yaml"] = b"kind: \xe9\n"
    files["bomb.yaml"] = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    files["ok.yaml"] = SPEC
    out = [Case("sweep", ["sweep", name, "--out", "out"], files=files) for name in sorted(files)]
    out += [
        Case("sweep", ["sweep", "ok.yaml", "--out", "out", *extra], files=files)
        for extra in (
            ["--scheduler", "tcp://127.0.0.1:1"],
            ["--scheduler", "not an address"],
            ["--workers", "0"],
            ["--workers", "-1"],
            ["--workers", "1000000000"],
            ["--executor", "mpi"],
            ["--workers", "2"],
            ["--resume"],
        )
    ]
    out.append(Case("sweep", ["sweep", "missing.yaml", "--out", "out"], expect="error"))
    return out


def _reproduce_cases() -> list[Case]:
    return [
        Case("reproduce and demo", ["reproduce", "xyz", "--quick", "--out", "r"], expect="error"),
        Case(
            "reproduce and demo",
            ["reproduce", "jiq", "--quick", "--seed", "-3", "--out", "r"],
            expect="error",
        ),
        Case(
            "reproduce and demo",
            ["reproduce", "jiq", "--quick", "--seed", "1e40", "--out", "r"],
            expect="error",
        ),
        Case(
            "reproduce and demo",
            ["reproduce", "jiq", "--quick", "--seed", "99999999999999999999999", "--out", "r"],
            expect="error",
        ),
        Case(
            "reproduce and demo",
            ["reproduce", "jiq", "--quick", "--workers", "0", "--out", "r"],
            expect="error",
        ),
        Case("reproduce and demo", ["demo", "--out", ""], expect="error"),
        Case("reproduce and demo", ["demo", "--out", "/proc/x"], expect="error"),
        Case("reproduce and demo", ["nonsense"], expect="error"),
        Case("reproduce and demo", [], expect="either"),
    ]


def _fifo_setup(d: Path) -> None:
    os.mkfifo(d / "pipe.yaml")
    (d / "inc.yaml").write_text(
        "name: t\nspouts: [{id: s, className: S}]\nbolts: []\n"
        "streams: []\nincludes: [{file: pipe.yaml}]\n"
    )


def _issue_30_cases() -> list[Case]:
    """Issue 30's inputs: hostile files, bounds, plug-ins that misbehave, huge grids."""
    hap = (
        "127.0.0.1:1 [01/Dec/2026:18:00:00.123] fe be/s1 0/0/0/" + "9" * 400 + "/5 200 100 "
        '- - ---- 1/1/0/0/0 0/0 "GET / HTTP/1.1"\n'
    ) * 3
    files: dict[str, bytes | str] = {
        "alias.yaml": "a: &a " + "x" * 100_000 + "\nb: [" + ", ".join(["*a"] * 700) + "]\n",
        "deep.json": '{"start_time": "2026-12-01T00:00:00Z", "duration": 5, "x": '
        + "[" * 100_000
        + "]" * 100_000
        + "}\n",
        "hap.log": hap,
        "google.csv": "9" * 400 + ",0,1,0,,0,u,0,0,0,0,0,0\n",
        "long.log": "x" * (2 << 20) + "\n",
        "dup.csv": "arrival,service,arrival\n1,2,3\n2,3,4\n",
        "big.csv": "arrival,service\n" + "".join(f"{i},1e300\n" for i in range(5)),
        "in.csv": "arrival,service\n1,2\n2,3\n3,1\n",
        "exit.py": "import sys\nsys.exit(3)\n",
        "svc.yaml": (
            "kind: simulate\nfixed: {policy: random, servers: 10, load: 0.5, "
            "service: [1, 2]}\ngrid: {d: [1]}\n"
        ),
        "chain.yaml": (
            "job_types:\n  - {name: a, arrival_rate: 1, mean_duration: 1, "
            "topology: {generator: chain, nodes: 1000000000}}\n"
        ),
        "w-inc.yaml": (
            "job_types:\n  - {name: a, arrival_rate: 1, mean_duration: 1, "
            "topology: {flux: inc.yaml}}\n"
        ),
    }
    place = ["place", "bound", "--cluster", "3x3", "--workload"]
    out = [
        Case("issue 30", [*place, "alias.yaml"], expect="error", files=files),
        Case("issue 30", [*place, "pipe.yaml"], expect="error", files=files, setup=_fifo_setup),
        Case("issue 30", [*place, "w-inc.yaml"], expect="error", files=files, setup=_fifo_setup),
        Case("issue 30", [*place, "/dev/zero"], expect="error"),
        Case("issue 30", [*place, "chain.yaml"], expect="error", files=files),
        Case(
            "issue 30",
            ["place", "bound", "--cluster", "20000x1", "--workload", DEMO],
            expect="error",
        ),
        Case(
            "issue 30",
            ["simulate", "exit.py:X", "--servers", "10", "--load", "0.5"],
            expect="error",
            files=files,
        ),
        Case("issue 30", ["sweep", "svc.yaml", "--out", "o"], expect="error", files=files),
        Case(
            "issue 30",
            ["trace", "stats", "in.csv", "--trace-format", "csv", "--out", "in.csv"],
            expect="error",
            files=files,
        ),
        Case(
            "issue 30", ["tune", "--p99", "10", "--rate", "1.5", "--servers", "1:20"], expect="ok"
        ),
        Case("issue 30", ["tune", "--p99", "4", "--rate", "5"], expect="error"),
    ]
    for name, fmt in (
        ("deep.json", "envoy-json"),
        ("hap.log", "haproxy"),
        ("google.csv", "google2011"),
        ("long.log", "nginx"),
        ("dup.csv", "csv"),
        ("big.csv", "csv"),
    ):
        out.append(
            Case(
                "issue 30",
                ["trace", "stats", name, "--trace-format", fmt],
                expect="error",
                files=files,
            )
        )
    return out


def cases() -> list[Case]:
    return [
        *_yaml_cases(),
        *_simulate_cases(),
        *_law_cases(),
        *_output_cases(),
        *_sweep_cases(),
        *_place_cases(),
        *_trace_cases(),
        *_fluid_predict_cases(),
        *_reproduce_cases(),
        *_issue_30_cases(),
    ]


# --- running and judging -------------------------------------------------------------------


def _limit(cap: int) -> Callable[[], None]:
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        os.setsid()

    return apply


def judge(case: Case, timeout: float, cap: int) -> tuple[str, str]:
    """Run one case; return (outcome, detail)."""
    with tempfile.TemporaryDirectory(prefix="campaign-") as tmp:
        d = Path(tmp)
        for name, content in case.files.items():
            mode = "wb" if isinstance(content, bytes) else "w"
            with open(d / name, mode) as fh:
                fh.write(content)
        if case.setup:
            case.setup(d)
        env = dict(
            os.environ,
            CLOUDSCHED_MAX_MEMORY="4G",
            CLOUDSCHED_PROGRESS_SECONDS="5",
            PYTHONWARNINGS="ignore::DeprecationWarning",
        )
        cmd = [sys.executable, "-c", "from cloudsched.cli import main; main()", *case.argv]
        proc = subprocess.Popen(
            cmd,
            cwd=d,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            preexec_fn=_limit(cap),
        )
        try:
            out, err = proc.communicate(timeout=timeout)
            long_run = False
        except subprocess.TimeoutExpired:
            long_run = True
            proc.send_signal(signal.SIGINT)
            try:
                out, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
                return "hang", "no exit 60 s after Ctrl-C"
        rc = proc.returncode
        if os.path.isdir(d / "ro"):
            os.chmod(d / "ro", 0o700)
        lines = [
            x for x in err.splitlines() if x.strip() and not x.startswith(("warning:", "progress:"))
        ]
        if "Traceback" in err:
            kind = "memory traceback" if "MemoryError" in err else "traceback"
            return kind, err.strip().splitlines()[-1]
        if long_run:
            progress = "\nprogress: " in "\n" + err
            stopped = rc == 130 and lines and lines[-1].startswith("interrupted")
            if progress and stopped:
                return "long run, clean stop", lines[0]
            return "hang", f"exit {rc} after Ctrl-C; progress lines: {progress}"
        if rc < 0:
            return "crash", f"signal {-rc}"
        if rc == 2:
            if len(lines) == 1 and lines[0].startswith("error: "):
                return "clean error", lines[0]
            return "messy error", " | ".join(lines)[:300]
        if rc == 0:
            if case.expect == "error":
                return "wrong result", "exit 0 where an error is right"
            if "--format" in case.argv and case.argv[case.argv.index("--format") + 1] == "json":
                bad = _strict_json(d, out)
                if bad and "--out" not in case.argv:
                    return "wrong result", bad
            if case.check:
                bad = case.check(d, out)
                if bad:
                    return "wrong result", bad
            return "correct run", ""
        return "messy error", f"exit {rc}: " + " | ".join(lines)[:300]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--memory-cap", type=float, default=10.0, help="GiB of address space")
    parser.add_argument("--only", default=None, help="run one area only")
    parser.add_argument("--show", action="store_true", help="print every case's outcome")
    args = parser.parse_args()
    todo = [c for c in cases() if args.only is None or c.area == args.only]
    cap = int(args.memory_cap * 2**30)
    t0 = time.time()
    with ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda c: judge(c, args.timeout, cap), todo))
    table: dict[str, Counter[str]] = defaultdict(Counter)
    bad = []
    for case, (outcome, detail) in zip(todo, results, strict=True):
        table[case.area][outcome] += 1
        if args.show:
            print(f"{outcome:22s} {' '.join(case.argv)[:110]}  {detail[:120]}")
        if outcome not in GOOD["contract"]:
            bad.append((case, outcome, detail))
    total: Counter[str] = Counter()
    print(f"\n{len(todo)} cases in {time.time() - t0:.0f} s")
    for area, counts in sorted(table.items()):
        total.update(counts)
        print(f"{area:20s} " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    print(f"{'all':20s} " + ", ".join(f"{k}: {v}" for k, v in sorted(total.items())))
    for case, outcome, detail in bad:
        print(f"\n{outcome}: cloudsched {' '.join(case.argv)}\n    {detail}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
