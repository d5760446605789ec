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
