"""The report's tables and captions: intervals beside their values, a readable subset of
columns (the CSV keeps them all), and Table II's note on where its errors are large."""

from __future__ import annotations

import math

import pandas as pd

from cloudsched.experiments.jiq_captions import table2_note
from cloudsched.experiments.report import Report, with_intervals


def test_an_interval_sits_beside_its_value_in_one_column():
    df = pd.DataFrame(
        {
            "policy": ["dgp", "greedy"],
            "cost_rate": [0.531, 0.6],
            "cost_rate_ci95_low": [0.5171, math.nan],
            "cost_rate_ci95_high": [0.5458, math.nan],
            "gap": [0.06, 0.2],
        }
    )
    out = with_intervals(df)
    assert list(out.columns) == ["policy", "cost_rate [95% CI]", "gap"]
    assert list(out["cost_rate [95% CI]"]) == ["0.531 [0.5171, 0.5458]", "0.6"]


def test_a_report_shows_the_columns_asked_for_and_saves_all(tmp_path):
    cols = {f"c{k}": [float(k)] for k in range(14)}
    df = pd.DataFrame(
        {"policy": ["dgp"], "cost_rate": [1.0], "cost_rate_ci95_low": [0.9],
         "cost_rate_ci95_high": [1.1], **cols}
    )  # fmt: skip
    report = Report("t", tmp_path)
    report.table(df, "t.csv", "A wide table", shown=["policy", "cost_rate", "c3"])
    md, page = report.parts[-1]
    header = md.splitlines()[2]
    assert header == "| policy | cost_rate [95% CI] | c3 |"
    assert "all 18 columns" in md and "<th>c13</th>" not in page
    assert pd.read_csv(tmp_path / "t.csv").shape == (1, 18)


def test_table_two_says_where_its_errors_are_large_and_how_large_they_are():
    rows = [("JIQ", i, p, p * (1 + e)) for i, (p, e) in enumerate([(0.1, -0.01), (0.5, 0.02)])]
    rows += [("JIQ-Pod(2)", 4, 0.001, 0.0017), ("JIQ-Pod(2)", 5, 4.8e-7, 2.8e-6)]
    table = pd.DataFrame(rows, columns=["policy", "i", "q_i predicted", "q_i simulated"])
    table["relative_error"] = table["q_i simulated"] / table["q_i predicted"] - 1
    note = table2_note(table, 500)
    assert "within 2.0% of the prediction" in note
    assert "JIQ-Pod(2) i = 4: +70% (0.0017 simulated against 0.001)" in note
    assert "i = 5: +483%" in note and "at most 0.0007 of the servers" in note
    assert "falls off faster than that of a farm of 500 servers" in note
    table.loc[table["i"] == 5, "q_i simulated"] = 1e-7  # a tail below the limit's
    table["relative_error"] = table["q_i simulated"] / table["q_i predicted"] - 1
    assert "falls off faster" not in table2_note(table, 500)
    calm = table[table["q_i predicted"] >= 0.01]
    assert (
        table2_note(calm, 500)
        == "Where q_i is at least 0.01 the simulation is within 2.0% of the prediction."
    )
