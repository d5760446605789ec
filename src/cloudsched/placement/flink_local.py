"""A Flink session cluster on loopback, from the jars a Python package ships.

``pip install "cloudsched[flink]"`` installs ``apache-flink-libraries``, whose
``pyflink/lib`` holds Flink's runtime jars (``flink-dist`` and the rest) but no
start scripts and no ``conf/``.  :class:`LocalFlinkCluster` does what Flink's
``jobmanager.sh`` and ``taskmanager.sh`` do with them: it writes a
``config.yaml`` (every port 0, every address 127.0.0.1) into a private folder,
starts ``StandaloneSessionClusterEntrypoint`` with the JVM options of Flink's
own ``config.yaml`` (the ``--add-opens`` list Java 17 needs), reads the ports
the JobManager bound from its log, asks ``BashJavaUtils`` for each
TaskManager's memory options (as ``taskmanager.sh`` does) and starts the
TaskManagers.  Everything it starts is stopped when the ``with`` block ends.

Every listener binds 127.0.0.1 on a port the kernel chooses, and every connection is
TLS with both ends authenticated: a key and self-signed certificate made for this
cluster alone (``cryptography``, part of the ``flink`` extra) sit in the private folder
as Flink's key store and trust store, for its RPC, data and blob traffic
(``security.ssl.internal.*``) and its REST endpoint (``security.ssl.rest.*`` with
``authentication-enabled``): a client without the certificate, another local user's
say, can neither submit a job nor read one.  :attr:`LocalFlinkCluster.ssl_context` is
the client side, for this module's requests; ``place flink --rest-cert/--rest-key
--rest-ca`` take the same files (:attr:`LocalFlinkCluster.cert`, ``.key``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import shutil
import ssl
import subprocess
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cloudsched.placement.flink_tls import make_keys, tls_config

__all__ = ["FlinkNotFound", "LocalFlinkCluster", "flink_lib_dir"]

_ENTRY = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint"
_TM = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
_BASH_UTILS = "org.apache.flink.runtime.util.bash.BashJavaUtils"
_RESULT = "BASH_JAVA_UTILS_EXEC_RESULT:"

_LOG4J = """rootLogger.level = INFO
rootLogger.appenderRef.file.ref = MainAppender
appender.main.name = MainAppender
appender.main.type = File
appender.main.fileName = ${sys:log.file}
appender.main.layout.type = PatternLayout
appender.main.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n
"""


class FlinkNotFound(RuntimeError):
    """Flink's jars or a Java runtime are not on this machine."""


def flink_lib_dir() -> Path:
    """Return the folder of Flink's jars: ``$FLINK_HOME/lib`` or pyflink's ``lib``."""
    home = os.environ.get("FLINK_HOME")
    if home:
        lib = Path(home) / "lib"
    else:
        spec = importlib.util.find_spec("pyflink")
        locations = list(spec.submodule_search_locations or []) if spec else []
        if not locations:
            raise FlinkNotFound(
                'Flink\'s jars are not installed: pip install "cloudsched[flink]" '
                "(or set FLINK_HOME to a Flink distribution)"
            )
        lib = Path(locations[0]) / "lib"
    if not any(lib.glob("flink-dist*.jar")):
        raise FlinkNotFound(f"no flink-dist jar in {lib}")
    return lib


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise FlinkNotFound("no java on PATH (Flink needs a Java 11 or 17 runtime)")
    return java


def _java_opts(lib: Path) -> list[str]:
    """``env.java.opts.all`` of the ``config.yaml`` inside flink-dist."""
    dist = next(lib.glob("flink-dist*.jar"))
    with zipfile.ZipFile(dist) as jar:
        text = jar.read("config.yaml").decode()
    match = re.search(r"^\s+all:\s*(--add-.*)$", text, re.MULTILINE)
    return match.group(1).split() if match else []


def _get(url: str, context: ssl.SSLContext | None, timeout: float = 10.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout, context=context) as response:
        return json.loads(response.read())


