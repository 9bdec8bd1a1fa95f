"""Small hostile or failing attacks for the isolation tests (loaded as ``file.py:Class``, so
that their code is shown to the sandbox)."""

import os
import pickle
import subprocess

import numpy as np

from ladderlab.attack import Attack
from ladderlab.attacks.boosting import Boosting
from ladderlab.attacks.hill_climbing import HillClimbing
from ladderlab.params import InstanceOf


class OverBudget(Boosting):
    """Submits three rows on a board that allows two."""

    id = "over-budget"

    def run(self, board, data, rng):
        board.submit_many(np.zeros((3, board.holdout_size)))
        return np.zeros(board.holdout_size)


class Payload:
    """Unpickled, it creates the file ``target``."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


class Smuggler(Attack):
    """Sends the organiser a pickle that would create a file if it were ever unpickled."""

    id = "smuggler"
    reference = "ladderlab isolation tests"
    _parameter_constraints = {"target": [InstanceOf(str)]}

    def __init__(self, target: str = ""):
        self.target = target

    def run(self, board, data, rng):
        board._channel._socket.sendall(pickle.dumps(Payload(self.target)))
        return np.zeros(board.holdout_size)


class Lingerer(Attack):
    """Leaves a process behind that would outlive the duel, in a session of its own."""

    id = "lingerer"
    reference = "ladderlab isolation tests"
    _parameter_constraints = {}

    def run(self, board, data, rng):
        subprocess.Popen(["sleep", "600"], start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if os.fork() == 0:
            os.setsid()
            os.execvp("sleep", ["sleep", "601"])
        return np.zeros(board.holdout_size)


class Unlucky(HillClimbing):
    """Hill climbing that, on half of its random streams, raises after one submission."""

    id = "unlucky"

    def run(self, board, data, rng):
        if rng.random() < 0.5:
            board.submit(np.zeros(board.holdout_size))
            raise ValueError("an unlucky stream")
        return super().run(board, data, rng)


class DoubleSpeaker(HillClimbing):
    """Sends a question and a submission without waiting for the first answer."""

    id = "double-speaker"

    def run(self, board, data, rng):
        board._channel.send({"kind": "oracle_jumps", "since": 0})
        return super().run(board, data, rng)
