"""What every export shares: the challenge with its certificate's check, the leaderboard column and
its display precision, the relay's settings and the files written.

An export refuses, before writing anything, a challenge whose certificate does not cover it (the
check ``ladderlab serve`` makes at its start, :func:`~ladderlab.certification.challenge.certificate_problems`),
unless ``uncertified``; the relay then checks at every submission that the service it talks to
serves the same challenge and mechanism under a certificate that covers it.
"""

from __future__ import annotations

import csv
import json
import struct
import zlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ladderlab.certification.challenge import Challenge, certificate_problems, load
from ladderlab.runs.display import grid_decimals
from ladderlab.scoring import PredictionKind, get_scorer
from ladderlab.utils.atomic import write_atomically

UNGRIDDED_DECIMALS = 4
"""Display precision of a release on no grid (noise without rounding): every digit shown is released."""
RELAY_FILE = Path(__file__).with_name("relay.py")


class ExportError(ValueError):
    """An export that cannot be made; one line naming the problem."""


@dataclass
class Written:
    """The files an export wrote, under ``root``, each with what it is for."""

    root: Path
    files: list[tuple[str, str]] = field(default_factory=list)

    def write(self, relative: str, content: str | bytes, purpose: str, mode: int = 0o644) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, content, mode=mode)
        self.files.append((relative, purpose))
        return path


def checked_challenge(path: str | Path, uncertified: bool = False, force: bool = False) -> Challenge:
    """The challenge, or :class:`ExportError` listing what its certificate does not cover."""
    challenge = load(path, force)
    problems = certificate_problems(challenge)
    if problems and not uncertified:
        raise ExportError(f"{path}: the certificate does not cover this challenge: {'; '.join(problems)} "
                          "(--uncertified exports it anyway)")
    return challenge


def column_key(challenge: Challenge) -> str:
    """The leaderboard column of the released value: the scorer's name as a key."""
    return challenge.split.public.scorer.replace("-", "_")


def display_decimals(challenge: Challenge) -> int:
    """Decimals a platform shows: those of the release step (no finer, and no coarser, than the
    grid the mechanism releases on), :data:`UNGRIDDED_DECIMALS` for a release on no grid."""
    step = challenge.release_step()
    return UNGRIDDED_DECIMALS if step is None else grid_decimals(step)


def greater_is_better(challenge: Challenge) -> bool:
    return get_scorer(challenge.split.public.scorer).greater_is_better


def scorer_token(token: str | None, tokens_file: str | None) -> str:
    """The scorer credential: given, or the ``scorer`` row of the CSV ``ladderlab serve --tokens`` wrote."""
    if token:
        return token
    if not tokens_file:
        raise ExportError("give the scorer credential: --tokens FILE (the CSV 'ladderlab serve --tokens FILE' wrote at "
                          "its first start) or --scorer-token TOKEN ('ladderlab serve CHALLENGE --reissue scorer')")
    try:
        with open(tokens_file, newline="") as handle:
            rows = {row.get("team"): row.get("token") for row in csv.DictReader(handle)}
    except OSError as error:
        raise ExportError(f"--tokens {tokens_file}: {error.strerror or error}") from None
    if not rows.get("scorer"):
        raise ExportError(f"--tokens {tokens_file}: no 'scorer' row (a log started before scorer credentials has none: "
                          "'ladderlab serve CHALLENGE --reissue scorer' prints one; give it with --scorer-token)")
    return str(rows["scorer"])


def relay_config(challenge: Challenge, url: str, token: str, uncertified: bool, **extra: Any) -> str:
    """The relay's ``ladderlab.json``: where the service is, the scorer credential, and what the
    service must be serving (the challenge, its mechanism and parameters) for the relay to score."""
    if not url.startswith(("http://", "https://")):
        raise ExportError(f"--url {url!r}: give the service's address, e.g. https://leaderboard.example.org")
    config = {"url": url.rstrip("/"), "scorer_token": token, "challenge": challenge.name,
              "mechanism": {"id": challenge.spec.mechanism.id, "params": challenge.spec.mechanism.params},
              "column": column_key(challenge), "uncertified": uncertified, **extra}
    return json.dumps(config, indent=2) + "\n"


def relay_source() -> str:
    """The relay's source, shipped as it is."""
    return RELAY_FILE.read_text()


def sample_submission(challenge: Challenge) -> str:
    """A submission of every holdout id with a valid constant prediction (what ``serve`` offers as
    ``sample_submission.csv``), in the published order."""
    classes = challenge.split.public.classes
    kind = get_scorer(challenge.split.public.scorer).prediction_kind
    names = list(challenge.class_names or ([] if classes is None else [f"{label:g}" for label in classes]))
    if kind is PredictionKind.PROBABILITIES:
        columns, fill = names, [f"{1.0 / len(names):g}"] * len(names)
    else:
        columns = ["prediction"]
        fill = [names[0] if names else "0"]
        if kind is PredictionKind.PROBABILITY:
            fill = ["0.5"]
    lines = [",".join([challenge.spec.labels.id_column, *columns])]
    lines += [",".join([str(identifier), *fill]) for identifier in challenge.ids]
    return "\n".join(lines) + "\n"


def platform_time(moment: datetime | None) -> str:
    """A time as the platforms' configuration files write it, in UTC (``2026-01-05 00:00:00``)."""
    moment = moment or datetime.now(timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def logo_png() -> bytes:
    """A one-pixel PNG: the logo a platform's bundle requires, for the organiser to replace."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0\x30\x60\x90")) + \
        chunk(b"IEND", b"")


def rules_text(challenge: Challenge) -> str:
    """The challenge's caps and selection rule in words."""
    rules = challenge.spec.rules
    per_day = "no daily cap" if rules.per_day is None else f"{rules.per_day} submissions a day"
    total = "" if challenge.per_team_budget() is None else f", at most {challenge.per_team_budget()} in all"
    return f"{per_day}{total} per team; final selection: {rules.selection}"
