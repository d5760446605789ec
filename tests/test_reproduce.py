import re

import pytest

from cloudsched.cli import main

JIQ_FIGURES = {
    "figure4.png",
    "figure5.png",
    "figure6.png",
    "figure7.png",
    "figure8.png",
    "error_vs_n.png",
}
DGP_FIGURES = {"placement_tradeoff.png", "maxweight_frames.png", "placement_snapshot.png"}


def _promised(report: str) -> set[str]:
    return set(re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", report))


@pytest.mark.slow
@pytest.mark.parametrize(("which", "expected"), [("jiq", JIQ_FIGURES), ("dgp", DGP_FIGURES)])
def test_reproduce_quick_writes_every_promised_file(tmp_path, which, expected):
    out = tmp_path / which
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", which, "--quick", "--out", str(out)])
    assert exc.value.code == 0
    report = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    promised = _promised(report)
    assert expected <= promised
    for name in promised:
        assert (out / name).stat().st_size > 1000, name
    # report.md links the figure files; report.html embeds each of them
    assert html.count('src="data:image/png;base64,') == report.count("![")
    for csv in re.findall(r"\(data: \[([^\]]+\.csv)\]", report):
        assert (out / csv).stat().st_size > 0, csv
    assert "Reproducibility" in report and "seed" in report


def test_reproduce_names_the_paper(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "storm", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "PAPER must be one of jiq, dgp" in capsys.readouterr().err


def test_captions_follow_the_numbers():
    import pandas as pd

    from cloudsched.experiments.dgp_figures import maxweight_caption, tradeoff_caption

    dgp = pd.DataFrame(
        {
            "alpha": [0.002] * 3,
            "beta": [0.8, 0.2, 0.05],
            "cost_rate": [1.8, 0.7, 0.5],
            "mean_queue_length": [4000, 1500, 800],
        }
    )
    text = tradeoff_caption(dgp, {"greedy": (0.9, 0.501)}, 0.5)
    assert "the cost falls from 1.8 to 0.5 and the queue falls from 4e+03 to 800 (together)" in text
    assert "greedy: cost 0.501, queue 0.9" in text
    dgp["mean_queue_length"] = [800, 1500, 4000]
    text = tradeoff_caption(dgp, {}, 0.5)
    assert "queue rises from 800 to 4e+03 (in opposite directions)" in text
    mw = pd.DataFrame(
        {
            "frame": [0.2, 5.0],
            "migrations_per_unit_time": [0.84, 0.02],
            "preemptions_per_unit_time": [0.7, 0.116],
            "cost_rate": [0.53, 0.57],
            "mean_queue_length": [2.5, 4.8],
        }
    )
    text = maxweight_caption(mw, 0.5)
    assert "preemptions from 0.7 to 0.116" in text
    from types import SimpleNamespace

    from cloudsched.experiments.dgp_figures import snapshot_caption

    runs = pd.DataFrame(
        {
            "policy": ["greedy", "dgp", "maxweight", "dgp:local"],
            "cost_rate": [30.0, 9.0, 21.7, 23.0],
            "cost_ci95": [None, None, None, 1.5],  # 23 +- 1.5 holds 24: no flag
            "mean_queue_length": [0.1, 180.0, 0.4, 30.0],
            "served_fraction": [1.0, 0.9, 1.0, 1.0],
            "steady_state": [True, False, True, True],
        }
    )
    snap = snapshot_caption(runs, SimpleNamespace(value=24.0, proven=True, lower_bound=24.0), 400.0)
    assert "Static optimum 24 (proven)" in snap
    assert "dgp 9 (not steady), maxweight 21.7, dgp:local 23, greedy 30" in snap
    assert "Jobs wait under dgp (mean queue 180)" in snap
    assert "Served fewer jobs than arrived: dgp (90%)" in snap
    assert "Below the optimum while serving every job: maxweight (21.7); no policy" in snap
    assert "migrations per unit time go from 0.84" in text


def test_error_vs_n_caption_names_intervals_that_miss_the_refined_line():
    import numpy as np
    import pandas as pd

    from cloudsched.experiments.jiq_captions import error_vs_n_caption

    grid = np.array([100.0, 1000.0, 10000.0])
    refined = {"refined jiq": (grid, np.array([3.3, 0.33, 0.03]))}
    err = pd.DataFrame(
        {
            "policy": ["jiq"] * 3,
            "servers": [100, 1000, 10000],
            "relative_error": [0.0364, -0.0148, 0.0002],
            "ci_half_relative": [0.0228, 0.0120, float("nan")],
        }
    )
    text = error_vs_n_caption(err, refined)
    assert "1 of 2 intervals hold the refined line" in text
    assert "missed: jiq at N = 1,000 (-1.48% ± 1.20 against +0.33%)" in text
    err.loc[1, "relative_error"] = 0.0030
    assert "2 of 2 intervals hold the refined line; the exact" in error_vs_n_caption(err, refined)
