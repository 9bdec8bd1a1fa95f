"""The CPU time of a process tree: children count while they live and after they are reaped, once."""

import subprocess
import sys

from ladderlab.utils import cpu_time

BURN_SECONDS = 0.3
BURNER = f"""import sys, time
until = time.process_time() + {BURN_SECONDS}
while time.process_time() < until:
    pass
print(flush=True)
sys.stdin.read()
"""


def test_a_live_child_counts_and_counts_once_more_after_it_is_reaped():
    before = cpu_time.tree_seconds()
    child = subprocess.Popen([sys.executable, "-c", BURNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    child.stdout.readline()  # it has burned its seconds and waits, alive
    alive = cpu_time.tree_seconds() - before
    child.stdin.close()
    child.wait()
    reaped = cpu_time.tree_seconds() - before
    child.stdout.close()
    assert BURN_SECONDS <= alive <= reaped < alive + BURN_SECONDS  # not lost, not counted twice
