"""The page's routes: the leaderboard, signing in and out, a team's page (upload, final selection),
registration with an invite code, and the organiser's page (close, invite code, downloads).

Everything a route does goes through the service's own functions, the ones the API calls
(:mod:`ladderlab.serve.app`): the page has no rule of its own. Who is asking is the session of the
browser (:mod:`ladderlab.serve.sessions`); every ``POST`` is checked to come from the page itself
before its body is read. A refusal is the page again with the service's one-line reason and its
HTTP status. Pages that show a team's or the organiser's data are sent with
``Cache-Control: no-store``. The style and the icon are static files of the package.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import resources

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.types import Message

from ladderlab.engines.linked_ranking import DEFAULT_LINKED_POLICY, check_linked_policy
from ladderlab.serve import pages
from ladderlab.serve.events import text_time
from ladderlab.serve.service import ORGANISER, Accepted, Service, ServiceError
from ladderlab.serve.sessions import (
    SESSION_SECONDS,
    check_same_origin,
    cookie_name,
    sign_in,
    sign_out,
    signed_in,
)
from ladderlab.serve.uploads import UploadError, UploadReader

MULTIPART_OVERHEAD = 64 << 10
"""Room for a form's part headers beside the file."""
TOKEN_FORM_BYTES = 8192
"""The most a form of a few short fields (signing in, registering, selecting) may send."""
STATIC_TYPES = {"page.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml"}
PRIVATE = {"Cache-Control": "no-store"}
"""A page with a team's or the organiser's data: no cache keeps it."""

Upload = Callable[[str, bytes, str, "str | None"], Accepted]


