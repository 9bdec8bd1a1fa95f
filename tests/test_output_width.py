"""Every line a command prints fits a 120-column terminal (COLUMNS=120): its help, and what it
prints on small inputs.

The commands are found by walking the parser, so a command added later is covered: its help at
once, and its output as soon as it has an entry in ``SMALL_RUNS`` (a test fails until it has one).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ladderlab.cli import commands

WIDTH = 120
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

SCENARIO = """
schema_version = 1
name = "widths"
replications = 2
seed = 7

[[matrix]]
tasks = [{ id = "random-labels", params = { n_public = 100, n_holdout = 300 } }]
mechanisms = [{ id = "kaggle" }, { id = "ladder" }]
attacks = [{ id = "boosting", params = { k = 20 } }, { id = "EXAMPLES/resubmission_average.py:ResubmissionAverage" }]
"""

SMALL_RUNS: dict[str, list[list[str]]] = {
    # A command's words (or its last word, wherever the command line groups it) → the arguments
    # of each small run, in a folder holding the scenario above as widths.toml. Runs of one
    # command share the folder, one after another. Placeholders: EXAMPLES, the examples folder.
    "list": [[], ["EXAMPLES/resubmission_average.py:ResubmissionAverage"]],
    "run": [["widths.toml", "--out", "run"]],
    "report": [["run"], ["run", "--format", "text"]],
    "certify": [["kaggle", "--n", "50", "--budgets", "10", "--replications", "3", "--only", "--attack", "boosting",
                 "--scorer", "zero-one", "--out", "certificate.json"]],
    "demo": [["--k", "20", "--n", "100"]],
    "sota": [["--m", "10", "--n", "100", "--theta", "0.7"],
             ["--scores", "EXAMPLES/leaderboard.txt", "--n", "1000", "--repetitions", "50", "--bootstrap", "3"]],
    "extrapolate": [["EXAMPLES/extrapolation/ranks.txt", "--from", "20", "--to", "40", "--bins", "100"]],
    "replay": [["EXAMPLES/logs/synthetic-log.csv", "--scorer", "zero-one"]],
    "rank-certificate": [["EXAMPLES/logs/synthetic-private-losses.parquet", "--top", "5", "--replicates", "100"]],
    "export": [[platform, "EXAMPLES/breast-cancer/challenge.toml", "--out", platform, "--url",
                "https://leaderboard.example.org", "--scorer-token", "ll_token"]
               for platform in ("codabench", "evalai", "hf-competitions")],
    "audit": [["codabench", "codabench/competition.yaml", "--challenge", "EXAMPLES/breast-cancer/challenge.toml"]],
    "bench": [["--n", "50", "--seconds", "0.02"]],
    "arena list": [[]],
    "simulate": [["--out", "battles.csv", "--family", "pairwise(models=12, battles=2000)"]],
    "rate": [["battles.csv", "--bootstrap", "20"]],
    "robustness": [["battles.csv"]],
    "pages": [["--root", str(ROOT)]],
    "dev results check": [["--folder", str(ROOT / "docs" / "results")]],
}
PREPARED = {"report": "run", "audit": "export", "rate": "simulate", "robustness": "simulate"}
"""Commands that read what another's small runs wrote (in the same folder)."""

ELSEWHERE = {
    "serve": "test_a_server_and_an_attack_on_it_print_lines_that_fit",
    "serve attack": "test_a_server_and_an_attack_on_it_print_lines_that_fit",
    "dev results build": "it rewrites the committed results pages; 'results check' prints what it would",
    "bench-certify": "test_the_maintainers_benchmarks_print_lines_that_fit (slow: a minute of CPU at least)",
    "bench-isolation": "test_the_maintainers_benchmarks_print_lines_that_fit (slow)",
    "bench-competitions": "test_the_maintainers_benchmarks_print_lines_that_fit (slow)",
    "bench-serve": "test_the_maintainers_benchmarks_print_lines_that_fit (slow: it starts a server)",
    "bench-arena": "test_the_maintainers_benchmarks_print_lines_that_fit (slow)",
    "bench-proofs": "test_the_maintainers_benchmarks_print_lines_that_fit (slow)",
    "bench-plan": "its two fixed plans take minutes of CPU; it prints its page's table, as bench-certify does",
    "sweep": "test_the_maintainers_benchmarks_print_lines_that_fit (slow: seasons of a whole arena)",
    "plan": "test_the_maintainers_benchmarks_print_lines_that_fit (slow: a plan certifies at several sizes)",
    "realism": "test_the_maintainers_benchmarks_print_lines_that_fit (slow)",
}
"""Commands whose output another test here checks, and why."""

