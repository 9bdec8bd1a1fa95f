"""Challenges, servers and requests for the tests of challenge files and ``ladderlab serve``."""

from __future__ import annotations

import atexit
import io
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

TEAMS = ("alpha", "beta", "gamma", "delta")


def write_challenge(folder: Path, n: int = 400, scorer: str = "zero-one", mechanism: str = "ladder",
                    params: str = "eta = 0.01", rules: str = "per_day = 1000", limits: str = "",
                    teams: tuple[str, ...] = TEAMS, seed: int = 0, extra: str = "", name: str = "test") -> Path:
    """A challenge of ``n`` holdout rows (half public, by a split column) with labels from a
    seeded Generator: 0/1 for label scorers, standard normal for real-valued ones."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    regression = scorer in ("squared", "absolute", "rmse", "mse", "mae", "pearson", "spearman", "ccc")
    labels = rng.standard_normal(n) if regression else rng.integers(0, 2, n).astype(float)
    ids = rng.permutation(n) + 1000  # not in order: the published order sorts them
    split = np.where(rng.permutation(n) < n // 2, "public", "final")
    pd.DataFrame({"id": ids, "label": labels, "split": split}).to_csv(folder / "labels.csv", index=False)
    team_tables = "\n".join(f'[[teams]]\nname = "{team}"\n' for team in teams)
    path = folder / f"{name}.toml"
    path.write_text(f"""schema_version = 1
name = "{name}"
scorer = "{scorer}"
{extra}
[labels]
file = "labels.csv"

[split]
column = "split"

[mechanism]
id = "{mechanism}"
params = {{ {params} }}

[rules]
{rules}

[limits]
{limits}

{team_tables}""")
    return path


class _LoopbackServer:
    """uvicorn in a thread of this process, on a free loopback port, serving whatever ASGI app
    ``app`` is at the moment of a request."""

    def __init__(self) -> None:
        import uvicorn

        from ladderlab.serve.server import listen

        self.app: Any = None
        self.socket = listen("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        config = uvicorn.Config(self._forward, interface="asgi3", log_level="warning", access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)

    async def _forward(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.socket.close()


_idle_servers: list[_LoopbackServer] = []
atexit.register(lambda: [server.stop() for server in _idle_servers])


class ThreadServer:
    """The app of a service over HTTP on loopback, served by uvicorn in a thread of this process.

    The servers outlive the ``with``: each one borrows an idle server (starting one only
    when none is idle) and puts the service's app on it, because starting and stopping a
    server took longer than most of the tests that use one."""

    def __init__(self, service: Any):
        from ladderlab.serve.app import create_app

        self.service = service
        self.app = create_app(service)

    def __enter__(self) -> ThreadServer:
        self._server = _idle_servers.pop() if _idle_servers else _LoopbackServer()
        self._server.app = self.app
        self.url = self._server.url
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.app = None
        _idle_servers.append(self._server)


def open_service(challenge_path: Path, url: str, secret: int = 1234) -> tuple[Any, dict[str, str]]:
    """A service on the log at ``url``, opened; with the tokens it issued."""
    from ladderlab.certification import challenge as challenges
    from ladderlab.serve.service import Service
    from ladderlab.serve.storage import Storage

    service = Service(challenges.load(challenge_path), Storage(url), secret)
    return service, service.open()


def npy(rows: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(rows, dtype=np.float64), allow_pickle=False)
    return buffer.getvalue()


def request(url: str, token: str, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    """One request; the body as JSON where it is JSON."""
    from ladderlab.serve.client import Connection

    connection = Connection(url, token)
    try:
        status, answer_headers, data = connection.request(method, path, body, headers)
    finally:
        connection.close()
    if answer_headers.get("content-type", "").startswith("application/json"):
        return status, answer_headers, json.loads(data)
    return status, answer_headers, data


def page_request(url: str, method: str, path: str, fields: dict[str, str] | None = None, cookie: str | None = None,
                 headers: dict[str, str] | None = None, body: bytes | None = None
                 ) -> tuple[int, list[tuple[str, str]], bytes]:
    """One request of the page: a form of ``fields`` (URL-encoded; else ``body``) and a ``Cookie``
    header; the status, the headers (in order, repeated ones kept) and the body."""
    import http.client
    import urllib.parse

    address = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    sent = dict(headers or {})
    if fields is not None:
        body = urllib.parse.urlencode(fields).encode()
        sent["Content-Type"] = "application/x-www-form-urlencoded"
    if cookie:
        sent["Cookie"] = cookie
    try:
        connection.request(method, path, body=body, headers=sent)
        response = connection.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        connection.close()


def set_cookies(headers: list[tuple[str, str]]) -> list[str]:
    """The ``Set-Cookie`` headers of an answer."""
    return [value for name, value in headers if name.lower() == "set-cookie"]


class Browser:
    """The page as a browser uses it: the cookies it was given, sent back; each form posted with the
    ``csrf`` field of the page it came from (unless the test gives its own)."""

    def __init__(self, url: str):
        self.url = url
        self.cookies: dict[str, str] = {}

    def cookie(self) -> str:
        return "; ".join(f"{name}={value}" for name, value in self.cookies.items())

    def request(self, method: str, path: str, fields: dict[str, str] | None = None,
                headers: dict[str, str] | None = None, body: bytes | None = None
                ) -> tuple[int, list[tuple[str, str]], bytes]:
        if method == "POST" and fields is not None and "csrf" not in fields:
            fields = {**fields, "csrf": self.csrf()}
        status, answer_headers, body = page_request(self.url, method, path, fields, self.cookie(), headers, body)
        for header in set_cookies(answer_headers):
            name, _, value = header.split(";")[0].partition("=")
            if "max-age=0" in header.lower().replace(" ", ""):
                self.cookies.pop(name, None)
            else:
                self.cookies[name] = value
        return status, answer_headers, body

    def get(self, path: str) -> tuple[int, list[tuple[str, str]], bytes]:
        return self.request("GET", path)

    def post(self, path: str, fields: dict[str, str]) -> tuple[int, list[tuple[str, str]], bytes]:
        return self.request("POST", path, fields)

    def csrf(self) -> str:
        """The ``csrf`` field of the page's forms (reading the page once for its form cookie)."""
        import re

        status, _, body = self.get("/")
        found = re.search(rb'name="csrf" value="([0-9a-f]+)"', body)
        assert status == 200 and found, (status, body[:300])
        return found.group(1).decode()

    def sign_in(self, token: str) -> Browser:
        status, _, body = self.post("/login", {"token": token})
        assert status == 303, (status, body[:300])
        return self


