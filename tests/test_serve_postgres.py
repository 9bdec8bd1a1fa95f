"""The tests' throwaway PostgreSQL cluster ends with the process that holds it, even one killed
with SIGKILL (:mod:`ladderlab.serve.reaper`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from ladderlab.serve.postgres import TemporaryPostgres, unavailable

HOLDER = """
import sys, time
from ladderlab.serve.postgres import TemporaryPostgres
cluster = TemporaryPostgres(durable=False).start(reaped=True)
print(cluster.folder, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
def test_a_reaped_cluster_stops_within_seconds_of_its_holder_being_killed_with_sigkill():
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True)
    folder = holder.stdout.readline().strip()
    cluster = TemporaryPostgres(folder)
    postmaster = cluster.postmaster_pid
    try:
        assert postmaster is not None and _alive(postmaster), "the cluster runs while its holder lives"
        time.sleep(1.0)
        assert _alive(postmaster), "the cluster outlives a second of its holder"
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        deadline = time.monotonic() + 10
        while _alive(postmaster) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(postmaster), "the postmaster outlived its holder by 10 s"
        assert not os.path.exists(folder), "the reaper removes the cluster's folder"
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if cluster.postmaster_pid is not None:
            cluster.stop()
