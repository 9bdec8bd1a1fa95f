"""Challenge files: an organiser's own holdout labels, split, scorer, mechanism, rules and teams.

A challenge file is TOML, validated like a scenario (strict types, unknown keys refused
with suggestions, one line per problem naming the file, the key and the value), and
every file it names is read and checked before anything runs:

```toml
schema_version = 1
name = "my-challenge"
scorer = "zero-one"
prediction_range = [0.0, 1.0]      # optional: [low, high] of a real or probability prediction

[labels]                           # CSV or Parquet, relative to this file
file = "labels.csv"
id_column = "id"
label_column = "label"

[split]                            # a column of the labels file ("public" / "final") ...
column = "split"
# public_fraction = 0.5            # ... or a fraction of the rows, drawn with a seed
# seed = 7

[mechanism]
id = "ladder"
params = { eta = 0.01 }
certificate = "ladder.json"        # optional: what `ladderlab certify --out` wrote

[rules]
per_day = 5                        # submissions per team and UTC day ("unlimited": no daily cap)
total = 200                        # per team over the challenge
start = 2026-01-05T00:00:00Z
end = 2026-03-01T00:00:00Z
selection = "best-public"          # "last", "best-public", or k (a team selects k submissions)
accounts = 1                       # accounts (teams) one participant may hold
# link = true                      # link near-identical accounts (docs/serve.md#linking)

[registration]                     # optional: teams register themselves on the page with an invite code
invite = "a-long-random-code"      # optional: the code (else the organiser sets one on the page)
max_teams = 500                    # most teams that may register
attempts_per_hour = 10             # registration attempts per client address

[certify]                          # optional: what `ladderlab certify --challenge` measures
honest = ["improving(days=56)"]    # honest participants (default: improving, a submission a day)

[[teams]]
name = "team-a"

[[teams]]                          # one entry for many teams: crowd-001 … crowd-300
name = "crowd"
count = 300
```

:func:`load` returns a :class:`Challenge`: the validated file and ladderlab's own
objects built from it, a :class:`~ladderlab.tasks.Split` (public and final labels in the
published order of the holdout ids, label set, scorer, prediction range, the public data
an attack may see) and the unbound mechanism. Nothing here knows about the server.
:func:`certificate_problems` says what a certificate does not cover.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pydantic import (
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from ladderlab.engines.linking import LinkRule
from ladderlab.mechanism import Mechanism
from ladderlab.naming import plugin_label, unknown_name_error
from ladderlab.params import INT64_LIMIT
from ladderlab.registry import ATTACKS, MECHANISMS, parse_honest
from ladderlab.runs.display import release_step
from ladderlab.runs.scenario import PluginEntry, _check_entry, expand
from ladderlab.runs.schema import FiniteFloat, StrictModel, problem_lines
from ladderlab.runs.workload import (
    challenge_work,
    file_reading_work,
    refuse_if_too_large,
)
from ladderlab.scoring import PredictionKind, get_scorer
from ladderlab.seeding import stream
from ladderlab.tasks import SCORER_NAMES, PublicData, Split, TaskType
from ladderlab.utils.tables import refuse_repeated_columns

SCHEMA_VERSION = 1
Number = FiniteFloat
LINK_PARAMETERS = ("min_disagreement", "tolerance")
"""The :class:`~ladderlab.engines.linking.LinkRule` parameters the rules (``link_min_disagreement``, …) and a certificate give."""
SPLIT_VALUES = ("public", "final")
SELECTION_RULES = ("last", "best-public")
RESERVED_TEAM_NAMES = ("organiser", "scorer")
"""Names a team cannot take: the organiser's and the platforms' scorer's tokens are issued and reissued under them."""
NAME_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
TEAM_NAME_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9 _.-]{0,62}[A-Za-z0-9_.-])?$"
"""A letter or digit first, no space last, at most 64 characters: what the log's team column holds."""
MAX_TEAM_NAME = 64
MAX_TEAMS = 100_000
MIN_INVITE_CODE = 8
"""The shortest invite code (:class:`RegistrationTable`): a code is a password anyone may try."""
MAX_INVITE_CODE = 128
"""The most teams a challenge file may name (its ``[[teams]]`` entries, each ``count`` included),
checked before the names are made; the memory of serving them is estimated as the file loads."""
DEFAULT_MAX_UPLOAD_BYTES_PER_VALUE = 64
"""Default upload limit per prediction value (a CSV line of an id and a value fits easily)."""


class ChallengeError(ValueError):
    """A challenge file (or a file it names) that cannot be used; the message names it."""


class LabelsTable(StrictModel):
    file: StrictStr = Field(description="CSV or Parquet file of the holdout labels, relative to the challenge file")
    id_column: StrictStr = Field(default="id", description="the column of row ids")
    label_column: StrictStr = Field(default="label",
                                    description="the column of labels: numbers, or class names such as 'cat'")


class SplitTable(StrictModel):
    column: StrictStr | None = Field(default=None, description="a column of the labels file: 'public' or 'final'")
    public_fraction: Number | None = Field(default=None, gt=0, lt=1, description="share of public rows")
    seed: StrictInt | None = Field(default=None, ge=0, lt=INT64_LIMIT, description="the seed of the public_fraction draw")

    @model_validator(mode="after")
    def _one_way(self) -> SplitTable:
        if (self.column is None) == (self.public_fraction is None):
            raise ValueError("give either column (a column of the labels file) or public_fraction with a seed")
        if self.public_fraction is not None and self.seed is None:
            raise ValueError("public_fraction needs a seed, so that the split is the same at every start")
        if self.column is not None and self.seed is not None:
            raise ValueError("seed goes with public_fraction, not with a split column")
        return self


class MechanismTable(StrictModel):
    id: StrictStr = Field(description="a mechanism id (see `ladderlab list mechanisms`)")
    params: dict[str, Any] = Field(default_factory=dict, description="the mechanism's parameters")
    certificate: StrictStr | None = Field(default=None, description="JSON certificate from `ladderlab certify --out`")


NO_DAILY_CAP = "unlimited"
"""The value of ``rules.per_day`` that lifts the daily cap."""


