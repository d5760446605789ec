"""Data that ship with the package: workload logs by name, and the example files.

Sources and licences: ``README.md`` in this folder.  :data:`DATASETS` maps a log's name
(``--trace NAME``) to its file and format; :func:`dataset_path` gives the installed file.
``examples/`` holds the files the documentation's commands use (placement workloads and
clusters, storm-starter Flux topologies, plug-in policies); ``cloudsched examples`` writes
them to a folder (:func:`example_files`), and the checkout's ``examples/`` links to them.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["DATASETS", "dataset_path", "example_files", "flink_path", "flux_path"]

#: name -> (file in this package, format, sha256 of the file, what it is)
DATASETS: dict[str, tuple[str, str, str, str]] = {
    "google2011-sample": (
        "google2011-part-00000-of-00500.csv.gz",
        "google2011",
        "eae977d521bc6ed5d8deef56f1e06009d41844d4eb9a7e308e610d68e1b10f18",
        "Google cluster trace 2011, task_events part 0 of 500 (CC BY 4.0)",
    ),
    "kth-sp2": (
        "KTH-SP2-1996-2.1-cln.swf.gz",
        "swf",
        "3e152f201fd2e96808a735bced6ea6eb0bb07fdc447689cafb0750d87b264c0b",
        "Parallel Workloads Archive, KTH IBM SP2 1996-97 (SWF)",
    ),
    "nginx-sample": (
        "nginx-sample.log.gz",
        "nginx",
        "aaaa81c45db8726e4a2aad7a87a8c83a3a32f7b63e11baba4ab6ed94ede9f6d9",
        "synthetic NGINX access log, combined + $request_time $upstream_response_time",
    ),
    "nginx-upstream-sample": (
        "nginx-upstream-sample.log.gz",
        "nginx",
        "1d1f8a938c67a34a7509348fb1eb2a8bbb1bdb9098b85cc633e98e7227c42114",
        "synthetic NGINX access log with upstreams (least_conn over four),"
        " $msec $request_time $upstream_addr $status $upstream_response_time",
    ),
    "envoy-sample": (
        "envoy-sample.log.gz",
        "envoy",
        "1b102bffa0245c462f54d978c3e05ad5292ed81ab9fae00ccec889884663ed96",
        "synthetic Envoy access log, default format",
    ),
    "envoy-json-sample": (
        "envoy-json-sample.log.gz",
        "envoy-json",
        "5fe356e5fd302e4b281fa83df49a17faeaf25fb1673d3c284d6f60bffd1ea697",
        "synthetic Envoy access log, JSON",
    ),
    "haproxy-sample": (
        "haproxy-sample.log.gz",
        "haproxy",
        "d1eb6627305702186597d56539ca3149b00ef8a35afd09b22528995e1268bd68",
        "synthetic HAProxy HTTP log (option httplog)",
    ),
}


def dataset_path(name: str) -> Path:
    """Return the installed file of the shipped log ``name`` (a key of :data:`DATASETS`)."""
    return Path(str(files(__name__).joinpath(DATASETS[name][0])))


def flux_path(name: str) -> Path:
    """Return the installed copy of a storm-starter Flux file.

    ``name`` is ``wordcount``, ``exclamation`` or ``rolling-top-words``.
    """
    return Path(str(files("cloudsched.data").joinpath("examples", f"{name}.yaml")))


def flink_path() -> Path:
    """Return the installed run of the Flink test job (``place flink example``)."""
    return Path(str(files("cloudsched.data").joinpath("flink", "placement-job.json")))


def example_files() -> dict[str, bytes]:
    """Return the example files (path under ``examples/`` -> content), in name order."""
    root = files("cloudsched.data").joinpath("examples")
    out: dict[str, bytes] = {}
    stack = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        for item in folder.iterdir():
            name = f"{prefix}{item.name}"
            if item.is_dir():
                if item.name != "__pycache__":
                    stack.append((name + "/", item))
            elif item.name.endswith((".yaml", ".py")):
                out[name] = item.read_bytes()
    return dict(sorted(out.items()))
