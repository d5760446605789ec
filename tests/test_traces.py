import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cloudsched.data import dataset_path
from cloudsched.dispatch.workload.traces import TraceError, read_trace
from cloudsched.errors import ParameterError

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"
GOOGLE = [TRACES / "google2011" / f"part-0000{i}-of-00500.csv.gz" for i in (0, 1)]
KTH = dataset_path("kth-sp2")  # ships with the package
LANL = TRACES / "swf" / "LANL-CM5-1994-4.1-cln.swf.gz"
# part 1 of the Google trace and the LANL log do not ship with the package
needs_traces = pytest.mark.skipif(not GOOGLE[1].exists(), reason="shared/traces not present")


def test_shipped_google_part_reads_as_the_shared_copy():
    log = read_trace(dataset_path("google2011-sample"), "google2011")
    assert log.records == 450_146  # the events of part 0 (shared/traces/README.md)
    assert log.first_submit == pytest.approx(604, abs=1)
    assert 30_000 < log.trace.arrivals.size < log.submitted


def test_shipped_kth_job_count():
    log = read_trace(KTH, "swf")
    assert log.records == 28_476 and log.header["MaxNodes"] == "100"


@needs_traces
def test_google_parts_in_sequence_match_the_readme():
    log = read_trace(GOOGLE, "google2011")
    assert 63_000 <= log.submitted <= 65_000  # "about 64,000 tasks first submitted in the window"
    assert log.first_submit == pytest.approx(604, abs=1)
    assert log.last_submit == pytest.approx(10_621, abs=1)
    t = log.trace
    assert t.services.mean() == pytest.approx(630, rel=0.02)  # finished tasks run ~630 s
    assert np.median(t.services) == pytest.approx(363, rel=0.02)
    assert log.dropped == log.submitted - t.arrivals.size > 0
    censored = read_trace(GOOGLE, "google2011", unfinished="censor")
    assert censored.submitted == log.submitted
    assert censored.trace.arrivals.size == t.arrivals.size + censored.censored
    assert np.all(np.diff(censored.trace.arrivals) >= 0)


@needs_traces
@pytest.mark.parametrize(("path", "jobs"), [(LANL, 122_060)])
def test_swf_job_counts(path, jobs):
    log = read_trace(path, "swf")
    assert log.records == jobs
    assert log.trace.arrivals.size == jobs - log.dropped
    assert log.header["MaxNodes"] in ("100", "1024")


def test_csv(tmp_path):
    f = tmp_path / "log.csv"
    f.write_text("arrival,service,user\n0,2.5,a\n1.5,1,b\n1.5,3,c\n")
    log = read_trace(f, "csv")
    assert log.trace.arrivals.tolist() == [0, 1.5, 1.5]
    assert log.trace.services.tolist() == [2.5, 1, 3]


GOOD_GOOGLE = [
    "0,,1,0,,0,u,0,0,,,,",
    "700000000,,2,0,,0,u,0,0,,,,",
    "700000100,,2,0,5,1,u,0,0,,,,",
    "705000100,,2,0,5,4,u,0,0,,,,",
    "800000000,,3,7,,0,u,0,0,,,,",
    "800000500,,3,7,6,1,u,0,0,,,,",
    "900000500,,3,7,6,4,u,0,0,,,,",
]


