import json
import shutil
import subprocess
import sys

import pandas as pd
import pytest


def test_demo_writes_report(tmp_path):
    """The README's first command, as a new user runs it: the installed console script
    (CI runs the demo only here)."""
    out = tmp_path / "report"
    exe = shutil.which("cloudsched")
    cmd = [exe] if exe else [sys.executable, "-m", "cloudsched"]
    proc = subprocess.run(
        [*cmd, "demo", "--out", str(out)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (out / "report.md").stat().st_size > 0
    report = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    for name in (
        "figure4.png",
        "figure5.png",
        "figure6.png",
        "figure7.png",
        "figure8.png",
        "error_vs_n.png",
        "placement_tradeoff.png",
        "maxweight_frames.png",
        "placement_snapshot.png",
    ):
        assert name in report  # report.md links the files; report.html embeds them
        assert (out / name).stat().st_size > 1000
    assert html.count('src="data:image/png;base64,') == report.count("![")
    data = pd.read_csv(out / "figure4.csv")
    assert set(data["policy"]) == {"Random", "Pod(2)", "JIQ", "JIQ-Pod(2)"}
    table = pd.read_csv(out / "figure4_table.csv")
    row = table[table["load"] == 0.98].iloc[0]
    assert row["JIQ-Pod(2) T"] == pytest.approx(2.540, abs=5e-4)
    fig5 = pd.read_csv(out / "figure5.csv")
    assert (fig5["relative_error"].abs() < 0.1).all()
    table2 = pd.read_csv(out / "table2.csv")
    assert set(table2["i"]) == set(range(6))
    # the Google trace part ships with the package: the trace figures are always there
    assert (out / "figure9.png").stat().st_size > 1000
    assert (out / "figure10.png").stat().st_size > 1000
    fig9 = pd.read_csv(out / "figure9.csv")
    assert set(fig9["policy"]) == {"Random", "Pod(2)", "JIQ", "JIQ-Pod(2)", "JSQ"}
    place = pd.read_csv(out / "placement_tradeoff.csv")
    assert set(place["policy"]) == {"dgp", "storm-default", "greedy"}
    dgp = place[place["policy"] == "dgp"].sort_values("beta")
    # the smallest beta is the cheapest DGP run, and Storm default is the most expensive
    assert dgp["cost_rate"].iloc[0] == dgp["cost_rate"].min()
    storm = place.loc[place["policy"] == "storm-default", "cost_rate"].iloc[0]
    assert place["cost_rate"].max() == storm
    every = pd.read_csv(out / "placement_policies.csv")
    assert list(every["policy"]) == [
        "storm-default",
        "greedy",
        "resource-aware",
        "maxweight",
        "dgp",
        "dgp:uniform",
    ]
    assert every.loc[every.policy == "storm-default", "gap"].iloc[0] > 1  # far above optimum
    assert not list(out.glob(".*.tmp"))
    # the report opens with the README's three questions, each answered with this run's
    # numbers and the command for one's own; the papers' figures follow; next steps end it
    heads = [line[3:] for line in report.splitlines() if line.startswith("## ")]
    assert heads[:3] == [
        "Which policy for my farm?",
        "Which choice count does my power-of-d balancer need?",
        "Where should my running Storm topologies go?",
    ]
    assert heads[-2:] == ["Next steps", "Reproducibility"]  # then what made it
    policy = pd.read_csv(out / "question-policy.csv")
    assert list(policy["policy"]) == ["jiq", "jiq-pod", "pod"]
    low, high = policy["simulated T_ci95_low"], policy["simulated T_ci95_high"]
    assert ((low <= policy["simulated T"]) & (policy["simulated T"] <= high)).all()
    assert "cloudsched compare jiq jiq-pod pod --servers N" in report
    choices = pd.read_csv(out / "question-choices.csv")
    assert "full scan" in set(choices["d"].astype(str))
    assert "cloudsched advise --servers N --load L" in report
    place_q = pd.read_csv(out / "question-placement.csv")
    assert place_q["scheduler"].iloc[0] == "optimised"
    assert (place_q["traffic cost"] >= place_q["lower bound"] - 1e-9).all()
    assert "cloudsched place static" in report
    assert "<ul><li>" in html  # next steps, a list in both files
    # a rerun into the folder reuses the report, says so, and leaves it as it was
    before = (out / "report.md").stat().st_mtime_ns
    again = subprocess.run(
        [*cmd, "demo", "--out", str(out)], cwd=tmp_path, capture_output=True, text=True
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert "reusing it" in again.stderr
    assert (out / "report.md").stat().st_mtime_ns == before


def test_a_report_is_reused_only_whole_and_of_the_same_code_and_seed(tmp_path):
    from cloudsched.experiments.demo import STAMP, code_stamp, reusable

    for name in ("report.md", "report.html"):
        (tmp_path / name).write_text("x")
    assert not reusable(tmp_path, 1)  # no stamp: an older demo's, or one cut short
    (tmp_path / STAMP).write_text(json.dumps(code_stamp(1)))
    assert reusable(tmp_path, 1)
    assert not reusable(tmp_path, 2)  # another seed
    (tmp_path / STAMP).write_text(json.dumps({**code_stamp(1), "code": "0" * 64}))
    assert not reusable(tmp_path, 1)  # other code
    (tmp_path / STAMP).write_text(json.dumps(code_stamp(1)))
    (tmp_path / "report.html").unlink()
    assert not reusable(tmp_path, 1)  # half a report