SLOW_RUNS: dict[str, list[str]] = {
    "bench-certify": ["--mechanism", "kaggle", "--replications", "2"],
    "bench-isolation": ["--rounds", "1", "--only", "startup"],
    "bench-competitions": ["--replication", "0", "--cells", "1", "kaggle-like"],
    "bench-serve": ["--n", "200", "--clients", "1", "--mechanisms", "ladder", "--databases", "sqlite", "--linking", "off",
                    "--seconds", "0.5"],
    "realism": ["shakeup", "--out", "shakeup.md", "--replications", "1"],
    "bench-arena": ["--battles", "2000", "--models", "12", "--jobs", "1"],
    "bench-proofs": ["--n", "100", "--k", "20", "--replications", "2"],
    "sweep": ["leaderboard-illusion", "--replications", "1", "--jobs", "1"],
    "plan": ["--task", "random-labels(n_public=200, n_holdout=1000)", "--mechanism", "kaggle", "--replications", "20",
             "--field-replications", "0", "--budget", "50", "--jobs", "1", "--run-dir", "plan"],
}


def _commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The words of every command the parser runs (the leaves of its tree of subcommands)."""
    groups = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
    if not groups:
        yield words
    for group in groups:
        for name, subparser in group.choices.items():
            yield from _commands(subparser, (*words, name))


COMMANDS = sorted(_commands(commands.build_parser()))


def _entry(table: dict, words: tuple[str, ...]):
    """A table's entry for a command, by its words or by its last word."""
    return table.get(" ".join(words), table.get(words[-1]))