def write_gz(path, lines):
    with gzip.open(path, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def test_google_small_log_rules(tmp_path):
    log = read_trace(write_gz(tmp_path / "g.csv.gz", GOOD_GOOGLE), "google2011")
    assert log.trace.arrivals.tolist() == [700.0, 800.0]
    assert log.trace.services.tolist() == pytest.approx([5.0, 100.0])
    assert log.submitted == 2  # the task at time 0 was present before the window


MALFORMED = {
    "wrong column count": (
        [*GOOD_GOOGLE[:3], "700000200,,2,0,5,1,u,0,0,,,"],
        "google2011",
        ":4: expected 13",
    ),
    "non-numeric": (
        [*GOOD_GOOGLE[:2], "soon,,2,0,5,1,u,0,0,,,,"],
        "google2011",
        ":3: time must be a number",
    ),
    "negative time": (
        [*GOOD_GOOGLE[:2], "-5,,2,0,5,1,u,0,0,,,,"],
        "google2011",
        ":3: time must be >= 0",
    ),
    "unsorted": (
        [*GOOD_GOOGLE[:3], "600000000,,2,0,5,4,u,0,0,,,,"],
        "google2011",
        ":4: events out of time order",
    ),
    "bad event": ([*GOOD_GOOGLE[:2], "700000200,,2,0,5,12,u,0,0,,,,"], "google2011", "event_type"),
    "swf fields": (
        ["; MaxJobs: 2", "1 0 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1"],
        "swf",
        ":2: expected 18",
    ),
    "swf number": (
        ["1 0 0 ten 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1"],
        "swf",
        "run time must be a number",
    ),
    "swf negative": (
        ["1 -4 0 10 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1"],
        "swf",
        "submit time must be >= 0",
    ),
    "csv header": (["time,size", "0,1"], "csv", ":1: the header must name"),
    "csv unsorted": (["arrival,service", "5,1", "4,1"], "csv", ":3: arrivals out of order"),
    "csv service": (["arrival,service", "5,0"], "csv", ":2: arrival must be >= 0 and service > 0"),
    "csv columns": (["arrival,service", "5,1,7"], "csv", ":2: expected 2 fields"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_files_name_file_and_line(tmp_path, case):
    lines, fmt, fragment = MALFORMED[case]
    path = write_gz(tmp_path / "bad.gz", lines)
    with pytest.raises(TraceError) as exc:
        read_trace(path, fmt)
    message = str(exc.value)
    assert str(path) in message and fragment in message
    assert "\n" not in message


def test_truncated_gzip(tmp_path):
    lines = [f"{700_000_000 + k},,{k},0,,0,u,0,0,,,," for k in range(20_000)]
    good = write_gz(tmp_path / "g.gz", lines)
    data = good.read_bytes()
    cut = tmp_path / "cut.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match="truncated or corrupt"):
        read_trace(cut, "google2011")


def test_missing_file_and_binary(tmp_path):
    with pytest.raises(TraceError, match="cannot open"):
        read_trace(tmp_path / "nope.csv", "csv")
    junk = tmp_path / "junk.csv"
    junk.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(TraceError):
        read_trace(junk, "csv")


VALID_CSV = "arrival,service\n" + "".join(f"{k * 0.5},{1 + k % 3}\n" for k in range(40))
VALID_SWF = "; MaxJobs: 40\n" + "".join(
    f"{k} {k * 10} 0 {5 + k % 4} 1 -1 -1 1 60 -1 1 1 1 -1 -1 -1 -1 -1\n" for k in range(1, 41)
)
VALID_GOOGLE = "\n".join(GOOD_GOOGLE) + "\n"


@settings(max_examples=150)
@given(
    fmt=st.sampled_from(["csv", "swf", "google2011"]),
    cut=st.integers(0, 10_000),
    junk=st.text(alphabet=",;-. 0123456789xe\n\t", max_size=12),
    at=st.integers(0, 10_000),
    gz=st.booleans(),
    truncate_gz=st.booleans(),
)
def test_fuzzed_files_fail_cleanly_or_parse(tmp_path_factory, fmt, cut, junk, at, gz, truncate_gz):
    text = {"csv": VALID_CSV, "swf": VALID_SWF, "google2011": VALID_GOOGLE}[fmt]
    at = at % (len(text) + 1)
    mutated = (text[:at] + junk + text[at:])[: max(1, cut % (len(text) + 20))]
    path = tmp_path_factory.mktemp("fuzz") / "log"
    data = mutated.encode()
    if gz:
        data = gzip.compress(data)
        if truncate_gz:
            data = data[: max(2, len(data) * cut // 10_001)]
    path.write_bytes(data)
    try:
        log = read_trace(path, fmt)
    except ParameterError as exc:  # TraceError or a too-short trace: one line, names the file
        assert "\n" not in str(exc) and str(path) in str(exc)
        return
    t = log.trace
    assert t.arrivals.size >= 2 and np.all(np.diff(t.arrivals) >= 0) and np.all(t.services > 0)


@st.composite
def google_logs(draw):
    """Small task_events logs: a few tasks, every event type, times from 0 upwards."""
    n = draw(st.integers(1, 60))
    times = sorted(draw(st.lists(st.integers(0, 50), min_size=n, max_size=n)))
    rows = []
    for t in times:
        job, idx = draw(st.integers(1, 3)), draw(st.integers(0, 2))
        kind = draw(st.sampled_from([0, 0, 1, 1, 4, 4, 2, 3, 5, 6, 7, 8]))
        rows.append(f"{t * 1_000_000},,{job},{idx},,{kind},u,0,0,,,,")
    return rows


@settings(max_examples=300, deadline=None)
@given(rows=google_logs(), unfinished=st.sampled_from(["drop", "censor"]))
def test_column_reader_equals_the_line_reader(tmp_path_factory, rows, unfinished):
    """Oracle: the line-by-line reader; the column reader must give the same log exactly."""
    from cloudsched.dispatch.workload.fastlogs import read_google_fast
    from cloudsched.dispatch.workload.traces import _read_google

    path = tmp_path_factory.mktemp("g") / "g.csv"
    path.write_text("\n".join(rows) + "\n")
    try:
        slow = _read_google([path], unfinished)
    except TraceError:  # fewer than two usable tasks: the column reader says the same
        with pytest.raises(TraceError):
            read_trace(path, "google2011", unfinished=unfinished)
        return
    assert read_google_fast([path], unfinished) is not None  # the column path was taken
    fast = read_trace(path, "google2011", unfinished=unfinished)
    np.testing.assert_array_equal(fast.trace.arrivals, slow.trace.arrivals)
    np.testing.assert_array_equal(fast.trace.services, slow.trace.services)
    for field in ("records", "submitted", "dropped", "censored", "first_submit", "last_submit"):
        assert getattr(fast, field) == getattr(slow, field), field


def test_column_reader_matches_on_the_shipped_part():
    from cloudsched.dispatch.workload.fastlogs import read_google_fast
    from cloudsched.dispatch.workload.traces import _read_google

    path = dataset_path("google2011-sample")
    assert read_google_fast([path], "drop") is not None
    for unfinished in ("drop", "censor"):
        fast = read_trace(path, "google2011", unfinished=unfinished)
        slow = _read_google([path], unfinished)
        np.testing.assert_array_equal(fast.trace.arrivals, slow.trace.arrivals)
        np.testing.assert_array_equal(fast.trace.services, slow.trace.services)
        assert (fast.dropped, fast.censored) == (slow.dropped, slow.censored)
