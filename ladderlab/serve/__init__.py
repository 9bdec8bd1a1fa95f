"""``ladderlab serve``: a certified mechanism run as a real leaderboard service.

Modules: :mod:`~ladderlab.serve.storage` (the hash-chained log in SQLite or PostgreSQL),
:mod:`~ladderlab.serve.replay` (the mechanism's state rebuilt from the log, and verified),
:mod:`~ladderlab.serve.service` (submissions, caps, idempotency, registration, final ranking,
export), :mod:`~ladderlab.serve.events` (the rules of the recorded actions, replayed by verify),
:mod:`~ladderlab.serve.final_board` (the final leaderboard with its rank certificate),
:mod:`~ladderlab.serve.security` (tokens, rate limits), :mod:`~ladderlab.serve.uploads`,
:mod:`~ladderlab.serve.app` (HTTP API), :mod:`~ladderlab.serve.web`, :mod:`~ladderlab.serve.pages`
and :mod:`~ladderlab.serve.sessions` (the web page: its routes, views and sign-in),
:mod:`~ladderlab.serve.client` (:class:`~ladderlab.serve.client.RemoteBoard`, standard
library only), :mod:`~ladderlab.serve.demo`, :mod:`~ladderlab.serve.postgres` (a throwaway
PostgreSQL cluster), :mod:`~ladderlab.dev.serve_bench` and :mod:`~ladderlab.serve.cli`.

The server's libraries are the optional extra ``ladderlab[serve]``; nothing here imports
them at package import, so the client and the command line work without it.
"""

SERVER_MODULES = ("fastapi", "uvicorn", "sqlalchemy", "python_multipart", "jinja2")


def require_server_extra() -> None:
    """Nothing if the server's libraries import, else a one-line ``ValueError`` naming the extra."""
    import importlib

    missing = []
    for name in SERVER_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ValueError(f"ladderlab serve needs the optional extra 'serve' (missing: {', '.join(missing)}): "
                         "pip install 'ladderlab[serve]'")
