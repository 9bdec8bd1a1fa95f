"""The HTTP API and the page, with FastAPI (OpenAPI schema at ``/openapi.json``).

Participants (``Authorization: Bearer TEAM-TOKEN``):

- ``POST /api/submissions``: upload a prediction (CSV, Parquet or JSON by id) or rows
  of them (``application/x-npy``); an ``Idempotency-Key`` header makes a retry count once;
- ``GET /api/submissions``: the team's own submissions (released values);
- ``PUT`` / ``DELETE /api/submissions/{id}/selection``: select for the final ranking (rule k);
- ``GET /api/me``: what the caps still allow.

Everyone: ``GET /api/challenge`` (ids in the published order, scorer, rules, mechanism),
``GET /api/public-data`` (training data and holdout inputs, ``.npz``),
``GET /api/leaderboard``, after the close ``GET /api/final-leaderboard`` (the final ranking with its
rank certificate), ``POST /api/register`` (a new team, with the invite code), the page (its routes:
:mod:`ladderlab.serve.web`), ``/sample_submission.csv`` and ``/static/`` (the page's style sheet;
:mod:`ladderlab.serve.perimeter` says what every answer carries).

The organiser (``Bearer ORGANISER-TOKEN``): ``POST /api/organiser/close``, ``GET
/api/organiser/links`` (JSON; ``links.parquet``: Parquet) at any time, and after the close ``GET
/api/organiser/final?linked=flag|merge|disqualify``, ``GET /api/organiser/export`` (Parquet) and
``GET /api/organiser/private-losses?linked=…``. These ``GET`` requests also take the organiser's
session of the page instead of the token (they change nothing).

A platform's scoring program (``Bearer SCORER-TOKEN``, :mod:`ladderlab.platforms.relay`): ``POST
/api/scorer/submissions`` for the team of ``X-Ladderlab-Team-Token``, or the platform's team
``X-Ladderlab-Team`` (:meth:`~ladderlab.serve.service.Service.scored_team`), answered as that team's upload.

Every refusal is a 4xx JSON ``{"error": …, "reason": …}`` that names the problem and
changes nothing; ``Retry-After`` says when a cap or the rate limit allows again. A database that
does not answer (restarting, down, its disk full) is a 503 ``database`` with ``Retry-After``, not a 500.
"""

from __future__ import annotations

import functools
import io
import json
import math
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import OperationalError
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from ladderlab.engines.linked_ranking import DEFAULT_LINKED_POLICY, check_linked_policy
from ladderlab.scoring import PredictionKind
from ladderlab.serve.organiser_links import link_table
from ladderlab.serve.perimeter import SecurityHeaders
from ladderlab.serve.service import (
    Accepted,
    Service,
    ServiceError,
    check_idempotency_key,
    log,
)
from ladderlab.serve.storage import REFUSED
from ladderlab.serve.uploads import UploadError, UploadReader
from ladderlab.serve.web import (
    TOKEN_FORM_BYTES,
    bounded,
    organiser_session,
    page_routes,
)
from ladderlab.validation import PredictionError

DATABASE_RETRY_SECONDS = 5
"""``Retry-After`` of a 503 ``database``: the log's database did not answer (restarting, down, disk full)."""


