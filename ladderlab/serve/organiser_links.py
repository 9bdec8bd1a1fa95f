"""The organiser's view of the links a log holds: which accounts were linked, when, by which pair of
submissions, on how many differing holdout rows against the threshold (docs/serve.md#organiser-links).

A link is logged with the submission that made it (:mod:`ladderlab.serve.linked`): the other team and
D, the holdout rows where that submission differed from the other team's latest. Under the link rule
every submission is serialised in log order, so the other team's latest is its last entry before
this one (refused entries included, as the linker compares them too). The groups are the connected
components of the links (:func:`ladderlab.engines.linked_ranking.linked_groups`).

The same view is JSON (``GET /api/organiser/links``, ``ladderlab serve links``) and Parquet in
:data:`LINK_SCHEMA` (``GET /api/organiser/links.parquet``), which :func:`read_link_table` checks.
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ladderlab.engines.linked_ranking import linked_groups
from ladderlab.serve.storage import Entry

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
LINK_SCHEMA = pa.schema([
    ("group", pa.int64()), ("team", pa.string()), ("other", pa.string()), ("submission_id", pa.int64()),
    ("team_sequence", pa.int64()), ("submitted_at", pa.timestamp("us", tz="UTC")),
    ("other_submission_id", pa.int64()), ("other_sequence", pa.int64()), ("differing", pa.int64()),
    ("threshold", pa.int64()),
])
"""One row per link, in log order: its group (numbered from 1 in :func:`link_report`'s order), the
team whose submission made it, the other team, both submissions, and D against the threshold t
(the rule links when D ≤ t)."""
RULE_KEY, HOLDOUT_KEY = b"ladderlab.link_rule", b"ladderlab.holdout_size"


@dataclass(frozen=True)
class LinkEvent:
    """One link: ``team``'s submission ``submission_id`` (its ``team_sequence``-th, at
    ``submitted_at``) differed from ``other``'s latest, ``other_submission_id``, on ``differing``
    holdout rows, at most ``threshold`` of which link."""

    team: str
    other: str
    submission_id: int
    team_sequence: int
    submitted_at: str
    other_submission_id: int
    other_sequence: int
    differing: int
    threshold: int


def link_events(entries: list[Entry], threshold: int) -> list[LinkEvent]:
    """Every link the log's ``entries`` (in order, with their links) made, with the submission each
    was compared with."""
    latest: dict[str, Entry] = {}
    events = []
    for entry in entries:
        for other, differing in entry.links:
            compared = latest[other]
            events.append(LinkEvent(entry.team, other, entry.submission_id, entry.team_sequence,
                                    _iso(entry.submitted_at_us), compared.submission_id, compared.team_sequence,
                                    differing, threshold))
        latest[entry.team] = entry
    return events


def link_report(teams: list[str], events: list[LinkEvent], rule: dict[str, Any], holdout: int) -> dict[str, Any]:
    """The linked groups of ``teams`` (each: its teams, when it first linked, its links in order),
    with the rule, its threshold and the holdout size, as ``GET /api/organiser/links`` answers."""
    groups = linked_groups(teams, [(event.team, event.other) for event in events])
    group_of = {team: number for number, group in enumerate(groups, start=1) for team in group}
    listed = []
    for number, group in enumerate(groups, start=1):
        own = [asdict(event) for event in events if group_of[event.team] == number]
        listed.append({"group": number, "teams": list(group), "first_linked_at": own[0]["submitted_at"], "links": own})
    return {"rule": rule, "threshold": rule["threshold"], "holdout_size": holdout, "groups": listed}


def link_table(report: dict[str, Any]) -> bytes:
    """:func:`link_report` as Parquet in :data:`LINK_SCHEMA` (the rule and holdout size in its metadata)."""
    rows = [{**link, "group": group["group"],
             "submitted_at": datetime.fromisoformat(link["submitted_at"].replace("Z", "+00:00"))}
            for group in report["groups"] for link in group["links"]]
    rows.sort(key=lambda row: row["submission_id"])
    table = pa.Table.from_pylist(rows, schema=LINK_SCHEMA).replace_schema_metadata({
        RULE_KEY: json.dumps(report["rule"], sort_keys=True), HOLDOUT_KEY: str(report["holdout_size"])})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def read_link_table(path: str | Path) -> pa.Table:
    """A links file :func:`link_table` wrote, checked: ValueError, one line naming the file and the
    first column missing or of another type, or a row that does not link (D above its threshold)."""
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as error:
        raise ValueError(f"{path}: not a readable Parquet file ({error})") from None
    for field in LINK_SCHEMA:
        if field.name not in table.schema.names:
            raise ValueError(f"{path}: no column {field.name!r} (a links file has {', '.join(LINK_SCHEMA.names)})")
        found = table.schema.field(field.name).type
        if found != field.type:
            raise ValueError(f"{path}: column {field.name!r} is {found}, expected {field.type}")
    if (table.schema.metadata or {}).get(RULE_KEY) is None:
        raise ValueError(f"{path}: no {RULE_KEY.decode()} in the file's metadata: not a ladderlab links file")
    differing, threshold = table.column("differing").to_pylist(), table.column("threshold").to_pylist()
    for row, (count, most) in enumerate(zip(differing, threshold)):
        if count is None or most is None or count > most:
            raise ValueError(f"{path}: row {row}: differing = {count} is above the threshold {most}: not a link")
    return table.select(LINK_SCHEMA.names)


def _iso(us: int) -> str:
    return (EPOCH + timedelta(microseconds=us)).isoformat().replace("+00:00", "Z")
