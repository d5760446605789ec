import pandas as pd
import pytest

from cloudsched.cli import main


def test_demo_writes_report(tmp_path, capsys):
    out = tmp_path / "report"
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--out", str(out)])
    assert exc.value.code == 0
    report = (out / "report.md").read_text()
    assert "figure4.png" in report
    assert (out / "figure4.png").stat().st_size > 1000
    data = pd.read_csv(out / "figure4.csv")
    assert set(data["policy"]) == {"Random", "Pod(2)", "JIQ", "JIQ-Pod(2)"}
    table = pd.read_csv(out / "figure4_table.csv")
    row = table[table["load"] == 0.98].iloc[0]
    assert row["JIQ-Pod(2) T"] == pytest.approx(2.540, abs=5e-4)
    assert not list(out.glob(".*.tmp"))
