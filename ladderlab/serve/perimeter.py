"""What every answer carries, and what the server writes about each request (docs/serve.md#perimeter).

- :class:`SecurityHeaders`: a Content-Security-Policy that lets a page load only the server's own
  files (no inline script or style, no frames around it: ``frame-ancestors 'none'``, forms post only
  to the server), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``, and
  ``Cache-Control: no-store`` on every answer but the static files, since any of them may carry a
  team's data (its submissions, its token in a form) that a shared cache or the browser's disk
  should not keep.
- :class:`AccessLog`: one line per request naming the route *template* it matched (``GET
  /api/submissions/{submission_id}/selection``), never the path or query string the client sent:
  a token pasted into a URL (``?token=…``, ``/api/…/ll_…``) would otherwise reach the log, as it
  did through uvicorn's access log. uvicorn's own access log is turned off.
"""

from __future__ import annotations

import logging
from typing import Any

CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
STATIC_PREFIX = "/static/"
STATIC_CACHE = b"public, max-age=300"
HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
access_log = logging.getLogger("ladderlab.serve.access")


class _HttpMiddleware:
    """ASGI middleware around ``app`` that handles HTTP requests (:meth:`http`) and passes the rest on."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            await self.http(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def http(self, scope: Any, receive: Any, send: Any) -> None:
        raise NotImplementedError


class SecurityHeaders(_HttpMiddleware):
    """ASGI middleware adding :data:`HEADERS` and ``Cache-Control`` to every HTTP answer of ``app``."""

    async def http(self, scope: Any, receive: Any, send: Any) -> None:
        cache = STATIC_CACHE if scope.get("path", "").startswith(STATIC_PREFIX) else b"no-store"

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [(name, value) for name, value in message.get("headers", [])
                           if name.lower() not in {b"cache-control", *(name for name, _ in HEADERS)}]
                message = {**message, "headers": [*headers, *HEADERS, (b"cache-control", cache)]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class AccessLog(_HttpMiddleware):
    """ASGI middleware logging each HTTP request of ``app`` as the client's address, the method, the
    route template it matched (``-`` for none) and the status, at INFO on :data:`access_log`."""

    async def http(self, scope: Any, receive: Any, send: Any) -> None:
        status = 0

        async def recording(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording)
        finally:
            route = getattr(scope.get("route"), "path", None) or "-"
            client = scope.get("client") or ("-", 0)
            access_log.info('%s:%s - "%s %s HTTP/%s" %s', client[0], client[1], scope["method"], route,
                            scope.get("http_version", "1.1"), status or "-")