class LocalFlinkCluster:
    """A JobManager and ``taskmanagers`` TaskManagers of ``slots`` slots each.

    ``config`` adds entries to the cluster's ``config.yaml`` (flat keys, as
    Flink accepts them), for example
    ``{"taskmanager.load-balance.mode": "SLOTS"}``.
    """

    def __init__(
        self,
        taskmanagers: int = 3,
        slots: int = 2,
        config: dict[str, str] | None = None,
        startup_timeout: float = 180.0,
    ) -> None:
        if not 1 <= taskmanagers <= 16:
            raise ValueError("taskmanagers must be in 1..16")
        if not 1 <= slots <= 64:
            raise ValueError("slots must be in 1..64")
        self.taskmanagers = taskmanagers
        self.slots = slots
        self.config = dict(config or {})
        self.startup_timeout = startup_timeout
        self.url = ""
        self.folder: Path | None = None
        #: the client side of the cluster's TLS (its certificate, as key and as trust)
        self.ssl_context: ssl.SSLContext | None = None
        self.cert: Path | None = None
        self.key: Path | None = None
        self._tls: dict[str, str] = {}
        self._procs: list[subprocess.Popen[bytes]] = []
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    # -- configuration -------------------------------------------------------
    def _config_text(self, extra: dict[str, str]) -> str:
        base = {
            "jobmanager.rpc.address": "127.0.0.1",
            "jobmanager.bind-host": "127.0.0.1",
            "jobmanager.rpc.port": "0",
            "jobmanager.memory.process.size": "768m",
            "rest.address": "127.0.0.1",
            "rest.bind-address": "127.0.0.1",
            "rest.port": "0",
            "blob.server.port": "0",
            "taskmanager.host": "127.0.0.1",
            "taskmanager.bind-host": "127.0.0.1",
            "taskmanager.rpc.port": "0",
            "taskmanager.data.port": "0",
            "taskmanager.numberOfTaskSlots": str(self.slots),
            "taskmanager.memory.process.size": "1024m",
            "metrics.internal.query-service.port": "0",
            "parallelism.default": "1",
        }
        base.update(self.config)
        base.update(self._tls)
        base.update(extra)
        return "".join(f"{key}: {json.dumps(value)}\n" for key, value in base.items())

    def _conf_dir(self, name: str, extra: dict[str, str]) -> Path:
        assert self.folder is not None
        conf = self.folder / name
        conf.mkdir(mode=0o700)
        (conf / "config.yaml").write_text(self._config_text(extra))
        (conf / "log4j.properties").write_text(_LOG4J)
        return conf

    def _start(
        self, name: str, main: str, conf: Path, jvm: list[str], args: Sequence[str] = ()
    ) -> Path:
        assert self.folder is not None
        lib = flink_lib_dir()
        log = self.folder / f"{name}.log"
        cmd = [
            _java(),
            *_java_opts(lib),
            *jvm,
            f"-Dlog.file={log}",
            f"-Dlog4j.configurationFile=file:{conf / 'log4j.properties'}",
            "-cp",
            f"{lib}/*",
            main,
            "--configDir",
            str(conf),
            *args,
        ]
        out = open(self.folder / f"{name}.out", "wb")  # noqa: SIM115 (the process owns it)
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
        self._procs.append(proc)
        return log

    def _wait_for(self, log: Path, pattern: str) -> re.Match[str]:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace") if log.exists() else ""
            match = re.search(pattern, text)
            if match:
                return match
            for proc in self._procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"a Flink process exited early: {self._tail()}")
            time.sleep(0.2)
        raise TimeoutError(
            f"Flink did not log {pattern!r} within {self.startup_timeout} s: {self._tail()}"
        )

    def _tm_options(self, conf: Path) -> tuple[list[str], list[str]]:
        """JVM options and ``-D`` properties, as ``taskmanager.sh`` gets them."""
        lib = flink_lib_dir()
        utils = lib.parent / "bin" / "bash-java-utils.jar"
        classpath = f"{utils}:{lib}/*" if utils.exists() else f"{lib}/*"
        out = subprocess.run(
            [
                _java(),
                "-cp",
                classpath,
                _BASH_UTILS,
                "GET_TM_RESOURCE_PARAMS",
                "--configDir",
                str(conf),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        lines = [line[len(_RESULT) :] for line in out.splitlines() if line.startswith(_RESULT)]
        if len(lines) < 2:
            raise RuntimeError("BashJavaUtils printed no TaskManager resource options")
        return lines[-2].split(), lines[-1].split()

    # -- life cycle ------------------------------------------------------------
    def __enter__(self) -> LocalFlinkCluster:
        self._tmp = tempfile.TemporaryDirectory(prefix="cloudsched-flink-")
        self.folder = Path(self._tmp.name)
        os.chmod(self.folder, 0o700)
        try:
            self._start_all()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_all(self) -> None:
        assert self.folder is not None
        password, self.cert, self.key = make_keys(self.folder)
        self._tls = tls_config(self.folder / "cluster.p12", password)
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(self.cert))
        context.load_cert_chain(str(self.cert), str(self.key))
        self.ssl_context = context
        conf = self._conf_dir("jobmanager", {})
        log = self._start("jobmanager", _ENTRY, conf, ["-Xmx512m"])
        rest = self._wait_for(log, r"Rest endpoint listening at 127\.0\.0\.1:(\d+)")
        rpc = self._wait_for(
            log, r"Actor system started at pekko(?:\.ssl)?\.tcp://flink@127\.0\.0\.1:(\d+)"
        )
        self.url = f"https://127.0.0.1:{rest.group(1)}"
        for index in range(self.taskmanagers):
            tm_conf = self._conf_dir(
                f"taskmanager-{index}",
                {"jobmanager.rpc.port": rpc.group(1), "taskmanager.resource-id": f"tm-{index}"},
            )
            jvm, dynamic = self._tm_options(tm_conf)
            self._start(f"taskmanager-{index}", _TM, tm_conf, jvm, dynamic)
        self._wait_registered()

    def _wait_registered(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            try:
                tms = _get(f"{self.url}/taskmanagers", self.ssl_context)["taskmanagers"]
            except OSError:
                tms = []
            if len(tms) >= self.taskmanagers:
                return
            if any(proc.poll() is not None for proc in self._procs):
                raise RuntimeError(f"a Flink process exited early: {self._tail()}")
            time.sleep(0.3)
        raise TimeoutError(f"the TaskManagers did not register in time: {self._tail()}")

    def _tail(self) -> str:
        """Return the last warnings and errors of each log (the folder is removed after)."""
        assert self.folder is not None
        lines = []
        for log in sorted(self.folder.glob("*.log")) + sorted(self.folder.glob("*.out")):
            text = log.read_text(errors="replace").splitlines()
            bad = [
                line
                for line in text
                if " ERROR " in line or " WARN " in line or "Exception" in line
            ]
            lines += [f"{log.name}: {line[:300]}" for line in bad[-3:]]
        return " | ".join(lines) or "no warnings logged"

    def stop(self) -> None:
        """Stop every process started, then remove the folder."""
        for proc in self._procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, 15)
        for proc in self._procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
        self._procs.clear()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- REST ------------------------------------------------------------------
    def get(self, path: str) -> Any:
        """GET a REST path (``/jobs/overview``) and decode its JSON."""
        return _get(f"{self.url}{path}", self.ssl_context)

    def post(self, path: str, body: bytes, content_type: str = "application/json") -> Any:
        """POST to a REST path and decode the JSON answer."""
        request = urllib.request.Request(
            f"{self.url}{path}", data=body, method="POST", headers={"Content-Type": content_type}
        )
        with urllib.request.urlopen(request, timeout=120, context=self.ssl_context) as response:
            return json.loads(response.read())

    def upload_jar(self, jar: Path) -> str:
        """Upload a job jar (``POST /jars/upload``); its id on the cluster."""
        boundary = "cloudsched" + os.urandom(8).hex()
        body = (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="jarfile"; '
                f'filename="{jar.name}"\r\nContent-Type: application/x-java-archive\r\n\r\n'
            ).encode()
            + jar.read_bytes()
            + f"\r\n--{boundary}--\r\n".encode()
        )
        answer = self.post("/jars/upload", body, f"multipart/form-data; boundary={boundary}")
        return str(answer["filename"]).rsplit("/", 1)[-1]

    def run_jar(self, jar_id: str, entry_class: str, args: list[str]) -> str:
        """Start a job from an uploaded jar; its job id."""
        body = json.dumps({"entryClass": entry_class, "programArgsList": args}).encode()
        return str(self.post(f"/jars/{jar_id}/run", body)["jobid"])

    def wait_job(self, job_id: str, timeout: float = 300.0) -> dict[str, Any]:
        """Wait for a job to reach a terminal state; its ``/jobs/:id`` answer."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.get(f"/jobs/{job_id}")
            if job["state"] in ("FINISHED", "FAILED", "CANCELED"):
                return dict(job)
            time.sleep(0.5)
        raise TimeoutError(f"job {job_id} did not finish in {timeout} s")