class RulesTable(StrictModel):
    per_day: StrictInt | None = Field(default=5, ge=1, lt=INT64_LIMIT,
                                      description=f"submissions per team and UTC day ({NO_DAILY_CAP!r}: no cap)")
    total: StrictInt | None = Field(default=None, ge=1, lt=INT64_LIMIT,
                                    description="submissions per team over the challenge")
    start: datetime | None = Field(default=None, description="opening time (TOML date-time with a time zone)")
    end: datetime | None = Field(default=None, description="closing time (TOML date-time with a time zone)")
    accounts: StrictInt = Field(default=1, ge=1, lt=INT64_LIMIT,
                                description="accounts (teams) the rules let one participant hold")
    link: StrictBool = Field(default=False, description="link accounts whose submissions are near-identical: one "
                                                        "mechanism state and one budget per group (docs/serve.md#linking)")
    link_alpha: Any = Field(default=None, description="refused: the link rule has no alpha any more")
    link_min_disagreement: Number | None = Field(default=None, gt=0, lt=1, description="the link rule's "
                                                 "min_disagreement (default: the certificate's)")
    link_tolerance: Number | None = Field(default=None, ge=0, description="the link rule's tolerance (default: the "
                                                                          "certificate's)")
    selection: Literal["last", "best-public"] | StrictInt = Field(
        default="best-public", description="what counts privately: 'last', 'best-public', or k team-selected submissions")

    @field_validator("per_day", mode="before")
    @classmethod
    def _no_daily_cap(cls, value: Any) -> Any:
        """TOML has no null: ``per_day = "unlimited"`` lifts the daily cap (its default is 5)."""
        if isinstance(value, str):
            if value != NO_DAILY_CAP:
                raise ValueError(f"give a whole number ≥ 1 of submissions per team and UTC day, or {NO_DAILY_CAP!r} "
                                 f"for no daily cap, got {value!r}")
            return None
        return value

    @field_validator("start", "end", mode="before")
    @classmethod
    def _toml_date_time(cls, value: Any) -> Any:
        """A TOML date-time, not a number (pydantic would read seconds since 1970) or a string."""
        if value is not None and not isinstance(value, datetime):
            raise ValueError(f"give a TOML date-time such as 2026-01-05T00:00:00Z (no quotes), got {value!r}")
        return value

    @field_validator("start", "end")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.utcoffset() is None:
            raise ValueError(f"give a time zone (e.g. {value.isoformat()}Z for UTC), got {value.isoformat()}")
        return value

    @field_validator("selection", mode="before")
    @classmethod
    def _k(cls, value: Any) -> Any:
        """One line for any bad value (a union type gave one per member)."""
        if isinstance(value, str) and value not in SELECTION_RULES:
            raise unknown_name_error("selection rule", value, SELECTION_RULES)
        if not isinstance(value, str) and (isinstance(value, bool) or not isinstance(value, int)
                                           or not 1 <= value < INT64_LIMIT):
            raise ValueError(f"give 'last', 'best-public' or a whole number k ≥ 1 of team-selected submissions, "
                             f"got {value!r}")
        return value

    @field_validator("link_alpha")
    @classmethod
    def _no_link_alpha(cls, value: Any) -> Any:
        """The old link rule's level: refused with the reason (:class:`~ladderlab.engines.linking.LinkRule`)."""
        if value is not None:
            LinkRule(alpha=value)
        return value

    @model_validator(mode="after")
    def _ordered(self) -> RulesTable:
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError(f"end {self.end.isoformat()} is not after start {self.start.isoformat()}")
        given = [f"link_{name}" for name in LINK_PARAMETERS if getattr(self, f"link_{name}") is not None]
        if given and not self.link:
            raise ValueError(f"{given[0]} = {getattr(self, given[0])!r} is a parameter of linking: set link = true")
        return self


class LimitsTable(StrictModel):
    max_upload_bytes: StrictInt | None = Field(default=None, ge=1024, lt=INT64_LIMIT,
                                               description="largest upload (default: 64 bytes per prediction value + 64 KiB)")
    uploads_per_second: Number = Field(default=10.0, gt=0, description="sustained uploads per second and team")
    burst: StrictInt = Field(default=20, ge=1, lt=INT64_LIMIT, description="uploads a team may send at once above that rate")


class DataTable(StrictModel):
    train: StrictStr | None = Field(default=None, description="training rows: feature columns and the label column")
    holdout: StrictStr | None = Field(default=None, description="holdout inputs: the id column and feature columns")


class CertifyTable(StrictModel):
    honest: list[StrictStr] | None = Field(
        default=None, min_length=1,
        description="the honest participants whose cost `ladderlab certify --challenge` measures, e.g. "
                    "'improving(days=60)' (default: improving, one submission a day over the challenge's days, "
                    "at most a team's budget)")

    @field_validator("honest")
    @classmethod
    def _honest_participants(cls, value: list[str] | None) -> list[str] | None:
        seen: list[tuple[str, str]] = []
        for text in value or []:
            attack_id, pinned = parse_honest(text)
            key = (attack_id, json.dumps(pinned, sort_keys=True))
            if key in seen:
                raise ValueError(f"{text!r} is listed twice")
            seen.append(key)
        return value


def check_team_name(name: str) -> str:
    """``name`` if a team may take it (:data:`TEAM_NAME_PATTERN`, not a reserved name), else a
    one-line ``ValueError`` saying why: the rule of the challenge file's teams and of the teams
    that register themselves (:mod:`ladderlab.serve.events`)."""
    if not re.fullmatch(TEAM_NAME_PATTERN, name):
        shown = name if len(name) <= MAX_TEAM_NAME + 8 else name[:MAX_TEAM_NAME] + "…"
        raise ValueError(f"team name {shown!r}: use 1 to {MAX_TEAM_NAME} letters, digits, spaces, '_', '.' or '-', "
                         "beginning with a letter or digit and not ending with a space")
    if name.casefold() in RESERVED_TEAM_NAMES:
        raise ValueError(f"team name {name!r} is the {name.casefold()}'s name (its token is issued under it); choose "
                         "another")
    return name


