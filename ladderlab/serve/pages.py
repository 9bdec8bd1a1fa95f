"""The web page: the public leaderboard, a team's upload form and its own submissions.

Server-rendered with Jinja2 from ``templates/``, its style in ``static/`` (served by the app: the
Content-Security-Policy allows no inline style or script, :mod:`ladderlab.serve.perimeter`) and no
external asset, so it works offline and shows released values only.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from ladderlab.naming import plugin_label
from ladderlab.runs.display import score_text
from ladderlab.serve.service import Service

environment = Environment(loader=PackageLoader("ladderlab.serve", "templates"), autoescape=select_autoescape())


def released_text(value: float | None, step: float | None) -> str:
    """A released value as shown on the page, at the precision of the mechanism's release grid
    ``step`` or to a few significant digits (:func:`ladderlab.runs.display.score_text`; the API gives
    every bit); None: a submission refused by a linked group's caps."""
    return "refused (linked)" if value is None else score_text(float(value), step)


def _common(service: Service) -> dict[str, Any]:
    challenge = service.challenge
    spec = challenge.spec
    mechanism = challenge.mechanism()
    facts = (f"{challenge.ids.size} holdout ids, scored with {service.scorer.name} "
             f"({'larger' if service.scorer.greater_is_better else 'smaller'} is better); "
             f"leaderboard mechanism {plugin_label(mechanism.id, spec.mechanism.params)}")
    return {"title": spec.title or spec.name, "facts": facts, "scorer": service.scorer.name}


def index(service: Service, value_columns: str) -> str:
    spec = service.challenge.spec
    rules = spec.rules
    caps = [f"{rules.per_day} per UTC day" if rules.per_day else "", f"{rules.total} in total" if rules.total else ""]
    caps_text = " and ".join(cap for cap in caps if cap)
    step = service.challenge.release_step()
    rows = [dict(row, released_text=released_text(row["released"], step)) for row in service.leaderboard()]
    closed = service.closed_at()
    return environment.get_template("index.html").render(
        **_common(service), rows=rows, closed=None if closed is None else closed.isoformat(),
        id_column=spec.labels.id_column, value_columns=value_columns, holdout_size=service.challenge.ids.size,
        rules=f"Each team may submit {caps_text}." if caps_text else "",
    )


def result(service: Service, message: str | None, ok: bool, team: str | None) -> str:
    step = service.challenge.release_step()
    submissions = [] if team is None else [dict(row, released_text=released_text(row["released"], step))
                                           for row in service.own_submissions(team)]
    return environment.get_template("result.html").render(
        **_common(service), message=message, ok=ok, team=team, submissions=submissions,
        selecting=isinstance(service.challenge.spec.rules.selection, int),
    )
