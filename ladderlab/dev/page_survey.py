"""Which generated pages are current: ``ladderlab dev pages``.

Every page (or part of a page) a command writes (:data:`GENERATED`) is listed with the command
that regenerates it and its state: current while every fingerprint its stamp records
(:mod:`ladderlab.runs.page_stamps`) is still the code's. A page written before stamps existed is
checked by what it does record: a certificate's or results page's plugin *versions* tell a
stale page from one that may be current, nothing more. A page is never checked by the test
suite against the code, since pages are regenerated on idle machines, not in CI.
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ladderlab.runs.page_stamps import current_token, current_version, stamps_in
from ladderlab.utils.terminal import wrapped, wrapped_command

LEGACY_VERSIONS = re.compile(r"versions: (\{[^\n]*\})\s*$", re.MULTILINE)

GENERATED = (
    "docs/figures/*.md", "docs/figures/*.txt", "docs/results/*.md", "docs/certify-speed.md",
    "docs/competition-speed.md", "docs/isolation.md", "docs/serve-bench.txt", "docs/kaggle-realistic.md",
    "docs/roelofs-2019.md", "docs/proofs.md",
)
"""Every page (or page with a part) that a command writes, relative to the repository's root."""

RESULTS_INDEX = "docs/results/index.md"

WRITTEN_INTO = {"docs/isolation.md": "ladderlab dev bench-isolation --write docs/isolation.md"}
"""Pages with a part a command writes whose docs give the command only in words."""


# --- the survey ---------------------------------------------------------------------------------

@dataclass
class PageState:
    """Whether one generated page (or part) is current."""

    page: str
    part: str | None
    command: str | None
    state: str
    """current, stale (a plugin it records has changed), core changed (only a core module it
    records has), unverified (its plugin versions match; it records no source hashes),
    unrecorded (it records nothing to check) or missing (a row the command writes is absent)."""
    changed: list[str] = field(default_factory=list)
    documented: bool = False
    """The command is what the docs give for the page, not what it records: it may leave out
    options the docs add in words (the red-team certificates' ``--scorer zero-one --seed 1``)."""
    made: str | None = None
    """When and with which code the page was last written: the date and commit of the last
    commit that changed it (:func:`made`), where the repository's history is at hand."""


def made(root: Path, page: str) -> str | None:
    """``2026-11-24, commit 1a2b3c4`` for the last commit that changed ``page`` under ``root``
    (None: not in a git checkout, or never committed)."""
    try:
        found = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%cs, commit %h", "--", page],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return found.stdout.strip() or None


def check_code(page: str, command: str | None, code: Mapping[str, str], part: str | None = None) -> PageState:
    """A stamped page: stale when a recorded plugin's fingerprint differs from the code's now;
    ``core changed`` when only core modules did (a refactoring changes them too: read the diff)."""
    changed = [key for key, token in code.items() if current_token(key) != token]
    plugins_changed = [key for key in changed if not key.startswith("core:")]
    state = "stale" if plugins_changed else "core changed" if changed else "current"
    return PageState(page, part, command, state, changed)


def check_versions(page: str, command: str | None, versions: Mapping[str, str], part: str | None = None) -> PageState:
    """A page that records only its plugins' versions: stale when one differs, else unverified."""
    changed = [f"{key} (v{version} → {'gone' if now is None else 'v' + now})" for key, version in versions.items()
               if (now := current_version(key)) != str(version)]
    return PageState(page, part, command, "stale" if changed else "unverified", changed)


def documented_command(root: Path, page: str) -> str | None:
    """How a page without a stamp was made, as the docs say: the ``Written by `ladderlab …```
    on the page itself, else a ``ladderlab … --out PAGE`` (or ``--out`` its JSON, for a
    certificate) in any page, else the last ``ladderlab …`` the docs give before they include
    ``page`` (``--8<-- "docs/figures/…"``) in the same section."""
    if page in WRITTEN_INTO:
        return WRITTEN_INTO[page]
    own = re.search(r"Written by `(ladderlab [^`]+)`", (root / page).read_text(encoding="utf-8"))
    if own:
        return " ".join(own[1].split())
    sources = sorted((root / "docs").glob("*.md"))
    targets = "|".join(re.escape(name) for name in (page, str(Path(page).with_suffix(".json"))))
    for source in sources:
        found = re.search(rf"`(ladderlab [^`]*?--out (?:{targets}))`", source.read_text(encoding="utf-8"))
        found = found or re.search(rf"^(ladderlab .*--out (?:{targets}))$", source.read_text(encoding="utf-8"),
                                   re.MULTILINE)
        if found:
            return " ".join(found[1].split())
    include = f'--8<-- "{page}"'
    for source in sources:
        lines = source.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if line.strip() != include:
                continue
            for earlier in reversed(lines[:number]):
                if earlier.startswith("#"):
                    break
                found = re.findall(r"`(ladderlab [^`]+)`", earlier) or (
                    [earlier.strip()] if earlier.strip().startswith("ladderlab ") else [])
                if found:
                    return found[-1]
    return None


def _markdown_page(root: Path, page: str) -> list[PageState]:
    text = (root / page).read_text(encoding="utf-8")
    found = stamps_in(text)
    if found:
        return [check_code(page, record["command"], record["code"], record.get("part")) for record in found]
    legacy = LEGACY_VERSIONS.search(text)
    command = documented_command(root, page)
    state = (check_versions(page, command, json.loads(legacy[1])) if legacy
             else PageState(page, None, command, "unrecorded"))
    state.documented = True
    return [state]