def page_routes(service: Service, reader: UploadReader, upload: Upload, value_columns: str) -> APIRouter:
    """The page's routes for ``service``; ``upload`` is the API's (it counts, reads, validates and logs
    an upload for a team)."""
    router = APIRouter(include_in_schema=False)
    cookie = cookie_name(service)
    max_bytes = service.challenge.max_upload_bytes()

    def who(request: Request) -> str | None:
        return signed_in(service, request.cookies.get(cookie))

    def html(text: str, status: int = 200, private: bool = True) -> HTMLResponse:
        return HTMLResponse(text, status_code=status, headers=PRIVATE if private else None)

    def refused(error: ServiceError | UploadError, holder: str | None) -> HTMLResponse:
        status = error.status
        if holder is None or holder == ORGANISER:
            text = (pages.organiser_page(service, str(error), False) if holder == ORGANISER
                    else pages.index(service, None, str(error), False))
        else:
            text = pages.team_page(service, holder, value_columns, str(error), False)
        return html(text, status)

    def required(request: Request, wanted: str) -> str:
        """The session's holder, a team (``wanted`` ``team``) or the organiser, else a 401."""
        holder = who(request)
        if holder is None or (holder == ORGANISER) != (wanted == ORGANISER):
            whose = "the organiser's token" if wanted == ORGANISER else "your team's token"
            raise ServiceError(401, "unauthorized", f"sign in with {whose} first")
        return holder

    async def form(request: Request, limit: int, files: int = 0) -> FormData:
        return await bounded(request, limit).form(max_files=files, max_fields=4, max_part_size=max(limit, 4096))

    @router.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        holder = who(request)
        return html(pages.index(service, holder), private=holder is not None)

    @router.get("/static/{name}")
    def static(name: str) -> Response:
        if name not in STATIC_TYPES:
            return Response("no such file", status_code=404, media_type="text/plain")
        return Response(_static(name), media_type=STATIC_TYPES[name], headers={"Cache-Control": "max-age=3600"})

    @router.post("/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        try:
            check_same_origin(request.headers)
            token = str((await form(request, TOKEN_FORM_BYTES)).get("token") or "").strip()
            value, holder = await run_in_threadpool(sign_in, service, token)
        except (ServiceError, UploadError) as error:
            return refused(error, None)
        response = RedirectResponse("organiser" if holder == ORGANISER else "team", status_code=303)
        _set_cookie(response, request, cookie, value)
        return response

    @router.post("/logout", response_class=HTMLResponse)
    def logout(request: Request) -> Response:
        try:
            check_same_origin(request.headers)
        except ServiceError as error:
            return refused(error, who(request))
        sign_out(service, request.cookies.get(cookie))
        response = html(pages.message_page(service, "Signed out: this browser holds no session of the leaderboard.",
                                           True, None))
        response.delete_cookie(cookie, path="/", secure=request.url.scheme == "https", httponly=True, samesite="strict")
        return response

    @router.get("/team", response_class=HTMLResponse)
    def team(request: Request) -> HTMLResponse:
        try:
            holder = required(request, "team")
        except ServiceError as error:
            return refused(error, None)
        return html(pages.team_page(service, holder, value_columns))

    @router.post("/upload", response_class=HTMLResponse)
    async def page_upload(request: Request) -> HTMLResponse:
        holder = None
        try:
            check_same_origin(request.headers)
            holder = required(request, "team")
            upload_file = (await form(request, max_bytes + MULTIPART_OVERHEAD, files=1)).get("file")
            if upload_file is None or isinstance(upload_file, str):
                raise UploadError("choose a file to upload")
            data = await upload_file.read()
            fmt = reader.format_of(upload_file.content_type, upload_file.filename)
            accepted = await run_in_threadpool(upload, holder, data, fmt, None)
        except (ServiceError, UploadError) as error:
            return refused(error, holder)
        entry = accepted.entries[-1]
        message = (f"Submission {entry.team_sequence} of {holder} (id {entry.submission_id}): released "
                   f"{service.scorer.name} {pages.released_text(entry.released, service.challenge.release_step())}")
        return html(pages.team_page(service, holder, value_columns, message), 201)

    @router.post("/select", response_class=HTMLResponse)
    async def page_select(request: Request) -> HTMLResponse:
        holder = None
        try:
            check_same_origin(request.headers)
            holder = required(request, "team")
            fields = await form(request, TOKEN_FORM_BYTES)
            submission = str(fields.get("submission_id") or "")
            if not submission.isdigit() or len(submission) > 18:
                raise ServiceError(422, "invalid", f"submission_id {submission[:20]!r}: give a submission's number")
            selected = fields.get("selected") == "yes"
            await run_in_threadpool(service.select, holder, int(submission), selected)
        except (ServiceError, UploadError) as error:
            return refused(error, holder)
        message = f"Submission {submission} is {'selected' if selected else 'no longer selected'} for the final ranking."
        return html(pages.team_page(service, holder, value_columns, message))

    @router.get("/register", response_class=HTMLResponse)
    def register_form() -> HTMLResponse:
        return html(pages.register_page(service), private=False)

    @router.post("/register", response_class=HTMLResponse)
    async def register(request: Request) -> HTMLResponse:
        try:
            check_same_origin(request.headers)
            fields = await form(request, TOKEN_FORM_BYTES)
            name = str(fields.get("team") or "")
            invite = str(fields.get("invite") or "")
            address = request.client.host if request.client else "unknown"
            token = await run_in_threadpool(service.register, name, invite, address)
            value, _ = await run_in_threadpool(sign_in, service, token)
        except (ServiceError, UploadError) as error:
            return html(pages.register_page(service, str(error), False), error.status)
        response = html(pages.team_page(service, name, value_columns, token=token), 201)
        _set_cookie(response, request, cookie, value)
        return response

    @router.get("/organiser", response_class=HTMLResponse)
    def organiser(request: Request) -> HTMLResponse:
        try:
            required(request, ORGANISER)
        except ServiceError as error:
            return refused(error, None)
        return html(pages.organiser_page(service))

    @router.post("/close", response_class=HTMLResponse)
    async def close(request: Request) -> HTMLResponse:
        holder = None
        try:
            check_same_origin(request.headers)
            holder = required(request, ORGANISER)
            fields = await form(request, TOKEN_FORM_BYTES)
            if fields.get("confirm") != "yes":
                raise ServiceError(422, "invalid", "tick the box that confirms the close")
            try:
                linked = check_linked_policy(str(fields.get("linked") or DEFAULT_LINKED_POLICY))
            except ValueError as error:
                raise ServiceError(422, "invalid", str(error)) from None
            closed = await run_in_threadpool(service.close, linked)
            await run_in_threadpool(service.public_final)
        except (ServiceError, UploadError) as error:
            return refused(error, holder)
        return html(pages.organiser_page(service, f"The challenge closed at {text_time(closed)}: the leaderboard "
                                                  "now shows everyone the final ranking with its rank certificate."))

    @router.post("/invite", response_class=HTMLResponse)
    async def invite(request: Request) -> HTMLResponse:
        holder = None
        try:
            check_same_origin(request.headers)
            holder = required(request, ORGANISER)
            fields = await form(request, TOKEN_FORM_BYTES)
            if fields.get("action") == "stop":
                service.stop_registration()
                return html(pages.organiser_page(service, "Registration is closed: no team can register now."))
            code = service.set_invite(str(fields.get("code") or "") or None)
        except (ServiceError, UploadError) as error:
            return refused(error, holder)
        return html(pages.organiser_page(service, "The invite code is set; the earlier one no longer works.",
                                         invite=code))

    return router


def organiser_session(service: Service, request: Request) -> bool:
    """Whether the request carries the organiser's session (the API's organiser downloads take it
    instead of a bearer token)."""
    return signed_in(service, request.cookies.get(cookie_name(service))) == ORGANISER


def _set_cookie(response: Response, request: Request, name: str, value: str) -> None:
    response.set_cookie(name, value, max_age=SESSION_SECONDS, path="/", secure=request.url.scheme == "https",
                        httponly=True, samesite="strict")


@functools.cache
def _static(name: str) -> bytes:
    return resources.files("ladderlab.serve").joinpath("static", name).read_bytes()


def bounded(request: Request, limit: int) -> Request:
    """The request with a body of at most ``limit`` bytes: an ``UploadError`` (413) as soon as the
    declared length, or the bytes received (a chunked body declares none), pass it; a multipart
    form's files would otherwise be spooled to disk without bound."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise UploadError(f"the upload has {int(declared)} bytes, more than the limit of {limit}", status=413)
    received = 0

    async def receive() -> Message:
        nonlocal received
        message = await request.receive()
        received += len(message.get("body", b""))
        if received > limit:
            raise UploadError(f"the upload is larger than the limit of {limit} bytes", status=413)
        return message

    return Request(request.scope, receive)
