"""Inputs that slipped past the checks: devices and pipes as logs, includes that are not Flux.

Format detection read the first line before the regular-file check ran, so ``/dev/zero``
was read without end (a MemoryError at 5.9 GB) and a FIFO blocked for ever; a Flux include
of a file that is not Flux (say ``/etc/shadow``) was merged silently as nothing.
"""

import os
import subprocess
import sys

import pytest

from cloudsched.data import flux_path
from cloudsched.errors import InputError
from cloudsched.placement.flux import load_flux

CLI = [sys.executable, "-c", "from cloudsched.cli import main; main()"]


def _run(args, cwd):
    # the timeout is a safety net only: a refused input ends at once
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize(
    "args",
    [
        ["trace", "stats", "{log}"],
        ["simulate", "jiq", "--servers", "10", "--load", "0.5", "--trace", "{log}"],
        ["compare", "random", "--servers", "10", "--trace", "{log}"],
    ],
)
@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_device_or_pipe_as_a_log_is_refused_before_it_is_read(tmp_path, args, kind):
    if kind == "device":
        log = "/dev/zero"
    else:
        log = str(tmp_path / "pipe")
        os.mkfifo(log)  # nobody writes to it: reading would block for ever
    proc = _run([a.format(log=log) for a in args], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "not a regular file" in proc.stderr, proc.stderr


def test_a_log_whose_first_line_never_ends_is_not_read_whole(tmp_path):
    from cloudsched.dispatch.workload.logs import DETECT_CHARS, detect_format

    log = tmp_path / "one-line.log"
    log.write_text("x" * (4 * DETECT_CHARS))
    with pytest.raises(InputError, match="cannot tell the log's format"):
        detect_format(log)


def _topology_including(tmp_path, text, override=False):
    (tmp_path / "extra.yaml").write_text(text)
    main = tmp_path / "topo.yaml"
    include = f'includes:\n  - file: "extra.yaml"\n    override: {str(override).lower()}\n'
    main.write_text(flux_path("exclamation").read_text() + include)
    return main


@pytest.mark.parametrize(
    "text", ["foo: 1\nbar: [1, 2]\n", "root:*:19000:0:99999:7:::\ndaemon:*:19000::::::\n"]
)
def test_an_include_that_is_not_flux_is_refused(tmp_path, text):
    with pytest.raises(InputError, match="is not a Flux file"):
        load_flux(_topology_including(tmp_path, text))


def test_what_an_include_brought_in_is_said(tmp_path):
    main = _topology_including(tmp_path, "config:\n  topology.workers: 2\n", override=True)
    top = load_flux(main)
    assert top.sources == (str(main), str(tmp_path / "extra.yaml"))
    proc = _run(["place", "static", "--topology", str(main), "--cluster", "4x8"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"note: {main} includes {tmp_path / 'extra.yaml'}" in proc.stderr, proc.stderr
