"""A hostile participant against a running ``ladderlab serve``, over HTTP: uploads built to
exhaust the server's memory, disk or patience, and a log tampered with between runs. Each
refusal is a clear 4xx that names the problem and changes nothing (docs/serve.md, "What a
hostile participant can and cannot do")."""

from __future__ import annotations

import http.client
import io
import json
import urllib.parse

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ladderlab.serve import replay
from ladderlab.serve.storage import Storage, StorageError, predictions
from tests.serve_helpers import (
    Browser,
    ThreadServer,
    open_service,
    request,
    sign_in,
    upload,
    write_challenge,
    write_secret,
)

SECRET = 1234


def _post(url: str, token: str, body: bytes, content_type: str) -> tuple[int, dict]:
    status, _, answer = request(url, token, "POST", "/api/submissions", body, {"Content-Type": content_type})
    return status, answer


def _npy_header(shape: tuple[int, ...], dtype: str = "<f8") -> bytes:
    header = f"{{'descr': '{dtype}', 'fortran_order': False, 'shape': {shape}, }}".encode().ljust(117) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


@pytest.fixture
def served(tmp_path):
    path = write_challenge(tmp_path, n=300, limits="max_upload_bytes = 100000")
    service, tokens = open_service(path, f"sqlite:///{tmp_path / 'log.sqlite'}")
    with ThreadServer(service) as server:
        yield service, tokens, server
    service.storage.close()


def test_a_npy_header_declaring_more_rows_than_the_upload_holds_is_refused_before_numpy_allocates_them(served):
    """The header said 10⁸ rows (240 GB): numpy.load allocated them before reading, and the
    server answered 500 (MemoryError); now the header is checked against the bytes that follow."""
    service, tokens, server = served
    n = service.challenge.ids.size
    status, answer = _post(server.url, tokens["alpha"], _npy_header((10**8, n)) + bytes(800), "application/x-npy")
    assert status == 422 and "truncated" in answer["error"] and f"(100000000, {n})" in answer["error"], answer
    status, answer = _post(server.url, tokens["alpha"], _npy_header((2, n)) + bytes(8 * n), "application/x-npy")
    assert status == 422 and "truncated" in answer["error"], "one row's bytes for two declared rows"
    status, answer = _post(server.url, tokens["alpha"], _npy_header((n,), "|O") + bytes(8 * n), "application/x-npy")
    assert status == 422 and "holds numbers, got dtype object" in answer["error"], answer
    assert service.storage.entries() == []
    assert upload(server.url, tokens["alpha"], np.zeros((2, n)))[0] == 201


def _parquet(columns: dict[str, np.ndarray], **options) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer, compression="zstd", **options)
    return buffer.getvalue()


def test_a_small_parquet_upload_of_millions_of_rows_is_refused_by_its_footer_before_it_is_read(served):
    """Run-length encoding and zstd put 10⁷ rows in 88 kB, under the limit: reading them cost
    8 s of CPU and 1.2 GB of memory before the repeated id was refused. Now the footer's row
    count and uncompressed sizes are checked first; 10⁶ rows of which only the id is wanted
    are refused the same way."""
    service, tokens, server = served
    rows = 10**7
    bomb = _parquet({"id": np.full(rows, 1000), "prediction": np.zeros(rows)}, row_group_size=rows)
    assert len(bomb) < service.challenge.max_upload_bytes()
    status, answer = _post(server.url, tokens["alpha"], bomb, "application/vnd.apache.parquet")
    assert (status, answer["error"]) == (422, f"the upload has {rows} rows, more than the 300 holdout ids")
    n = service.challenge.ids.size
    text = np.full(n, "x" * 100_000)  # 30 MB of one string, in a dictionary page of 100 kB once decompressed
    wide = _parquet({"id": service.challenge.ids.astype(str), "prediction": np.zeros(n), "note": text})
    assert len(wide) < service.challenge.max_upload_bytes()
    status, answer = _post(server.url, tokens["alpha"], wide, "application/vnd.apache.parquet")
    assert status == 413 and "the Parquet upload decompresses to" in answer["error"], answer
    ordinary = _parquet({"id": service.challenge.ids.astype(str), "prediction": np.zeros(n), "note": np.full(n, "x")})
    assert _post(server.url, tokens["alpha"], ordinary, "application/vnd.apache.parquet")[0] == 201
    assert len(service.storage.entries()) == 1


