"""Every file ladderlab writes appears whole or not at all (ladderlab.utils.atomic).

A full disk is simulated with a file-size limit (RLIMIT_FSIZE) in a child process: a
write past the limit fails with EFBIG, as a write to a full disk fails with ENOSPC.
"""

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from ladderlab.certification import certify
from ladderlab.cli.commands import main
from ladderlab.utils.atomic import (
    create_exclusively,
    write_atomically,
    write_files_atomically,
)
from tests.helpers import scenario_file

LIMIT = 4096
"""Bytes a child process may write into one file."""


def run_limited(code: str, cwd) -> subprocess.CompletedProcess:
    """Run ``code`` in a child whose files may not grow beyond LIMIT bytes."""
    prelude = textwrap.dedent(f"""
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, ({LIMIT}, {LIMIT}))
    """)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def leftovers(folder) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


@pytest.mark.slow
def test_a_certificate_written_over_an_old_one_on_a_full_disk_leaves_the_old_one(tmp_path):
    old = {"mechanism": "kaggle", "safe_budget": 300}
    out = tmp_path / "cert.json"
    certify.write_certificate(old, out, text_for_people="old\n")
    before = out.read_bytes(), out.with_suffix(".md").read_bytes()
    result = run_limited(f"""
        from ladderlab.certification import certify
        certificate = {{"mechanism": "kaggle", "safe_budget": 100, "battery": ["x" * 100] * 100}}
        try:
            certify.write_certificate(certificate, {str(out)!r}, text_for_people="new\\n")
        except OSError as error:
            print(error)
    """, tmp_path)
    assert "could not write the certificate" in result.stdout, result
    assert (out.read_bytes(), out.with_suffix(".md").read_bytes()) == before
    assert leftovers(tmp_path) == []


def test_a_pair_of_files_changes_together_or_not_at_all(tmp_path):
    small, large = tmp_path / "small.txt", tmp_path / "large.txt"
    write_files_atomically({small: "old small", large: "old large"})
    result = run_limited(f"""
        from ladderlab.utils.atomic import write_files_atomically
        try:
            write_files_atomically({{{str(small)!r}: "new small", {str(large)!r}: "x" * {2 * LIMIT}}})
        except OSError as error:
            print(type(error).__name__)
    """, tmp_path)
    assert result.stdout.strip() == "OSError", result
    assert (small.read_text(), large.read_text()) == ("old small", "old large")
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_report_written_over_an_old_one_on_a_full_disk_leaves_the_old_one(tmp_path):
    path = scenario_file(tmp_path, mechanisms='{ id = "kaggle" }')
    assert main(["--quiet", "run", str(path), "--out", str(tmp_path / "run")]) == 0
    page = tmp_path / "report.html"
    page.write_text("the previous report")
    result = run_limited(f"""
        import sys
        from ladderlab.cli.commands import main
        sys.exit(main(["report", {str(tmp_path / 'run')!r}, "--html", {str(page)!r}]))
    """, tmp_path)
    assert result.returncode == 2, result
    assert result.stderr.strip().splitlines()[-1].startswith("ladderlab: error: "), result.stderr
    assert "Traceback" not in result.stderr
    assert page.read_text() == "the previous report"
    assert leftovers(tmp_path) == []


def test_a_secret_seed_file_is_created_whole_or_not_at_all(tmp_path):
    target = tmp_path / "secret"
    result = run_limited(f"""
        from ladderlab.utils.atomic import create_exclusively
        try:
            create_exclusively({str(target)!r}, "1" * {2 * LIMIT}, 0o600)
        except OSError as error:
            print(type(error).__name__)
    """, tmp_path)
    assert result.stdout.strip() == "OSError", result
    assert not target.exists() and leftovers(tmp_path) == []
    create_exclusively(target, "12345\n", 0o600)
    assert target.read_text() == "12345\n" and stat.S_IMODE(target.stat().st_mode) == 0o600
    with pytest.raises(FileExistsError):
        create_exclusively(target, "67890\n", 0o600)
    assert target.read_text() == "12345\n" and leftovers(tmp_path) == []


def test_a_new_file_gets_the_umask_permissions_and_a_replaced_one_keeps_its_own(tmp_path):
    umask = os.umask(0o027)
    try:
        write_atomically(tmp_path / "new.json", json.dumps({"a": 1}))
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640
    kept = tmp_path / "kept.txt"
    kept.write_text("old")
    kept.chmod(0o604)
    write_atomically(kept, b"new")
    assert kept.read_text() == "new" and stat.S_IMODE(kept.stat().st_mode) == 0o604
