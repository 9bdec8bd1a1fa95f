"""Running the application on uvicorn, on a socket bound before the server starts (so that
``--port 0`` can print the port it got)."""

from __future__ import annotations

import functools
import socket
from typing import Any

from ladderlab.serve.limits import ConnectionLimits, RequestLimit, bearer_token
from ladderlab.serve.perimeter import AccessLog, access_log
from ladderlab.serve.service import Service


def listen(host: str, port: int, backlog: int = 1024) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (port 0: a free one), with ``backlog``
    connections the kernel queues before the server accepts them."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise ValueError(f"--host {host} --port {port}: cannot listen there: {error.strerror or error}") from None
    sock.listen(backlog)
    return sock


def _known(service: Service, scope: Any) -> bool:
    """Whether a request comes from a team or the organiser: its ``Authorization`` token, or the
    page's session cookie, is one the service knows."""
    from starlette.requests import cookie_parser

    from ladderlab.serve.sessions import cookie_name, signed_in

    token = bearer_token(scope)
    if token is not None:
        return service.knows(token)
    cookies = next((value for name, value in scope.get("headers", ()) if name == b"cookie"), None)
    if cookies is None:
        return False
    return signed_in(service, cookie_parser(cookies.decode("latin-1")).get(cookie_name(service))) is not None


def _print_access_log() -> None:
    """The access log's lines on standard output, as uvicorn prints its own (which is off: it names the
    path and query string the client sent, where a token may be)."""
    import logging
    import sys

    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
    access_log.addHandler(handler)
    access_log.setLevel(logging.INFO)
    access_log.propagate = False


def run(service: Service, sock: socket.socket, limits: ConnectionLimits, access_log: bool = True) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM end it cleanly; the log needs no shutdown), within
    ``limits`` (:mod:`ladderlab.serve.limits`)."""
    import gc

    import uvicorn

    from ladderlab.serve.app import create_app

    app: Any = RequestLimit(create_app(service), limits.requests, functools.partial(_known, service),
                            limits.reserved_requests, limits.per_address)
    if access_log:
        app = AccessLog(app)
        _print_access_log()
    config = uvicorn.Config(app, access_log=False, log_level="info", server_header=False, **limits.uvicorn_options())
    gc.collect()
    gc.freeze()  # what the imports and the replay left is never garbage: full collections need not walk it
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        service.storage.close()