def test_an_upload_with_a_row_without_an_id_is_refused_naming_the_row(served):
    """An empty id cell (CSV) or a null id (JSON) reached np.unique beside strings: TypeError, 500."""
    service, tokens, server = served
    ids = service.challenge.ids.astype(str).tolist()
    table = pd.DataFrame({"id": ids, "prediction": 0.0})
    table.loc[3, "id"] = None
    as_json = json.dumps({"id": table.id.tolist(), "prediction": table.prediction.tolist()}).encode()
    for body, content_type in ((table.to_csv(index=False).encode(), "text/csv"), (as_json, "application/json")):
        status, answer = _post(server.url, tokens["alpha"], body, content_type)
        assert (status, answer["error"]) == (422, "row 4 of the upload has no 'id'"), content_type
    assert service.storage.entries() == []


def test_deeply_nested_json_is_refused_as_unreadable_not_a_server_error(served):
    """json.loads raised RecursionError on 50,000 nested brackets, which nothing caught: 500."""
    service, tokens, server = served
    for body in (b"[" * 50_000 + b"]" * 50_000, b'{"id": ' + b"[" * 30_000 + b"]" * 30_000 + b"}"):
        status, answer = _post(server.url, tokens["alpha"], body, "application/json")
        assert (status, answer["error"]) == (422, "cannot read the upload as JSON: it is nested too deeply")
    assert service.storage.entries() == []


def test_the_uploads_issue_45_found_unclear_get_one_line_naming_the_value_and_what_to_send(served):
    """A malformed .npy header was a 500 with a traceback in the log (numpy's tokenizer raises
    TokenError); a label 1.0000000001 was reported as "label 1"; a JSON object keyed by id and a JSON
    scalar got pandas' wording."""
    service, tokens, server = served
    ids = service.challenge.ids
    broken = b"{'descr': '<f8', 'fortran_order': False, 'shape': (1000000, }".ljust(117) + b"\n"
    npy = b"\x93NUMPY\x01\x00" + len(broken).to_bytes(2, "little") + broken + bytes(64)
    near_label = "id,prediction\n" + "".join(f"{i},{'1.0000000001' if k == 0 else 0}\n" for k, i in enumerate(ids))
    keyed = json.dumps({str(i): 0 for i in ids})
    cases = [
        (npy, "application/x-npy", ["not a .npy array", "header", "TokenError"]),
        (near_label.encode(), "text/csv", [f"id '{ids[0]}'", "label 1.0000000001", "not one of the task's labels"]),
        (keyed.encode(), "application/json", ["a JSON upload is an object of columns", f"key '{ids[0]}' holds",
                                              "an object keyed by id is not read"]),
        (b"0.5", "application/json", ["a JSON upload is an object of columns", "got the value '0.5'"]),
        (b'"id,prediction"', "application/json", ["a JSON upload is", "got the text 'id,prediction'"]),
        (b"[1, 2]", "application/json", ["a JSON upload is", "record 1 is the value '1'"]),
    ]
    for body, content_type, words in cases:
        status, answer = _post(server.url, tokens["alpha"], body, content_type)
        assert status == 422 and "\n" not in answer["error"], (status, answer)
        assert all(word in answer["error"] for word in words), (words, answer["error"])
    assert service.storage.entries() == []


