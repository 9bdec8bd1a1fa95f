"""Running the application on uvicorn, on a socket bound before the server starts (so that
``--port 0`` can print the port it got)."""

from __future__ import annotations

import socket

from ladderlab.serve.service import Service


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise ValueError(f"--host {host} --port {port}: cannot listen there: {error.strerror or error}") from None
    sock.listen(1024)
    return sock


def run(service: Service, sock: socket.socket, access_log: bool = True) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM end it cleanly; the log needs no shutdown)."""
    import gc

    import uvicorn

    from ladderlab.serve.app import create_app

    config = uvicorn.Config(create_app(service), access_log=access_log, log_level="info", timeout_keep_alive=30,
                            server_header=False)
    gc.collect()
    gc.freeze()  # what the imports and the replay left is never garbage: full collections need not walk it
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        service.storage.close()
