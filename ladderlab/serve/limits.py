"""How many connections and requests ``ladderlab serve`` holds at once, and how long it waits for them
(docs/serve.md#connections).

Without bounds a hostile participant can open connections until the process runs out of file
descriptors, or start uploads until it runs out of memory, and no honest team gets through. The
server bounds:

- **open connections** (:attr:`ConnectionLimits.connections`): a connection beyond it is answered
  at once with ``503`` (``Retry-After``, the reason, ``Connection: close``) and closed, so the file
  descriptors held stay bounded (:func:`bounded_protocol`). uvicorn's own ``limit_concurrency`` is
  set one above it, a backstop: uvicorn counts connections and requests together and its refusal
  says neither why nor when to come back;
- **requests in progress** (:attr:`ConnectionLimits.requests`): each may hold an upload of up to
  the challenge's ``max_upload_bytes`` in memory; one beyond it gets ``503`` with ``Retry-After``
  and ``"reason": "busy"`` (:class:`RequestLimit`);
- **the time to send a request's headers** (:attr:`ConnectionLimits.header_timeout`), from the
  connection or the request's first byte: a connection that sends nothing, or trickles its headers
  (slowloris), is closed instead of holding a place; uvicorn has no such timeout;
- **the time to send a request's body** (:attr:`ConnectionLimits.body_timeout`), from the end of its
  headers: a body that trickles in (slow POST) is answered ``408`` (``"reason": "body-timeout"``) and
  its connection closed, so it holds neither a request's place nor its connection for longer; its
  size is bounded by the challenge's ``max_upload_bytes`` (``413``, :mod:`ladderlab.serve.app`);
- **idle keep-alive** (uvicorn's ``timeout_keep_alive``) and the kernel's **backlog** of connections
  not yet accepted;
- **per address** (:attr:`ConnectionLimits.per_address`): the connections one client address holds
  before their request's headers are in (a new one beyond it closes that address's oldest such
  connection, so one client that opens sockets and sends nothing, or trickles, holds at most that
  many places, and a team behind the same address still gets through), and the requests it has in
  progress without a known token (one beyond it: 503 ``busy``);
- **places kept for teams** (:attr:`ConnectionLimits.reserved_requests`): requests without a known
  token (the page, the public data, guesses) may fill the requests in progress but these, which
  only a request with a team's or the organiser's token in ``Authorization`` may take.

:meth:`ConnectionLimits.for_challenge` sizes them from the challenge: a few connections per team
(a browser opens six), within the process's file-descriptor limit; requests so that the uploads
in progress fit :data:`UPLOAD_MEMORY`; the body time so that the largest upload arrives at
:data:`SLOWEST_UPLOAD_BYTES_PER_SECOND`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import resource
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

UPLOAD_MEMORY = 1 << 30
"""Bytes that uploads in progress may hold at once (each up to the challenge's ``max_upload_bytes``)."""
CONNECTIONS_PER_TEAM = 8
"""Connections a team (or the organiser) may hold at once: a browser opens six to one host."""
MIN_CONNECTIONS, MAX_CONNECTIONS = 64, 4096
RESERVED_DESCRIPTORS = 64
"""File descriptors kept for the log, its database connections and the files the server reads."""
KEEP_ALIVE_SECONDS = 5.0
HEADER_SECONDS = 10.0
BODY_SECONDS = 30.0
SLOWEST_UPLOAD_BYTES_PER_SECOND = 128 << 10
"""The slowest honest upload the default body time waits for (a 1 Mbit/s link): a challenge whose largest
upload needs longer than :data:`BODY_SECONDS` at this rate gets that longer time."""
RETRY_AFTER_SECONDS = 1
PER_ADDRESS = 8
"""Connections one address may hold before their headers are in, and requests without a known token it
may have in progress: a browser opens six connections to load a page."""
RESERVED_SHARE = 4
"""One request place in this many (at least one) is kept for requests with a known token."""


def reserved_for(requests: int) -> int:
    """The request places kept for requests with a known token out of ``requests`` (none of one)."""
    return 0 if requests < 2 else max(1, requests // RESERVED_SHARE)


@dataclass(frozen=True)
class ConnectionLimits:
    """The server's bounds (module docstring): open ``connections``, ``requests`` in progress, the
    kernel's ``backlog``, ``keep_alive``, ``header_timeout`` and ``body_timeout`` seconds."""

    connections: int
    requests: int
    backlog: int
    keep_alive: float = KEEP_ALIVE_SECONDS
    header_timeout: float = HEADER_SECONDS
    body_timeout: float = BODY_SECONDS
    per_address: int = PER_ADDRESS
    reserved_requests: int = 0

    def __post_init__(self) -> None:
        for name in ("connections", "requests", "backlog", "per_address"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"connection limits: {name} must be a whole number ≥ 1, got {value!r}")
        for name in ("keep_alive", "header_timeout", "body_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise ValueError(f"connection limits: {name} must be a number of seconds > 0, got {value!r}")
        if self.requests > self.connections:
            raise ValueError(f"connection limits: requests ({self.requests}) cannot exceed connections "
                             f"({self.connections}): each request holds a connection")
        if not 0 <= self.reserved_requests < self.requests:
            raise ValueError(f"connection limits: reserved_requests must be at least 0 and below the requests "
                             f"({self.requests}), got {self.reserved_requests!r}")

    @classmethod
    def for_challenge(cls, teams: int, max_upload_bytes: int, descriptors: int | None = None) -> ConnectionLimits:
        """The defaults for a challenge of ``teams`` teams whose uploads are at most ``max_upload_bytes``:
        :data:`CONNECTIONS_PER_TEAM` per team and the organiser, at least :data:`MIN_CONNECTIONS`, at most
        :data:`MAX_CONNECTIONS` and the file descriptors the process may open (``descriptors``, default
        its soft ``RLIMIT_NOFILE``) but :data:`RESERVED_DESCRIPTORS`; requests in progress: two per team,
        at least 8, at most what :data:`UPLOAD_MEMORY` holds, never above the connections; the body time
        :data:`BODY_SECONDS`, or what ``max_upload_bytes`` needs at :data:`SLOWEST_UPLOAD_BYTES_PER_SECOND`."""
        if descriptors is None:
            descriptors = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            if descriptors == resource.RLIM_INFINITY:
                descriptors = MAX_CONNECTIONS + RESERVED_DESCRIPTORS
        room = descriptors - RESERVED_DESCRIPTORS
        if room < 2:
            raise ValueError(f"the process may open {descriptors} file descriptors: too few to serve "
                             f"(raise 'ulimit -n')")
        connections = min(max(CONNECTIONS_PER_TEAM * (teams + 1), MIN_CONNECTIONS), MAX_CONNECTIONS, room)
        requests = min(max(2 * (teams + 1), 8), max(1, UPLOAD_MEMORY // max(1, max_upload_bytes)), connections)
        body_timeout = max(BODY_SECONDS, max_upload_bytes / SLOWEST_UPLOAD_BYTES_PER_SECOND)
        return cls(connections=connections, requests=requests, backlog=connections, body_timeout=body_timeout,
                   reserved_requests=reserved_for(requests))

    def uvicorn_options(self) -> dict[str, Any]:
        """The limits uvicorn offers, for ``uvicorn.Config``."""
        return {"limit_concurrency": self.connections + 1, "backlog": self.backlog,
                "timeout_keep_alive": self.keep_alive, "http": bounded_protocol(self)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-connections``, ``--max-requests``, ``--header-timeout``, ``--body-timeout``, ``--keep-alive``
    of ``ladderlab serve``."""
    from ladderlab.runs.arguments import count, positive

    parser.add_argument("--max-connections", type=count(1), metavar="N",
                        help="open connections at once; one more is answered 503 and closed (default: "
                             f"{CONNECTIONS_PER_TEAM} per team and the organiser, {MIN_CONNECTIONS} to {MAX_CONNECTIONS}, "
                             "within the file-descriptor limit)")
    parser.add_argument("--max-requests", type=count(1), metavar="N",
                        help="requests in progress at once; one more is answered 503 (default: two per team, "
                             "at least 8, as many uploads as fit 1 GiB)")
    parser.add_argument("--header-timeout", type=positive, metavar="SECONDS",
                        help="close a connection that has not sent a request's headers in time "
                             f"(default {HEADER_SECONDS:g})")
    parser.add_argument("--body-timeout", type=positive, metavar="SECONDS",
                        help="answer 408 and close a connection that has not sent a request's body this long after "
                             f"its headers (default {BODY_SECONDS:g}, or what the largest upload needs at "
                             f"{SLOWEST_UPLOAD_BYTES_PER_SECOND >> 10} KiB/s)")
    parser.add_argument("--keep-alive", type=positive, metavar="SECONDS",
                        help=f"close a connection idle this long between requests (default {KEEP_ALIVE_SECONDS:g})")
    parser.add_argument("--per-address", type=count(1), metavar="N",
                        help="connections one client address may hold before their request's headers are in (one "
                             "more closes its oldest), and requests without a known token it may have in progress "
                             f"(default {PER_ADDRESS})")


def from_arguments(args: argparse.Namespace, teams: int, max_upload_bytes: int) -> ConnectionLimits:
    """The limits ``args`` give, the challenge's defaults for the others; ValueError naming the option."""
    default = ConnectionLimits.for_challenge(teams, max_upload_bytes)
    connections = args.max_connections or default.connections
    requests = args.max_requests or min(default.requests, connections)
    if requests > connections:
        raise ValueError(f"--max-requests {requests}: more than the {connections} connections allowed "
                         "(--max-connections): each request holds a connection")
    return ConnectionLimits(connections=connections, requests=requests, backlog=connections,
                            keep_alive=args.keep_alive or default.keep_alive,
                            header_timeout=args.header_timeout or default.header_timeout,
                            body_timeout=args.body_timeout or default.body_timeout,
                            per_address=args.per_address or PER_ADDRESS, reserved_requests=reserved_for(requests))


def refusal(reason: str, message: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and JSON body of a 503 that says why and when to retry, and closes the connection."""
    body = json.dumps({"error": message, "reason": reason, "retry_after": RETRY_AFTER_SECONDS}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"retry-after", str(RETRY_AFTER_SECONDS).encode()), (b"connection", b"close")]
    return headers, body


def raw_response(status: str, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    """An HTTP/1.1 response as the bytes the protocol writes itself, outside the application."""
    return (f"HTTP/1.1 {status}\r\n".encode() + b"".join(name + b": " + value + b"\r\n" for name, value in headers)
            + b"\r\n" + body)


def body_timeout_answer(seconds: float) -> bytes:
    """The ``408`` a request whose body did not arrive within ``seconds`` of its headers gets."""
    body = json.dumps({"error": f"the request's body did not arrive within {seconds:g} s of its headers",
                       "reason": "body-timeout"}).encode()
    return raw_response("408 Request Timeout", [(b"content-type", b"application/json"),
                                                (b"content-length", str(len(body)).encode()),
                                                (b"connection", b"close")], body)


def bearer_token(scope: Any) -> str | None:
    """The token of a request's ``Authorization: Bearer TOKEN`` header, None without one."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


class RequestLimit:
    """ASGI middleware: at most ``limit`` requests of ``app`` in progress, of which those that ``known``
    does not accept (a request's ASGI scope: a team's token or session) take at most ``limit - reserved``,
    and at most ``per_address`` from one client address; one more gets 503 ``busy``."""

    def __init__(self, app: Any, limit: int, known: Callable[[Any], bool] = lambda scope: False,
                 reserved: int = 0, per_address: int | None = None):
        self.app = app
        self.limit = limit
        self.known = known
        self.reserved = reserved
        self.per_address = limit if per_address is None else per_address
        self.active = 0
        self.anonymous = 0
        self.anonymous_by_address: dict[str, int] = {}
        self.headers, self.body = refusal("busy", f"the server is handling {limit} requests, its most at once: "
                                                  f"retry in {RETRY_AFTER_SECONDS} s")
        self.anonymous_headers, self.anonymous_body = refusal(
            "busy", f"the server is handling all the requests without a team's token it takes at once (from this "
                    f"address, or {limit - reserved} in all): retry in {RETRY_AFTER_SECONDS} s, or send your "
                    "team's token as 'Authorization: Bearer TOKEN'")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.active >= self.limit:
            await self._refuse(send, self.headers, self.body)
            return
        anonymous = not self.known(scope)
        address = (scope.get("client") or ("",))[0]
        if anonymous and (self.anonymous >= self.limit - self.reserved
                          or self.anonymous_by_address.get(address, 0) >= self.per_address):
            await self._refuse(send, self.anonymous_headers, self.anonymous_body)
            return
        self.active += 1  # one event loop: no lock needed
        if anonymous:
            self.anonymous += 1
            self.anonymous_by_address[address] = self.anonymous_by_address.get(address, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1
            if anonymous:
                self.anonymous -= 1
                left = self.anonymous_by_address.pop(address) - 1
                if left:
                    self.anonymous_by_address[address] = left

    @staticmethod
    async def _refuse(send: Any, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        await send({"type": "http.response.start", "status": 503, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def bounded_protocol(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with the connection bound and the header and body timeouts of ``limits``."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    too_many = raw_response("503 Service Unavailable", *refusal(
        "connections", f"the server holds {limits.connections} connections, its most at once: "
                       f"retry in {RETRY_AFTER_SECONDS} s"))
    too_slow_body = body_timeout_answer(limits.body_timeout)
    waiting: dict[str, OrderedDict[Any, None]] = {}
    """By client address, its connections whose request's headers are not in yet, oldest first."""

    class BoundedHttpToolsProtocol(HttpToolsProtocol):
        header_deadline: asyncio.TimerHandle | None = None
        body_deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if len(self.connections) > limits.connections:
                transport.write(too_many)
                transport.close()
                return
            self._arm()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self.header_deadline is None:
                self._arm()

        def on_headers_complete(self) -> None:
            self._disarm()
            super().on_headers_complete()
            self.body_deadline = self.loop.call_later(limits.body_timeout, self._body_too_slow)

        def on_message_complete(self) -> None:
            self._disarm_body()
            super().on_message_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            self._disarm_body()
            super().connection_lost(exc)

        def _arm(self) -> None:
            """Wait for the request's headers: at most the header time, and as one of at most
            ``per_address`` connections of its address doing so (the oldest beyond is closed)."""
            self.header_deadline = self.loop.call_later(limits.header_timeout, self._too_slow)
            address = self.client[0] if self.client else ""
            queue = waiting.setdefault(address, OrderedDict())
            queue[self] = None
            while len(queue) > limits.per_address:
                oldest, _ = queue.popitem(last=False)
                oldest._disarm()
                if not oldest.transport.is_closing():
                    oldest.transport.close()

        def _disarm(self) -> None:
            if self.header_deadline is not None:
                self.header_deadline.cancel()
                self.header_deadline = None
            address = self.client[0] if self.client else ""
            queue = waiting.get(address)
            if queue is not None and queue.pop(self, False) is None and not queue:
                del waiting[address]

        def _too_slow(self) -> None:
            self._disarm()
            if not self.transport.is_closing():
                self.transport.close()

        def _disarm_body(self) -> None:
            if self.body_deadline is not None:
                self.body_deadline.cancel()
                self.body_deadline = None

        def _body_too_slow(self) -> None:
            """408 if the application has not answered yet (it then sees a disconnect, and its answer,
            if any, is dropped), and the connection closed either way."""
            self.body_deadline = None
            if self.transport.is_closing():
                return
            if self.cycle is not None and not self.cycle.response_started:
                self.cycle.disconnected = True
                self.cycle.message_event.set()
                self.transport.write(too_slow_body)
            self.transport.close()

    return BoundedHttpToolsProtocol