def test_an_upload_of_thousands_of_columns_is_refused_by_its_width_before_pandas_builds_it(served):
    """Within the size limit, width was the cost: 58,000 commas (one CSV row, or a ragged line under
    a header of two) cost pandas 13–15 s of CPU, and 9,000 JSON records with a key each a
    9,000 × 9,000 table (5 s, 1 GB); the refusal then listed every column. Now more columns than
    the prediction's and 64 others are refused before the table is built (the CPU time of each
    refusal is asserted, not its wall time: the machine may be shared), and a refusal names ten."""
    import time

    service, tokens, server = served
    limit = service.challenge.max_upload_bytes()
    compact = {"separators": (",", ":")}
    records = json.dumps([{str(30 * row + i): 0 for i in range(30)} for row in range(300)], **compact).encode()
    keys = json.dumps({str(i): [0] for i in range(9000)}, **compact).encode()
    wide = {"a row of commas": (b"," * (limit - 1) + b"\n", "text/csv", limit),
            "a ragged line": (b"id,prediction\n1" + b"," * (limit - 20) + b"\n", "text/csv", limit - 19),
            "records with a key each": (records, "application/json", 9000),
            "an object of many keys": (keys, "application/json", 9000)}
    for what, (body, content_type, columns) in wide.items():
        assert len(body) <= limit, what
        cpu = time.process_time()  # the server is a thread of this process
        status, answer = _post(server.url, tokens["alpha"], body, content_type)
        assert time.process_time() - cpu < 1.0, what
        assert (status, answer["error"]) == (422, f"the upload has {columns} columns, more than the 66 read (the id, "
                                                  "the prediction's column(s) and up to 64 others)"), what
    status, answer = _post(server.url, tokens["alpha"], json.dumps([{str(i): 0} for i in range(9000)], **compact).encode(),
                           "application/json")
    assert (status, answer["error"]) == (422, "the upload has 9000 records, more than the 300 holdout ids")
    many = pd.DataFrame(np.zeros((1, 60)), columns=[f"c{i}" for i in range(60)]).assign(id=1)
    status, answer = _post(server.url, tokens["alpha"], many.to_csv(index=False).encode(), "text/csv")
    assert status == 422 and answer["error"].endswith("(columns: 'c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7', "
                                                      "'c8', 'c9' and 51 more)"), answer["error"]
    assert service.storage.entries() == []


def _chunked_form(url: str, path: str, fields: bytes, file_bytes: int, browser: Browser) -> tuple[int, bytes]:
    """Post a multipart form to ``path`` from the page of ``browser`` (its cookies and form field) in
    chunked encoding (no Content-Length): ``fields``, then ``file_bytes`` of a file; the status and
    the page."""
    address = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    connection.putrequest("POST", path)
    connection.putheader("Content-Type", f"multipart/form-data; boundary={BOUNDARY}")
    connection.putheader("Transfer-Encoding", "chunked")
    csrf = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n{browser.csrf()}\r\n'.encode()
    connection.putheader("Cookie", browser.cookie())
    connection.endheaders()

    def chunk(data: bytes) -> None:
        connection.send(b"%x\r\n" % len(data) + data + b"\r\n")

    chunk(csrf + fields + f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="p.csv"\r\n'
                          "Content-Type: text/csv\r\n\r\n".encode())
    sent, block = 0, b"0" * (1 << 16)
    try:
        while sent < file_bytes:
            chunk(block)
            sent += len(block)
        chunk(f"\r\n--{BOUNDARY}--\r\n".encode())
        connection.send(b"0\r\n\r\n")
    except OSError:  # the server answered and closed the connection
        pass
    response = connection.getresponse()
    page = response.read()
    connection.close()
    return response.status, page


BOUNDARY = "hostile"


def test_a_chunked_page_upload_over_the_limit_is_refused_while_it_streams(served):
    """A chunked form declares no length: the page's form spooled any file to disk, 64 MB here,
    before the token was even looked at. Now the body is counted as it arrives (413)."""
    service, tokens, server = served
    status, page = _chunked_form(server.url, "/upload", b"", 64 << 20, sign_in(server.url, tokens["alpha"]))
    assert status == 413 and b"larger than the limit of" in page
    assert service.storage.entries() == []
    assert request(server.url, tokens["alpha"], "GET", "/api/me")[2]["remaining_today"] == 1000


def test_a_chunked_token_form_is_cut_off_at_its_limit(served):
    """The page's token form (then "my submissions", now signing in) read a chunked body's preamble of
    blank lines to its end (64 MB here) before the form parser's own limits refused it (400)."""
    _, _, server = served
    status, page = _chunked_form(server.url, "/login", b"\r\n" * (32 << 20), 0, Browser(server.url))
    assert status == 413 and b"larger than the limit of 8192 bytes" in page


