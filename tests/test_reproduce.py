import re

import pytest

from cloudsched.cli import main

JIQ_FIGURES = {"figure4.png", "figure5.png", "figure6.png", "figure7.png", "figure8.png",
               "error_vs_n.png"}  # fmt: skip
DGP_FIGURES = {"placement_tradeoff.png", "maxweight_frames.png"}


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
        assert name in html
    for csv in re.findall(r"\(data: \[([^\]]+\.csv)\]", report):
        assert (out / csv).stat().st_size > 0, csv
    assert "Reproducibility" in report and "seed" in report


def test_reproduce_names_the_paper(capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "storm", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "SEED_PAPER must be one of jiq, dgp" in capsys.readouterr().err
