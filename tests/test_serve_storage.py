"""The log's storage without a server: predictions stored narrow and read back bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ladderlab.serve.storage import decode_prediction, encode_prediction

KINDS = {
    "int8": lambda rng, n: rng.integers(-128, 128, n).astype(float),
    "int16": lambda rng, n: np.append(rng.integers(-32768, 32768, n - 1), 1000).astype(float),
    "float32": lambda rng, n: rng.standard_normal(n).astype(np.float32).astype(float),
    "float64": lambda rng, n: rng.standard_normal(n),
}


@given(st.integers(0, 2**32 - 1), st.sampled_from(sorted(KINDS)), st.integers(1, 300))
def test_a_prediction_is_stored_in_the_narrowest_type_that_gives_back_its_float64_bits(seed, kind, n):
    rng = np.random.default_rng(seed)
    row = KINDS[kind](rng, n)
    row[:-1][rng.random(n - 1) < 0.2] = -0.0  # equal to 0 but not the same bits: an int type cannot hold it
    layout, data = encode_prediction(row)
    back = decode_prediction(layout, data)
    assert back.dtype == np.float64 and np.array_equal(back.view(np.int64), row.view(np.int64))
    negative_zero = np.signbit(row) & (row == 0)
    stored = "float32" if negative_zero.any() and kind in ("int8", "int16") else kind
    assert f'"dtype": "{stored}"' in layout


def test_probability_rows_keep_their_shape():
    rows = np.random.default_rng(0).dirichlet(np.ones(3), size=50)
    back = decode_prediction(*encode_prediction(rows))
    assert back.shape == (50, 3) and np.array_equal(back, rows)


def test_a_servers_sqlite_log_is_checkpointed_by_its_own_thread_not_by_a_commit(tmp_path):
    import time

    from ladderlab.serve.storage import CHECKPOINT_SECONDS, Storage, sqlite_url

    database = tmp_path / "log.sqlite"
    storage = Storage(sqlite_url(database), background_checkpoints=True)
    storage.initialise("identity", "fingerprint", "hash")
    rng = np.random.default_rng(0)
    for _ in range(40):  # far beyond what fits the pages create_all wrote, and never 1000 pages of WAL
        with storage.transaction() as connection:
            storage.store_predictions(connection, {str(rng.random()): encode_prediction(rng.random(2000))})
            assert connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
    deadline = time.monotonic() + 20 * CHECKPOINT_SECONDS
    while database.stat().st_size < 40 * 2000 * 8 // 2 and time.monotonic() < deadline:
        time.sleep(CHECKPOINT_SECONDS / 5)
    copied = database.stat().st_size
    checkpointer = storage._checkpointer
    storage.close()
    assert copied >= 40 * 2000 * 8 // 2, "the WAL was copied into the database while the storage was open"
    assert not checkpointer.is_alive()


def test_a_log_of_another_schema_version_is_refused_by_verify_as_by_a_server(tmp_path):
    """``serve verify`` reads a log as a server does: one of an older schema is refused by name,
    not met with an SQL error half-way through the replay."""
    import pytest
    import sqlalchemy as sa

    from ladderlab.serve.storage import Storage, StorageError, meta, sqlite_url

    storage = Storage(sqlite_url(tmp_path / "log.sqlite"))
    storage.initialise("challenge", "secret", "organiser")
    with storage.transaction() as connection:
        connection.execute(sa.update(meta).where(meta.c.key == "schema_version").values(value="1"))
    for check in (lambda: storage.verify_chain("challenge"), lambda: storage.initialise("challenge", "secret", "organiser")):
        with pytest.raises(StorageError, match="schema version '1'"):
            check()
    storage.close()
