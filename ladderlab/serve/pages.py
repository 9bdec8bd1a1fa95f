"""The web page's views: the leaderboard (public, then final with its rank certificate), a team's
page, the organiser's page and the registration form.

Server-rendered with Jinja2 from ``templates/``, its style in ``static/`` (served by the app: the
Content-Security-Policy allows no inline style or script, :mod:`ladderlab.serve.perimeter`), with no
script or external asset, so it works offline. Before the close it shows released values only. Its
routes are :mod:`ladderlab.serve.web`.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from ladderlab.engines.linked_ranking import LINKED_POLICIES
from ladderlab.naming import plugin_label
from ladderlab.runs.display import score_text
from ladderlab.serve.events import text_time
from ladderlab.serve.service import ORGANISER, Service

environment = Environment(loader=PackageLoader("ladderlab.serve", "templates"), autoescape=select_autoescape())
TEAM_SOURCES = {"file": "the challenge file", "registration": "registration", "platform": "a platform"}
"""How the organiser's page says where a team comes from (:meth:`Service.overview`)."""
MAX_LISTED_TEAMS = 1000
"""The most teams the organiser's page lists (those with the most submissions first)."""


def released_text(value: float | None, step: float | None) -> str:
    """A released value as shown on the page, at the precision of the mechanism's release grid
    ``step`` or to a few significant digits (:func:`ladderlab.runs.display.score_text`; the API gives
    every bit); None: a submission refused by a linked group's caps."""
    return "refused (linked)" if value is None else score_text(float(value), step)


def _render(service: Service, template: str, who: str | None, csrf: str, **context: Any) -> str:
    """``template`` with the facts every page shows, who is signed in, and ``csrf``, the field each
    form carries (:func:`ladderlab.serve.sessions.form_token`)."""
    challenge = service.challenge
    spec = challenge.spec
    mechanism = challenge.mechanism()
    facts = (f"{challenge.ids.size} holdout ids, scored with {service.scorer.name} "
             f"({'larger' if service.scorer.greater_is_better else 'smaller'} is better); "
             f"leaderboard mechanism {plugin_label(mechanism.id, spec.mechanism.params)}")
    closed = service.closed_at()
    return environment.get_template(template).render(
        title=spec.title or spec.name, facts=facts, scorer=service.scorer.name, who=who, csrf=csrf, organiser=ORGANISER,
        registering=service.registration_open(), closed=None if closed is None else text_time(closed), **context)


def index(service: Service, who: str | None, csrf: str, message: str | None = None, ok: bool = True) -> str:
    """The leaderboard: released values while the challenge is open, the final board after the close."""
    spec = service.challenge.spec
    rules = spec.rules
    caps = [f"{rules.per_day} per UTC day" if rules.per_day else "", f"{rules.total} in total" if rules.total else ""]
    caps_text = " and ".join(cap for cap in caps if cap)
    board = service.public_final()
    step = service.challenge.release_step()
    rows = [] if board else [dict(row, released_text=released_text(row["released"], step))
                             for row in service.leaderboard()]
    return _render(service, "index.html", who, csrf, message=message, ok=ok, rows=rows,
                   board=None if board is None else _board_rows(board), percent=_percent(board),
                   certificate_text=_certificate_text(board), holdout_size=service.challenge.ids.size,
                   rules=f"Each team may submit {caps_text}." if caps_text else "")


def _percent(board: dict[str, Any] | None) -> str:
    certificate = None if board is None else board["certificate"]
    return "" if certificate is None else f"{certificate['level']:.0%}"


def _board_rows(board: dict[str, Any]) -> dict[str, Any]:
    teams = []
    for row in board["teams"]:
        shown = dict(row, private_text=score_text(row["private"]))
        if "low" in row:
            shown.update(interval_text=f"[{score_text(row['low'])}, {score_text(row['high'])}]",
                         rank_range=str(row["rank_low"]) if row["rank_low"] == row["rank_high"]
                         else f"{row['rank_low']}–{row['rank_high']}", p_best_text=f"{row['p_best']:.3f}")
        teams.append(shown)
    return {**board, "teams": teams}


def _certificate_text(board: dict[str, Any] | None) -> str:
    certificate = None if board is None else board["certificate"]
    if certificate is None:
        return ""
    text = (f"Probability that the winner, {certificate['winner']}, is best: {certificate['p_winner_best']:.3f} "
            f"(the share of {certificate['replicates']} bootstrap resamples of the private rows in which it scores "
            "best).")
    removal = certificate["fewest_removals"]
    if removal["count"] is not None:
        text += (f" Removing {removal['count']} of the {board['private_rows']} private rows would let "
                 f"{removal['challenger']} score better than it.")
    elif removal["exact"]:
        text += " No set of private rows whose removal changes the winner exists."
    return text


