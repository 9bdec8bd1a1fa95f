"""Signing in on the page: a team's or the organiser's token entered once, kept as a session.

Signing in with a token starts a session: 256 random bits in a cookie (``HttpOnly``: no script
reads it; ``SameSite=Strict``: the browser sends it with the page's own requests only, never with
another site's link, form or frame; ``Path=/``; ``Secure`` when the page is served over HTTPS;
``Max-Age`` :data:`SESSION_SECONDS`). The log keeps the cookie's SHA-256 with who signed in, the
hash of the token they signed in with, and when the session expires
(:meth:`~ladderlab.serve.storage.Storage.add_session`). A session ends when it expires, when its
browser signs out (its row is deleted and the cookie cleared), and when its holder's token is
reissued. The token itself is never put in a cookie, a URL or a page.

A request of the page that changes anything (every ``POST``) must come from the page: every page
sets a second cookie (:func:`form_cookie_name`, 256 random bits, ``HttpOnly``, ``SameSite=Strict``)
and puts in each of its forms a field ``csrf``, an HMAC of that cookie under a key derived from
the server's secret (:func:`form_token`); a ``POST`` without the cookie, or whose field is not the
cookie's HMAC, is refused (:func:`check_form`) before anything is read or done. Another site can
neither send the cookie (``SameSite=Strict``) nor read the field, nor make a pair by setting a
cookie of its own (it lacks the key). This is the guard against cross-site request forgery on top
of ``SameSite``, and it covers the forms that sign in and register, which carry no session yet
(login CSRF). It needs neither the ``Origin`` header (which the page's ``Referrer-Policy:
no-referrer`` turns into ``null`` on every form a browser posts) nor the ``Host`` a reverse proxy
may rewrite.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
from datetime import timedelta
from typing import TYPE_CHECKING

from ladderlab.serve.errors import ServiceError
from ladderlab.serve.security import token_hash
from ladderlab.serve.storage import microseconds

if TYPE_CHECKING:
    from ladderlab.serve.service import Service

SESSION_SECONDS = 12 * 3600
"""How long a session lasts after signing in (a working day; signing in again starts a new one)."""
COOKIE_BYTES = 32
MAX_COOKIE = 64
"""Longer cookie values are not looked up: a session cookie has 43 characters."""


def cookie_name(service: Service) -> str:
    """The session cookie's name, with the challenge's: a browser sends a host's cookies to all its
    ports, so two challenges served on one host each keep their own."""
    return f"ladderlab-session-{service.challenge.name}"


def sign_in(service: Service, token: str) -> tuple[str, str]:
    """A new session for the holder of ``token`` (401 if nobody holds it): the cookie's value and who
    signed in (a team, or the organiser)."""
    who, hashed = service.holder_of(token)
    cookie = secrets.token_urlsafe(COOKIE_BYTES)
    now = service.clock()
    service.storage.add_session(token_hash(cookie), who, hashed, microseconds(now + timedelta(seconds=SESSION_SECONDS)),
                                microseconds(now))
    return cookie, who


def signed_in(service: Service, cookie: str | None) -> str | None:
    """Who holds the session of ``cookie``: a team, the organiser, or None (no such session, expired,
    or signed in with a token since reissued)."""
    if not cookie or len(cookie) > MAX_COOKIE:
        return None
    found = service.storage.session(token_hash(cookie))
    if found is None:
        return None
    who, hashed, expires_us = found
    if expires_us <= microseconds(service.clock()) or not service.holds_token(who, hashed):
        return None
    return who


def sign_out(service: Service, cookie: str | None) -> None:
    """End the session of ``cookie`` (nothing if there is none)."""
    if cookie and len(cookie) <= MAX_COOKIE:
        service.storage.drop_session(token_hash(cookie))


def form_cookie_name(service: Service) -> str:
    """The name of the cookie whose HMAC the page's forms carry (:func:`form_token`)."""
    return f"ladderlab-form-{service.challenge.name}"


def new_form_cookie() -> str:
    return secrets.token_urlsafe(COOKIE_BYTES)


@functools.cache
def _form_key(secret_seed: int) -> bytes:
    return hashlib.sha256(f"ladderlab serve forms {secret_seed}".encode()).digest()


def form_token(service: Service, cookie: str) -> str:
    """The ``csrf`` field of the page's forms for a browser holding the form cookie ``cookie``: its
    HMAC-SHA256 under a key derived from the server's secret."""
    return hmac.new(_form_key(service.secret_seed), cookie.encode(), hashlib.sha256).hexdigest()


def check_form(service: Service, cookie: str | None, sent: object) -> None:
    """Refuse (403 ``cross-site``) a form whose ``csrf`` field ``sent`` is not the HMAC of the form
    cookie the browser sent, or that came without either."""
    if (not cookie or len(cookie) > MAX_COOKIE or not isinstance(sent, str)
            or not hmac.compare_digest(sent.encode(), form_token(service, cookie).encode())):
        raise ServiceError(403, "cross-site", "this form must be sent from the leaderboard's own page: reload the "
                                              "page and send it again")
