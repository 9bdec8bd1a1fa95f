"""The page's routes: the leaderboard, signing in and out, a team's page (upload, final selection),
registration with an invite code, and the organiser's page (close, the public board's linked-teams
policy after it, invite code, downloads).

Everything a route does goes through the service's own functions, the ones the API calls
(:mod:`ladderlab.serve.app`): the page has no rule of its own. Who is asking is the session of the
browser (:mod:`ladderlab.serve.sessions`); every ``POST`` must come from the page's own form (its
``csrf`` field and form cookie, checked before anything is done, and before a large body is read
unless the browser holds the form cookie at all). A refusal is the page again with the service's
one-line reason and its HTTP status. The style is a static file (:mod:`ladderlab.serve.perimeter`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

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
    MAX_COOKIE,
    SESSION_SECONDS,
    check_form,
    cookie_name,
    form_cookie_name,
    form_token,
    new_form_cookie,
    sign_in,
    sign_out,
    signed_in,
)
from ladderlab.serve.uploads import UploadError, UploadReader

MULTIPART_OVERHEAD = 64 << 10
"""Room for a form's fields and part headers beside the file."""
TOKEN_FORM_BYTES = 8192
"""The most a form of a few short fields (signing in, registering, selecting) may send."""

Upload = Callable[[str, bytes, str, "str | None"], Accepted]
Render = Callable[[str], str]
"""A view given the ``csrf`` field of its forms."""
Action = Callable[[str, FormData], Awaitable[Render]]
"""What a form of the page does for the signed-in holder, and the view it answers with."""


