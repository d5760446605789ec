"""NGINX and HAProxy as the lab's dispatchers: configurations generated per run.

Each of the ``M`` dispatchers is an independent instance (one process, no shared state:
the paper's setting), listening on its own port of 127.0.0.1 and balancing over the same
backends with the directive the policy maps to (the ``nginx`` and ``haproxy`` columns of
:mod:`cloudsched.policy_table`):

==============  ==================================  ================================
policy          NGINX (``upstream`` block)          HAProxy (``backend`` section)
==============  ==================================  ================================
``random``      ``random;``                         ``balance random(1)``
``round-robin`` (the default: no directive)         ``balance roundrobin``
``jsq``         ``least_conn;``                     ``balance leastconn``
``pod`` (d)     ``random two least_conn;`` (d = 2)  ``balance random(d)``
==============  ==================================  ================================

"Least loaded" is, for both, the instance's own count of open requests to each server
(neither probes the servers), so ``pod`` here is power-of-d-choices on local information
and ``jsq`` is NGINX's ``least_conn``, not the global JSQ.  NGINX runs in the foreground
without a master process (``daemon off; master_process off;``), HAProxy with ``-db``; both
keep connections to the backends alive.  A failed backend is left (NGINX
``proxy_next_upstream error`` with ``max_fails=1 fail_timeout=1s``; HAProxy
``option redispatch``, ``retries`` and a health check ``GET /health`` every 500 ms).
NGINX may run several worker processes per dispatcher (``--workers K``), each with its own
counts, or sharing them through the upstream's ``zone`` (``--zone``).  Both refuse (403) a
request without the run's ``X-Lab-Key`` token
(:mod:`cloudsched.lab.auth`) and pass the header on to the servers, which check it too.
"""

from __future__ import annotations

import re
import shutil
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from cloudsched.dispatch.workload.fields import nginx_regex
from cloudsched.dispatch.workload.formats import NGINX_WORKER_FORMAT as ACCESS_FORMAT
from cloudsched.errors import ExternalError
from cloudsched.policy_table import TABLE

__all__ = ["binary", "haproxy_config", "nginx_config", "refused_requests", "wait_listening"]

_SEARCH = ("/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin")


def binary(name: str) -> str | None:
    """Path of the ``nginx`` or ``haproxy`` executable, or None when it is not installed."""
    found = shutil.which(name)
    if found:
        return found
    for folder in _SEARCH:
        path = Path(folder) / name
        if path.is_file():
            return str(path)
    return None


def _token(token: str) -> str:
    if not token.isalnum():  # it goes into a configuration file as it is
        raise ValueError("the lab's token is hexadecimal")
    return token


def nginx_config(
    run_dir: Path,
    index: int,
    port: int,
    backends: list[int],
    policy: str,
    token: str,
    *,
    workers: int = 1,
    zone: bool = False,
) -> str:
    """Write out the ``nginx.conf`` of dispatcher ``index`` (listening on ``port``).

    One worker runs without a master process; several run under one (``master_process
    on``), each accepting on its own socket (``reuseport``: the kernel spreads the client
    connections over them) and counting its own requests unless ``zone`` gives the upstream
    a shared memory zone (NGINX: "the group's configuration and run-time state are shared
    between worker processes").
    """
    temp = run_dir / f"nginx{index}"
    temp.mkdir(exist_ok=True)
    servers = "\n".join(
        f"        server 127.0.0.1:{p} max_fails=1 fail_timeout=1s;" for p in backends
    )
    paths = "\n".join(
        f"    {k}_temp_path {temp}/{k};"
        for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    shared = "\n        zone backends 1m;" if zone else ""
    return f"""# cloudsched lab: dispatcher {index}, policy {policy}
daemon off;
master_process {"on" if workers > 1 else "off"};
worker_processes {int(workers)};
pid {temp}/nginx.pid;
error_log {temp}/error.log warn;
events {{ worker_connections 8192; }}
http {{
    log_format cloudsched '{ACCESS_FORMAT}';
    access_log {temp}/access{index}.log cloudsched;
{paths}
    upstream backends {{
        {TABLE[policy].nginx}{shared}
{servers}
        keepalive 512;
    }}
    server {{
        listen 127.0.0.1:{port}{" reuseport" if workers > 1 else ""};
        keepalive_requests 100000000;
        keepalive_timeout 600s;
        location / {{
            if ($http_x_lab_key != "{_token(token)}") {{ return 403; }}
            proxy_pass http://backends;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_next_upstream error timeout;
            proxy_connect_timeout 1s;
            proxy_read_timeout 600s;
            proxy_buffering off;
        }}
    }}
}}
"""


def haproxy_config(
    run_dir: Path, index: int, port: int, backends: list[int], policy: str, d: int, token: str
) -> str:
    """Write out the ``haproxy.cfg`` of dispatcher ``index`` (listening on ``port``)."""
    servers = "\n".join(
        f"    server s{i} 127.0.0.1:{p} check inter 500ms fall 1 rise 2"
        for i, p in enumerate(backends)
    )
    return f"""# cloudsched lab: dispatcher {index}, policy {policy}
global
    maxconn 8192
    nbthread 1
    log stdout format raw local0 info
    pidfile {run_dir}/haproxy{index}.pid
defaults
    mode http
    log global
    option httplog
    timeout connect 1s
    timeout client 600s
    timeout server 600s
    timeout http-keep-alive 600s
    option http-keep-alive
    http-reuse always
    retries 2
    option redispatch
frontend dispatcher{index}
    bind 127.0.0.1:{port}
    http-request deny deny_status 403 unless {{ req.hdr(x-lab-key) -m str {_token(token)} }}
    default_backend backends
backend backends
    {str(TABLE[policy].haproxy).format(d=d)}
    option httpchk
    http-check send meth GET uri /health hdr X-Lab-Key {_token(token)}
{servers}
"""


#: An HAProxy ``option httplog`` line's timers and status: ``Tq/Tw/Tc/Tr/Tt STATUS``.
_HAPROXY_STATUS = re.compile(r" -?\d+/-?\d+/-?\d+/-?\d+/\+?-?\d+ (\d{3}) ")
_NGINX_LINE = nginx_regex(ACCESS_FORMAT)


def refused_requests(logs: Mapping[str, str], balancer: str) -> int:
    """Count the requests the proxies refused (403: no run key) in their access logs.

    The lab's own requests all carry the key, so each of these came from something else on
    the machine; the proxy answered it and no server saw it.
    """
    n = 0
    for text in logs.values():
        for line in text.splitlines():
            if balancer == "nginx":
                m = _NGINX_LINE.match(line)
                n += m is not None and m["status"] == "403"
            else:
                m = _HAPROXY_STATUS.search(line)
                n += m is not None and m.group(1) == "403"
    return n


def wait_listening(port: int, alive: Callable[[], bool], seconds: float = 15.0) -> None:
    """Return once 127.0.0.1:``port`` accepts connections; ``alive()`` False means it died."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive():
            raise ExternalError(f"lab: the balancer on port {port} exited at start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise ExternalError(f"lab: nothing listens on port {port} after {seconds:g} s")