def test_an_idempotency_key_too_long_is_refused_before_the_upload_is_read_or_counted(tmp_path):
    """The key was checked after the upload was read and parsed (and counted in the rate limit):
    an unreadable upload with a 500-character key got the reader's 422 instead of the key's 400."""
    path = write_challenge(tmp_path, n=300, limits="uploads_per_second = 1\nburst = 1")
    service, tokens = open_service(path, f"sqlite:///{tmp_path / 'log.sqlite'}")
    with ThreadServer(service) as server:
        status, _, answer = request(server.url, tokens["alpha"], "POST", "/api/submissions", b"not,a,prediction",
                                    {"Content-Type": "text/csv", "Idempotency-Key": "k" * 500})
        assert (status, answer["error"]) == (400, "Idempotency-Key must have 1 to 128 characters, got 500")
        assert upload(server.url, tokens["alpha"], np.zeros((1, 300)))[0] == 201, "the refusal did not count"
    service.storage.close()


def test_verify_finds_a_stored_prediction_changed_so_that_its_scores_replay_the_same(tmp_path, database):
    """The fixed Ladder's releases depend on the scores only: a prediction swapped for another with
    the same public and final scores replayed the same, and verify called the log intact. Each
    stored prediction is now checked against the SHA-256 its entry holds."""
    path = write_challenge(tmp_path)
    service, tokens = open_service(path, database)
    split, n = service.challenge.split, service.challenge.ids.size
    labels = split.y_holdout
    public = split.public_rows
    honest = np.zeros(n)  # right where the label is 0
    turned_wrong, turned_right = (public[labels[public] == label][0] for label in (0.0, 1.0))
    forged = honest.copy()
    forged[[turned_wrong, turned_right]] = 1.0  # the same public and final scores
    with ThreadServer(service) as server:
        assert upload(server.url, tokens["alpha"], np.stack([honest, 1 - honest]))[0] == 201
    storage = Storage(database)
    replay.rebuild(service.challenge, storage, SECRET)  # intact
    from ladderlab.serve.storage import encode_prediction, prediction_sha256

    layout, data = encode_prediction(forged)
    with storage.transaction() as connection:
        connection.execute(predictions.update().where(predictions.c.sha256 == prediction_sha256(honest))
                           .values(layout=layout, data=data))
    with pytest.raises(StorageError, match=f"the prediction stored under {prediction_sha256(honest)} was changed"):
        replay.rebuild(service.challenge, storage, SECRET)
    storage.close(), service.storage.close()


def _log_of_uploads(tmp_path, database: str, count: int):
    """A challenge with a state folder (its secret) and a log on ``database`` holding ``count``
    submissions of team alpha, uploaded over HTTP; the challenge's path and the service."""
    path = write_challenge(tmp_path)
    (tmp_path / "state").mkdir()
    write_secret(tmp_path / "state" / "secret", SECRET)
    service, tokens = open_service(path, database, SECRET)
    with ThreadServer(service) as server:
        assert upload(server.url, tokens["alpha"], np.eye(count, service.challenge.ids.size))[0] == 201
    return path, service


def test_verify_with_an_anchor_finds_a_log_cut_back_together_with_its_head(tmp_path, database, capsys):
    """Removing the last entries and moving the chain's head row back leaves a chain that is
    consistent in itself: verify called it intact. The head it printed earlier, given back as
    --anchor, finds the cut."""
    from ladderlab.cli.commands import main
    from ladderlab.serve.storage import chain, submissions

    path, service = _log_of_uploads(tmp_path, database, 4)
    verify = ["serve", "verify", str(path), "--state", str(tmp_path / "state"), "--database", database]
    assert main(verify) == 0
    head = capsys.readouterr().out.split("its head is ")[1].split()[0]
    assert head.startswith("4:")
    entries = service.storage.entries()
    with service.storage.transaction() as connection:
        connection.execute(submissions.delete().where(submissions.c.submission_id > 2))
        connection.execute(chain.update().where(chain.c.singleton == 1).values(last_id=2, last_hash=entries[1].entry_hash))
    assert main(verify) == 0, "cut back with its head, the chain is consistent in itself"
    capsys.readouterr()
    assert main([*verify, "--anchor", head]) == 1
    assert "the log has no submission 4: entries were removed from its end" in capsys.readouterr().err
    assert main([*verify, "--anchor", f"2:{entries[1].entry_hash}"]) == 0
    service.storage.close()


