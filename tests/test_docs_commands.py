"""Every ``ladderlab …`` command the README and the documentation show, in a block of any kind or
in inline code, is checked against the real parser, so that a renamed command, option or choice
fails here: its subcommand, the exact spelling of each option (argparse would accept a
prefix), and each value that is not a placeholder (``FILE``, ``N``, ``…``, ``$s``) against the
option's type and choices and, where it names one, the plugin (with its parameters), built-in
scenario or ``list`` family. A command in a block with no placeholder is parsed whole, so a
missing or extra argument fails too. The results pages' commands are checked as well.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from ladderlab.arena.registry import ARENA_ATTACKS, ARENA_POLICIES
from ladderlab.cli.commands import build_parser
from ladderlab.registry import ATTACKS, MECHANISMS
from ladderlab.runs.cli import LIST_FAMILIES
from tests.docs_helpers import ANY_FENCE, PAGES, RESULTS_PAGES, subcommands

INLINE_COMMAND = re.compile(r"`(?P<command>ladderlab [^`]+)`")
COMMAND_START = re.compile(r"(?:^|\s)(?P<command>ladderlab\s+(?!:).*)")
PLACEHOLDER = re.compile(r"^(?:[A-Za-z]|[A-Z][A-Z0-9_]*(?:\.[a-z]+)?|.*(?:…|\.\.\.|\$).*|'?[A-Z]+'?)$")


def _command_lines(page: Path) -> list[tuple[int, str, bool]]:
    """Every ``ladderlab …`` command of a page: (line, command, in a block); ``$ `` prompts of
    console blocks mark commands there, output lines are left out."""
    text = page.read_text()
    found = []
    for block in ANY_FENCE.finditer(text):
        if block["lang"] in ("python", "toml"):
            continue
        first_line = text.count("\n", 0, block.start("body")) + 1
        body = block["body"].replace("\\\n", " ")
        for offset, line in enumerate(body.splitlines()):
            if block["lang"] == "console" and not line.lstrip().startswith("$"):
                continue
            for segment in re.split(r"&&|;|\s\|\s", line):
                match = COMMAND_START.search(segment.lstrip("$ "))
                if match:
                    found.append((first_line + offset, match["command"], True))
    prose = ANY_FENCE.sub(lambda block: "\n" * block.group().count("\n"), text)
    for match in INLINE_COMMAND.finditer(prose):
        found.append((prose.count("\n", 0, match.start()) + 1, match["command"], False))
    return found


def _commands_of_pages() -> list:
    return [pytest.param(command, in_block, id=f"{page.name}:{line}")
            for page in PAGES + RESULTS_PAGES for line, command, in_block in _command_lines(page)]


def _is_placeholder(token: str) -> bool:
    return bool(PLACEHOLDER.match(token))


def _builtin_scenario(name: str) -> None:
    from ladderlab.scenarios import builtin_scenarios

    if not name.endswith(".toml") and "/" not in name:
        assert name in builtin_scenarios(), f"no built-in scenario {name!r} (there are {sorted(builtin_scenarios())})"


def _listed_family(name: str) -> None:
    assert name in LIST_FAMILIES or f"{name}s" in LIST_FAMILIES, f"'ladderlab list' has no family {name!r}"


def _either(*parses):
    """A check that passes when one of ``parses`` accepts the value (a mechanism or an arena policy)."""
    def check(value: str) -> None:
        errors = []
        for parse in parses:
            try:
                parse(value)
                return
            except ValueError as error:
                errors.append(str(error))
        raise ValueError("; ".join(errors))
    return check


NAMED_VALUES = {("ladderlab run", "scenario"): _builtin_scenario,
                ("ladderlab list", "what"): _listed_family,
                ("ladderlab certify", "mechanism"): _either(MECHANISMS.parse, ARENA_POLICIES.parse),
                ("ladderlab certify", "attack"): _either(ATTACKS.parse, ARENA_ATTACKS.parse),
                ("ladderlab serve attack", "attack"): ATTACKS.parse,
                ("ladderlab stats replay", "mechanism"): MECHANISMS.parse}
"""Values that name a plugin (with parameters) or a built-in scenario, and the check of each."""


def _check_value(action: argparse.Action, value: str, where: str) -> None:
    """A value that is not a placeholder converts with the option's type and is among its choices,
    and names a plugin or scenario that exists; ``a|b`` (a synopsis) checks each alternative."""
    for alternative in value.split("|") if "|" in value else [value]:
        if _is_placeholder(alternative):
            continue
        converted = alternative
        if action.type is not None:
            try:
                converted = action.type(alternative)
            except (ValueError, TypeError, argparse.ArgumentTypeError) as error:
                raise AssertionError(f"{where}: {alternative!r} is refused: {error}") from None
        if action.choices is not None:
            assert converted in action.choices, f"{where}: {alternative!r} is not one of {list(action.choices)}"
        check = NAMED_VALUES.get((where.rsplit(" ", 1)[0], action.dest))
        if check is not None and ":" not in alternative:
            try:
                check(alternative)
            except ValueError as error:
                raise AssertionError(f"{where}: {error}") from None


def _check_against_parser(tokens: list[str], mention: bool) -> None:
    """Walk the tokens through the real parsers; a ``mention`` in prose may name an option
    without its value (``ladderlab certify --out``)."""
    parser, path = build_parser(), ["ladderlab"]
    positionals: list[argparse.Action] = []
    index = 1
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token.startswith("-") and len(token) > 1 and not token.lstrip("-").isdigit():
            name = token.split("=", 1)[0]
            action = parser._option_string_actions.get(name)
            assert action is not None, f"{' '.join(path)} has no option {name} (it has {sorted(parser._option_string_actions)})"
            if action.nargs == 0:
                continue
            values = [token.split("=", 1)[1]] if "=" in token else []
            while not values or (action.nargs in ("+", "*") or isinstance(action.nargs, int) and len(values) < action.nargs):
                if index >= len(tokens) or tokens[index].startswith("--"):
                    break
                values.append(tokens[index])
                index += 1
            assert values or action.nargs in ("?", "*") or mention, f"{' '.join(path)} {name} needs a value"
            for value in values:
                _check_value(action, value, f"{' '.join(path)} {name}")
            continue
        named = subcommands(parser)
        if named and not positionals and (token in named or not _positionals(parser)):
            assert token in named or _is_placeholder(token), f"{' '.join(path)} has no subcommand {token!r} (it has {sorted(named)})"
            if token not in named:
                break
            parser, positionals = named[token], []
            path.append(token)
            continue
        if not positionals:
            positionals = _positionals(parser)
            positionals.append(None)
        action = positionals[0]
        assert action is not None, f"{' '.join(path)}: unexpected argument {token!r}"
        if action.nargs == argparse.REMAINDER:
            break
        _check_value(action, token, f"{' '.join(path)} {action.dest}")
        if action.nargs not in ("*", "+"):
            positionals.pop(0)


def _positionals(parser: argparse.ArgumentParser) -> list:
    return [action for action in parser._actions
            if not action.option_strings and not isinstance(action, argparse._SubParsersAction)]


@pytest.mark.parametrize(("command", "in_block"), _commands_of_pages())
def test_documented_command_matches_the_parser(command: str, in_block: bool) -> None:
    tokens = shlex.split(re.split(r"\s[>|]\s", command)[0], comments=True)
    synopsis = any(token.startswith("[") or token.endswith("]") for token in tokens)
    tokens = [token.strip("[]") for token in tokens if token.strip("[]")]
    _check_against_parser(tokens, mention=not in_block)
    if in_block and not synopsis and not any(_is_placeholder(token) or "$" in token for token in tokens[1:]):
        try:
            build_parser().parse_args(tokens[1:])
        except SystemExit as exit:  # --help, --version
            assert exit.code == 0, command
        except ValueError as error:
            raise AssertionError(f"{command}: {error}") from None
