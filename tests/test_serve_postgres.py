"""The tests' throwaway PostgreSQL cluster ends with the process that holds it, even one killed
with SIGKILL (:mod:`ladderlab.serve.reaper`); a server whose database goes down says so and
carries on when it is back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from ladderlab.serve.client import RemoteBoard
from ladderlab.serve.postgres import TemporaryPostgres, unavailable
from tests.serve_helpers import ThreadServer, open_service, upload, write_challenge

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
        while (_alive(postmaster) or os.path.exists(folder)) and time.monotonic() < deadline:
            time.sleep(0.1)  # the folder goes after the postmaster, once pg_ctl has seen it end
        assert not _alive(postmaster), "the postmaster outlived its holder by 10 s"
        assert not os.path.exists(folder), "the reaper removes the cluster's folder"
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        if cluster.postmaster_pid is not None:
            cluster.stop()


@pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))
def test_a_database_down_is_a_503_to_retry_and_the_server_carries_on_when_it_is_back(tmp_path):
    rng = np.random.default_rng(5)
    with TemporaryPostgres(durable=False) as cluster:
        service, tokens = open_service(write_challenge(tmp_path, rules="per_day = 10\ntotal = 10"), cluster.database("log"))
        n = service.challenge.split.y_holdout.size
        with ThreadServer(service) as server:
            assert upload(server.url, tokens["alpha"], rng.integers(0, 2, n))[0] == 201
            cluster.pause()
            status, answer = upload(server.url, tokens["alpha"], rng.integers(0, 2, n), key="down")
            assert (status, answer["reason"], answer["retry_after"]) == (503, "database", 5)
            assert "connection" not in answer["error"] and "psycopg" not in answer["error"]  # not the driver's words
            cluster.resume()
            board = RemoteBoard(server.url, tokens["alpha"], budget=3)
            board.submit(rng.integers(0, 2, n))
            assert upload(server.url, tokens["alpha"], rng.integers(0, 2, n), key="down")[0] == 201
        submissions = [entry.team_sequence for entry in service.storage.entries()]
        service.storage.close()
    assert submissions == [1, 2, 3], "the refused upload logged nothing; the two after the restart were logged once"