def team_page(service: Service, team: str, value_columns: str, csrf: str, message: str | None = None, ok: bool = True,
              token: str | None = None) -> str:
    """A team's page: the upload form and what the caps allow while open, its submissions with their
    released values, and the buttons of the final selection (rule k). ``token``: a team that has
    just registered, shown its token once."""
    step = service.challenge.release_step()
    rule = service.challenge.spec.rules.selection
    submissions = [dict(row, released_text=released_text(row["released"], step))
                   for row in service.own_submissions(team)]
    today, total = service.allowance(team)
    allowance = "; ".join(text for text in (
        None if today is None else f"{today} submission{'' if today == 1 else 's'} left today (UTC)",
        None if total is None else f"{total} left in total") if text) or "No cap on submissions."
    chosen = sum(row["selected"] for row in submissions)
    selection_text = {
        "last": "Your last submission counts in the final ranking.",
        "best-public": "Your submission with the best released score counts in the final ranking.",
    }.get(rule) if not isinstance(rule, int) else (
        f"Select up to {rule} submission{'' if rule == 1 else 's'} for the final ranking ({chosen} selected); the best "
        f"of them on the private rows counts. Selecting none counts your last and your {rule - 1} best released "
        "others." if rule > 1 else "Select the submission that counts in the final ranking "
        f"({chosen} selected); selecting none counts your last.")
    return _render(service, "team.html", team, csrf, team=team, message=message, ok=ok, token=token,
                   submissions=submissions, selecting=isinstance(rule, int), selection_text=selection_text,
                   allowance=allowance, id_column=service.challenge.spec.labels.id_column,
                   value_columns=value_columns)


def organiser_page(service: Service, csrf: str, message: str | None = None, ok: bool = True,
                   invite: str | None = None) -> str:
    """The organiser's page: the challenge's state, the close (and after it the downloads and the
    public board's linked-teams policy), the invite code and every team's submissions."""
    from ladderlab.scoring import LossScorer

    teams = service.overview()
    submitted = sum(1 for row in teams if row["submissions"])
    registered = sum(1 for row in teams if row["source"] == "registration")
    closed = service.closed_at()
    end = service.challenge.spec.rules.end
    status = (f"Closed at {text_time(closed)}." if closed is not None else
              "Open" + (f" until {text_time(end)}." if end is not None else ", until you close it."))
    source = service.invite_source()
    registration_possible = service.challenge.spec.registration is not None
    registration_text = (
        "This challenge has no [registration] table: the organiser gives each team its token."
        if not registration_possible
        else "Teams may register with the invite code of the challenge file." if source == "file"
        else "Teams may register with the invite code set on this page." if source == "organiser"
        else "Registration is closed: set an invite code to open it.")
    total = sum(row["submissions"] for row in teams)
    listed = teams[:MAX_LISTED_TEAMS]
    summary = (f"{len(teams)} teams ({registered} registered on the page), {submitted} of them submitted; "
               f"{total} submissions in all." + (f" The {len(listed)} with the most submissions are listed."
                                                   if len(listed) < len(teams) else ""))
    return _render(service, "organiser.html", ORGANISER, csrf, message=message, ok=ok, invite=invite, status=status,
                   teams=listed, team_summary=summary, registration_text=registration_text,
                   registration_possible=registration_possible, linking=service.linking,
                   policies=LINKED_POLICIES if service.linking else LINKED_POLICIES[:1],
                   per_sample=isinstance(service.scorer, LossScorer), sources=TEAM_SOURCES,
                   public_linked=service.public_linked())


def register_page(service: Service, csrf: str, message: str | None = None, ok: bool = True) -> str:
    closed_text = ("This challenge has no self-registration: the organiser gives each team its token."
                   if service.challenge.spec.registration is None else
                   "The challenge is closed." if service.closed_at() is not None else
                   "Registration is closed: ask the organiser.")
    return _render(service, "register.html", None, csrf, message=message, ok=ok, closed_text=closed_text)


def message_page(service: Service, csrf: str, message: str, ok: bool) -> str:
    """A page of one outcome (signing out), for no one signed in."""
    return _render(service, "message.html", None, csrf, message=message, ok=ok)
