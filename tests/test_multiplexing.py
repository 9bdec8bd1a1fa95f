"""Isolated duels played together (:mod:`ladderlab.isolation.multiplexing`): the same results as in one
process, one round trip per round for a whole window, an attack's error stays in its duel, an
attack process that breaks a round fails its window and nothing else, and a message of parts
is what it says or a protocol error."""

import socket
import struct
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.isolation.multiplexing import WINDOW
from ladderlab.isolation.wire import PARTS_TAG, AttackProcessError, Channel
from ladderlab.runs import runner

HOSTILE = Path(__file__).parent / "data" / "hostile_attacks.py"
SCENARIO = """
schema_version = 1
name = "together"
replications = REPLICATIONS
seed = 5

[[matrix]]
tasks = [{ id = "random-labels", params = { n_public = 100, n_holdout = 300 } }]
mechanisms = [MECHANISMS]
attacks = [ATTACKS]
"""


def scenario(folder: Path, attacks: str, mechanisms: str = '{ id = "kaggle" }', replications: int = 5) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / "together.toml"
    path.write_text(SCENARIO.replace("ATTACKS", attacks).replace("MECHANISMS", mechanisms)
                    .replace("REPLICATIONS", str(replications)))
    return path


def played(path: Path, isolation: str) -> pd.DataFrame:
    """The run's rows (one job: in this process), without their wall time."""
    return runner.run(path, path.parent / f"run-{isolation}", isolation=isolation).drop(columns="wall_time")


@pytest.mark.slow
def test_duels_played_together_equal_the_duels_played_in_process(tmp_path):
    path = scenario(tmp_path, '{ id = "hill-climbing", params = { k = [5, 30] } }, { id = "boosting", params = { k = 20 } }',
                    '{ id = "kaggle" }, { id = "ladder" }', replications=WINDOW + 3)
    plain, together = played(path, "none"), played(path, "process")
    assert (plain.status == "ok").all()
    pd.testing.assert_frame_equal(plain, together)


@pytest.mark.slow
def test_a_window_of_duels_makes_one_round_trip_per_round(tmp_path, monkeypatch):
    """Eight duels of 20 one-row submissions: 21 round trips and the start, not 8 × 21."""
    received = []
    for name in ("receive", "receive_parts"):
        original = getattr(Channel, name)
        monkeypatch.setattr(Channel, name, lambda self, original=original: received.append(1) or original(self))
    rows = played(scenario(tmp_path, '{ id = "hill-climbing", params = { k = 20 } }', replications=8), "process")
    assert list(rows.submissions) == [20] * 8
    assert len(received) <= 21 + 2


@pytest.mark.slow
def test_an_attacks_error_fails_only_its_own_duel(tmp_path):
    path = scenario(tmp_path, f'{{ id = "{HOSTILE}:Unlucky", params = {{ k = 10 }} }}', replications=12)
    plain, together = played(path, "none"), played(path, "process")
    assert set(together.status) == {"ok", "failed"}
    pd.testing.assert_frame_equal(plain, together)
    assert set(together.error.dropna()) == {"ValueError: an unlucky stream"}


@pytest.mark.slow
def test_an_attack_process_that_breaks_a_round_fails_its_window_and_the_next_window_plays(tmp_path):
    path = scenario(tmp_path, f'{{ id = "{HOSTILE}:DoubleSpeaker", params = {{ k = 10 }} }}', replications=3)
    rows = played(path, "process")
    assert list(rows.status) == ["failed"] * 3
    assert rows.error.str.contains("broke the protocol").all()
    honest = played(scenario(tmp_path / "honest", '{ id = "hill-climbing", params = { k = 10 } }', replications=3), "process")
    assert list(honest.status) == ["ok"] * 3


def channels() -> tuple[Channel, Channel]:
    one, other = socket.socketpair()
    return Channel(one), Channel(other)


LEAN_DTYPES = ["f8", "f4", "i8", "u1", "?", "c16"]


@st.composite
def parts(draw):
    """Parts of several duels: submissions of any lean dtype and shape, releases, and now and then a part
    that has no fixed header (a question, or a submission of a dtype without one)."""
    slots = draw(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=20, unique=True))
    made = []
    for slot in slots:
        kind = draw(st.sampled_from(["submit_many", "released", "oracle_jumps", "big-endian"]))
        if kind == "oracle_jumps":
            made.append((slot, {"kind": "oracle_jumps", "since": draw(st.integers(0, 100))}, {}))
        elif kind == "released":
            scores = np.array(draw(st.lists(st.floats(allow_nan=True), max_size=4)), dtype=np.float64)
            remaining = draw(st.none() | st.integers(0, 2**40))
            made.append((slot, {"kind": "released", "submissions": draw(st.integers(0, 2**40)), "remaining": remaining},
                         {"released": scores}))
        else:
            dtype = np.dtype(">f8") if kind == "big-endian" else np.dtype(draw(st.sampled_from(LEAN_DTYPES)))
            shape = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=3)))
            array = np.arange(np.prod(shape), dtype=np.int64).astype(dtype).reshape(shape)
            made.append((slot, {"kind": "submit_many", "repeats": draw(st.integers(1, 5))}, {"predictions": array}))
    return made


@settings(max_examples=150, deadline=None)
@given(parts())
def test_parts_cross_as_themselves(sent):
    sender, receiver = channels()
    sender.send_parts(sent)
    received = receiver.receive_parts()
    assert [slot for slot, _ in received] == [slot for slot, _, _ in sent]
    for (_, (header, arrays)), (_, sent_header, sent_arrays) in zip(received, sent):
        assert header == sent_header and arrays.keys() == sent_arrays.keys()
        for name, array in arrays.items():
            assert array.shape == sent_arrays[name].shape and array.dtype == sent_arrays[name].dtype
            np.testing.assert_array_equal(array, sent_arrays[name])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 30))
def test_a_message_of_parts_is_what_it_says_or_a_protocol_error(body, count):
    """Any bytes behind a prefix of parts (a count of parts first): parts, or a protocol error."""
    sender, receiver = channels()
    message = struct.pack("<I", count) + body
    sender._socket.sendall(struct.pack("<IQ", PARTS_TAG, len(message)) + message)
    try:
        received = receiver.receive_parts()
    except AttackProcessError as error:
        assert "broke the protocol" in str(error)
    else:
        assert len(received) == count


def test_large_parts_cross_as_themselves_read_piece_by_piece():
    """Batches of several duels (megabytes, beyond the read-ahead buffer and the socket's): sent
    without one joined copy and read a part at a time, each the batch that was sent."""
    sender, receiver = channels()
    rng = np.random.default_rng(3)
    sent = [(slot, {"kind": "submit_many", "repeats": 1}, {"predictions": rng.random((50, 1000))}) for slot in (2, 0, 7)]
    writer = threading.Thread(target=sender.send_parts, args=(sent,))
    writer.start()
    received = receiver.receive_parts()
    writer.join()
    assert [slot for slot, _ in received] == [2, 0, 7]
    for (_, (_, arrays)), (_, _, sent_arrays) in zip(received, sent):
        np.testing.assert_array_equal(arrays["predictions"], sent_arrays["predictions"])


def test_two_parts_for_one_duel_are_a_protocol_error():
    sender, receiver = channels()
    submission = {"kind": "submit_many", "repeats": 1}, {"predictions": np.zeros((1, 3))}
    sender.send_parts([(4, *submission), (4, *submission)])
    with pytest.raises(AttackProcessError, match="two parts for one duel"):
        receiver.receive_parts()