def create_app(service: Service) -> FastAPI:
    """The FastAPI application serving ``service``."""
    challenge = service.challenge
    reader = UploadReader(challenge)
    limits = challenge.spec.limits
    max_bytes = challenge.max_upload_bytes()
    split = challenge.split
    classes = split.public.classes
    app = FastAPI(title=f"ladderlab serve: {challenge.name}", docs_url=None, redoc_url=None,
                  description="A leaderboard that releases what a certified mechanism releases.")
    app.add_middleware(SecurityHeaders)
    app.mount("/static", StaticFiles(packages=[("ladderlab.serve", "static")]), name="static")

    @app.exception_handler(ServiceError)
    async def refused(_request: Request, error: ServiceError) -> JSONResponse:
        content: dict[str, Any] = {"error": str(error), "reason": error.reason}
        headers = {}
        if error.retry_after is not None:
            content["retry_after"] = error.retry_after
            headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
        return JSONResponse(content, status_code=error.status, headers=headers)

    @app.exception_handler(ClientDisconnect)
    async def gone(_request: Request, _error: ClientDisconnect) -> Response:
        """The client left, or its body was too slow (408 sent, :mod:`ladderlab.serve.limits`): no one reads this."""
        return Response(status_code=408)

    @app.exception_handler(OperationalError)
    async def database_unavailable(_request: Request, error: OperationalError) -> JSONResponse:
        # The server's log gets the database's own words; the participant, who cannot act on them, does not.
        log.error("the log's database failed: %s", str(error.orig).splitlines()[0] if error.orig else error)
        return JSONResponse({"error": "the leaderboard's database is unavailable; nothing was logged by this request "
                             "unless its Idempotency-Key finds it when you send it again in a few seconds",
                             "reason": "database", "retry_after": DATABASE_RETRY_SECONDS},
                            status_code=503, headers={"Retry-After": str(DATABASE_RETRY_SECONDS)})

    @app.exception_handler(UploadError)
    async def unreadable(_request: Request, error: UploadError) -> JSONResponse:
        return JSONResponse({"error": str(error), "reason": "invalid" if error.status == 422 else "unreadable"},
                            status_code=error.status)

    def validated(rows: np.ndarray) -> np.ndarray:
        try:
            return service.check(rows)
        except PredictionError as error:
            raise UploadError(f"id {reader.id_at(error.position)!r}: {error}") from None
        except ValueError as error:
            raise UploadError(str(error)) from None

    def upload(team: str, data: bytes, fmt: str, key: str | None) -> Accepted:
        service.admit(team)  # before the upload is read: a refused upload counts too
        return service.log_submission(team, validated(reader.read(data, fmt)), key)

    def bearer(request: Request) -> str:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token:
            raise ServiceError(401, "unauthorized", "send the token as 'Authorization: Bearer TOKEN'")
        return token.strip()

    def organiser(request: Request) -> None:
        """The organiser's token, or (without an ``Authorization`` header) the organiser's session of the page."""
        if "authorization" in request.headers or not organiser_session(service, request):
            service.check_organiser(bearer(request))

    async def body(request: Request, limit: int) -> bytes:
        return b"".join([chunk async for chunk in bounded(request, limit).stream()])

    @app.post("/api/submissions", status_code=201, summary="Upload a prediction, or rows of them (.npy)")
    async def submit(request: Request) -> JSONResponse:
        return await uploaded(request, service.team_of(bearer(request)))

    async def uploaded(request: Request, team: str) -> JSONResponse:
        """Read, score and log the body of an upload for ``team``: 201, or 200 for a retry."""
        fmt = reader.format_of(request.headers.get("content-type"))
        key = request.headers.get("idempotency-key")
        check_idempotency_key(key)
        data = await body(request, max_bytes)
        accepted = await run_in_threadpool(upload, team, data, fmt, key)
        return JSONResponse(_accepted_json(team, accepted), status_code=200 if accepted.repeated else 201)

    @app.post("/api/scorer/submissions", status_code=201,
              summary="A platform's scoring program uploads a prediction for a team (the scorer credential)")
    async def scorer_submit(request: Request) -> JSONResponse:
        return await uploaded(request, service.scored_team(bearer(request), request.headers.get("x-ladderlab-team-token"),
                                                           request.headers.get("x-ladderlab-team")))

    @app.get("/api/submissions", summary="The team's own submissions (released values only)")
    def own(request: Request) -> dict[str, Any]:
        team = service.team_of(bearer(request))
        return {"team": team, "submissions": service.own_submissions(team)}

    @app.put("/api/submissions/{submission_id}/selection", summary="Select a submission for the final ranking")
    def select(submission_id: int, request: Request) -> dict[str, Any]:
        team = service.team_of(bearer(request))
        service.select(team, submission_id, True)
        return {"team": team, "submission_id": submission_id, "selected": True}

    @app.delete("/api/submissions/{submission_id}/selection", summary="Unselect a submission")
    def unselect(submission_id: int, request: Request) -> dict[str, Any]:
        team = service.team_of(bearer(request))
        service.select(team, submission_id, False)
        return {"team": team, "submission_id": submission_id, "selected": False}

    @app.get("/api/me", summary="The team and what the caps still allow")
    def me(request: Request) -> dict[str, Any]:
        team = service.team_of(bearer(request))
        remaining_today, remaining_total = service.allowance(team)
        closed = service.closed_at()
        return {"team": team, "remaining_today": remaining_today, "remaining_total": remaining_total,
                "closed": closed is not None}

    @app.get("/api/challenge", summary="The challenge: ids in the published order, scorer, rules, mechanism")
    def challenge_answer() -> Response:
        return Response(description(), media_type="application/json")

    @functools.cache  # the answers anyone may ask for without a token are built once: they never change
    def description() -> bytes:
        return JSONResponse(describe()).body

    def describe() -> dict[str, Any]:
        from ladderlab.certification.challenge import certificate_problems

        certified = not certificate_problems(challenge)
        spec = challenge.spec
        rules = spec.rules
        public = split.public
        mechanism = challenge.mechanism()
        return {
            "name": spec.name, "title": spec.title, "scorer": service.scorer.name,
            "greater_is_better": service.scorer.greater_is_better, "task_type": public.task_type,
            "prediction_kind": reader.kind.value, "classes": None if classes is None else classes.tolist(),
            "class_names": None if challenge.class_names is None else list(challenge.class_names),
            "prediction_range": None if public.prediction_range is None else list(public.prediction_range),
            "holdout_size": int(challenge.ids.size), "id_column": spec.labels.id_column,
            "ids": challenge.ids.tolist(),
            "mechanism": {"id": mechanism.id, "params": spec.mechanism.params}, "certified": certified,
            "rules": {"per_day": rules.per_day, "total": rules.total,
                      "start": None if rules.start is None else rules.start.isoformat(),
                      "end": None if rules.end is None else rules.end.isoformat(),
                      "selection": rules.selection, "accounts": rules.accounts},
            "limits": {"max_upload_bytes": max_bytes, "uploads_per_second": limits.uploads_per_second,
                       "burst": limits.burst},
        }

    @app.get("/api/public-data", summary="Training data and holdout inputs (.npz, rows of X_holdout in the id order)")
    def public_data() -> Response:
        return Response(public_npz(), media_type="application/octet-stream")

    @functools.cache
    def public_npz() -> bytes:
        buffer = io.BytesIO()
        public = split.public
        np.savez(buffer, X_train=public.X_train, y_train=public.y_train, X_holdout=public.X_holdout)
        return buffer.getvalue()

    @app.get("/api/leaderboard", summary="The public leaderboard (released values only)")
    def public_leaderboard() -> dict[str, Any]:
        return {"challenge": challenge.name, "scorer": service.scorer.name,
                "greater_is_better": service.scorer.greater_is_better, "teams": service.leaderboard()}

    @app.get("/api/final-leaderboard", summary="The final leaderboard with its rank certificate (after the close)")
    def final_leaderboard() -> dict[str, Any]:
        board = service.public_final()
        if board is None:
            raise ServiceError(409, "open", "the challenge is still open: the final leaderboard is published at the close")
        return board

    @app.post("/api/register", status_code=201, summary="Register a new team with the invite code; its token, once")
    async def register(request: Request) -> JSONResponse:
        try:
            asked = json.loads(await body(request, TOKEN_FORM_BYTES))
        except (UnicodeDecodeError, json.JSONDecodeError):
            asked = None
        if not isinstance(asked, dict) or not all(isinstance(asked.get(key), str) for key in ("team", "invite")):
            raise ServiceError(422, "invalid", 'send JSON {"team": NAME, "invite": CODE}')
        address = request.client.host if request.client else "unknown"
        token = await run_in_threadpool(service.register, asked["team"], asked["invite"], address)
        return JSONResponse({"team": asked["team"], "token": token}, status_code=201,
                            headers={"Cache-Control": "no-store"})

    @app.post("/api/organiser/close", summary="Close the challenge: no more submissions")
    def close(request: Request, linked: str | None = None) -> dict[str, Any]:
        service.check_organiser(bearer(request))
        closed = service.close(None if linked is None else linked_policy(linked))
        return {"closed_at": closed.isoformat()}

    def linked_policy(value: str) -> str:
        try:
            return check_linked_policy(value, "the query parameter linked")
        except ValueError as error:
            raise ServiceError(400, "invalid", str(error)) from None

    @app.get("/api/organiser/links", summary="The linked groups: accounts, first link, the submission pairs and D")
    def organiser_links(request: Request) -> dict[str, Any]:
        organiser(request)
        return service.links()

    @app.get("/api/organiser/links.parquet", summary="The links as Parquet (one row per link)")
    def organiser_links_parquet(request: Request) -> Response:
        organiser(request)
        return Response(link_table(service.links()), media_type="application/vnd.apache.parquet",
                        headers={"Content-Disposition": f'attachment; filename="{challenge.name}-links.parquet"'})

    @app.get("/api/organiser/final", summary="The final leaderboard under the selection rule (after the close)")
    def final(request: Request, linked: str = DEFAULT_LINKED_POLICY) -> dict[str, Any]:
        organiser(request)
        return service.final(linked_policy(linked))

    @app.get("/api/organiser/export", summary="The submissions log as Parquet (after the close)")
    def export(request: Request) -> Response:
        organiser(request)
        return Response(service.export(), media_type="application/vnd.apache.parquet",
                        headers={"Content-Disposition": f'attachment; filename="{challenge.name}-log.parquet"'})

    @app.get("/api/organiser/private-losses",
             summary="Per-sample private losses of each team's counted submission, as Parquet (after the close)")
    def private_losses(request: Request, linked: str = DEFAULT_LINKED_POLICY) -> Response:
        organiser(request)
        return Response(service.private_losses(linked_policy(linked)), media_type="application/vnd.apache.parquet",
                        headers={"Content-Disposition": f'attachment; filename="{challenge.name}-private-losses.parquet"'})

    value_columns = ", ".join(reader.class_columns) if reader.kind is PredictionKind.PROBABILITIES else "prediction"

    @app.get("/sample_submission.csv", include_in_schema=False)
    def sample() -> Response:
        return Response(sample_csv(), media_type="text/csv")

    @functools.cache
    def sample_csv() -> bytes:
        columns = reader.class_columns or ["prediction"]
        fill = (f"{1.0 / len(columns):g}" if reader.class_columns else reader.class_names[0] if reader.named_labels
                else f"{float(classes[0] if classes is not None else 0.0):g}")
        lines = [",".join([challenge.spec.labels.id_column, *columns])]
        lines += [",".join([str(identifier), *[fill] * len(columns)]) for identifier in challenge.ids]
        return ("\n".join(lines) + "\n").encode()

    app.include_router(page_routes(service, reader, upload, value_columns))
    return app


def _accepted_json(team: str, accepted: Accepted) -> dict[str, Any]:
    return {
        "team": team,
        "submissions": [{"submission_id": entry.submission_id, "sequence": entry.team_sequence,
                         "released": None if entry.decision == REFUSED else entry.released}
                        for entry in accepted.entries],
        "remaining_today": accepted.remaining_today,
        "remaining_total": accepted.remaining_total,
        "repeated": accepted.repeated,
    }
