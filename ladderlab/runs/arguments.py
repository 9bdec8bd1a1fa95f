"""Argument types and checks shared by the command line's subcommands, which live beside their features
(each area's ``cli`` module; :mod:`ladderlab.cli.commands` lists them): each refuses a bad value with a
message that names the option and the value, before any work starts."""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from ladderlab.params import INT64_LIMIT


class ArgumentError(ValueError):
    """A command-line argument that cannot be used; the message names it."""


def output_file(option: str, value: str | None) -> None:
    """Refuse an output file path that is a directory or cannot be written, before any work."""
    if value is None:
        return
    path = Path(value)
    if path.is_dir():
        raise ArgumentError(f"{option} {value}: is a directory; give a file name")
    if not path.absolute().parent.is_dir():
        raise ArgumentError(f"{option} {value}: the folder {path.parent} does not exist")
    _writable_folder(option, value, path.parent)


def output_folder(option: str, value: str | None) -> None:
    """Refuse an output folder path that is a file or cannot be written, before any work."""
    if value is None:
        return
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise ArgumentError(f"{option} {value}: is a file, not a directory")
    _writable_folder(option, value, path)


def _writable_folder(option: str, value: str, folder: Path) -> None:
    existing = folder.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ArgumentError(f"{option} {value}: {existing} is a file, not a directory")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise ArgumentError(f"{option} {value}: cannot write in {existing}: {error.strerror or error}") from None


def count(minimum: int, every_core: bool = False) -> Callable[[str], int]:
    """An argparse type: a whole number ≥ ``minimum`` (or -1 for every core) that fits a
    64-bit integer, as results store it."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is not None and value >= INT64_LIMIT:
            raise argparse.ArgumentTypeError(f"must be a whole number below 2^63, got {text!r}")
        if value is None or not (value >= minimum or (every_core and value == -1)):
            extra = " (or -1 for every core)" if every_core else ""
            raise argparse.ArgumentTypeError(f"must be a whole number ≥ {minimum}{extra}, got {text!r}")
        return value
    return parse


def positive(text: str) -> float:
    """An argparse type: a finite real number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text!r}")
    return value


def parse_params(pairs: list[str]) -> dict[str, object]:
    """``--param KEY=VALUE`` pairs as a dict (JSON values where they parse); a repeated key is refused."""
    params: dict[str, object] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise ValueError(f"--param takes KEY=VALUE, got {pair!r}")
        if key in params:
            raise ValueError(f"--param {key} is given twice ({key}={params[key]!r} and {pair!r}): give it once")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


def isolation_mode(text: str) -> str:
    """An argparse type: an isolation mode that this machine can provide (else what is missing)."""
    from ladderlab.isolation.protocol import ISOLATION_MODES, check_isolation

    if text not in ISOLATION_MODES:
        return text  # argparse's choices name the known ones
    try:
        return check_isolation(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def port(text: str) -> int:
    """An argparse type: a TCP port, 0 to 65535."""
    if not (text.isdigit() and int(text) <= 65535):
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535, got {text!r}")
    return int(text)


def figure_file(option: str, value: str | None) -> None:
    """Refuse an image path that cannot be written or whose suffix names no format matplotlib writes."""
    if value is None:
        return
    output_file(option, value)
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    suffix = Path(value).suffix.lstrip(".").lower()
    if suffix not in formats:
        raise ArgumentError(f"{option} {value}: {'.' + suffix if suffix else 'no suffix'} is not an image format "
                            f"matplotlib writes; end the name with one of {', '.join('.' + f for f in sorted(formats))}")


def add_trust_options(parser: argparse.ArgumentParser) -> None:
    """A command's ``--isolation`` and ``--secret-seed``: what attack code and whoever knows the seed cannot reach."""
    from ladderlab.isolation.protocol import ISOLATION_MODES

    parser.add_argument("--isolation", type=isolation_mode, choices=ISOLATION_MODES, default="none",
                        help="'process': play each attack (and competition team) in a sandboxed process of its "
                             "own, another user or a user namespace, which sees no labels, seeds, secret or run "
                             "directory; needs Linux and bubblewrap (see docs/isolation.md)")
    parser.add_argument("--secret-seed", metavar="FILE",
                        help="derive simulated tasks' data and the mechanisms' coins also from the secret in FILE "
                             "(created with 128 random bits if missing), so the public seed cannot regenerate labels")
