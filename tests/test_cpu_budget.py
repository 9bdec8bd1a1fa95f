"""The suite's CPU measured from outside counts every process below pytest, those that left its
tree included (as the PostgreSQL server that ``pg_ctl`` starts does)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

ORPHAN_SECONDS = 2.0

LEAVES_AN_ORPHAN = f"""
import subprocess, sys

BURN = '''
import os, time
if os.fork():
    os._exit(0)
while time.process_time() < {ORPHAN_SECONDS}:
    pass
'''


def test_starts_a_process_that_outlives_it():
    subprocess.run([sys.executable, "-c", BURN], check=True)  # its child is reparented, still burning
"""


@pytest.mark.slow
def test_the_cpu_of_a_process_that_left_the_tree_is_counted(tmp_path):
    (tmp_path / "test_orphan.py").write_text(LEAVES_AN_ORPHAN)
    measured = subprocess.run([sys.executable, str(ROOT / "tests" / "cpu_budget.py"), "-q", "-p", "no:cacheprovider"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert measured.returncode == 0, measured.stdout[-2000:] + measured.stderr[-2000:]
    seconds = float(re.search(r"= ([\d.]+) s of CPU", measured.stdout)[1])
    assert seconds >= ORPHAN_SECONDS  # without the subreaper the orphan's CPU goes to init, unseen