def page_routes(service: Service, reader: UploadReader, upload: Upload, value_columns: str) -> APIRouter:
    """The page's routes for ``service``; ``upload`` is the API's (it counts, reads, validates and logs
    an upload for a team)."""
    router = APIRouter(include_in_schema=False)
    session_cookie, form_cookie = cookie_name(service), form_cookie_name(service)
    max_bytes = service.challenge.max_upload_bytes()

    def who(request: Request) -> str | None:
        return signed_in(service, request.cookies.get(session_cookie))

    def page(request: Request, render: Render, status: int = 200) -> HTMLResponse:
        """The view, its forms carrying the HMAC of the browser's form cookie (set now if it has none)."""
        cookie = request.cookies.get(form_cookie)
        fresh = not cookie or len(cookie) > MAX_COOKIE
        if fresh:
            cookie = new_form_cookie()
        response = HTMLResponse(render(form_token(service, cookie)), status_code=status)
        if fresh:
            _set_cookie(response, request, form_cookie, cookie, None)
        return response

    def refused(request: Request, error: ServiceError | UploadError, holder: str | None) -> HTMLResponse:
        message = str(error)
        if holder == ORGANISER:
            return page(request, lambda csrf: pages.organiser_page(service, csrf, message, False), error.status)
        if holder is not None:
            return page(request, lambda csrf: pages.team_page(service, holder, value_columns, csrf, message, False),
                        error.status)
        return page(request, lambda csrf: pages.index(service, None, csrf, message, False), error.status)

    def required(request: Request, wanted: str) -> str:
        """The session's holder, a team (``wanted`` ``team``) or the organiser, else a 401."""
        holder = who(request)
        if holder is None or (holder == ORGANISER) != (wanted == ORGANISER):
            whose = "the organiser's token" if wanted == ORGANISER else "your team's token"
            raise ServiceError(401, "unauthorized", f"sign in with {whose} first")
        return holder

    async def form(request: Request, limit: int, files: int = 0) -> FormData:
        """The form of a ``POST`` from the page (at most ``limit`` bytes), its ``csrf`` field checked."""
        cookie = request.cookies.get(form_cookie)
        if not cookie:  # refused before the body is read
            check_form(service, None, None)
        fields = await bounded(request, limit).form(max_files=files, max_fields=5, max_part_size=max(limit, 4096))
        check_form(service, cookie, fields.get("csrf"))
        return fields

    @router.get("/", response_class=HTMLResponse)
    def index(request: Request) -> HTMLResponse:
        holder = who(request)
        return page(request, lambda csrf: pages.index(service, holder, csrf))

    @router.post("/login", response_class=HTMLResponse)
    async def login(request: Request) -> Response:
        try:
            token = str((await form(request, TOKEN_FORM_BYTES)).get("token") or "").strip()
            value, holder = await run_in_threadpool(sign_in, service, token)
        except (ServiceError, UploadError) as error:
            return await run_in_threadpool(refused, request, error, None)
        response = RedirectResponse("organiser" if holder == ORGANISER else "team", status_code=303)
        _set_cookie(response, request, session_cookie, value, SESSION_SECONDS)
        return response

    @router.post("/logout", response_class=HTMLResponse)
    async def logout(request: Request) -> Response:
        try:
            await form(request, TOKEN_FORM_BYTES)
        except (ServiceError, UploadError) as error:
            return await run_in_threadpool(refused, request, error, await run_in_threadpool(who, request))
        await run_in_threadpool(sign_out, service, request.cookies.get(session_cookie))
        response = await run_in_threadpool(page, request, lambda csrf: pages.message_page(
            service, csrf, "Signed out: this browser holds no session of the leaderboard.", True))
        response.delete_cookie(session_cookie, path="/", secure=request.url.scheme == "https", httponly=True,
                               samesite="strict")
        return response

    @router.get("/team", response_class=HTMLResponse)
    def team(request: Request) -> HTMLResponse:
        try:
            holder = required(request, "team")
        except ServiceError as error:
            return refused(request, error, None)
        return page(request, lambda csrf: pages.team_page(service, holder, value_columns, csrf))

    async def act(request: Request, wanted: str, limit: int, done: Action, files: int = 0,
                  status: int = 200) -> HTMLResponse:
        """A ``POST`` of the page by a signed-in ``wanted`` (``team`` or the organiser): its form read
        and checked, then ``done(holder, fields)`` gives the view to answer with; a refusal is the
        holder's page with the reason and its status."""
        holder = None
        try:
            holder = await run_in_threadpool(required, request, wanted)
            render = await done(holder, await form(request, limit, files))
        except (ServiceError, UploadError) as error:
            return await run_in_threadpool(refused, request, error, holder)
        return await run_in_threadpool(page, request, render, status)

    def team_view(team: str, message: str) -> Render:
        return lambda csrf: pages.team_page(service, team, value_columns, csrf, message)

    def organiser_view(message: str, invite: str | None = None) -> Render:
        return lambda csrf: pages.organiser_page(service, csrf, message, invite=invite)

    @router.post("/upload", response_class=HTMLResponse)
    async def page_upload(request: Request) -> HTMLResponse:
        async def uploaded(holder: str, fields: FormData) -> Render:
            upload_file = fields.get("file")
            if upload_file is None or isinstance(upload_file, str):
                raise UploadError("choose a file to upload")
            data = await upload_file.read()
            fmt = reader.format_of(upload_file.content_type, upload_file.filename)
            entry = (await run_in_threadpool(upload, holder, data, fmt, None)).entries[-1]
            release = pages.released_text(entry.released, service.challenge.release_step())
            return team_view(holder, f"Submission {entry.team_sequence} of {holder} (id {entry.submission_id}): "
                                     f"released {service.scorer.name} {release}")

        return await act(request, "team", max_bytes + MULTIPART_OVERHEAD, uploaded, files=1, status=201)

    @router.post("/select", response_class=HTMLResponse)
    async def page_select(request: Request) -> HTMLResponse:
        async def selected(holder: str, fields: FormData) -> Render:
            submission = str(fields.get("submission_id") or "")
            if not submission.isdigit() or len(submission) > 18:
                raise ServiceError(422, "invalid", f"submission_id {submission[:20]!r}: give a submission's number")
            chosen = fields.get("selected") == "yes"
            await run_in_threadpool(service.select, holder, int(submission), chosen)
            return team_view(holder, f"Submission {submission} is {'selected' if chosen else 'no longer selected'} "
                                     "for the final ranking.")

        return await act(request, "team", TOKEN_FORM_BYTES, selected)

    @router.get("/register", response_class=HTMLResponse)
    def register_form(request: Request) -> HTMLResponse:
        return page(request, lambda csrf: pages.register_page(service, csrf))

    @router.post("/register", response_class=HTMLResponse)
    async def register(request: Request) -> HTMLResponse:
        try:
            fields = await form(request, TOKEN_FORM_BYTES)
            name = str(fields.get("team") or "")
            invite = str(fields.get("invite") or "")
            address = request.client.host if request.client else "unknown"
            token = await run_in_threadpool(service.register, name, invite, address)
            value, _ = await run_in_threadpool(sign_in, service, token)
        except (ServiceError, UploadError) as error:
            message = str(error)
            return await run_in_threadpool(
                page, request, lambda csrf: pages.register_page(service, csrf, message, False), error.status)
        response = await run_in_threadpool(
            page, request, lambda csrf: pages.team_page(service, name, value_columns, csrf, token=token), 201)
        _set_cookie(response, request, session_cookie, value, SESSION_SECONDS)
        return response

    @router.get("/organiser", response_class=HTMLResponse)
    def organiser(request: Request) -> HTMLResponse:
        try:
            required(request, ORGANISER)
        except ServiceError as error:
            return refused(request, error, None)
        return page(request, lambda csrf: pages.organiser_page(service, csrf))

    @router.post("/close", response_class=HTMLResponse)
    async def close(request: Request) -> HTMLResponse:
        async def closed(_holder: str, fields: FormData) -> Render:
            if fields.get("confirm") != "yes":
                raise ServiceError(422, "invalid", "tick the box that confirms the close")
            when = await run_in_threadpool(service.close, linked_field(fields))
            await run_in_threadpool(service.public_final)
            return organiser_view(f"The challenge closed at {text_time(when)}: the leaderboard now shows everyone "
                                  "the final ranking with its rank certificate.")

        return await act(request, ORGANISER, TOKEN_FORM_BYTES, closed)

    @router.post("/public-linked", response_class=HTMLResponse)
    async def public_linked(request: Request) -> HTMLResponse:
        async def changed(_holder: str, fields: FormData) -> Render:
            linked = linked_field(fields)
            await run_in_threadpool(service.change_public_linked, linked)
            await run_in_threadpool(service.public_final)
            return organiser_view(f"The public final board now ranks linked teams under the policy {linked}.")

        return await act(request, ORGANISER, TOKEN_FORM_BYTES, changed)

    @router.post("/invite", response_class=HTMLResponse)
    async def invite(request: Request) -> HTMLResponse:
        async def invited(_holder: str, fields: FormData) -> Render:
            if fields.get("action") == "stop":
                await run_in_threadpool(service.stop_registration)
                return organiser_view("Registration is closed: no team can register now.")
            code = await run_in_threadpool(service.set_invite, str(fields.get("code") or "") or None)
            return organiser_view("The invite code is set; the earlier one no longer works.", code)

        return await act(request, ORGANISER, TOKEN_FORM_BYTES, invited)

    return router


def linked_field(fields: FormData) -> str:
    """The form's linked-teams policy of the public final board (``flag`` when it has none)."""
    try:
        return check_linked_policy(str(fields.get("linked") or DEFAULT_LINKED_POLICY))
    except ValueError as error:
        raise ServiceError(422, "invalid", str(error)) from None


def organiser_session(service: Service, request: Request) -> bool:
    """Whether the request carries the organiser's session (the API's organiser downloads take it
    instead of a bearer token)."""
    return signed_in(service, request.cookies.get(cookie_name(service))) == ORGANISER


def _set_cookie(response: Response, request: Request, name: str, value: str, max_age: int | None) -> None:
    response.set_cookie(name, value, max_age=max_age, path="/", secure=request.url.scheme == "https",
                        httponly=True, samesite="strict")


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
