"""RemoteBoard: the :class:`~ladderlab.board.Board` an attack holds, over HTTP to ``ladderlab serve``.

Every attack plugin plays against a live server through it unchanged:
``submit_many`` sends the rows as one ``.npy`` upload (one request per batch, like one
message of the isolation pipe), the transcript, the count and the budget are kept
here. It uses only the standard library's ``http.client`` and NumPy, and holds no
credentials but the team's token.

A request that fails on the way (connection lost, server restarting, rate limit) is
sent again with the same ``Idempotency-Key``, so it counts once. An address that never
answered in this process fails within about a second, saying so: patience is for a
server that answered before and is restarting. A cap the server
enforces raises :class:`~ladderlab.board.BudgetExceeded`, a refused prediction
``ValueError``, both with the server's message.
"""

from __future__ import annotations

import http.client
import io
import json
import secrets
import time
from typing import Any
from urllib.parse import SplitResult, urlsplit

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ladderlab.attack import Attack
from ladderlab.board import Board, BudgetExceeded
from ladderlab.mechanism import check_guesses, check_repeats
from ladderlab.seeding import stream
from ladderlab.tasks import PublicData

RETRIES = 20
RETRY_PAUSE = 0.25
FIRST_CONTACT_RETRIES = 3
CONNECT_SECONDS = 10.0
_answered: set[tuple[str, int | None]] = set()  # the addresses a server answered at, in this process


class RemoteError(RuntimeError):
    """No server answered, or it answered something the client cannot use; the message says which."""


