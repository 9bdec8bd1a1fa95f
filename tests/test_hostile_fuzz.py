"""Generated hostile inputs on every surface the service and the batch commands read (issue 45): the
tables of tests/test_hostile_inputs.py and tests/test_hostile_serve_inputs.py name the cases found
so far; here Hypothesis makes new ones. Uploads in each format (.npy headers of arbitrary text,
CSV, JSON and Parquet bytes mutated from a valid upload), challenge files and scenario files with a
value replaced by an arbitrary TOML literal, logs and losses files of arbitrary cells, and state
folders of arbitrary bytes. Each must be read, or refused with one line naming the problem
(``ValueError``, or ``ladderlab: error: …`` with no traceback): never another exception, never a
500, never a changed file."""

from __future__ import annotations

import io
import json
import re
import string

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladderlab.certification import challenge as challenges
from ladderlab.cli.commands import main
from ladderlab.serve.storage import sqlite_url
from ladderlab.serve.uploads import UploadReader
from tests.helpers import files_in
from tests.serve_helpers import ThreadServer, open_service, request, write_challenge, write_secret

FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    path = write_challenge(folder, n=60, rules="per_day = 100000")
    service, tokens = open_service(path, sqlite_url(folder / "log.sqlite"))
    yield service, tokens, UploadReader(service.challenge)
    service.storage.close()


def _valid_bodies(service) -> dict[str, bytes]:
    ids = service.challenge.ids
    table = pd.DataFrame({"id": ids, "prediction": np.arange(ids.size) % 2})
    parquet = io.BytesIO()
    table.to_parquet(parquet, index=False)
    npy = io.BytesIO()
    np.save(npy, np.zeros(ids.size))
    return {"csv": table.to_csv(index=False).encode(), "parquet": parquet.getvalue(), "npy": npy.getvalue(),
            "json": json.dumps({"id": ids.tolist(), "prediction": table.prediction.tolist()}).encode()}


def _read_or_refuse(service, reader: UploadReader, data: bytes, fmt: str) -> None:
    """The upload is rows the leaderboard accepts, or one line saying why not."""
    try:
        service.check(reader.read(data, fmt))
    except ValueError as error:  # UploadError, or the validation's PredictionError
        assert "\n" not in str(error) and str(error), repr(error)


mutations = st.lists(st.tuples(st.sampled_from(["flip", "cut", "insert", "delete"]), st.integers(0, 1 << 20),
                               st.binary(min_size=1, max_size=12)), min_size=1, max_size=4)


def _mutated(data: bytes, changes: list[tuple[str, int, bytes]]) -> bytes:
    for kind, at, text in changes:
        at %= max(1, len(data))
        if kind == "flip":
            data = data[:at] + bytes([data[at] ^ text[0]]) + data[at + 1:] if data else text
        elif kind == "cut":
            data = data[:at]
        elif kind == "insert":
            data = data[:at] + text + data[at:]
        else:
            data = data[:at] + data[at + len(text):]
    return data


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet", "npy"])
def test_mutated_uploads_are_read_or_refused_in_one_line(served, fmt):
    service, _, reader = served
    valid = _valid_bodies(service)[fmt]

    @FUZZ
    @given(mutations)
    def check(changes):
        _read_or_refuse(service, reader, _mutated(valid, changes), fmt)

    check()


header_text = st.one_of(
    st.text(alphabet=string.printable, max_size=80),
    st.builds(lambda descr, order, shape: f"{{'descr': {descr}, 'fortran_order': {order}, 'shape': {shape}, }}",
              st.sampled_from(["'<f8'", "'<i8'", "'|O'", "'<U5'", "[('a', '<f8')]", "'<f8", "None", "'>c16'", "b'<f8'"]),
              st.sampled_from(["False", "True", "0", "'no'", "None"]),
              st.one_of(st.tuples(st.integers(-2, 1 << 62)).map(str),
                        st.lists(st.integers(-5, 1 << 40), max_size=4).map(lambda xs: "(" + ", ".join(map(str, xs)) + ")"),
                        st.text(alphabet="(),0123456789 -ex", max_size=20))),
)


@FUZZ
@given(header_text, st.sampled_from([b"\x01\x00", b"\x02\x00", b"\x03\x00", b"\x00\x00"]), st.binary(max_size=64))
def test_npy_headers_of_any_text_are_read_or_refused_in_one_line(served, header, version, tail):
    service, _, reader = served
    encoded = header.encode("latin-1", "replace")
    size = len(encoded).to_bytes(2 if version != b"\x02\x00" else 4, "little")
    _read_or_refuse(service, reader, b"\x93NUMPY" + version + size + encoded + b"\n" + tail, "npy")


