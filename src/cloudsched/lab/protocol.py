"""The lab's wire formats: a minimal HTTP/1.1 over asyncio streams, and the UDP messages.

HTTP is kept to what the lab needs, so that NGINX and HAProxy can stand in the same path:
``GET`` requests with no body, keep-alive connections, responses with ``Content-Length``.
A request for work ``w`` (seconds) is ``GET /work?w=0.0213``; ``GET /health`` is answered
at once and ``GET /stats`` returns a process's cumulative counters as JSON.  Headers the
lab adds are prefixed ``X-``: the backend answers with ``X-Server``
(its index), ``X-Queue`` (tasks already there on arrival), ``X-Wait`` and ``X-Service``
(seconds it waited and was served); a dispatcher of the lab adds ``X-Popped`` (its index if it
took the server from its I-queue, else -1) on the way in and ``X-Decision`` (its
decision's sequence number) and ``X-Probed`` (``server:queue,...`` of a probe) on the way
out.

UDP control messages are ASCII, one per datagram, fields separated by spaces:

==================  =========================================================
``J s t``           server ``s``, idle since time ``t``, joins the receiving I-queue
``D s``             delete request: remove server ``s`` from the I-queue
``P seq``           probe; answered ``R seq s q`` (server ``s`` holds ``q`` tasks)
``C json``          configuration (the dispatchers' UDP ports); answered ``OK``
==================  =========================================================

Each datagram is sealed with the sender's name, a counter and a MAC, and each request
carries the run's token (:mod:`cloudsched.lab.auth`).
"""

from __future__ import annotations

import asyncio

__all__ = ["HttpMessage", "read_message", "request_bytes", "response_bytes"]

#: No header block of the lab is longer; a longer one is a protocol error.
MAX_HEADER = 16384
#: No body of the lab is longer (a dispatcher's statistics: under 1 MB).
MAX_BODY = 16 << 20


class HttpMessage:
    """A parsed request or response: the first line, the headers (lower-case) and the body."""

    __slots__ = ("body", "first", "headers")

    def __init__(self, first: str, headers: dict[str, str], body: bytes) -> None:
        self.first = first
        self.headers = headers
        self.body = body

    @property
    def path(self) -> str:
        """Request target of a request line (``GET /work?w=1 HTTP/1.1``)."""
        parts = self.first.split(" ")
        return parts[1] if len(parts) > 1 else ""

    @property
    def status(self) -> int:
        """Status code of a status line (0 when it is not one)."""
        parts = self.first.split(" ")
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0

    @property
    def closes(self) -> bool:
        """The peer asked to close the connection after this message."""
        return self.headers.get("connection", "").lower() == "close"


async def read_message(reader: asyncio.StreamReader) -> HttpMessage | None:
    """Read one HTTP message; None at a clean end of stream (the peer closed between messages).

    Raises ``ConnectionError`` on a message cut short or malformed.
    """
    try:
        block = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial:
            return None
        raise ConnectionError("connection closed inside a message") from exc
    except asyncio.LimitOverrunError as exc:
        raise ConnectionError("header block too long") from exc
    lines = block[:-4].decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    try:
        length = int(headers.get("content-length", "0") or 0)
    except ValueError:
        raise ConnectionError("malformed Content-Length") from None
    if not 0 <= length <= MAX_BODY:
        raise ConnectionError(f"Content-Length {length} outside [0, {MAX_BODY}]")
    body = await reader.readexactly(length) if length > 0 else b""
    return HttpMessage(lines[0], headers, body)


def request_bytes(path: str, extra: dict[str, str] | None = None, token: str = "") -> bytes:
    """Encode a keep-alive ``GET`` request for ``path`` with the ``extra`` headers.

    ``token``: the run's HTTP token (:mod:`cloudsched.lab.auth`), sent as ``X-Lab-Key``.
    """
    head = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1"]
    if token:
        head.append(f"X-Lab-Key: {token}")
    head += [f"{k}: {v}" for k, v in (extra or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1")


def response_bytes(status: int, headers: dict[str, str], body: bytes = b"ok") -> bytes:
    """Encode a keep-alive response with ``Content-Length``."""
    reason = {
        200: "OK",
        400: "Bad Request",
        403: "Forbidden",
        404: "Not Found",
        502: "Bad Gateway",
        503: "Service Unavailable",
    }
    head = [f"HTTP/1.1 {status} {reason.get(status, 'Status')}", f"Content-Length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