def _printed(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """What ``ladderlab ARGV`` prints (standard output and error) at COLUMNS=120, and its exit code."""
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = commands.main([word.replace("EXAMPLES", str(EXAMPLES)) for word in argv])
        except SystemExit as exit:
            code = exit.code
    return code, out.getvalue() + err.getvalue()


def _too_wide(text: str, page_tables: bool = False) -> list[str]:
    """The lines of ``text`` wider than the terminal (with ``page_tables``, rows of a Markdown table
    and a page's stamp are let through: neither can be wrapped)."""
    return [line for line in text.splitlines()
            if len(line) > WIDTH and not (page_tables and line.startswith(("|", "<!-- ladderlab-page")))]


def test_the_walk_finds_nested_commands():
    assert len(COMMANDS) >= 10
    assert ("list",) in COMMANDS and not any(words == () for words in COMMANDS)


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_every_command_has_a_small_run_or_says_where_its_output_is_checked(words):
    assert _entry(SMALL_RUNS, words) is not None or _entry(ELSEWHERE, words) is not None, (
        f"add a small run of 'ladderlab {' '.join(words)}' to SMALL_RUNS so that its output is checked")


@pytest.mark.parametrize("words", [(), *COMMANDS], ids=lambda words: " ".join(words) or "ladderlab")
def test_help_fits(words, monkeypatch):
    code, text = _printed([*words, "--help"], monkeypatch)
    assert code == 0
    assert _too_wide(text) == []


def _small_runs(words: tuple[str, ...], folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lines too wide of every small run of a command (and of those it reads from), run in ``folder``."""
    monkeypatch.chdir(folder)
    (folder / "widths.toml").write_text(SCENARIO.replace("EXAMPLES", str(EXAMPLES)))
    wide = []
    prepared = PREPARED.get(words[-1])
    for before in ([] if prepared is None else _entry(SMALL_RUNS, (prepared,))):
        code, text = _printed([*_words_of(prepared), *before], monkeypatch)
        assert code == 0, text[-2000:]
    for arguments in _entry(SMALL_RUNS, words):
        code, text = _printed([*words, *arguments], monkeypatch)
        assert code in (0, 1), text[-2000:]  # 1: pages found stale ones
        wide += _too_wide(text)
    return wide


def _words_of(name: str) -> tuple[str, ...]:
    return next(words for words in COMMANDS if " ".join(words) == name or words[-1] == name)


@pytest.mark.parametrize("words", [words for words in COMMANDS if _entry(SMALL_RUNS, words)], ids=" ".join)
def test_what_a_command_prints_fits(words, tmp_path, monkeypatch):
    assert _small_runs(words, tmp_path, monkeypatch) == []


def test_a_line_too_wide_is_found(tmp_path, monkeypatch):
    """The check itself: a file plugin whose description is long would be listed past the width
    if ``list`` did not wrap; a line one column too wide is caught."""
    assert _too_wide("x" * WIDTH) == [] and _too_wide("x" * (WIDTH + 1)) == ["x" * (WIDTH + 1)]
    plugin = tmp_path / "long_winded.py"
    plugin.write_text(
        "from ladderlab.attack import Attack\n\n\n"
        "class LongWinded(Attack):\n"
        f'    """{" ".join(["An attack that says a great deal about itself."] * 6)}"""\n\n'
        "    reference = 'none'\n\n"
        "    def run(self, client, public, budget, rng):\n"
        "        return None\n"
    )
    code, text = _printed(["list", f"{plugin}:LongWinded"], monkeypatch)
    assert code == 0 and "LongWinded" in text
    assert max(map(len, text.splitlines())) <= WIDTH


@pytest.mark.slow
def test_a_server_and_an_attack_on_it_print_lines_that_fit(monkeypatch):
    """In a short folder: the server names its log by its path, which is the organiser's own."""
    from ladderlab.serve.launch import ServerProcess

    folder = Path(tempfile.mkdtemp(prefix="width-"))
    example = shutil.copytree(EXAMPLES / "breast-cancer", folder / "breast-cancer")
    monkeypatch.chdir(folder)
    with ServerProcess(example / "challenge.toml") as server:
        code, attacked = _printed(["serve", "attack", server.url, "--token", server.tokens["team-a"], "--attack", "boosting",
                                   "--budget", "5"], monkeypatch)
        started = "".join(server.output)
    shutil.rmtree(folder)
    assert code == 0, attacked
    assert _too_wide(started) == [] and _too_wide(attacked) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_RUNS))
def test_the_maintainers_benchmarks_print_lines_that_fit(name, tmp_path, monkeypatch):
    """The benchmarks (and a whole plan or arena sweep) print the page they write: its tables' rows
    and its stamp may be as wide as they are."""
    monkeypatch.chdir(tmp_path)
    code, text = _printed([*_words_of(name), *SLOW_RUNS[name]], monkeypatch)
    assert code == 0, text[-2000:]
    assert _too_wide(text, page_tables=True) == []


def test_a_printed_page_wraps_its_prose_and_keeps_its_tables_code_and_stamp():
    from ladderlab.utils.terminal import wrapped_markdown

    prose, item = " ".join(["words"] * 40), "- " + " ".join(["item"] * 40)
    table, stamp = "| " + " | ".join(["cell"] * 40) + " |", "<!-- ladderlab-page {" + "x" * 200 + "} -->"
    code = "```\n" + "y " * 100 + "\n```"
    shown = wrapped_markdown("\n\n".join([prose, item, table, stamp, code]) + "\n")
    assert _too_wide(shown, page_tables=True) == ["y " * 100] and shown.endswith("\n")  # code is kept
    assert table in shown.splitlines() and stamp in shown.splitlines() and code in shown
    assert " ".join(shown.split("\n\n")[0].split()) == prose  # the same paragraph, on several lines
    assert all(line.startswith("  item") for line in shown.split("\n\n")[1].splitlines()[1:])  # under its item
