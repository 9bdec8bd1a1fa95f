"""``ladderlab audit PLATFORM CONFIG``: where a platform's configuration lets raw scores reach participants.

Every platform rounds for display only and keeps what the scoring code returned (docs/deploying.md):
Codabench stores scores with 10 decimals and its API serves them unrounded, hidden columns and
hidden leaderboards included; EvalAI's ``leaderboard_decimal_precision`` is a filter of the web
page; both keep the scoring code's standard output and result files for the participant. A
certified mechanism therefore protects a challenge only when the scoring code returns nothing but
the released value; the audit reads a Codabench ``competition.yaml`` (and the scoring programs
beside it) or an EvalAI ``challenge_config.yaml`` (and its ``evaluation_script``) and names, for
each place a raw score would leak, the key, the value, why, and the fix. Given the challenge file
(``challenge``), it also compares the display precision with the certified release step and the
caps with the certified budget.
"""

from __future__ import annotations

import ast
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ladderlab.certification.challenge import Challenge
from ladderlab.platforms.export import display_decimals
from ladderlab.platforms.relay import __doc__ as RELAY_DOC

PLATFORMS = ("codabench", "evalai")
CODABENCH_DEFAULT_PRECISION = 2
"""A Codabench column's precision when the bundle gives none (its documentation)."""
EVALAI_HOST_ONLY, EVALAI_OWNER_AND_HOST, EVALAI_PUBLIC = 1, 2, 3


@dataclass(frozen=True)
class Finding:
    """One place raw scores would leak: where (``key`` in ``file``), what, and the fix."""

    file: str
    key: str
    problem: str
    fix: str

    def lines(self) -> list[str]:
        return [f"{self.file}: {self.key}: {self.problem}", f"  fix: {self.fix}"]


class AuditError(ValueError):
    """A configuration the audit cannot read; one line naming it."""


def audit(platform: str, config: str | Path, challenge: Challenge | None = None) -> list[Finding]:
    """The findings for ``config`` of ``platform`` (``codabench`` or ``evalai``)."""
    path = Path(config)
    if platform not in PLATFORMS:
        raise AuditError(f"audit reads {' and '.join(PLATFORMS)} configurations, not {platform!r}")
    if not path.is_file():
        raise AuditError(f"{path}: no such file")
    try:
        parsed = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise AuditError(f"{path}: not YAML: {str(error).splitlines()[0]}") from None
    if not isinstance(parsed, dict):
        raise AuditError(f"{path}: not a {platform} configuration (a YAML mapping)")
    return (_codabench if platform == "codabench" else _evalai)(path, parsed, challenge)


def _codabench(path: Path, bundle: dict[str, Any], challenge: Challenge | None) -> list[Finding]:
    name, findings = path.name, []
    columns = [(board, column) for board in _list(bundle.get("leaderboards") or bundle.get("leaderboard"))
               for column in _list(board.get("columns"))]
    for board in _list(bundle.get("leaderboards") or bundle.get("leaderboard")):
        if _true(board.get("hidden")):
            findings.append(Finding(name, f"leaderboard {board.get('key')!r}: hidden", "a hidden leaderboard is hidden "
                                    "on the page only: the submissions API still serves its scores",
                                    "write only released values to it (ladderlab export codabench)"))
    for board, column in columns:
        where = f"leaderboard {board.get('key')!r} column {column.get('key')!r}"
        if _true(column.get("hidden")):
            findings.append(Finding(name, f"{where}: hidden", "a hidden column is hidden on the page only: the API and "
                                    "the submission pages still serve it, unrounded",
                                    "do not write the column at all (drop its key from scores.json)"))
        precision = column.get("precision", CODABENCH_DEFAULT_PRECISION)
        findings += _precision(name, f"{where}: precision", precision, challenge,
                               "Codabench rounds for display only and serves the stored value (10 decimals) through "
                               "its API")
    if challenge is None and columns:
        findings.append(Finding(name, "leaderboards", "every column is stored with 10 decimals and served unrounded "
                                "by the API, whatever its precision: a column is safe only if the scoring program writes "
                                "a released value to it", "score with ladderlab's relay (ladderlab export codabench); "
                                "give --challenge to check the precision against the certified release"))
    if len(columns) > 1:
        keys = ", ".join(str(column.get("key")) for _, column in columns)
        findings.append(Finding(name, "leaderboards", f"{len(columns)} columns ({keys}): every column written is a "
                                "number the participant reads; only one released value is certified",
                                "keep one column, the released value; any other must not depend on the labels"))
    if _true(bundle.get("enable_detailed_results")):
        shown = [key for key in ("show_detailed_results_in_submission_panel", "show_detailed_results_in_leaderboard")
                 if _true(bundle.get(key, True))]
        if shown:
            findings.append(Finding(name, "enable_detailed_results", f"detailed_results.html is stored and shown "
                                    f"({', '.join(shown)})", "set enable_detailed_results: False, or write no score "
                                    "into detailed results"))
    for phase in _list(bundle.get("phases")):
        phase_name = f"phase {phase.get('name', phase.get('index'))!r}"
        if not _true(phase.get("hide_output")):
            findings.append(Finding(name, f"{phase_name}: hide_output", "the scoring program's stdout and stderr are "
                                    "shown to the participant", "set hide_output: True (and print no score)"))
        if not _true(phase.get("hide_score_output")):
            findings.append(Finding(name, f"{phase_name}: hide_score_output", "participants download the scoring "
                                    "step's output folder: scores.json and every file the scoring program writes",
                                    "set hide_score_output: True"))
        findings += _caps(name, phase_name, phase.get("max_submissions"), challenge, "max_submissions")
    for task in _list(bundle.get("tasks")):
        program = task.get("scoring_program")
        if isinstance(program, str):
            findings += _printed_scores(path.parent / program, name, f"task {task.get('index')!r} scoring_program")
    return findings