def sign_in(url: str, token: str) -> Browser:
    """A browser signed in on the page with ``token``."""
    return Browser(url).sign_in(token)


def upload(url: str, token: str, rows: np.ndarray, key: str | None = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/x-npy", **({"Idempotency-Key": key} if key else {})}
    status, _, answer = request(url, token, "POST", "/api/submissions", npy(rows), headers)
    return status, answer


@contextmanager
def shared_postgres(run_folder: Path) -> Iterator[Any]:
    """One throwaway PostgreSQL cluster for all the test processes of a run (pytest-xdist's
    workers share ``run_folder``): the first process that needs it starts it, the last one
    that holds it stops it, counted in a file under a file lock; its reaper stops it when
    every holder has ended, also by SIGKILL (:mod:`ladderlab.serve.reaper`). Without disk flushes."""
    import fcntl

    from ladderlab.serve.postgres import TemporaryPostgres

    @contextmanager
    def holders() -> Iterator[dict[str, Any]]:
        with open(run_folder / "postgres.lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            record = run_folder / "postgres.json"
            state = json.loads(record.read_text()) if record.exists() else {"folder": None, "holders": 0}
            yield state
            record.write_text(json.dumps(state))

    with holders() as state:
        if state["holders"] == 0:  # a run killed with SIGKILL takes its cluster with it
            cluster = TemporaryPostgres(durable=False).start(reaped=True)
            state["folder"] = str(cluster.folder)
        else:
            cluster = TemporaryPostgres(state["folder"], durable=False)
            cluster.hold()
        state["holders"] += 1
    try:
        yield cluster
    finally:
        with holders() as state:
            state["holders"] -= 1
            if state["holders"] == 0:
                cluster.stop()


def write_secret(path: Path, secret: int) -> None:
    """A secret seed file as ``serve`` writes one: readable by its owner alone."""
    path.write_text(f"{secret}\n")
    path.chmod(0o600)
