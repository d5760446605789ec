"""Generate the sample access logs shipped in ``cloudsched/data`` (NGINX, Envoy, HAProxy).

``nginx-upstream-sample`` holds the same requests balanced over four upstreams by
NGINX's ``least_conn`` in the format ``check-lb`` reads.

The logs are synthetic, not copied from any site: 20 minutes of a small web API behind a
proxy.  Requests arrive as a Poisson process whose rate follows a slow wave (10 to 20
requests per second) with two one-minute bursts at twice the rate; each request goes to
one of four endpoints, whose backend times are lognormal with their own mean and spread;
static files are answered by the proxy (no upstream time), about 1% of requests fail with
a 5xx, and a few are aborted by the client.  Lines are written in the order requests end,
as proxies write them.  Run ``python examples/make_sample_logs.py`` to regenerate them
(the same seed gives the same files).
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "src" / "cloudsched" / "data"
START = datetime(2026, 11, 3, 14, 0, 0, tzinfo=UTC).timestamp()
SPAN = 1200.0  # seconds
#: (path, share, mean backend time in s, coefficient of variation; None: served by the proxy)
ENDPOINTS = (
    ("/api/items", 0.55, 0.025, 0.8),
    ("/api/items/{id}", 0.25, 0.008, 0.5),
    ("/api/orders", 0.12, 0.080, 1.5),
    ("/static/app.js", 0.08, None, None),
)
AGENTS = ("Mozilla/5.0 (X11; Linux x86_64)", "curl/8.5.0", "okhttp/4.12.0")


def requests(rng: np.random.Generator) -> list[dict]:
    """Draw the requests (dicts), in the order they end."""

    def rate(t: np.ndarray) -> np.ndarray:
        wave = 15 + 5 * np.sin(2 * np.pi * t / 600)
        burst = ((t > 300) & (t < 360)) | ((t > 900) & (t < 960))
        return wave * np.where(burst, 2.0, 1.0)

    top = 40.0  # thinning: candidates at the top rate, kept with probability rate/top
    n = rng.poisson(top * SPAN)
    t = np.sort(rng.uniform(0, SPAN, n))
    t = t[rng.uniform(size=n) < rate(t) / top]
    shares = np.array([e[1] for e in ENDPOINTS])
    kinds = rng.choice(len(ENDPOINTS), size=t.size, p=shares / shares.sum())
    out = []
    for arrival, k in zip(t, kinds, strict=True):
        path, _, mean, cv = ENDPOINTS[k]
        if mean is None:
            upstream = None
            total = float(rng.uniform(0.0002, 0.0008))
        else:
            sigma2 = np.log1p(cv * cv)
            upstream = float(rng.lognormal(np.log(mean) - sigma2 / 2, np.sqrt(sigma2)))
            total = upstream + float(rng.uniform(0.0003, 0.0015))
        status = 200 if rng.uniform() > 0.01 else int(rng.choice([500, 502, 503]))
        aborted = rng.uniform() < 0.002
        method = "POST" if path == "/api/orders" else "GET"
        url = path.replace("{id}", str(int(rng.integers(1, 5000))))
        out.append(
            {
                "start": START + float(arrival),
                "upstream": upstream,
                "total": total,
                "status": status,
                "aborted": bool(aborted),
                "method": method,
                "url": url,
                "bytes": int(rng.integers(200, 20000)),
                "client": f"10.0.{rng.integers(0, 8)}.{rng.integers(2, 250)}",
                "agent": AGENTS[int(rng.integers(len(AGENTS)))],
                "id": f"{rng.integers(0, 2**63):016x}",
            }
        )
    out.sort(key=lambda r: r["start"] + r["total"])  # written when they end
    return out


def clf(ts: float, millis: bool = False) -> str:
    """Format a time as NGINX $time_local (or HAProxy's date with milliseconds)."""
    d = datetime.fromtimestamp(ts, tz=UTC)
    text = d.strftime("%d/%b/%Y:%H:%M:%S")
    return text + (f".{int(ts * 1000) % 1000:03d}" if millis else " +0000")


def iso(ts: float) -> str:
    """Format a time as Envoy's START_TIME."""
    d = datetime.fromtimestamp(ts, tz=UTC)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ts * 1000) % 1000:03d}Z"


def nginx(r: dict) -> str:
    """Write a request as an NGINX line (combined + two times)."""
    up = "-" if r["upstream"] is None else f"{r['upstream']:.3f}"
    return (
        f'{r["client"]} - - [{clf(r["start"] + r["total"])}] "{r["method"]} {r["url"]} '
        f'HTTP/1.1" {r["status"]} {r["bytes"]} "-" "{r["agent"]}" {r["total"]:.3f} {up}'
    )


