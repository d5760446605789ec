"""Who may talk to a lab run: a random key per run, checked on every datagram and request.

Everything the lab starts listens on 127.0.0.1, where any process of any user on the
machine can send to it.  So the controller draws a key for the run (:func:`new_key`) and
hands it to its own processes in their environment (:data:`KEY_ENV`, readable by this user
only; never on a command line, which every user can list):

* every UDP datagram (join, delete, probe, probe reply, configuration) carries its
  sender's name, its recipient's name, a counter that sender never repeats, and an
  HMAC-SHA256 of the whole (:class:`Signer`); a receiver drops a datagram whose MAC does
  not check, that is addressed to another process (a datagram captured on loopback and
  replayed to a different server or dispatcher), or whose counter it has seen before
  (:class:`Verifier`: a window of the last :data:`WINDOW` counters per sender, so
  reordering is tolerated and replays are not); where a receiver knows the sender's
  socket, it also drops a datagram from any other port;
* every HTTP request carries the header ``X-Lab-Key`` with a token derived from the key
  (:func:`http_token`): the lab's servers and dispatchers answer a request without it
  with 403, and the NGINX and HAProxy configurations refuse it the same way.

What is dropped is counted (``rejected`` in each process's statistics) and the run's
result reports the total, with a warning when it is not zero.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import secrets
import threading
from typing import Any, cast

__all__ = [
    "HEADER",
    "KEY_ENV",
    "WINDOW",
    "SealedControl",
    "Signer",
    "Verifier",
    "http_token",
    "key_from_env",
    "new_key",
    "token_ok",
]

#: Environment variable that hands the run's key (hex) to the processes it starts.
KEY_ENV = "CLOUDSCHED_LAB_KEY"
#: HTTP header that carries the run's token.
HEADER = "X-Lab-Key"
#: Counters remembered per sender: a counter this far below the highest seen is refused.
WINDOW = 4096
_MAC_HEX = 32  # 128 bits of HMAC-SHA256, in hex


def new_key() -> str:
    """Return a fresh random key for a run (hex, 256 bits)."""
    return secrets.token_hex(32)


def key_from_env() -> bytes:
    """Return the run's key given by the controller (``RuntimeError`` when there is none)."""
    text = os.environ.get(KEY_ENV, "")
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 16:
        raise RuntimeError(f"{KEY_ENV} holds no key: lab processes are started by the lab")
    return key


def http_token(key: bytes) -> str:
    """Return the HTTP token of a run (derived, so configurations never hold the key)."""
    return hmac.new(key, b"cloudsched lab http", hashlib.sha256).hexdigest()


def token_ok(headers: dict[str, str], token: str) -> bool:
    """Whether a request's (lower-case) headers carry the run's token."""
    return hmac.compare_digest(headers.get(HEADER.lower(), ""), token)


def _mac(key: bytes, body: str) -> str:
    return hmac.new(key, body.encode("ascii"), hashlib.sha256).hexdigest()[:_MAC_HEX]


class Signer:
    """Seal this process's datagrams: ``TEXT SENDER RECIPIENT COUNTER MAC``.

    One counter per process; names are one word (``c`` the controller, ``s3`` server 3,
    ``d0`` dispatcher 0).
    """

    def __init__(self, key: bytes, sender: str) -> None:
        if not sender or " " in sender:
            raise ValueError("a sender is one word")
        self.key = key
        self.sender = sender
        self.counter = 0
        self.lock = threading.Lock()

    def seal(self, text: str, to: str) -> bytes:
        """Return ``text`` (ASCII, spaces allowed) sealed for the process named ``to``."""
        if not to or " " in to:
            raise ValueError("a recipient is one word")
        with self.lock:
            self.counter += 1
            n = self.counter
        body = f"{text} {self.sender} {to} {n}"
        return f"{body} {_mac(self.key, body)}".encode("ascii")


class Verifier:
    """Open sealed datagrams addressed to ``me``: the text, or None (counted in ``rejected``)."""

    def __init__(self, key: bytes, me: str) -> None:
        self.key = key
        self.me = me
        self.rejected = 0
        self._seen: dict[str, tuple[int, set[int]]] = {}

    def open(self, data: bytes) -> tuple[str, str] | None:
        """Return ``(text, sender)`` of an authentic datagram to ``me``, seen the first time."""
        try:
            body, _, mac = data.decode("ascii").rpartition(" ")
            text, sender, to, count = body.rsplit(" ", 3)
            n = int(count)
        except (UnicodeDecodeError, ValueError):
            self.rejected += 1
            return None
        if len(mac) != _MAC_HEX or not hmac.compare_digest(mac, _mac(self.key, body)):
            self.rejected += 1
            return None
        if to != self.me:  # sealed for another process: captured and replayed here
            self.rejected += 1
            return None
        high, recent = self._seen.get(sender, (0, set()))
        if n <= high - WINDOW or n in recent:  # a replay, or too old to tell
            self.rejected += 1
            return None
        recent.add(n)
        if n > high:
            high = n
            if len(recent) > 2 * WINDOW:
                recent = {c for c in recent if c > high - WINDOW}
        self._seen[sender] = (high, recent)
        return text, sender


class SealedControl(asyncio.DatagramProtocol):
    """A lab process's UDP control socket: only sealed datagrams of this run reach it.

    ``owner`` (a server or a dispatcher) has ``udp`` (set here) and ``verifier``; a
    subclass's :meth:`handle` answers one message, and returns False for a message it does
    not take (counted as rejected, as a datagram that fails to open is).
    """

    def __init__(self, owner: Any) -> None:
        self.owner = owner

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Give the owner its socket."""
        self.owner.udp = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        """Open a datagram and hand its message to :meth:`handle`."""
        opened = self.owner.verifier.open(data)
        if opened is not None and not self.handle(opened[0], opened[1], addr):
            self.owner.verifier.rejected += 1

    def handle(self, text: str, sender: str, addr: tuple[str, int]) -> bool:
        """Answer one authentic message; False: not one this process takes."""
        raise NotImplementedError  # pragma: no cover - each process defines it