json_values = st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                           max_leaves=12)


@FUZZ
@given(json_values)
def test_json_of_any_shape_is_read_or_refused_in_one_line(served, value):
    service, _, reader = served
    _read_or_refuse(service, reader, json.dumps(value).encode(), "json")


def test_over_http_no_generated_upload_is_a_server_error(served):
    service, tokens, _ = served
    bodies = _valid_bodies(service)
    types = {"csv": "text/csv", "json": "application/json", "parquet": "application/vnd.apache.parquet",
             "npy": "application/x-npy"}
    rng = np.random.default_rng(45)
    with ThreadServer(service) as server:
        for fmt, valid in bodies.items():
            for _ in range(6):
                changes = [(str(rng.choice(["flip", "cut", "insert", "delete"])), int(rng.integers(1 << 20)),
                            bytes(rng.integers(0, 256, 4, dtype=np.uint8))) for _ in range(int(rng.integers(1, 4)))]
                status, _, answer = request(server.url, tokens["alpha"], "POST", "/api/submissions",
                                            _mutated(valid, changes), {"Content-Type": types[fmt]})
                assert status < 500, (fmt, status, answer)


header_values = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=255, blacklist_characters="\x7f"),
                        max_size=60)


def test_over_http_requests_with_generated_headers_are_answered_without_a_server_error(served):
    """Authorization, Content-Type, Content-Length, Idempotency-Key and Cookie of any printable text."""
    service, tokens, _ = served
    body = _valid_bodies(service)["csv"]
    with ThreadServer(service) as server:

        @FUZZ
        @given(st.fixed_dictionaries({}, optional={
            "Authorization": st.one_of(header_values, header_values.map(lambda text: "Bearer " + text),
                                       st.just("Bearer " + tokens["alpha"])),
            "Content-Type": st.one_of(header_values, st.sampled_from(["text/csv", "application/x-npy", "text/csv;;",
                                                                      "multipart/form-data; boundary="])),
            "Idempotency-Key": header_values,
            "Cookie": header_values,
            "Accept-Encoding": header_values}),
            st.sampled_from(["/api/submissions", "/api/me", "/login", "/upload", "/api/submissions/1/selection"]),
            st.sampled_from(["GET", "POST", "PUT", "DELETE"]))
        def check(headers, path, method):
            status, _, answer = request(server.url, "", method, path, body if method == "POST" else None,
                                        {name: value.strip() for name, value in headers.items()})
            assert status < 500, (method, path, headers, status, answer)

        check()


# --- challenge files and scenario files ------------------------------------------------------