class TeamTable(StrictModel):
    name: StrictStr = Field(pattern=TEAM_NAME_PATTERN, description="the team's name on the leaderboard")
    count: StrictInt | None = Field(default=None, ge=1, le=MAX_TEAMS,
                                    description="stand for this many teams, named NAME-001, NAME-002, … (numbers "
                                                "padded to three digits, never renumbered when the count grows)")

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        return check_team_name(value)

    @model_validator(mode="after")
    def _numbered_names_fit(self) -> TeamTable:
        if self.count is not None and len(numbered_team(self.name, self.count)) > MAX_TEAM_NAME:
            raise ValueError(f"name {self.name!r} with count = {self.count} makes names such as "
                             f"{numbered_team(self.name, self.count)!r}, longer than {MAX_TEAM_NAME} characters")
        return self

    def names(self) -> list[str]:
        """The teams this entry stands for: its name, or with ``count`` its numbered names."""
        if self.count is None:
            return [self.name]
        return [numbered_team(self.name, number) for number in range(1, self.count + 1)]


def numbered_team(name: str, number: int) -> str:
    """The name of team ``number`` (from 1) of a ``[[teams]]`` entry with a count: ``crowd-007``.
    The padding is fixed (three digits, more only from 1000 on), so raising the count adds names
    and renames none: each team keeps its name, and with it its random stream and its token."""
    return f"{name}-{number:03d}"


class RegistrationTable(StrictModel):
    """Self-registration on the page (docs/serve.md#registration): present, teams may register with
    an invite code, the file's (``invite``) or one the organiser sets on the page."""

    invite: StrictStr | None = Field(default=None, min_length=MIN_INVITE_CODE, max_length=MAX_INVITE_CODE,
                                     pattern=r"^\S+$", description="the invite code (default: none until the organiser "
                                                                   "sets one on the page)")
    max_teams: StrictInt = Field(default=1000, ge=1, le=MAX_TEAMS, description="the most teams that may register")
    attempts_per_hour: StrictInt = Field(default=10, ge=1, le=3600,
                                         description="registration attempts per client address and hour (a burst of "
                                                     "as many, refilled over the hour)")


