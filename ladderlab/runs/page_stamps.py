"""What made a generated page: a *stamp*, the command and the fingerprints of its code.

Numbers about what an experiment found live in pages a command writes (docs/figures/,
docs/results/, docs/certify-speed.md, …). Such a page records, in an HTML comment (a stamp),
the command that regenerates it and the fingerprints of the code its numbers depend on: each
plugin's version and source hash, the token a run directory's manifest keeps for it
(:func:`ladderlab.plugin.fingerprint_token`, docs/run-directories.md), and a SHA-256 of each
core module that decides them (:data:`CORE`). :mod:`ladderlab.dev.page_survey` checks stamps
against the code (``ladderlab dev pages``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

STAMP = re.compile(r"<!-- ladderlab-page (\{.*?\}) -->")

CORE = {
    "certificate": ("ladderlab.certification.certify", "ladderlab.certification.battery", "ladderlab.stats.sequential", "ladderlab.runs.duel",
                    "ladderlab.scoring", "ladderlab.seeding", "ladderlab.tasks", "ladderlab.certification.units",
                    "ladderlab.certification.certificate_text", "ladderlab.certification.challenge_task"),
    "run": (),
    "proofs": ("ladderlab.stats.transcripts", "ladderlab.stats.privacy", "ladderlab.stats.guess_check",
               "ladderlab.stats.leaderboard_proofs", "ladderlab.runs.duel", "ladderlab.scoring", "ladderlab.seeding",
               "ladderlab.tasks"),
    "plan": ("ladderlab.certification.plan", "ladderlab.certification.public_size", "ladderlab.certification.field"),
    "arena": ("ladderlab.arena.certificate", "ladderlab.arena.season", "ladderlab.arena.family",
              "ladderlab.arena.bradley_terry", "ladderlab.stats.sequential", "ladderlab.seeding"),
}
"""The core modules whose source decides a kind of page's numbers, besides its plugins: for a
certificate, the verdict and stopping rules, the duel loop, the losses, the random streams, the
tasks' data (a challenge's resampling among them), the units of its tolerances and its words; for a plan
(``ladderlab plan``), its search, its task and the field, beside its certificates' (each certificate's own
record); for the proofs page, the bounds' arithmetic besides the duel loop; for an arena certificate or sweep, its
certificate, seasons, family and fit. A results page is built after its
run, from the plugins' fingerprints its run
directory recorded while it ran (docs/run-directories.md), which name no core module: hashing
the core when the page is built would vouch for code the run may not have used."""

# --- fingerprints -------------------------------------------------------------------------------

def core_token(module: str) -> str | None:
    """The first 16 hex digits of the SHA-256 of a core module's source (None: no such module)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    return hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest()[:16]


def code_record(plugin_prints: Mapping[str, Mapping[str, Any]], kind: str) -> dict[str, str]:
    """The code a page of ``kind`` (a key of :data:`CORE`) depends on, as recorded in its stamp:
    ``{"mechanism:ladder": "v1:…", "core:ladderlab.certification.certify": "…"}`` from the plugins'
    fingerprints (a run directory's manifest ``plugins``) and the kind's core modules."""
    from ladderlab.plugin import fingerprint_token

    record = {key: fingerprint_token(print_) for key, print_ in sorted(plugin_prints.items())}
    return record | {f"core:{module}": core_token(module) or "missing" for module in CORE[kind]}


@cache
def _plugin_class(key: str) -> type | None:
    from ladderlab.registry import FAMILIES

    kind, _, plugin_id = key.partition(":")
    registry = FAMILIES.get(kind)
    if registry is None:
        return None
    try:
        return registry.get(plugin_id)
    except Exception:  # a plugin that no longer loads (removed, renamed, broken) has changed
        return None


def current_token(key: str) -> str | None:
    """The token the code gives ``key`` of a stamp now (None: the plugin or module is gone)."""
    from ladderlab.plugin import fingerprint, fingerprint_token

    if key.startswith("core:"):
        return core_token(key.removeprefix("core:"))
    cls = _plugin_class(key)
    return None if cls is None else fingerprint_token(fingerprint(cls))


def current_version(key: str) -> str | None:
    """The version the code gives ``key`` of a recorded ``versions`` map now."""
    if key == "ladderlab":
        import ladderlab

        return ladderlab.__version__
    cls = _plugin_class(key)
    return None if cls is None else str(getattr(cls, "version", ""))


# --- stamps -------------------------------------------------------------------------------------

def stamp(command: str, code: Mapping[str, str], part: str | None = None) -> str:
    """The HTML comment a page (or the ``part`` of it, such as one row of a table) carries:
    the command that regenerates it and the fingerprints of its code (:func:`code_record`)."""
    record: dict[str, Any] = {"command": command, **({"part": part} if part else {}), "code": dict(code)}
    return f"<!-- ladderlab-page {json.dumps(record, ensure_ascii=False, sort_keys=True)} -->"


def stamps_in(text: str) -> list[dict[str, Any]]:
    """The stamps of a page's text, in order."""
    return [json.loads(match[1]) for match in STAMP.finditer(text)]