def _results_page(root: Path, page: str) -> list[PageState]:
    data_file = root / "docs/results/data" / f"{Path(page).stem}.json"
    build = f"ladderlab dev results build {Path(page).stem}"
    if not data_file.is_file():
        return [PageState(page, None, build, "unrecorded")]
    data = json.loads(data_file.read_text(encoding="utf-8"))
    command = f"{data['command']} && {build}"
    if "code" in data:
        return [check_code(page, command, data["code"])]
    return [check_versions(page, command, data["run"].get("versions", {}))]


def _certify_speed_page(root: Path, page: str) -> list[PageState]:
    from ladderlab.dev import certify_speed
    from ladderlab.utils.markdown import marked_section

    section = marked_section((root / page).read_text(encoding="utf-8"), certify_speed.BEGIN, certify_speed.END) or ""
    stamped = {record.get("part"): record for record in stamps_in(section)}
    replications, seed = certify_speed.measured_with(section) or (100, 0)
    states = []
    for key in certify_speed.expected_rows():
        part = certify_speed.row_part(key)
        command = certify_speed.row_command(key, page, replications, seed)
        if part in stamped:
            states.append(check_code(page, stamped[part]["command"], stamped[part]["code"], part))
        elif key in certify_speed.kept_rows(section):
            states.append(PageState(page, part, command, "unrecorded"))
        else:
            states.append(PageState(page, part, command, "missing"))
    return states


def _plan_speed_rows(root: Path, page: str) -> list[PageState]:
    """The rows of ``ladderlab dev bench-plan``'s table in ``page``: one per plan it times."""
    from ladderlab.dev import plan_speed
    from ladderlab.utils.markdown import marked_section

    section = marked_section((root / page).read_text(encoding="utf-8"), plan_speed.BEGIN, plan_speed.END)
    if section is None:
        return []
    rows, _ = plan_speed.kept(section)
    stamped = {record.get("part"): record for record in stamps_in(section)}
    states = []
    for name, jobs in plan_speed.expected_parts():
        part, command = plan_speed.row_part(name, jobs), plan_speed.row_command(name, jobs, page)
        if part in stamped:
            states.append(check_code(page, stamped[part]["command"], stamped[part]["code"], part))
        else:
            states.append(PageState(page, part, command, "unrecorded" if part in rows else "missing"))
    return states


def survey(root: Path = Path(".")) -> list[PageState]:
    """Every generated page under ``root`` (the repository) and whether it is current."""
    import ladderlab.arena.registry  # noqa: F401  (registers the arena's plugin families, whose plugins stamps name)

    states: list[PageState] = []
    seen: set[str] = set()
    for pattern in GENERATED:
        for name in sorted(glob.glob(pattern, root_dir=root)):
            if name in seen or name == RESULTS_INDEX:
                continue
            seen.add(name)
            if name == "docs/certify-speed.md":
                states += _certify_speed_page(root, name) + _plan_speed_rows(root, name)
            elif name.startswith("docs/results/"):
                states += _results_page(root, name)
            elif name.endswith(".md"):
                states += _markdown_page(root, name)
            else:
                states.append(_text_page(root, name))
    for state in states:
        if state.state != "current":
            state.made = made(root, state.page)
    return states


def _text_page(root: Path, page: str) -> PageState:
    """A text page, included in a code block where a comment would show: no command stamps one yet."""
    return PageState(page, None, documented_command(root, page), "unrecorded", documented=True)


# --- the command --------------------------------------------------------------------------------

def format_states(states: list[PageState], counted: list[PageState] | None = None) -> str:
    """One block per page or part: its state, what changed, and the command that regenerates it;
    then how many of ``counted`` (default: ``states``) are in each state."""
    lines = []
    for state in states:
        where = state.page + (f" [{state.part}]" if state.part else "")
        lines.append(f"{state.state:<12} {where}")
        if state.changed:
            lines.append(wrapped(f"changed: {', '.join(state.changed)}", indent=" " * 13))
        if state.made:
            lines.append(f"             last written: {state.made}")
        how = "as documented" if state.documented else "regenerate"
        lines.append(wrapped_command(f"{how}: {state.command or 'no command recorded or documented'}", indent=" " * 13))
    counts = {name: sum(state.state == name for state in (states if counted is None else counted))
              for name in ("current", "stale", "core changed", "unverified", "unrecorded", "missing")}
    lines.append(", ".join(f"{count} {name}" for name, count in counts.items()))
    return "\n".join(lines)


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab dev pages``: parser and handler."""
    parser = commands.add_parser("pages", help="list every generated page under docs/ with the command that "
                                 "regenerates it and whether it is current (the code it records has not changed)")
    parser.add_argument("--root", default=".", help="the repository's root (default: the working directory, where "
                        "local plugin files named by a page are found)")
    parser.add_argument("--all", action="store_true", help="list current pages too (default: only those that "
                        "are not known to be current)")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    root = Path(args.root)
    if not (root / "docs").is_dir():
        raise ValueError(f"--root {root}: no docs/ folder there (give the repository's root)")
    states = survey(root)
    shown = states if args.all else [state for state in states if state.state != "current"]
    print(format_states(shown, states) if shown else "every generated page is current")
    if not args.all and shown:
        print(f"({sum(state.state == 'current' for state in states)} current pages not listed; --all lists them)",
              file=sys.stderr)
    return 1 if any(state.state in ("stale", "missing") for state in states) else 0
