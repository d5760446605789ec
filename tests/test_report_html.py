"""report.html opens anywhere: figures embedded, tables as HTML; rendered in Chromium."""

import re
import shutil
import subprocess

import pandas as pd
import pytest

from cloudsched.experiments.report import Report
from cloudsched.plotting import plot_lines

#: real processes measured live: the slow tier runs these one at a time (.ci/run)
pytestmark = pytest.mark.live

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

#: Appended to a copy of the page: on load, the title reports what displayed.
PROBE = """<script>window.addEventListener('load', () => {
const imgs = [...document.images];
const bad = imgs.filter(i => !(i.complete && i.naturalWidth > 0 && i.offsetHeight > 0));
const tables = [...document.querySelectorAll('table')]
  .filter(t => t.rows.length > 1 && t.offsetHeight > 0);
const widest = Math.max(0, ...[...document.querySelectorAll('table,img,figure,p')]
  .map(e => Math.ceil(e.getBoundingClientRect().right)));
document.title = 'PROBE ' + imgs.length + ' ' + bad.length + ' ' + tables.length + ' '
  + document.documentElement.scrollWidth + ' ' + window.innerWidth + ' ' + widest;
});</script>"""


def small_report(out):
    report = Report("test report", out)
    report.heading("A section")
    plot_lines({"line": ([0, 1], [1, 2])}, out / "f.png", xlabel="x", ylabel="y")
    report.figure("f.png", "a figure")
    report.table(pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]}), "t.csv", "a table")
    report.write({"seed": 1})
    return out / "report.html"


def test_report_html_is_self_contained(tmp_path):
    page = small_report(tmp_path).read_text()
    sources = re.findall(r'src="([^"]*)"', page)
    assert sources and all(s.startswith("data:image/png;base64,") for s in sources)
    assert "<table>" in page and "<td>x</td>" in page
    # the page does not need the file next to it: it carries the file's very bytes
    import base64

    embedded = base64.b64decode(sources[0].removeprefix("data:image/png;base64,"))
    assert embedded == (tmp_path / "f.png").read_bytes()


def render(page_html, tmp_path):
    """Load a page in headless Chromium at 1280 x 900 pixels.

    Returns (images, broken images, shown tables, page width, window width, the right
    edge of the widest table, image, figure or paragraph).
    """
    probe = tmp_path / "probe.html"
    probe.write_text(page_html.replace("</body>", PROBE + "</body>"))
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1280,900",
        "--virtual-time-budget=10000",
        "--dump-dom",
        probe.as_uri(),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    found = re.search(r"<title>PROBE (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)</title>", done.stdout)
    assert found, done.stderr[-2000:]
    return tuple(int(g) for g in found.groups())


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (.ci/run installs it)")
def test_demo_report_displays_every_figure_and_table_in_chromium(tmp_path):
    from cloudsched.experiments.demo import run_demo

    path = run_demo(tmp_path / "report").with_suffix(".html")
    page = path.read_text()
    figures, tables = page.count("<img "), page.count("<table>")
    assert figures >= 10 and tables >= 8
    shown, bad, shown_tables, width, window, right = render(page, tmp_path)
    assert (shown, bad, shown_tables) == (figures, 0, tables)
    # no horizontal scrolling at 1280 pixels: the page and every table fit the window
    assert window == 1280 and width <= window and right <= window, (width, window, right)
    # the probe can fail: a figure whose data is gone shows as broken
    broken = re.sub(r'src="data:image/png;base64,[^"]*"', 'src="missing.png"', page, count=1)
    assert render(broken, tmp_path)[1] == 1
    # ... and a table too wide for the window shows as one
    wide = "<table><tr>" + "<td>wide_column_name_that_does_not_break</td>" * 40 + "</tr></table>"
    assert render(page.replace("</body>", wide + "</body>"), tmp_path)[3] > 1280


def test_missing_values_show_as_a_dash_in_both_tables():
    from cloudsched.experiments.report import html_table, markdown_table

    df = pd.DataFrame(
        {
            "cost": [21.7, 3.75],
            "ci": pd.Series([None, 0.5], dtype=object),
            "gap": [float("nan"), 0.25],
        }
    )
    md = markdown_table(df)
    assert md.splitlines()[2] == "| 21.7 | - | - |" and "nan" not in md and "None" not in md
    assert "<td>-</td>" in html_table(df) and "nan" not in html_table(df)