toml_literals = st.one_of(
    st.integers(-(1 << 70), 1 << 70).map(str),
    st.sampled_from(["nan", "inf", "-inf", "1e300", "-0.0", "5e-324", "true", "[]", "{}", "[1, \"a\"]", "{ a = 1 }",
                     '""', '"../../etc/passwd"', '"\\u0000"', '"a b"', '"ladder(eta=2)"', "1979-05-27T07:32:00Z"]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.text(alphabet=string.ascii_letters + string.digits + "-_./:é ", max_size=12).map(json.dumps),
)


def _replace_a_value(text: str, line: int, literal: str) -> str:
    lines = text.splitlines()
    assignments = [i for i, row in enumerate(lines) if re.match(r"^\s*[A-Za-z_]+\s*=", row)]
    chosen = assignments[line % len(assignments)]
    key = lines[chosen].split("=", 1)[0]
    lines[chosen] = f"{key}= {literal}"
    return "\n".join(lines) + "\n"


def test_challenge_files_with_any_value_anywhere_load_or_are_refused_in_one_line(tmp_path):
    path = write_challenge(tmp_path, n=40, rules="per_day = 10\ntotal = 50\nselection = 2\naccounts = 1",
                           limits="uploads_per_second = 2\nburst = 4")
    original = path.read_text()

    @FUZZ
    @given(st.integers(0, 1000), toml_literals)
    def check(line, literal):
        path.write_text(_replace_a_value(original, line, literal))
        try:
            challenges.load(path)
        except ValueError as error:
            assert "\n" not in str(error) and str(error), repr(error)

    check()


SCENARIO = """schema_version = 1
name = "fuzzed"
replications = 1
seed = 0

[[matrix]]
tasks = [{ id = "random-labels", params = { n_public = 30, n_holdout = 90 } }]
mechanisms = [{ id = "ladder", params = { eta = 0.05 } }]
attacks = [{ id = "hill-climbing", params = { block = 4, k = 10 } }]
"""


def test_scenario_files_with_any_value_anywhere_load_or_are_refused_in_one_line(tmp_path):
    from ladderlab.runs.scenario import load, preflight

    path = tmp_path / "fuzzed.toml"

    @FUZZ
    @given(st.integers(0, 1000), toml_literals, st.sampled_from(["eta", "block", "k", "n_public", "n_holdout", "id"]))
    def check(line, literal, inline_key):
        text = _replace_a_value(SCENARIO, line, literal)
        if line % 3 == 0:  # a value inside an inline table instead
            text = re.sub(rf"\b{inline_key} = (\"[^\"]*\"|[0-9.]+)", f"{inline_key} = {literal}", SCENARIO, count=1)
        path.write_text(text)
        try:
            preflight(load(path))
        except ValueError as error:
            assert "\n" not in str(error) and str(error), repr(error)

    check()


# --- logs, losses files and state folders -----------------------------------------------------

cells = st.one_of(st.sampled_from(["", "nan", "inf", "-1", "1e308", "0.5", "x", "99999999999999999999", "None",
                                   "2024-01-01T00:00:00Z", "someday", "A", "B", " "]),
                  st.floats().map(repr), st.integers(-(1 << 70), 1 << 70).map(str))


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 5), cells), min_size=1, max_size=5))
def test_logs_with_any_cells_are_read_or_refused_in_one_line(tmp_path_factory, changes):
    from ladderlab.final_rankings.submission_log import read_log

    rows = [["A", "1", "1", "2024-01-01T00:00:00Z", "0.3", "0.3"], ["B", "2", "1", "2024-01-01T01:00:00Z", "0.2", "0.25"],
            ["A", "3", "2", "2024-01-01T02:00:00Z", "0.1", "0.2"], ["C", "4", "1", "2024-01-01T03:00:00Z", "0.4", "0.5"]]
    for row, column, value in changes:
        rows[row][column] = value.replace(",", ";")
    path = tmp_path_factory.mktemp("log") / "log.csv"
    path.write_text("team,submission_id,team_sequence,submitted_at,public_score,private_score\n"
                    + "".join(",".join(row) + "\n" for row in rows))
    try:
        read_log(path, scorer="zero-one")
    except ValueError as error:
        assert "\n" not in str(error) and str(error), repr(error)


@FUZZ
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2), cells), min_size=1, max_size=5),
       st.sampled_from(["csv", "parquet"]))
def test_losses_files_with_any_cells_are_read_or_refused_in_one_line(tmp_path_factory, changes, kind):
    from ladderlab.final_rankings.private_samples import read_samples

    rows = [[team, str(sample), str((sample + ord(team)) % 3 / 2)] for team in "AB" for sample in range(3)]
    for row, column, value in changes:
        rows[row][column] = value
    frame = pd.DataFrame(rows, columns=["team", "sample", "loss"])
    folder = tmp_path_factory.mktemp("losses")
    path = folder / f"losses.{kind}"
    if kind == "csv":
        path.write_text(frame.to_csv(index=False))
    else:
        frame.replace({"None": None}).to_parquet(path, index=False)
    try:
        read_samples(path)
    except ValueError as error:
        assert "\n" not in str(error) and str(error), repr(error)


state_files = st.sampled_from(["secret", "log.sqlite", "database"])


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.lists(st.tuples(state_files, st.binary(max_size=200)), min_size=1, max_size=3))
def test_state_folders_of_any_bytes_are_refused_by_verify_in_one_line_and_left_as_they_are(tmp_path_factory, damaged):
    import contextlib

    folder = tmp_path_factory.mktemp("state")
    path = write_challenge(folder, n=40)
    state = folder / "state"
    state.mkdir()
    write_secret(state / "secret", 1234)
    service, _ = open_service(path, sqlite_url(state / "log.sqlite"), 1234)
    service.storage.close()
    for name, data in damaged:
        (state / name).write_bytes(data)
    before = files_in(folder)
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        code = main(["serve", "verify", str(path), "--state", str(state)])
    lines = [line for line in stderr.getvalue().splitlines() if not line.startswith("ladderlab: warning: ")]
    assert code in (0, 1, 2) and "Traceback" not in stderr.getvalue(), stderr.getvalue()
    if code:
        assert len(lines) == 1 and lines[0].startswith("ladderlab: error: "), stderr.getvalue()
    assert files_in(folder) == before
