"""Challenges, servers and requests for the tests of challenge files and ``ladderlab serve``."""

from __future__ import annotations

import io
import json
import threading
import time
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


class ThreadServer:
    """The app of a service on uvicorn in a thread of this process, on a free loopback port."""

    def __init__(self, service: Any):
        import uvicorn

        from ladderlab.serve.app import create_app
        from ladderlab.serve.server import listen

        self.service = service
        self.socket = listen("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        config = uvicorn.Config(create_app(service), log_level="warning", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.socket.close()


def open_service(challenge_path: Path, url: str, secret: int = 1234) -> tuple[Any, dict[str, str]]:
    """A service on the log at ``url``, opened; with the tokens it issued."""
    from ladderlab import challenge as challenges
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


def upload(url: str, token: str, rows: np.ndarray, key: str | None = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/x-npy", **({"Idempotency-Key": key} if key else {})}
    status, _, answer = request(url, token, "POST", "/api/submissions", npy(rows), headers)
    return status, answer
