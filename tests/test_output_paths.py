"""--out and --plot never damage what exists, and a bad path fails before any work."""

import os
import stat
from pathlib import Path

import pytest

from cloudsched.cli import main
from cloudsched.io import atomic_write_text

PREDICT = ["predict", "jiq", "--load", "0.5", "--r", "10"]


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def one_line_error(code, err, fragment):
    assert code == 2, err
    assert err.count("\n") == 1 and fragment in err, err
    assert "Traceback" not in err


def test_empty_out_is_refused(capsys):
    one_line_error(*run(capsys, *PREDICT, "--out", "")[::2], "--out must be a file path")


def test_out_onto_a_directory_is_refused(capsys, tmp_path):
    code, _, err = run(capsys, *PREDICT, "--out", str(tmp_path))
    one_line_error(code, err, "this is a directory")


def test_out_onto_a_pipe_is_refused_and_left_alone(capsys, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, _, err = run(capsys, *PREDICT, "--out", str(fifo))
    one_line_error(code, err, "a regular file (this is a device, pipe or socket)")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_out_in_an_unwritable_place_fails_before_the_work(capsys, tmp_path, monkeypatch):
    import cloudsched.dispatch.simulation as sim

    def never(*args, **kw):
        raise AssertionError("the simulation ran before --out was checked")

    monkeypatch.setattr(sim, "simulate", never)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run(
        capsys,
        "simulate",
        "random",
        "--servers",
        "10",
        "--load",
        "0.5",
        "--out",
        str(blocker / "sub" / "r.json"),
    )
    one_line_error(code, err, "--out must be a path in a writable folder")
    assert blocker.read_text() == "x"


def test_out_through_a_symlink_writes_the_target_and_keeps_the_link(capsys, tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, _, err = run(capsys, *PREDICT, "--format", "json", "--out", str(link))
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().lstrip().startswith("{")


def test_an_overwritten_file_keeps_its_permissions(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text("old")
    path.chmod(0o600)
    atomic_write_text(path, "new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_atomic_write_never_replaces_a_directory(tmp_path):
    from cloudsched.errors import InputError

    with pytest.raises(InputError, match="will not replace it"):
        atomic_write_text(tmp_path, "x")


@pytest.mark.parametrize(
    ("ext", "magic"), [("png", b"\x89PNG"), ("pdf", b"%PDF"), ("svg", b"<?xml")]
)
def test_plot_format_follows_the_extension(capsys, tmp_path, ext, magic):
    path = tmp_path / f"t.{ext}"
    code, _, err = run(
        capsys, "predict", "jiq", "--r", "10", "--loads", "0.3:0.6:4", "--plot", str(path)
    )
    assert code == 0, err
    assert path.read_bytes().startswith(magic)


def test_plot_with_an_unknown_extension_is_refused(capsys, tmp_path):
    code, _, err = run(capsys, *PREDICT, "--plot", str(tmp_path / "t.jpeg"))
    one_line_error(code, err, "a file ending in .png, .pdf, .svg")


def test_report_out_onto_a_file_is_refused(capsys, tmp_path):
    path = tmp_path / "existing"
    path.write_text("keep me")
    code, _, err = run(capsys, "demo", "--out", str(path))
    one_line_error(code, err, "--out must be a directory")
    assert Path(path).read_text() == "keep me"


def test_json_is_strict_even_with_undefined_values(capsys):
    import json

    code, out, err = run(
        capsys,
        "place",
        "simulate",
        "--cluster",
        "2x2",
        "--workload",
        str(Path(__file__).parent.parent / "examples" / "demo-placement.yaml"),
        "--policy",
        "greedy",
        "--horizon",
        "5",
        "--seed",
        "1",
        "--format",
        "json",
    )
    assert code in (0, 2), err
    if code == 0:
        json.loads(out, parse_constant=lambda c: pytest.fail(f"non-standard constant {c}"))


# Outputs that are inputs by inclusion, and two outputs of one command that are one file.


def _flux_with_include(tmp_path):
    """A copy of the shipped exclamation topology that includes ``base.yaml``."""
    from cloudsched.data import flux_path

    base = tmp_path / "base.yaml"
    base.write_text("config:\n  topology.workers: 2\n")
    top = tmp_path / "topo.yaml"
    top.write_text(flux_path("exclamation").read_text() + 'includes:\n  - file: "base.yaml"\n')
    return top, base


def test_place_static_refuses_to_overwrite_a_file_its_topology_includes(capsys, tmp_path):
    top, base = _flux_with_include(tmp_path)
    before = base.read_bytes()
    args = ["place", "static", "--topology", str(top), "--cluster", "4x4", "--out", str(base)]
    one_line_error(*run(capsys, *args)[::2], "the files they include")
    assert base.read_bytes() == before


def test_place_simulate_refuses_to_overwrite_its_workloads_flux_file(capsys, tmp_path):
    top, base = _flux_with_include(tmp_path)
    workload = tmp_path / "workload.yaml"
    workload.write_text(
        "job_types:\n  - name: ex\n    arrival_rate: 0.1\n    mean_duration: 1.0\n"
        "    topology: {flux: topo.yaml}\n"
    )
    for target in (top, base):
        before = target.read_bytes()
        args = ["place", "simulate", "storm-default", "--cluster", "4x4", "--workload"]
        args += [str(workload), "--horizon", "5", "--seed", "1", "--out", str(target)]
        one_line_error(*run(capsys, *args)[::2], "the files they include")
        assert target.read_bytes() == before


@pytest.mark.parametrize(
    "args",
    [
        ["place", "static", "--topology", "exclamation", "--cluster", "4x4",
         "--assignment", "{same}.json", "--out", "{same}.json"],
        ["trace", "stats", "nginx-sample", "--plot", "{same}.png", "--out", "{alias}.png"],
    ],
)  # fmt: skip
def test_two_outputs_of_one_command_are_not_one_file(capsys, tmp_path, args):
    same = tmp_path / "result"
    alias = tmp_path / "elsewhere" / ".." / "result"  # the same file by another name
    code, _, err = run(capsys, *[a.format(same=same, alias=alias) for a in args])
    one_line_error(code, err, "one output would be lost")
    assert not list(tmp_path.iterdir())