class ChallengeFile(StrictModel):
    """The contents of a challenge file."""

    schema_version: Literal[1] = Field(description="the file format's version")
    name: StrictStr = Field(pattern=NAME_PATTERN, description="the challenge's name (at most 64 characters)")
    title: StrictStr = Field(default="", max_length=200, description="the title shown on the leaderboard page")
    scorer: StrictStr = Field(description="a scorer name (see docs/concepts.md#scorers-and-orientation)")
    task_type: Literal["classification", "regression"] | None = Field(
        default=None, description="default: classification for label and probability scorers, else regression")
    classes: list[Any] | None = Field(
        default=None, description="the label set, numbers or class names (default: the distinct labels)")
    prediction_range: tuple[Number, Number] | None = Field(default=None, description="[low, high] of a prediction")
    labels: LabelsTable
    split: SplitTable
    mechanism: MechanismTable
    rules: RulesTable = Field(default_factory=RulesTable)
    limits: LimitsTable = Field(default_factory=LimitsTable)
    data: DataTable = Field(default_factory=DataTable)
    certify: CertifyTable = Field(default_factory=CertifyTable)
    registration: RegistrationTable | None = Field(default=None, description="self-registration with an invite code")
    teams: list[TeamTable] = Field(min_length=1, description="[[teams]] tables")

    @field_validator("scorer")
    @classmethod
    def _known_scorer(cls, value: str) -> str:
        if value not in SCORER_NAMES:
            raise unknown_name_error("scorer", value, SCORER_NAMES)
        return value

    @field_validator("prediction_range")
    @classmethod
    def _range(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is not None and not (value[0] < value[1] and math.isfinite(value[1] - value[0])):
            raise ValueError(f"prediction_range must be [low, high] with low < high and a finite width high − low, "
                             f"got {list(value)}")
        return value

    @field_validator("classes", mode="before")
    @classmethod
    def _label_set(cls, value: Any) -> list[float] | list[str] | None:
        """Numbers (finite, not bools) or names, one line for any bad one (a union type gave one per member)."""
        if value is None:
            return value
        if not isinstance(value, list):
            raise ValueError(f"give a list of class numbers or names, got {value!r}")
        for label in value:
            if not isinstance(label, str) and (isinstance(label, bool) or not isinstance(label, int | float)
                                               or not math.isfinite(label)):
                raise ValueError(f"a class is a finite number or a name, got {label!r}")
        value = [label if isinstance(label, str) else float(label) for label in value]
        if len(value) < 2:
            raise ValueError(f"a label set has at least two classes, got {value!r}")
        if len({isinstance(label, str) for label in value}) > 1:
            raise ValueError(f"give every class as a number or every class as a name, not both, got {value!r}")
        seen: set[Any] = set()
        for label in value:
            if label in seen:
                raise ValueError(f"class {label!r} is listed twice")
            seen.add(label)
        return value

    @field_validator("teams")
    @classmethod
    def _unique_teams(cls, teams: list[TeamTable]) -> list[TeamTable]:
        """One entry per team, each ``count`` made into its numbered teams, every name once."""
        total = sum(team.count or 1 for team in teams)
        if total > MAX_TEAMS:
            raise ValueError(f"{total:,} teams (counts included); a challenge has at most {MAX_TEAMS:,}")
        seen: set[str] = set()
        for team in teams:
            for name in team.names():
                if name.casefold() in seen:
                    made = "" if team.count is None else f" (made by name = {team.name!r} with count = {team.count})"
                    raise ValueError(f"team {name!r} is listed twice{made} (names are compared ignoring case)")
                seen.add(name.casefold())
        return [TeamTable(name=name) for team in teams for name in team.names()]

    @model_validator(mode="after")
    def _distinct_columns(self) -> ChallengeFile:
        named = {"labels.id_column": self.labels.id_column, "labels.label_column": self.labels.label_column}
        if self.split.column is not None:
            named["split.column"] = self.split.column
        keys = list(named)
        for i, key in enumerate(keys):
            for other in keys[i + 1:]:
                if named[key] == named[other]:
                    raise ValueError(f"{key} and {other} both name the column {named[key]!r}: each needs its own")
        return self

    @model_validator(mode="after")
    def _scorer_fits_task(self) -> ChallengeFile:
        kind = get_scorer(self.scorer).prediction_kind
        if self.task_type == "regression" and kind is not PredictionKind.REAL:
            raise ValueError(f"task_type: scorer {self.scorer!r} scores {kind.value} predictions of classes, "
                             "not a regression")
        return self

    @model_validator(mode="after")
    def _one_mechanism(self) -> ChallengeFile:
        entry = PluginEntry(id=self.mechanism.id, params=self.mechanism.params)
        _check_entry(entry, MECHANISMS, "mechanism")
        if len(expand(self.mechanism.params, MECHANISMS.get(self.mechanism.id))) > 1:
            raise ValueError("mechanism.params: a list makes a grid of mechanisms; a challenge runs one")
        return self


DATA_FILE_KEYS = ("labels.file", "data.train", "data.holdout")
"""The keys of a challenge file that name the data files :func:`load` reads."""


def data_files(table: dict[str, Any]) -> dict[str, str]:
    """The data files a challenge file's table names, by key (:data:`DATA_FILE_KEYS`), as written;
    the table need not be valid (a key that is not text is left out)."""
    named = {}
    for key in DATA_FILE_KEYS:
        section, field = key.split(".")
        part = table.get(section)
        value = part.get(field) if isinstance(part, dict) else None
        if isinstance(value, str):
            named[key] = value
    return named


_KEYS = {name for model in (ChallengeFile, LabelsTable, SplitTable, MechanismTable, RulesTable, LimitsTable,
                            DataTable, CertifyTable, RegistrationTable, TeamTable) for name in model.model_fields}


@dataclass(frozen=True, eq=False)
class Challenge:
    """A loaded challenge: the file, and ladderlab's objects built from it."""

    spec: ChallengeFile
    path: Path
    ids: NDArray[np.object_]
    """The holdout ids in the published order (sorted: numerically when all are whole numbers)."""
    split: Split
    """Public and final labels, label set, scorer and the public data, in the order of ``ids``."""
    class_names: tuple[str, ...] | None = None
    """The class names of a label column of names, sorted: class ``i`` of ``split`` is ``class_names[i]``
    (None: the labels are numbers)."""

    @property
    def name(self) -> str:
        return self.spec.name

    def mechanism(self) -> Mechanism:
        """A fresh, unbound instance of the challenge's mechanism."""
        return MECHANISMS.make(self.spec.mechanism.id, **self.spec.mechanism.params)

    def identity(self) -> str:
        """A hash of everything that determines a release: the data (:meth:`task_identity`) and
        the mechanism with all its parameters. The rules and the teams are not part of it (an
        organiser may extend the end date or add a team)."""
        mechanism = self.mechanism()
        digest = hashlib.sha256(self.task_identity().encode())
        digest.update(json.dumps([mechanism.id, mechanism.identity_params()], sort_keys=True, default=repr).encode())
        return digest.hexdigest()[:32]

    def task_identity(self) -> str:
        """A hash of everything the challenge gives a duel as its task: the ids, the labels and
        the split, the public data (training rows, holdout inputs), the task type, the scorer,
        the label set (with the class names of a column of names) and the prediction range.
        The mechanism, the rules and the teams are not part of it, nor how the files are laid
        out (CSV or Parquet, the order of the labels and holdout rows, spacing): a certificate
        made for these data stays valid when the organiser names it in the file."""
        split, public = self.split, self.split.public
        digest = hashlib.sha256()
        digest.update("\n".join(self.ids).encode())
        for array in (split.y_holdout, split.public_rows.astype(np.int64), split.final_rows.astype(np.int64),
                      public.X_train, public.y_train, public.X_holdout):
            digest.update(repr(array.shape).encode())
            digest.update(np.ascontiguousarray(array, dtype=float).tobytes())
        described = [public.task_type, public.scorer, None if public.classes is None else public.classes.tolist(),
                     public.prediction_range]
        if self.class_names is not None:  # the hash of a challenge of numeric labels stays what it was
            described.append(list(self.class_names))
        digest.update(json.dumps(described).encode())
        return digest.hexdigest()

    def days(self) -> int | None:
        """The UTC days a team can submit on, from start to end (None without both)."""
        rules = self.spec.rules
        if rules.start is None or rules.end is None:
            return None
        first = rules.start.astimezone(timezone.utc).date()
        last = (rules.end - timedelta(microseconds=1)).astimezone(timezone.utc).date()
        return (last - first).days + 1

    def per_team_budget(self) -> int | None:
        """The most submissions a team can make over the challenge: the total cap, or the daily
        cap times the UTC days between start and end; None when nothing bounds it."""
        rules, days = self.spec.rules, self.days()
        by_days = None if rules.per_day is None or days is None else rules.per_day * days
        bounds = [bound for bound in (rules.total, by_days) if bound is not None]
        return min(bounds) if bounds else None

    def honest_participants(self, budget: int | None = None) -> list[tuple[str, dict[str, Any]]]:
        """The honest participants whose cost a certificate for the challenge measures, each its id and
        pinned parameters: ``[certify] honest``, else ``improving`` with one submission a day over the
        challenge's days, at most a team's budget and at most ``budget`` (the largest budget certified: an
        honest participant never submits more than the certificate allows; no participant when nothing
        gives a number of days)."""
        if self.spec.certify.honest:
            return [(attack_id, pinned or {}) for attack_id, pinned in map(parse_honest, self.spec.certify.honest)]
        days = [bound for bound in (self.days(), self.per_team_budget(), budget) if bound is not None]
        return [("improving", {"days": min(days)})] if days else []

    def release_step(self) -> float | None:
        """The grid the challenge's mechanism releases on (:func:`ladderlab.runs.display.release_step`)."""
        public = self.split.public
        return release_step(self.mechanism(), public.scorer, public.prediction_range,
                            None if public.classes is None else int(public.classes.size))

    def link_rule(self) -> LinkRule | None:
        """The rule that links a participant's accounts under ``[rules] link = true`` (None: the
        service links nothing): each parameter the rules give, else the certificate's
        (:func:`certified_link_rule`), else :class:`~ladderlab.engines.linking.LinkRule`'s default."""
        rules = self.spec.rules
        if not rules.link:
            return None
        certified = certified_link_rule(self)
        given = {name: getattr(rules, f"link_{name}") for name in LINK_PARAMETERS}
        values = {name: given[name] if given[name] is not None else
                  getattr(certified if certified is not None else LinkRule(), name) for name in LINK_PARAMETERS}
        return LinkRule(**values)

    def link_threshold(self) -> int:
        """The most differing holdout rows that link two submissions (:meth:`LinkRule.threshold`)."""
        rule = self.link_rule()
        if rule is None:
            raise ChallengeError(f"{self.path}: the rules link nothing (rules.link = false): no link threshold")
        return rule.threshold(int(self.split.y_holdout.size))

    def max_upload_bytes(self) -> int:
        """The largest upload the server reads."""
        limit = self.spec.limits.max_upload_bytes
        values = self.ids.size * max(1, 0 if self.split.public.classes is None else self.split.public.classes.size)
        return limit if limit is not None else DEFAULT_MAX_UPLOAD_BYTES_PER_VALUE * values + (64 << 10)


def load(path: str | Path, force: bool = False) -> Challenge:
    """Read and validate a challenge file and every file it names; :class:`ChallengeError`
    with one line per problem, naming the file, the key and the value, before any work.
    A challenge (or a file it names) whose estimated memory does not fit is refused with
    :class:`ladderlab.runs.workload.TooLarge`, unless ``force``."""
    path = Path(path)
    if not path.is_file():
        raise ChallengeError(f"{path}: no such challenge file")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise ChallengeError(f"{path}: not valid TOML: {error}") from None
    except UnicodeDecodeError:
        raise ChallengeError(f"{path}: not a text file") from None
    try:
        spec = ChallengeFile.model_validate(raw)
    except ValidationError as error:
        raise ChallengeError(problem_lines(error, str(path), _KEYS)) from None
    return build(spec, path, force)


def build(spec: ChallengeFile, path: Path, force: bool = False) -> Challenge:
    """The :class:`Challenge` of a validated file (``path`` locates the files it names)."""
    files = {key: _named_file(path, key, name) for key, name in data_files(spec.model_dump()).items()}
    labels_path = files["labels.file"]
    columns = [spec.labels.id_column, spec.labels.label_column] + ([spec.split.column] if spec.split.column else [])
    table = _read_table(labels_path, f"{path}: labels.file", columns, {spec.labels.id_column}, force)
    ids = _ids(table[spec.labels.id_column], f"{labels_path}: column {spec.labels.id_column!r}")
    order = _published_order(ids)
    ids = ids[order]
    labels_where = f"{labels_path}: column {spec.labels.label_column!r}"
    raw_labels = table[spec.labels.label_column].to_numpy()[order]
    scorer = get_scorer(spec.scorer)
    kind = scorer.prediction_kind
    task_type: TaskType = spec.task_type or ("regression" if kind is PredictionKind.REAL else "classification")
    classes, class_names = None, None
    if task_type == "classification":
        labels, classes, class_names = _class_labels(raw_labels, ids, order + 1, spec.classes, labels_where)
    elif spec.classes is not None:
        raise ChallengeError(f"{path}: classes: a regression challenge has no label set (scorer {spec.scorer!r})")
    else:
        labels = _numbers(raw_labels, ids, labels_where)
    if scorer.binary_labels and not np.isin(labels, (0.0, 1.0)).all():
        found = np.unique(raw_labels.astype(str))
        shown = ", ".join(found[:10]) + (", …" if found.size > 10 else "")
        raise ChallengeError(f"{path}: scorer: {spec.scorer!r} scores binary labels 0 and 1, but {labels_where} holds "
                             f"{found.size} distinct labels ({shown}); for several classes 'multiclass-log-loss' scores "
                             "class probabilities, 'zero-one' and 'accuracy' class labels")
    if spec.split.column is not None:
        public_rows, final_rows = _column_split(table[spec.split.column].to_numpy()[order], ids,
                                                f"{labels_path}: column {spec.split.column!r}")
    else:
        permutation = stream(spec.split.seed, "challenge-split", spec.name).permutation(ids.size)
        n_public = int(round(spec.split.public_fraction * ids.size))
        public_rows, final_rows = np.sort(permutation[:n_public]), np.sort(permutation[n_public:])
    for rows, which in ((public_rows, "public"), (final_rows, "final")):
        if rows.size < 2:
            raise ChallengeError(f"{path}: split: the {which} set has {rows.size} rows of {ids.size}; it needs at least 2")
    X_train, y_train, X_holdout = _public_inputs(spec, path, files, ids, class_names, force)
    public = PublicData(X_train, y_train, X_holdout, task_type, scorer.name, classes, None,
                        None if spec.prediction_range is None else tuple(map(float, spec.prediction_range)))
    split = Split(public, public_rows, final_rows, labels)
    challenge = Challenge(spec, path, ids, split, class_names)
    values = 1 if classes is None or kind is not PredictionKind.PROBABILITIES else classes.size
    teams = len(spec.teams) + (0 if spec.registration is None else spec.registration.max_teams)
    refuse_if_too_large(challenge_work(ids.size, public_rows.size, values, teams, challenge.max_upload_bytes()),
                        force, hint=f"{path}: a smaller limits.max_upload_bytes, fewer teams or rows need less")
    _bind_check(challenge)
    return challenge


def _bind_check(challenge: Challenge) -> None:
    """Bind the mechanism to the public labels once, so that a parameter that does not fit
    them (or a scorer the mechanism cannot use) is found now."""
    from ladderlab.runs.duel import incompatibility

    mechanism = challenge.mechanism()
    reason = incompatibility(challenge.split, mechanism, None)
    if reason:
        raise ChallengeError(f"{challenge.path}: mechanism: {reason}")
    split = challenge.split
    try:
        mechanism.bind(split.y_public, split.public.scorer, np.random.default_rng(0), classes=split.public.classes)
    except ValueError as error:
        raise ChallengeError(f"{challenge.path}: mechanism.params: {error}") from None


def _named_file(challenge: Path, key: str, name: str) -> Path:
    path = Path(name) if Path(name).is_absolute() else challenge.parent / name
    if not path.is_file():
        raise ChallengeError(f"{challenge}: {key}: no such file {path}")
    return path


def _read_table(path: Path, where: str, required: list[str], text_columns: set[str], force: bool = False
                ) -> pd.DataFrame:
    """A CSV or Parquet file as a DataFrame with the ``required`` columns (``text_columns`` read as text)."""
    refuse_if_too_large(file_reading_work(path), force, hint=f"{where}: a smaller file needs less")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            table = pd.read_parquet(path)
        elif path.suffix.lower() in (".csv", ".txt"):
            refuse_repeated_columns(path)
            table = pd.read_csv(path, dtype={column: str for column in text_columns}, keep_default_na=False,
                                na_values=[""])
        else:
            raise ChallengeError(f"{where}: {path} is neither CSV (.csv) nor Parquet (.parquet)")
    except (OSError, ValueError, pd.errors.ParserError) as error:
        if isinstance(error, ChallengeError):
            raise
        raise ChallengeError(f"{where}: cannot read {path}: {str(error).splitlines()[0]}") from None
    missing = [column for column in required if column not in table.columns]
    if missing:
        raise ChallengeError(f"{where}: {path} has no column {missing[0]!r} (columns: {', '.join(map(str, table.columns))})")
    if table.empty:
        raise ChallengeError(f"{where}: {path} has no rows")
    return table


def _ids(column: pd.Series, where: str) -> NDArray[np.str_]:
    if column.isna().any():
        raise ChallengeError(f"{where}: row {int(np.flatnonzero(column.isna().to_numpy())[0]) + 1} has no id")
    ids = column.astype(str).str.strip().to_numpy(dtype=object)
    unique, counts = np.unique(ids, return_counts=True)
    if (counts > 1).any():
        raise ChallengeError(f"{where}: id {unique[counts > 1][0]!r} appears {counts[counts > 1][0]} times")
    return ids


def _published_order(ids: NDArray[Any]) -> NDArray[np.int64]:
    """Ids sorted numerically when all are whole numbers, else as text: the order does not
    depend on how the labels file is sorted, so it cannot reveal the split."""
    if all(text.lstrip("-").isdigit() for text in ids):
        return np.argsort(np.array([int(text) for text in ids]), kind="stable")
    return np.argsort(ids.astype(str), kind="stable")


def _numbers(values: NDArray[Any], ids: NDArray[Any], where: str) -> NDArray[np.float64]:
    numbers = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(numbers)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ChallengeError(f"{where}: id {ids[first]!r} has {values[first]!r}, not a finite number")
    return numbers


def _class_labels(values: NDArray[Any], ids: NDArray[Any] | None, rows: NDArray[np.int64], declared: list[Any] | None,
                  where: str) -> tuple[NDArray[np.float64], NDArray[np.float64], tuple[str, ...] | None]:
    """Classification labels, the label set and the class names: numbers as they are, or class
    names (every label a name) as their indices in the sorted names, the declared ones or else
    the distinct labels. A missing label, a mix of numbers and names, or a label outside the
    declared classes is a :class:`ChallengeError` naming ``where``, the row (of the file:
    ``rows``) and the value."""
    series = pd.Series(values, dtype=object)
    text = series.map(lambda value: str(value).strip()).to_numpy(dtype=object)

    def at(position: int) -> str:
        return f"{where}: row {rows[position]}" + ("" if ids is None else f" (id {ids[position]!r})")

    missing = series.isna().to_numpy() | (text == "")
    if missing.any():
        raise ChallengeError(f"{at(int(np.flatnonzero(missing)[0]))} has no label")
    spelled_nan = np.isin(np.char.lower(text.astype(str)), ("nan", "+nan", "-nan"))
    named = np.isnan(pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)) & ~spelled_nan
    if named.any() and not named.all():
        odd = named if named.sum() <= (~named).sum() else ~named
        first, other = int(np.flatnonzero(odd)[0]), int(np.flatnonzero(~odd)[0])
        raise ChallengeError(f"{at(first)} has {text[first]!r} among labels such as {text[other]!r}: give every "
                             "label as a number or every label as a class name, not both")
    declared_names = declared is not None and isinstance(declared[0], str)
    if declared is not None and declared_names != named.all():
        kinds = ("class names", "numbers") if named.all() else ("numbers", "class names")
        raise ChallengeError(f"{where}: the labels are {kinds[0]} (e.g. {text[0]!r}), the challenge key 'classes' "
                             f"lists {kinds[1]} {declared!r}")
    if named.all():
        names = np.unique(text if declared is None else np.asarray(declared, dtype=object))
        labels, classes, shown = text, names, list(names)
    else:
        labels = _numbers(values, np.asarray(rows).astype(str) if ids is None else ids, where)
        classes = np.unique(labels if declared is None else np.asarray(declared, dtype=float))
        shown = classes.tolist()
    outside = ~np.isin(labels, classes)
    if outside.any():
        first = int(np.flatnonzero(outside)[0])
        value = repr(labels[first]) if named.all() else f"{labels[first]:g}"
        raise ChallengeError(f"{at(first)} has label {value}, not one of classes {shown} (challenge key 'classes')")
    if classes.size < 2:
        raise ChallengeError(f"{where}: a classification challenge needs at least two classes, got {shown}")
    if not named.all():
        return labels, classes, None
    return np.searchsorted(names, labels).astype(float), np.arange(names.size, dtype=float), tuple(map(str, names))