def envoy(r: dict) -> str:
    """Write a request in Envoy's default format."""
    up = "-" if r["upstream"] is None else str(round(r["upstream"] * 1000))
    return (
        f'[{iso(r["start"])}] "{r["method"]} {r["url"]} HTTP/1.1" {r["status"]} - 0 '
        f'{r["bytes"]} {round(r["total"] * 1000)} {up} "-" "{r["agent"]}" "{r["id"]}" '
        f'"api.example.com" "10.1.0.{int(r["id"][2:4], 16) % 8 + 2}:8080"'
    )


def envoy_json(r: dict) -> str:
    """Write a request as an Envoy JSON line."""
    up = None if r["upstream"] is None else str(round(r["upstream"] * 1000))
    return json.dumps(
        {
            "start_time": iso(r["start"]),
            "method": r["method"],
            "path": r["url"],
            "response_code": r["status"],
            "duration": round(r["total"] * 1000),
            "upstream_service_time": up,
            "bytes_sent": r["bytes"],
            "x_request_id": r["id"],
        }
    )


def haproxy(r: dict) -> str:
    """Write a request as an HAProxy httplog line with its syslog prefix."""
    tr = -1 if r["aborted"] or r["upstream"] is None else round(r["upstream"] * 1000)
    ta = round(r["total"] * 1000)
    server = "<NOSRV>" if r["upstream"] is None else f"srv{int(r['id'][:2], 16) % 8 + 1}"
    stamp = datetime.fromtimestamp(r["start"] + r["total"], tz=UTC).strftime("%b %d %H:%M:%S")
    return (
        f"{stamp} lb1 haproxy[2211]: {r['client']}:{40000 + int(r['id'][-3:], 16)} "
        f"[{clf(r['start'], millis=True)}] http-in api/{server} 0/0/0/{tr}/{ta} "
        f"{r['status']} {r['bytes']} - - ---- 12/12/3/1/0 0/0 "
        f'"{r["method"]} {r["url"]} HTTP/1.1"'
    )


#: The upstreams of ``nginx-upstream-sample`` (NGINX's ``least_conn`` over four servers).
UPSTREAMS = tuple(f"10.2.0.{k}:8080" for k in range(1, 5))


def least_conn(rows: list[dict], rng: np.random.Generator) -> list[dict]:
    """Give each request an upstream as NGINX's ``least_conn`` does (ties at random).

    Requests in order of arrival; each goes to an upstream with the fewest requests in
    flight (those sent before it and not yet ended), ties broken uniformly at random (NGINX
    breaks them by weighted round robin, ``ngx_http_upstream_get_least_conn_peer`` in
    ``src/http/modules/ngx_http_upstream_least_conn_module.c``; check-lb's least-request
    law does not depend on the tie rule).  Static files are answered by the proxy and take
    no upstream.
    """
    end = np.zeros(0)
    where = np.zeros(0, dtype=np.int64)
    out = []
    for r in sorted(rows, key=lambda r: r["start"]):
        if r["upstream"] is None:
            out.append(dict(r, host=None))
            continue
        live = end > r["start"]
        end, where = end[live], where[live]
        counts = np.bincount(where, minlength=len(UPSTREAMS))
        fewest = np.flatnonzero(counts == counts.min())
        k = int(fewest[rng.integers(fewest.size)])
        finish = r["start"] + r["total"] - 0.0005  # the upstream's part ends first
        end, where = np.append(end, finish), np.append(where, k)
        out.append(dict(r, host=UPSTREAMS[k]))
    out.sort(key=lambda r: r["start"] + r["total"])  # written when they end
    return out


def nginx_upstream(r: dict) -> str:
    """Write a request in the NGINX format check-lb reads.

    ``$msec $request_time $upstream_addr $status $upstream_response_time``.
    """
    up = "-" if r["host"] is None else r["host"]
    took = "-" if r["upstream"] is None else f"{r['upstream']:.3f}"
    return f"{r['start'] + r['total']:.3f} {r['total']:.3f} {up} {r['status']} {took}"


def main() -> None:
    """Write the five logs."""
    rows = requests(np.random.default_rng(20261103))
    balanced = least_conn(rows, np.random.default_rng(20261204))
    with gzip.GzipFile(OUT / "nginx-upstream-sample.log.gz", "wb", mtime=0) as f:
        f.write("".join(nginx_upstream(r) + "\n" for r in balanced).encode())
    print(f"{OUT / 'nginx-upstream-sample.log.gz'}: {len(balanced)} lines")
    for name, line in (
        ("nginx-sample.log.gz", nginx),
        ("envoy-sample.log.gz", envoy),
        ("envoy-json-sample.log.gz", envoy_json),
        ("haproxy-sample.log.gz", haproxy),
    ):
        with gzip.GzipFile(OUT / name, "wb", mtime=0) as f:  # mtime=0: same bytes every run
            f.write("".join(line(r) + "\n" for r in rows).encode())
        print(f"{OUT / name}: {len(rows)} lines")


if __name__ == "__main__":
    main()