def check_address(url: str, token: str) -> SplitResult:
    """``url`` split, when it is a server's address (``http(s)://host[:port][/path]``, or
    ``host:port``) and ``token`` (empty: anonymous) can travel in an HTTP header; ``ValueError``
    naming either if not."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if (parts.scheme not in ("http", "https") or not parts.hostname or port == -1
            or any(character.isspace() or not character.isprintable() for character in parts.netloc)):
        raise ValueError(f"URL {url!r}: give the server's address, e.g. http://127.0.0.1:8000")
    if not token.isascii() or not token.isprintable() or any(character.isspace() for character in token):
        raise ValueError(f"--token {token!r}: a token is the printable text 'ladderlab serve' issued, without spaces")
    return parts


class Connection:
    """One keep-alive HTTP connection to a server, with the team's token, that reconnects."""

    def __init__(self, url: str, token: str, timeout: float = 120.0):
        parts = check_address(url, token)
        self.base = parts.path.rstrip("/")
        self._factory = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self._address = (parts.hostname, parts.port)
        self._timeout = timeout
        self._token = token
        self._connection: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
                ) -> tuple[int, dict[str, str], bytes]:
        """Send a request, retrying on lost connections; return status, headers and body."""
        headers = {"Authorization": f"Bearer {self._token}", **(headers or {})}
        attempt = 0
        while True:
            try:
                if self._connection is None:
                    self._connection = self._connect()
                self._connection.request(method, self.base + path, body=body, headers=headers)
                response = self._connection.getresponse()
                answer = response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
                _answered.add(self._address)
                return answer
            except (ConnectionError, http.client.HTTPException, TimeoutError, OSError) as error:
                self.close()
                attempt += 1
                if self._address not in _answered and attempt >= FIRST_CONTACT_RETRIES:
                    host, port = self._address
                    raise RemoteError(f"no server answered at {host}:{port} ({error}): is `ladderlab serve` running "
                                      f"there?") from error
                if attempt >= RETRIES:
                    raise
                time.sleep(RETRY_PAUSE * attempt)

    def _connect(self) -> http.client.HTTPConnection:
        """A new connection, given at most ``CONNECT_SECONDS`` to connect (an address nobody
        answers at should not take the whole request timeout)."""
        host, port = self._address
        connection = self._factory(host, port, timeout=min(CONNECT_SECONDS, self._timeout))
        connection.connect()
        connection.sock.settimeout(self._timeout)
        return connection

    def json(self, method: str, path: str) -> Any:
        status, _, data = self.request(method, path)
        if status != 200:
            raise RemoteError(f"{method} {path}: {status} {_message(data)}")
        return json.loads(data)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class RemoteBoard:
    """A participant's board on a ``ladderlab serve`` leaderboard.

    ``budget`` is the attacker's own limit (None: what the server allows); ``remaining``
    is the smaller of what it leaves and what the server's caps leave.
    """

    __slots__ = ("_connection", "_server_left", "_transcript", "budget", "classes", "holdout_size",
                 "prediction_ndim", "challenge")

    def __init__(self, url: str, token: str, budget: int | None = None):
        if budget is not None and budget < 0:
            raise ValueError(f"budget must be ≥ 0 or None, got {budget}")
        if not token:
            raise ValueError("--token '': a team plays with the token 'ladderlab serve' issued it")
        self._connection = Connection(url, token)
        self.challenge = self._connection.json("GET", "/api/challenge")
        me = self._connection.json("GET", "/api/me")
        self._server_left = _smallest(me["remaining_today"], me["remaining_total"])
        self._transcript: list[float] = []
        self.budget = budget
        self.holdout_size = int(self.challenge["holdout_size"])
        kind = self.challenge["prediction_kind"]
        self.classes = np.asarray(self.challenge["classes"] if kind != "real" else [], dtype=float)
        self.prediction_ndim = 2 if kind == "probabilities" else 1

    submissions = Board.submissions
    transcript = Board.transcript
    submit = Board.submit

    @property
    def remaining(self) -> int | None:
        own = None if self.budget is None else self.budget - self.submissions
        return _smallest(own, self._server_left)

    def oracle_jumps(self, since: int) -> int:
        raise PermissionError("a remote leaderboard has no oracle")

    def submit_many(self, predictions: ArrayLike, repeats: int = 1,
                    guesses: ArrayLike | None = None) -> NDArray[np.float64]:
        """Submit the rows of a matrix in order, each ``repeats`` times in a row (one request).
        The service's API carries predictions only: ``guesses`` may be given (as :class:`Board`
        takes them) but must all be NaN (no guess)."""
        check_repeats(repeats)
        array = np.asarray(predictions, dtype=np.float64)
        if array.ndim == self.prediction_ndim:
            array = array[None]
        given = check_guesses(guesses, array.shape[0])
        if given is not None and not np.isnan(given).all():
            raise ValueError("guesses: a served leaderboard takes predictions only, not your estimates of their scores")
        if repeats > 1:
            array = np.repeat(array, repeats, axis=0)
        left = self.remaining
        if left is not None and array.shape[0] > left:
            raise BudgetExceeded(f"{array.shape[0]} submissions would exceed the budget ({left} left)")
        buffer = io.BytesIO()
        np.save(buffer, array, allow_pickle=False)
        headers = {"Content-Type": "application/x-npy", "Idempotency-Key": secrets.token_hex(16)}
        while True:
            status, response_headers, data = self._connection.request("POST", "/api/submissions", buffer.getvalue(), headers)
            if status in (200, 201):
                break
            answer = _answer(data)
            reason = answer.get("reason")
            if (status == 429 and reason == "rate") or status in (502, 503, 504):
                time.sleep(float(answer.get("retry_after") or response_headers.get("retry-after", RETRY_PAUSE)))
                continue
            if status == 429 or (status == 403 and reason in ("closed", "not-open")):
                raise BudgetExceeded(_message(data))
            if status in (400, 413, 415, 422):
                raise ValueError(_message(data))
            raise RemoteError(f"POST /api/submissions: {status} {_message(data)}")
        answer = json.loads(data)
        released = np.array([row["released"] for row in answer["submissions"]], dtype=np.float64)
        self._server_left = _smallest(answer["remaining_today"], answer["remaining_total"])
        self._transcript.extend(released.tolist())
        return released

    def public_data(self) -> PublicData:
        """The public data the challenge publishes (training data, holdout inputs), as an attack receives it."""
        status, _, data = self._connection.request("GET", "/api/public-data")
        if status != 200:
            raise RemoteError(f"GET /api/public-data: {status} {_message(data)}")
        arrays = np.load(io.BytesIO(data), allow_pickle=False)
        info = self.challenge
        classes = None if info["classes"] is None else np.asarray(info["classes"], dtype=float)
        prediction_range = None if info["prediction_range"] is None else tuple(info["prediction_range"])
        return PublicData(arrays["X_train"], arrays["y_train"], arrays["X_holdout"], info["task_type"], info["scorer"],
                          classes, None, prediction_range)

    def close(self) -> None:
        self._connection.close()


def attack_stream(seed: int, attack: Attack) -> np.random.Generator:
    """The attacker's coins for a remote attack: from its seed and the attack's identity."""
    return stream(seed, "remote-attack", attack.id, attack.identity_params())


def play_remote(url: str, token: str, attack: Attack, budget: int | None, seed: int
                ) -> tuple[RemoteBoard, NDArray[np.float64]]:
    """Play ``attack`` against the server at ``url`` as the team of ``token``; return its board
    (the transcript) and its final prediction."""
    attack.validate_params()
    board = RemoteBoard(url, token, budget)
    try:
        data = board.public_data()
        reason = attack.incompatibility(data)
        if reason:
            raise ValueError(reason)
        final = np.asarray(attack.run(board, data, attack_stream(seed, attack)), dtype=np.float64)
    finally:
        board.close()
    return board, final


def _smallest(*values: int | None) -> int | None:
    present = [value for value in values if value is not None]
    return min(present) if present else None


def _answer(data: bytes) -> dict[str, Any]:
    """The server's JSON error object, or an empty one."""
    try:
        answer = json.loads(data)
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def _message(data: bytes) -> str:
    return str(_answer(data).get("error") or data[:200].decode(errors="replace"))