def _column_split(values: NDArray[Any], ids: NDArray[Any], where: str) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    text = np.array([str(value).strip().lower() for value in values])
    bad = ~np.isin(text, SPLIT_VALUES)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ChallengeError(f"{where}: id {ids[first]!r} has {values[first]!r}; the split column holds "
                             f"{' or '.join(map(repr, SPLIT_VALUES))}")
    return np.flatnonzero(text == "public"), np.flatnonzero(text == "final")


def _public_inputs(spec: ChallengeFile, path: Path, files: dict[str, Path], ids: NDArray[Any],
                   class_names: tuple[str, ...] | None, force: bool = False
                   ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Training features and labels (class names as their indices in ``class_names``), and the
    holdout inputs in the order of ``ids`` (empty arrays where the challenge publishes none)."""
    X_train, y_train = np.empty((0, 0)), np.empty(0)
    X_holdout = np.empty((ids.size, 0))
    label = spec.labels.label_column
    if "data.train" in files:
        train_path = files["data.train"]
        table = _read_table(train_path, f"{path}: data.train", [label], set(), force)
        features = [column for column in table.columns if column != label]
        X_train = _feature_matrix(table[features], f"{train_path}")
        rows = np.arange(1, len(table) + 1)
        where = f"{train_path}: column {label!r}"
        y_train = (_numbers(table[label].to_numpy(), rows.astype(str), where) if class_names is None
                   else _class_labels(table[label].to_numpy(), None, rows, list(class_names), where)[0])
    if "data.holdout" in files:
        holdout_path = files["data.holdout"]
        id_column = spec.labels.id_column
        table = _read_table(holdout_path, f"{path}: data.holdout", [id_column], {id_column}, force)
        holdout_ids = _ids(table[id_column], f"{holdout_path}: column {id_column!r}")
        position = pd.Index(holdout_ids).get_indexer(ids)
        if (position < 0).any() or holdout_ids.size != ids.size:
            missing = ids[position < 0]
            extra = np.setdiff1d(holdout_ids, ids)
            detail = f"misses id {missing[0]!r}" if missing.size else f"has id {extra[0]!r}, which the labels file has not"
            raise ChallengeError(f"{holdout_path}: the holdout inputs must have exactly the labels file's ids; it {detail}")
        features = [column for column in table.columns if column != id_column]
        X_holdout = _feature_matrix(table[features], f"{holdout_path}")[position]
        if "data.train" in files and X_holdout.shape[1] != X_train.shape[1]:
            raise ChallengeError(f"{holdout_path}: {X_holdout.shape[1]} feature columns, the training file has "
                                 f"{X_train.shape[1]}")
    return X_train, y_train, X_holdout


def _feature_matrix(table: pd.DataFrame, where: str) -> NDArray[np.float64]:
    matrix = table.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(matrix)
    if bad.any():
        row, column = np.argwhere(bad)[0]
        raise ChallengeError(f"{where}: row {row + 1}, column {table.columns[column]!r}: "
                             f"{table.iloc[row, column]!r} is not a finite number")
    return matrix


def certificate_problems(challenge: Challenge) -> list[str]:
    """What the challenge's certificate does not cover (empty: everything is covered).

    A certificate (``ladderlab certify --out``: keys ``mechanism``, ``params``, ``n``,
    ``safe_budget``, ``budgets``) covers the challenge when it certifies the same mechanism
    with the same parameters (defaults included), on a public holdout no larger than the
    challenge's, at a safe budget of at least the most submissions one team can make, against
    an attacker of at least as many accounts as the rules let a participant hold (a certificate
    of linked accounts, ``--link``, covers only rules that link them with its rule).
    A certificate made for a challenge (``ladderlab certify --challenge``, key ``challenge``)
    covers only a challenge with the same data (:meth:`Challenge.task_identity`: labels,
    split, public data, scorer, label set, prediction range). Any other certificate covers,
    where it records them (a ``scorer`` and ``prediction_range``, or its task ``families``'
    parameters), the challenge's scorer on a prediction range that contains the challenge's.
    A challenge without a certificate is not covered.
    """
    if challenge.spec.mechanism.certificate is None:
        return ["the challenge names no certificate (mechanism.certificate): certify the mechanism with "
                "'ladderlab certify ... --out FILE' and name the file"]
    path, certificate = _certificate(challenge)
    try:
        certified_id, certified_params = certificate["mechanism"], certificate["params"]
        certified_n, safe = int(certificate["n"]), int(certificate["safe_budget"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ChallengeError(f"{challenge.path}: mechanism.certificate: {path} is not a certificate written by "
                             f"'ladderlab certify --out' ({type(error).__name__}: {error})") from None
    mechanism = challenge.mechanism()
    problems = _recorded_challenge_problems(challenge, certificate.get("challenge"), path)
    if certified_id != mechanism.id:
        problems.append(f"mechanism {mechanism.id!r} is not the certified mechanism {certified_id!r} ({path})")
    else:
        params = json.loads(json.dumps(mechanism.get_params(), default=repr))
        for name in sorted(set(params) | set(certified_params)):
            if params.get(name) != certified_params.get(name):
                problems.append(f"mechanism parameter {name} = {params.get(name)!r} is not the certified "
                                f"{certified_params.get(name)!r} ({path})")
    n_public = int(challenge.split.public_rows.size)
    if n_public < certified_n:
        problems.append(f"the public holdout has {n_public} rows, fewer than the certified n = {certified_n} ({path})")
    budget = challenge.per_team_budget()
    if budget is None:
        problems.append(f"nothing bounds a team's submissions (set rules.total, or rules.per_day with start and end); "
                        f"the certificate's safe budget is {safe} ({path})")
    elif budget > safe:
        problems.append(f"a team may make {budget} submissions, more than the certificate's safe budget of {safe} ({path})")
    problems += _account_problems(challenge, certificate, path)
    if certificate.get("challenge") is not None:
        return problems + _honest_problems(challenge, certificate, path)
    return problems + _scorer_problems(challenge, certificate, path)


def _certificate(challenge: Challenge) -> tuple[Path, dict[str, Any]]:
    """The path and contents of the certificate the challenge names."""
    path = _named_file(challenge.path, "mechanism.certificate", str(challenge.spec.mechanism.certificate))
    try:
        certificate = json.loads(path.read_text())
        if not isinstance(certificate, dict):
            raise TypeError(f"a JSON {type(certificate).__name__}, not an object")
    except (OSError, ValueError, TypeError) as error:
        raise ChallengeError(f"{challenge.path}: mechanism.certificate: {path} is not a certificate written by "
                             f"'ladderlab certify --out' ({type(error).__name__}: {error})") from None
    return path, certificate


def certified_link_rule(challenge: Challenge) -> LinkRule | None:
    """The link rule of the challenge's certificate (``certify --accounts A --link``, its recorded
    ``link_rule``); None without one. A certificate of the old rule on public rows (its
    ``link_rule`` has ``alpha``, or it records ``link`` only) is refused: it does not speak for
    this rule (docs/decisions.md#serve-link-probe)."""
    if challenge.spec.mechanism.certificate is None:
        return None
    path, certificate = _certificate(challenge)
    if not certificate.get("link"):
        return None
    recorded = certificate.get("link_rule", {})
    try:
        return LinkRule.from_record(recorded)
    except (ValueError, TypeError) as error:
        raise ChallengeError(f"{challenge.path}: mechanism.certificate: {path}: {error}: certify again with "
                             f"--link") from None


def _account_problems(challenge: Challenge, certificate: dict[str, Any], path: Path) -> list[str]:
    """Whether the certificate's attacker (``certify --accounts A [--link]``) holds at least the
    accounts the rules let one participant hold, under linking no stronger than the service's:
    a certificate that assumed linked accounts covers several accounts per participant only
    when the rules link them (``rules.link``) with the certificate's rule."""
    rules = challenge.spec.rules
    allowed = rules.accounts
    certified = certificate.get("accounts", 1)
    if isinstance(certified, bool) or not isinstance(certified, int) or certified < 1:
        raise ChallengeError(f"{challenge.path}: mechanism.certificate: {path}: 'accounts' = {certified!r} is not a "
                             "whole number ≥ 1")
    if allowed > certified:
        return [f"the rules let a participant hold {allowed} accounts (rules.accounts), more than the certificate's "
                f"{certified} (certify --accounts {certified}) ({path})"]
    if not certificate.get("link") or allowed == 1:
        return []
    if not rules.link:
        return [f"the certificate assumed a participant's accounts linked (certify --accounts {certified} --link), "
                f"the rules link none of the {allowed} accounts they allow (rules.accounts): set rules.link = true, "
                f"certify without --link, or set rules.accounts = 1 ({path})"]
    certified_rule = certified_link_rule(challenge)
    assert certified_rule is not None
    return [f"rules.link_{name} = {getattr(rules, f'link_{name}')!r} is not the certificate's link rule's "
            f"{getattr(certified_rule, name)!r} ({path})"
            for name in LINK_PARAMETERS
            if getattr(rules, f"link_{name}") is not None and getattr(rules, f"link_{name}") != getattr(certified_rule, name)]


def _honest_problems(challenge: Challenge, certificate: dict[str, Any], path: Path) -> list[str]:
    """Whether a certificate made for the challenge measured the cost to its honest participants
    (:meth:`Challenge.honest_participants`): the same ids with the same parameters, defaults
    included. A version-1 certificate (no ``certificate_version``) records its one participant as
    ``honest.participant``, which is read as ``--honest`` reads it."""
    honest = certificate.get("honest")
    try:
        entries = [honest] if isinstance(honest, dict) else list(honest)
        recorded = sorted(_participant_key(*_recorded_participant(entry)) for entry in entries)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise ChallengeError(f"{challenge.path}: mechanism.certificate: {path}: its 'honest' record does not name its "
                             f"honest participants ({type(error).__name__}: {error}); certify again with "
                             "'ladderlab certify --challenge'") from None
    wanted = challenge.honest_participants(max(certificate["challenge"].get("budgets") or [0]) or None)
    if not wanted or recorded == sorted(_participant_key(*participant) for participant in wanted):
        return []
    shown = ", ".join(f"{entry.get('participant')}" for entry in entries)
    declared = "[certify] honest" if challenge.spec.certify.honest else "the default for its schedule"
    return [f"the certificate measured the cost to honest participants with {shown}; this challenge's are "
            f"{', '.join(plugin_label(*participant) for participant in wanted)} ({declared}): certify again with "
            f"--challenge ({path})"]


def _participant_key(attack_id: str, params: dict[str, Any]) -> str:
    """An honest participant with all its parameters, defaults included, as comparable text."""
    return json.dumps([attack_id, ATTACKS.make(attack_id, **params).get_params()], sort_keys=True, default=repr)


def _recorded_participant(entry: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """A certificate's honest participant: its ``id`` and ``params``, or (version 1) its label parsed."""
    if "id" in entry:
        return entry["id"], dict(entry["params"])
    attack_id, pinned = ATTACKS.parse(entry["participant"])
    return attack_id, pinned or {}


def _recorded_challenge_problems(challenge: Challenge, recorded: Any, path: Path) -> list[str]:
    """What differs between the challenge a certificate records (None: a certificate of the
    synthetic battery) and this one: the scorer, or any of the data."""
    if recorded is None:
        return []
    if not isinstance(recorded, dict) or not isinstance(recorded.get("task_identity"), str):
        raise ChallengeError(f"{challenge.path}: mechanism.certificate: {path}: its 'challenge' record has no "
                             "'task_identity'; certify again with 'ladderlab certify --challenge'")
    scorer = challenge.split.public.scorer
    if recorded.get("scorer") != scorer:
        return [f"the certificate was made for the scorer {recorded.get('scorer')!r}, this challenge is scored by "
                f"{scorer!r} ({path})"]
    if recorded["task_identity"] != challenge.task_identity():
        renamed = ""
        if recorded.get("name") != challenge.name and challenge.spec.split.public_fraction is not None:
            renamed = (f" (the split is drawn from split.seed and the challenge's name, so renaming "
                       f"{recorded.get('name')!r} to {challenge.name!r} drew another one)")
        return [f"the certificate was made for other data (challenge {recorded.get('name')!r}, data hash "
                f"{recorded['task_identity'][:16]}…, this challenge's {challenge.task_identity()[:16]}…): its labels, "
                f"split, public data or prediction range differ{renamed}; certify again with --challenge ({path})"]
    return []


def _scorer_problems(challenge: Challenge, certificate: dict[str, Any], path: Path) -> list[str]:
    """Whether the certificate covers the challenge's scorer and prediction range, as far as it
    records them: nothing is said about what it does not record."""
    certified = _certified_scorers(certificate)
    if certified is None:
        return []
    scorer = challenge.split.public.scorer
    if scorer not in certified:
        return [f"scorer {scorer!r} is not certified (the certificate covers {', '.join(map(repr, sorted(certified)))}) "
                f"({path})"]
    ranges = certified[scorer]
    wanted = challenge.split.public.prediction_range
    if any(not (certified_range is None or isinstance(certified_range, list)) for certified_range in ranges):
        return []  # a range the certificate names but does not give (e.g. the training labels' range)
    if any(certified_range is None or (wanted is not None and certified_range[0] <= wanted[0]
                                       and wanted[1] <= certified_range[1]) for certified_range in ranges):
        return []
    shown = "any prediction" if wanted is None else f"predictions in {list(wanted)}"
    return [f"{shown} (prediction_range) is not within the certified prediction range "
            f"{' or '.join(str(certified_range) for certified_range in ranges)} for scorer {scorer!r} ({path})"]


_UNRECORDED = "unrecorded"


def _certified_scorers(certificate: dict[str, Any]) -> dict[str, list[Any]] | None:
    """The scorers a certificate covers, each with its certified prediction ranges (a list
    ``[low, high]``; None: unbounded; anything else: not comparable); None if it records no scorer."""
    if "scorer" in certificate:
        return {str(certificate["scorer"]): [certificate.get("prediction_range", _UNRECORDED)]}
    families = certificate.get("families")
    if not isinstance(families, dict):
        return None
    covered: dict[str, list[Any]] = {}
    for name, family in families.items():
        params = family.get("params") if isinstance(family, dict) else None
        if name != "honest" and isinstance(params, dict) and "scorer" in params:
            covered.setdefault(str(params["scorer"]), []).append(params.get("prediction_range"))
    return covered or None