def _evalai(path: Path, config: dict[str, Any], challenge: Challenge | None) -> list[Finding]:
    name, findings = path.name, []
    boards = {board.get("id"): board for board in _list(config.get("leaderboard"))}
    for board in boards.values():
        labels = (board.get("schema") or {}).get("labels") or []
        if len(labels) > 1:
            findings.append(Finding(name, f"leaderboard {board.get('id')}: schema.labels", f"{len(labels)} metrics "
                                    f"({', '.join(map(str, labels))}): each is a number the participant reads; only one "
                                    "released value is certified", "keep one label, the released value"))
    for split in _list(config.get("challenge_phase_splits")):
        where = f"phase {split.get('challenge_phase_id')} split {split.get('dataset_split_id')}"
        visibility = split.get("visibility", EVALAI_PUBLIC)
        if visibility in (EVALAI_HOST_ONLY, EVALAI_OWNER_AND_HOST):
            findings.append(Finding(name, f"{where}: visibility {visibility}", "a leaderboard hidden from the public "
                                    "still gives each team its own result (submission_result_file, the submissions "
                                    "API) as evaluate() returned it", "return only released values from evaluate() "
                                    "(ladderlab export evalai)"))
        findings += _precision(name, f"{where}: leaderboard_decimal_precision",
                               split.get("leaderboard_decimal_precision", 2), challenge,
                               "EvalAI's precision is a filter of the web page; the API serves the result evaluate() "
                               "returned")
    for phase in _list(config.get("challenge_phases")):
        phase_name = f"phase {phase.get('codename', phase.get('id'))!r}"
        if not _true(phase.get("disable_logs")):
            findings.append(Finding(name, f"{phase_name}: disable_logs", "what evaluate() prints is saved as the "
                                    "submission's stdout file, which its team downloads", "set disable_logs: True "
                                    "(and print no score)"))
        findings += _caps(name, phase_name, phase.get("max_submissions"), challenge, "max_submissions")
    script = config.get("evaluation_script")
    if isinstance(script, str):
        findings += _printed_scores(path.parent / script, name, "evaluation_script")
    return findings


def _precision(name: str, where: str, precision: Any, challenge: Challenge | None, why: str) -> list[Finding]:
    if challenge is None or not isinstance(precision, int):
        return []
    certified = display_decimals(challenge)
    step = challenge.release_step()
    if step is None or precision <= certified:
        return []
    return [Finding(name, f"{where} = {precision}", f"finer than the certified release ({certified} decimals, a step of "
                    f"{step:g}): a raw score shows its digits beyond the release; {why}",
                    f"set it to {certified} and return only the released value")]


def _caps(name: str, where: str, total: Any, challenge: Challenge | None, key: str) -> list[Finding]:
    budget = None if challenge is None else challenge.per_team_budget()
    if budget is None or (isinstance(total, int) and total <= budget):
        return []
    return [Finding(name, f"{where}: {key} = {total}", f"more submissions than the certified budget of {budget}",
                    f"set {key}: {budget} (the service refuses the rest anyway)")]


def _printed_scores(location: Path, name: str, where: str) -> list[Finding]:
    """A finding for each ``print`` of a scoring program's Python files (a folder or a zip) that
    shows a value its score file is written from: the platform keeps standard output."""
    findings = []
    for filename, source in _python_files(location):
        if RELAY_DOC and RELAY_DOC.splitlines()[0] in source:
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        written = _score_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                shown = {n.id for arg in node.args for n in ast.walk(arg) if isinstance(n, ast.Name)}
                if shown & written:
                    findings.append(Finding(f"{name} → {filename}", f"{where}: line {node.lineno}",
                                            f"prints {', '.join(sorted(shown & written))}, which the score file is "
                                            "written from: standard output is kept for the participant",
                                            "print no score (or score with ladderlab's relay)"))
    return findings


def _score_names(tree: ast.AST) -> set[str]:
    """Names a scoring program writes its scores from: the arguments of ``json.dump(s)`` and
    ``write`` calls, the values of the dicts they name, and what those names were computed from."""
    written: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in ("dump", "dumps", "write"):
            written |= {n.id for arg in node.args for n in ast.walk(arg) if isinstance(n, ast.Name)}
    assigned = {target.id: node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    for name in list(written):
        value = assigned.get(name)
        if value is not None:
            written |= {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    return written


def _python_files(location: Path) -> list[tuple[str, str]]:
    if location.is_dir():
        return [(str(path.relative_to(location.parent)), path.read_text(errors="replace"))
                for path in sorted(location.rglob("*.py")) if "__MACOSX" not in path.parts]
    if location.is_file() and zipfile.is_zipfile(location):
        with zipfile.ZipFile(location) as archive:
            return [(f"{location.name}:{member}", io.TextIOWrapper(archive.open(member), errors="replace").read())
                    for member in archive.namelist() if member.endswith(".py") and "__MACOSX" not in member]
    return []


def _list(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def report(platform: str, config: str | Path, findings: list[Finding]) -> str:
    """The findings as lines of at most 120 characters."""
    import textwrap

    if not findings:
        return "\n".join(textwrap.wrap(f"{config}: no place found where a raw score would reach participants "
                                       f"({platform})", 120))
    lines = textwrap.wrap(f"{config}: {len(findings)} place(s) where raw scores would reach participants ({platform}):",
                          120, break_on_hyphens=False)
    for finding in findings:
        for number, line in enumerate(finding.lines()):
            indent = "  " if number == 0 else "    "
            lines += textwrap.wrap(line, 120, initial_indent=indent, subsequent_indent=indent + "  ")
    return "\n".join(lines)