def test_serve_refuses_a_tampered_log_in_one_line_without_a_traceback(tmp_path, database, capsys):
    """A log changed behind the server: ``serve verify`` named the entry, but starting the server
    again printed StorageError's traceback (it is no ValueError, which the command line reports)."""
    from ladderlab.cli.commands import main
    from ladderlab.serve.storage import submissions

    path, service = _log_of_uploads(tmp_path, database, 2)
    with service.storage.transaction() as connection:
        connection.execute(submissions.update().where(submissions.c.submission_id == 1).values(released=0.01))
    capsys.readouterr()
    code = main(["serve", str(path), "--uncertified", "--state", str(tmp_path / "state"), "--database", database,
                 "--port", "0"])
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if not line.startswith("ladderlab: warning:")]
    assert code == 1 and "Traceback" not in captured.err and len(lines) == 1, captured.err
    assert lines[0].startswith("ladderlab: error: ") and "submission 1 was changed after it was written" in lines[0]
    assert "nothing was served" in lines[0]
    service.storage.close()


def test_the_link_rules_probe_learns_nothing_about_the_split(tmp_path, database):
    """The probe of docs/decisions.md#serve-link-probe, over HTTP: against another account's latest
    submission, change t known-public rows (t the rule's threshold) and one more row r. The rule on
    public rows linked exactly when r was final; now, for every r, no probe links (t + 1 holdout
    rows differ), and with t − 1 known-public rows and r every probe links, r public or final."""
    path = write_challenge(tmp_path, rules="per_day = 1000\ntotal = 1000\naccounts = 4\nlink = true",
                           limits="max_upload_bytes = 4000000")
    service, tokens = open_service(path, database)
    split, n = service.challenge.split, service.challenge.ids.size
    threshold = service.challenge.link_threshold()
    known_public = split.public_rows[:threshold]
    others = np.setdiff1d(np.arange(n), known_public)

    def probe(known: np.ndarray, row: int) -> np.ndarray:
        changed = np.zeros(n)
        changed[[*known, row]] = 1.0
        return changed

    with ThreadServer(service) as server:
        assert upload(server.url, tokens["alpha"], np.zeros((1, n)))[0] == 201
        every_row = upload(server.url, tokens["beta"], np.stack([probe(known_public, row) for row in others]))
        public_r = upload(server.url, tokens["gamma"], probe(known_public[:-1], split.public_rows[-1])[None])
        final_r = upload(server.url, tokens["delta"], probe(known_public[:-1], split.final_rows[0])[None])
    assert every_row[0] == public_r[0] == final_r[0] == 201, (every_row, public_r, final_r)
    with service.storage.reading() as connection:
        entries = service.storage.entries_after(connection, 0, with_links=True)
    links = {team: [entry.links for entry in entries if entry.team == team] for team in ("beta", "gamma", "delta")}
    assert len(links["beta"]) == others.size and not any(links["beta"]), "t + 1 rows differ: no r links"
    assert links["gamma"][0][0] == links["delta"][0][0] == ("alpha", threshold), "t rows differ: every r links"
    service.storage.close()


def test_the_answers_anyone_may_ask_for_without_a_token_are_built_once(tmp_path):
    """``/sample_submission.csv`` and ``/api/challenge`` were rebuilt at every request (every id,
    in Python): at 50,000 ids a request without a token cost the server 20–40 ms of CPU, so that
    anyone could keep it busy. Now they cost what sending bytes costs (CPU time of this process,
    which is the server's and the client's: the machine may be shared; without the collector,
    whose full pass over a long test session's objects can cost tenths of a second, the likely
    cause of one failure at 0.37 s in a loaded suite)."""
    import gc
    import time
    import urllib.request

    path = write_challenge(tmp_path, n=50_000)
    service, _ = open_service(path, f"sqlite:///{tmp_path / 'log.sqlite'}")
    with ThreadServer(service) as server:
        for answer in ("/sample_submission.csv", "/api/challenge"):
            first = urllib.request.urlopen(server.url + answer).read()
            gc.collect()
            gc.disable()
            try:
                cpu = time.process_time()
                again = [urllib.request.urlopen(server.url + answer).read() for _ in range(20)]
                assert time.process_time() - cpu < 0.2, answer
            finally:
                gc.enable()
            assert all(body == first for body in again)
        ids = json.loads(urllib.request.urlopen(server.url + "/api/challenge").read())["ids"]
    assert ids == service.challenge.ids.tolist()
    service.storage.close()
