"""The suite's CPU budget: what the default ``python -m pytest`` spends, and where.

Every session records the CPU seconds (user + system) of each test file, its fixtures included,
and of the whole process tree (pytest, its xdist workers and every process they started), and
prints them in one line at the end; the whole default suite must stay within ``BUDGET_SECONDS``
(docs/quickstart.md says what it measured). ``python -m pytest --cpu-top 15`` lists the heaviest
files. CPU rather than wall time: a loaded machine stretches wall time far more than CPU time.

``python tests/cpu_budget.py [PYTEST OPTIONS]`` measures the same suite from outside (Linux): it
runs ``python -m pytest`` as a child-subreaper, so that processes which leave the tree (the
PostgreSQL server ``pg_ctl`` starts, sandboxes a crashed test left behind) are reaped by it
rather than by init, and prints the user + system seconds of everything that ran below it.

A file's share is what its tests and fixtures spent in the worker that ran them, with the
processes they waited for; a session fixture counts in the file that first asked for it. The
whole tree's figure also holds collection, imports and processes that outlived their test
(joblib's reusable workers, kept sandboxes). ``--cpu-log FILE`` writes each test's CPU as it
finishes, read from the whole tree below the worker (live pools included: slower, for finding
where the CPU goes).
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import time
from collections import Counter

import pytest

from ladderlab.utils import cpu_time

BUDGET_SECONDS = 300.0
"""The whole default suite's CPU on two cores (issue 48): a few seconds per test file."""

CACHE_KEY = "ladderlab/cpu_by_file"


def _own_and_reaped_seconds() -> float:
    """Cheap enough to read around every test (microseconds, unlike a walk of the process tree)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


def pytest_addoption(parser):
    """``--cpu-top N`` and ``--cpu-log FILE``."""
    parser.addoption(
        "--cpu-top", type=int, default=0, metavar="N", help="list the N test files that spent the most CPU"
    )
    parser.addoption("--cpu-log", metavar="FILE", help="append each test's CPU seconds to FILE as it finishes")


def pytest_configure(config):
    config._cpu_by_file = Counter()
    config._cpu_of_workers = 0.0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    log = item.config.getoption("cpu_log")
    reading = cpu_time.tree_seconds if log else _own_and_reaped_seconds
    before = reading()
    yield
    seconds = reading() - before
    item.config._cpu_by_file[item.nodeid.split("::")[0]] += seconds
    if log:
        with open(log, "a") as file:
            file.write(f"{seconds:.3f}\t{item.nodeid}\n")


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker hands its figures to the controller
        workeroutput["cpu_by_file"] = dict(session.config._cpu_by_file)


def pytest_testnodedown(node, error):
    output = getattr(node, "workeroutput", None) or {}
    node.config._cpu_by_file.update(output.get("cpu_by_file", {}))


def _whole_default_suite(config) -> bool:
    options = config.option
    return (
        not config.args_source == pytest.Config.ArgsSource.ARGS
        and options.markexpr == "not slow"
        and not options.keyword
        and not getattr(options, "lf", False)
        and not getattr(options, "deselect", None)
    )


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    by_file = config._cpu_by_file
    if not by_file:
        return
    whole = cpu_time.tree_seconds()
    if getattr(config, "cache", None) is not None:  # absent under -p no:cacheprovider
        config.cache.set(CACHE_KEY, {"tree_seconds": whole, "files": dict(by_file)})
    line = f"CPU: {whole:.0f} s for the process tree, {sum(by_file.values()):.0f} s in {len(by_file)} test files"
    if _whole_default_suite(config):
        line += f" (budget for the default suite: {BUDGET_SECONDS:.0f} s)"
    terminalreporter.write_line(line)
    top = config.getoption("cpu_top")
    for path, seconds in by_file.most_common(top):
        terminalreporter.write_line(f"{seconds:8.1f} s  {path}")
    if _whole_default_suite(config) and whole > BUDGET_SECONDS:
        terminalreporter.write_line(
            f"The default suite spent {whole:.0f} s of CPU, over its {BUDGET_SECONDS:.0f} s budget: "
            "see `python -m pytest --cpu-top 15` and mark paper-scale tests slow.",
            red=True,
        )


PR_SET_CHILD_SUBREAPER = 36
ORPHANS_WAITED_SECONDS = 120.0
"""How long the measurement waits, after pytest ends, for processes it left behind to end."""


def measure(pytest_arguments: list[str]) -> tuple[int, float, float]:
    """Run ``python -m pytest ARGUMENTS`` and return its exit code and the user and system CPU
    seconds of its whole process tree, orphans included (those still alive
    ``ORPHANS_WAITED_SECONDS`` after it ended are named on standard error and not counted)."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed: this measurement needs Linux")
    pytest = subprocess.Popen([sys.executable, "-m", "pytest", *pytest_arguments])
    code, deadline = None, float("inf")
    while time.monotonic() < deadline:  # reap every process that ends below, as init would
        try:
            pid, status = os.waitpid(-1, 0 if code is None else os.WNOHANG)
        except ChildProcessError:
            break
        if pid == pytest.pid:
            code, deadline = os.waitstatus_to_exitcode(status), time.monotonic() + ORPHANS_WAITED_SECONDS
        elif pid == 0:
            time.sleep(0.5)
    else:
        import psutil

        left = [f"{child.pid} {' '.join(child.cmdline())[:80]}" for child in psutil.Process().children()]
        print(f"still running, not counted: {'; '.join(left)}", file=sys.stderr)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return code, usage.ru_utime, usage.ru_stime


if __name__ == "__main__":
    started = time.monotonic()
    exit_code, user, system = measure(sys.argv[1:])
    print(f"whole process tree: {user:.1f} s user + {system:.1f} s system = {user + system:.1f} s of CPU, "
          f"{time.monotonic() - started:.0f} s of wall time, pytest exit code {exit_code}")
    sys.exit(exit_code)
