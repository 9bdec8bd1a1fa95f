"""All-or-nothing files: every file ladderlab writes appears whole or not at all.

Each file is written to a temporary file in its own folder, flushed to disk and renamed
over its name; the folder is then flushed, so the rename survives a crash. A failure
(a full disk, a file-size limit, an interrupt) removes the temporary file and leaves the
previous version, if there was one, exactly as it was. :func:`write_files_atomically`
writes a set of files that belong together (a certificate's JSON and Markdown): every
one is written and flushed before the first is renamed, so a failure while writing
changes none of them. A new file gets the permissions ``open`` would give it (0666
less the umask); a replaced file keeps its own.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TEMPORARY_SUFFIX = ".tmp"
"""Temporary files are ``.<name>.<random>.tmp`` beside their target."""


def write_atomically(path: str | Path, data: bytes | str, mode: int | None = None) -> None:
    """Write ``data`` (text is UTF-8) to ``path`` all or nothing. ``mode``: the new file's
    permissions (default: those of the file it replaces, or 0666 less the umask)."""
    write_files_atomically({Path(path): data}, mode)


def write_files_atomically(files: Mapping[str | Path, bytes | str], mode: int | None = None) -> None:
    """Write several files all or nothing: each to a flushed temporary file first, then
    every one renamed into place. If any write fails, no file is changed."""
    written: list[tuple[Path, str]] = []
    try:
        for path, data in files.items():
            path = Path(path)
            written.append((path, _flushed_temporary(path, data.encode() if isinstance(data, str) else data,
                                                     _mode(path) if mode is None else mode)))
    except BaseException:
        for _, temporary in written:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise
    for number, (path, temporary) in enumerate(written):
        try:
            os.replace(temporary, path)
        except BaseException:
            for _, left in written[number:]:
                with contextlib.suppress(OSError):
                    os.unlink(left)
            raise
    for folder in dict.fromkeys(path.parent for path, _ in written):
        _flush_folder(folder)


def save_figure(figure: Any, path: str | Path, **options: Any) -> None:
    """Save a matplotlib figure to ``path`` all or nothing, in the format its suffix names."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format=Path(path).suffix.lstrip(".").lower() or None, **options)
    write_atomically(path, buffer.getvalue())


def create_exclusively(path: str | Path, data: bytes | str, mode: int) -> None:
    """Create ``path`` with ``data`` whole, or raise ``FileExistsError`` if it exists (like
    ``O_EXCL``): the content is linked into place only once it is on disk."""
    path = Path(path)
    temporary = _flushed_temporary(path, data.encode() if isinstance(data, str) else data, mode)
    try:
        os.link(temporary, path)
    finally:
        os.unlink(temporary)
    _flush_folder(path.parent)


def _flushed_temporary(path: Path, data: bytes, mode: int) -> str:
    """A temporary file beside ``path`` holding ``data``, flushed to disk, with ``mode``."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX)
    try:
        with open(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return temporary


def _mode(path: Path) -> int:
    """The permissions a file written to ``path`` gets: the replaced file's, else 0666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


def _flush_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
