"""``ladderlab export`` and ``ladderlab audit``: each exported scorer run as its platform's code runs it.

Every relayed export (Codabench, EvalAI, Hugging Face competitions) scores through a real
``ladderlab serve`` over HTTP on loopback; the same submissions sent to a twin service (same
secret, its own log) straight through the team API must get the same releases. The Kaggle
metric must release what the service releases for the same predictions, bit for bit. Nothing an
exported scorer writes or prints may hold an exact score.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import yaml

from ladderlab.certification.challenge import load
from ladderlab.platforms import audit, codabench, evalai, hf_competitions, kaggle
from ladderlab.platforms.export import ExportError, checked_challenge, display_decimals
from ladderlab.runs.display import grid_decimals
from ladderlab.serve.storage import sqlite_url
from tests.serve_helpers import ThreadServer, open_service, request, write_challenge

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "platforms"
SECRET = 4321
N = 60


def certified(folder: Path, mechanism: str = "ladder", params: str = "eta = 0.01", total: int = 40,
              scorer: str = "zero-one") -> Path:
    """A challenge of N rows (half public) with a certificate that covers it (what 'certify --out'
    records: the mechanism with all its parameters, n, the safe budget)."""
    path = write_challenge(folder, n=N, scorer=scorer, mechanism=mechanism, params=params,
                           rules=f"per_day = 1000\ntotal = {total}", teams=("alpha", "beta"))
    mechanism_object = load(path).mechanism()
    (folder / "cert.json").write_text(json.dumps({"mechanism": mechanism_object.id, "n": N // 2,
                                                  "params": json.loads(json.dumps(mechanism_object.get_params())),
                                                  "safe_budget": total}))
    text = path.read_text().replace(f'id = "{mechanism}"\n', f'id = "{mechanism}"\ncertificate = "cert.json"\n')
    path.write_text(text)
    return path


def predictions(challenge, count: int, seed: int = 0) -> list[pd.DataFrame]:
    """``count`` different predictions of every holdout id, as CSV tables by id (rows shuffled)."""
    rng = np.random.default_rng(seed)
    tables = []
    for _ in range(count):
        values = rng.integers(0, 2, challenge.ids.size)
        order = rng.permutation(challenge.ids.size)
        tables.append(pd.DataFrame({"id": challenge.ids[order], "prediction": values[order]}))
    return tables


@contextlib.contextmanager
def twin_services(path: Path, tmp: Path):
    """The service the platform reaches, and a twin with the same secret that teams reach directly."""
    service, issued = open_service(path, sqlite_url(tmp / "platform.sqlite"), SECRET)
    twin, twin_issued = open_service(path, sqlite_url(tmp / "twin.sqlite"), SECRET)
    with ThreadServer(service) as server, ThreadServer(twin) as twin_server:
        yield server, issued, twin_server, twin_issued
    service.storage.close()
    twin.storage.close()


def direct_release(twin_url: str, token: str, table: pd.DataFrame) -> float:
    status, _, answer = request(twin_url, token, "POST", "/api/submissions", table.to_csv(index=False).encode(),
                                {"Content-Type": "text/csv"})
    assert status == 201, answer
    return answer["submissions"][0]["released"]


def exact_public_scores(service) -> list[float]:
    return [entry.public_score for entry in service.storage.entries()]


def exact_texts(value: float, step: float | None) -> list[str]:
    """The texts of an exact score that say more than its release can: every rounding to more
    decimals than the release step's (or to 3 and more without a step), and its repr."""
    first = 3 if step is None else grid_decimals(step) + 1
    texts = {repr(value), str(value)} | {f"{value:.{d}f}" for d in range(first, 18)}
    released = None if step is None else np.rint(value / step) * step
    return sorted(text for text in texts if released is None or float(text) != released)


def assert_no_exact_score(texts: list[str], scores: list[float], step: float | None) -> None:
    for score in scores:
        for shown in exact_texts(score, step):
            pattern = re.compile(rf"(?<![0-9]){re.escape(shown)}(?![0-9])")
            for text in texts:
                assert not pattern.search(text), f"the exact score {score!r} is written as {shown!r}"


def written_texts(*folders: Path) -> list[str]:
    return [path.read_bytes().decode("utf-8", "replace") for folder in folders for path in folder.rglob("*")
            if path.is_file()]


# --- Codabench ----------------------------------------------------------------------------------


def run_codabench(bundle: Path, run: Path, files: dict[str, bytes]) -> tuple[subprocess.CompletedProcess, Path]:
    """Score one results submission as Codabench's compute worker does (codalab/codabench,
    compute_worker/compute_worker.py at c7dbc756: ``Run.prepare`` unpacks the scoring program to
    ``program/``, the reference data to ``input/ref`` and the submission to ``input/res``;
    ``_run_program_directory`` reads ``metadata.yaml``'s ``command``, replaces the legacy variables
    (``replace_legacy_metadata_command``) and runs it in ``/app/program`` with ``program``, ``input``
    and ``output`` mounted under ``/app``; ``push_scores`` reads ``output/scores.json``). The
    container's ``/app`` is ``run`` here: the command's ``/app/`` paths are mapped onto it."""
    shutil.rmtree(run, ignore_errors=True)
    shutil.copytree(bundle / "scoring_program", run / "program")
    shutil.copytree(bundle / "reference_data", run / "input" / "ref")
    (run / "input" / "res").mkdir(parents=True)
    (run / "output").mkdir()
    for name, data in files.items():
        (run / "input" / "res" / name).write_bytes(data)
    command = yaml.safe_load((run / "program" / "metadata.yaml").read_text())["command"]
    for variable, value in (("$input", "/app/input"), ("$output", "/app/output"), ("$program", "/app/program"),
                            ("$hidden", "/app/input/ref"), ("$predictions", "/app/input/res")):
        command = command.replace(variable, value)
    argv = [part.replace("/app/", f"{run}/") for part in shlex.split(command)]
    argv[0] = sys.executable if argv[0].startswith("python") else argv[0]
    done = subprocess.run(argv, cwd=run / "program", capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    return done, run / "output" / "scores.json"


def test_codabench_bundle_scores_through_serve_as_the_compute_worker_runs_it(tmp_path):
    path = certified(tmp_path / "challenge")
    challenge = load(path)
    with twin_services(path, tmp_path) as (server, issued, twin, twin_issued):
        bundle = codabench.export(challenge, tmp_path / "bundle", server.url, issued["scorer"]).root
        tables = predictions(challenge, 4)
        texts, released, direct = [], [], []
        for number, table in enumerate(tables):
            team = ("alpha", "beta")[number % 2]
            files = {"predictions.csv": table.to_csv(index=False).encode(),
                     "ladderlab_token.txt": (issued[team] + "\n").encode()}
            done, scores = run_codabench(bundle, tmp_path / "run", files)
            assert done.returncode == 0, done.stderr
            value = json.loads(scores.read_text())
            assert list(value) == ["zero_one"]
            released.append(value["zero_one"])
            direct.append(direct_release(twin.url, twin_issued[team], table))
            texts += [done.stdout, done.stderr, *written_texts(tmp_path / "run")]
            if number == 0:  # Codabench runs a submission again: the first answer, and no second entry
                again, scores = run_codabench(bundle, tmp_path / "run", files)
                assert json.loads(scores.read_text())["zero_one"] == released[0]
                assert len(server.service.storage.entries()) == 1
        assert released == direct
        assert_no_exact_score(texts, exact_public_scores(server.service), challenge.release_step())
        competition = yaml.safe_load((bundle / "competition.yaml").read_text())
        column = competition["leaderboards"][0]["columns"][0]
        assert column["precision"] == display_decimals(challenge) == 2 and column["sorting"] == "asc"
        assert competition["phases"][0]["max_submissions"] == 40
        assert audit.audit("codabench", bundle / "competition.yaml", challenge) == []
        missing, _ = run_codabench(bundle, tmp_path / "run", {"predictions.csv": tables[0].to_csv(index=False).encode()})
        assert missing.returncode != 0 and "ladderlab_token.txt" in missing.stderr
        forged, _ = run_codabench(bundle, tmp_path / "run", {"predictions.csv": b"id,prediction\n",
                                                             "ladderlab_token.txt": b"ll_not-a-token"})
        assert forged.returncode != 0 and "unknown team token" in forged.stderr


# --- EvalAI ------------------------------------------------------------------------------------


def evalai_worker_evaluate(export_root: Path, work: Path, annotation: Path, submission: Path, codename: str,
                           metadata: dict) -> tuple[dict, str, str]:
    """Call ``evaluate`` as EvalAI's submission worker does (Cloud-CV/EvalAI,
    scripts/workers/submission_worker.py at 0f040392: ``extract_challenge_data`` unzips the
    challenge's evaluation_script.zip into ``challenge_data/challenge_{id}`` made a package and
    imports ``challenge_data.challenge_{id}``; ``run_submission`` calls ``evaluate(annotation_file_path,
    user_annotation_file_path, codename, submission_metadata=serializer.data)`` with stdout and stderr
    redirected to files that it then saves for the participant)."""
    package = work / "challenge_data" / f"challenge_{metadata['challenge_phase']}"
    if not package.exists():
        package.mkdir(parents=True)
        (work / "challenge_data" / "__init__.py").write_text("")
        with zipfile.ZipFile(export_root / "evaluation_script.zip") as archive:
            archive.extractall(package)
    for name in [name for name in sys.modules if name.split(".")[0] == "challenge_data"]:
        if not str(getattr(sys.modules[name], "__file__", "") or "").startswith(str(work)):
            del sys.modules[name]  # another test's worker folder
    sys.path.insert(0, str(work))
    try:
        importlib.invalidate_caches()
        module = importlib.import_module(f"challenge_data.challenge_{metadata['challenge_phase']}")
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            output = module.evaluate(str(annotation), str(submission), codename, submission_metadata=metadata)
    finally:
        sys.path.remove(str(work))
    return output, stdout.getvalue(), stderr.getvalue()


def test_evalai_evaluation_script_takes_the_team_from_the_submission_metadata(tmp_path):
    path = certified(tmp_path / "challenge")
    challenge = load(path)
    with twin_services(path, tmp_path) as (server, issued, twin, twin_issued):
        root = evalai.export(challenge, tmp_path / "evalai", server.url, issued["scorer"]).root
        config = yaml.safe_load((root / "challenge_config.yaml").read_text())
        annotation = root / config["challenge_phases"][0]["test_annotation_file"]
        twin_tokens = {}
        texts, released, direct = [], [], []
        for number, table in enumerate(predictions(challenge, 4, seed=1)):
            submission = tmp_path / f"submission-{number}.csv"
            table.to_csv(submission, index=False)
            team = 7 + number % 2
            metadata = {"id": 100 + number, "participant_team": team, "participant_team_name": f"t{team}",
                        "challenge_phase": 3, "status": "running"}
            output, out, err = evalai_worker_evaluate(root, tmp_path / "worker", annotation, submission, "public",
                                                      metadata)
            assert list(output["result"][0]) == ["public"]
            released.append(output["result"][0]["public"]["zero_one"])
            texts += [out, err, json.dumps(output)]
            if team not in twin_tokens:  # the twin's team: a token reissued for the name the scorer enrolled
                twin.service.scored_team(twin_issued["scorer"], None, f"evalai:{team}")
                twin_tokens[team] = twin.service.reissue(f"evalai:{team}")
            direct.append(direct_release(twin.url, twin_tokens[team], table))
            again, _, _ = evalai_worker_evaluate(root, tmp_path / "worker", annotation, submission, "public", metadata)
            assert again == output  # EvalAI re-runs a submission: the same answer, logged once
        assert released == direct
        assert sorted({entry.team for entry in server.service.storage.entries()}) == ["evalai:7", "evalai:8"]
        assert len(server.service.storage.entries()) == 4
        assert_no_exact_score(texts, exact_public_scores(server.service), challenge.release_step())
        assert audit.audit("evalai", root / "challenge_config.yaml", challenge) == []
        with pytest.raises(Exception, match="submission_metadata") as refused:
            evalai_worker_evaluate(root, tmp_path / "worker", annotation, submission, "public", {"challenge_phase": 3})
        assert type(refused.value).__name__ == "RelayError"


def test_evalai_remote_evaluation_keeps_the_credential_on_the_organisers_machine(tmp_path):
    """EvalAI-Starters' remote_challenge_evaluation/main.py imports ``evaluate`` from ``evaluate.py``
    and calls ``evaluate(submission_file_path, challenge_phase["codename"])``, to which the organiser
    adds ``submission_metadata=submission`` (docs/deploying.md)."""
    path = certified(tmp_path / "challenge")
    challenge = load(path)
    with twin_services(path, tmp_path) as (server, issued, _, _):
        root = evalai.export(challenge, tmp_path / "evalai", server.url, issued["scorer"], remote=True).root
        config = yaml.safe_load((root / "challenge_config.yaml").read_text())
        assert config["remote_evaluation"] is True
        uploaded = written_texts(root / "annotations") + [(root / "challenge_config.yaml").read_text()]
        assert not any(issued["scorer"] in text for text in uploaded)
        submission = tmp_path / "submission.csv"
        predictions(challenge, 1)[0].to_csv(submission, index=False)
        code = ("import json, sys; from evaluate import evaluate; "
                "print(json.dumps(evaluate(sys.argv[1], 'public', submission_metadata={'id': 5, 'participant_team': 9})))")
        done = subprocess.run([sys.executable, "-c", code, str(submission)], cwd=root / "remote_challenge_evaluation",
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["result"][0]["public"]["zero_one"] == server.service.storage.entries()[0].released


# --- Hugging Face competitions ----------------------------------------------------------------------


def hub_cache(cache: Path, repo: str, files: dict[str, bytes]) -> None:
    """A Hugging Face hub cache holding ``files`` of the dataset repository ``repo`` at one commit, as
    ``hf_hub_download`` lays it out and reads it offline (``HF_HUB_OFFLINE=1``)."""
    folder = cache / f"datasets--{repo.replace('/', '--')}"
    commit = "0" * 40
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "main").write_text(commit)
    for name, data in files.items():
        target = folder / "snapshots" / commit / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def hf_compute_metrics(params):
    """huggingface/competitions, competitions/compute_metrics.py at d887d2ec, its custom branch:
    ``hf_hub_download`` metric.py from the competition repository, append its folder to ``sys.path``,
    ``importlib.import_module("metric")``, ``metric.compute(params)``, and check the public and
    private scores have the same keys. With the package's own file (``LADDERLAB_HF_COMPETITIONS``,
    a checkout) that file runs instead."""
    source = os.environ.get("LADDERLAB_HF_COMPETITIONS")
    if source:
        spec = importlib.util.spec_from_file_location("hf_compute_metrics",
                                                      Path(source) / "competitions" / "compute_metrics.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.compute_metrics(params)
    from huggingface_hub import hf_hub_download

    metric_file = hf_hub_download(repo_id=params.competition_id, filename="metric.py", token=params.token,
                                  repo_type="dataset")
    sys.path.append(os.path.dirname(metric_file))
    try:
        sys.modules.pop("metric", None)
        evaluation = importlib.import_module("metric").compute(params)
    finally:
        sys.path.remove(os.path.dirname(metric_file))
    if evaluation["public_score"].keys() != evaluation["private_score"].keys():
        raise ValueError("Public and private scores have different keys")
    return evaluation


def test_hf_competitions_metric_scores_with_the_team_and_submission_ids(tmp_path, monkeypatch):
    pytest.importorskip("huggingface_hub", reason="the Hugging Face metric downloads with huggingface_hub")
    path = certified(tmp_path / "challenge")
    challenge = load(path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    import huggingface_hub.constants as hub_constants

    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    with twin_services(path, tmp_path) as (server, issued, twin, twin_issued):
        root = hf_competitions.export(challenge, tmp_path / "hf", server.url, issued["scorer"]).root
        tables = predictions(challenge, 3, seed=2)
        files = {"metric.py": (root / "metric.py").read_bytes(), "ladderlab.json": (root / "ladderlab.json").read_bytes()}
        for number, table in enumerate(tables):
            files[f"submissions/team{number % 2}-sub{number}.csv"] = table.to_csv(index=False).encode()
        hub_cache(tmp_path / "cache", "org/competition", files)
        released, direct, twin_tokens, texts = [], [], {}, []
        for number, table in enumerate(tables):
            params = SimpleNamespace(competition_id="org/competition", competition_type="generic", metric="custom",
                                     token="hf_organiser", team_id=f"team{number % 2}", submission_id=f"sub{number}",
                                     submission_id_col="id", output_path=str(tmp_path / "out"))
            stdout = io.StringIO()
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stdout):
                evaluation = hf_compute_metrics(params)
            texts += [stdout.getvalue(), json.dumps(evaluation)]
            assert evaluation["public_score"] == evaluation["private_score"]
            released.append(evaluation["public_score"]["zero_one"])
            team = f"hf:team{number % 2}"
            if team not in twin_tokens:
                twin.service.scored_team(twin_issued["scorer"], None, team)
                twin_tokens[team] = twin.service.reissue(team)
            direct.append(direct_release(twin.url, twin_tokens[team], table))
        assert hf_compute_metrics(params)["public_score"]["zero_one"] == released[-1]  # a re-run: the first answer
        assert released == direct and len(server.service.storage.entries()) == 3
        assert_no_exact_score(texts, exact_public_scores(server.service), challenge.release_step())


# --- Kaggle ------------------------------------------------------------------------------------


def kaggle_score(metric: Path, solution: pd.DataFrame, submission: pd.DataFrame, usage: str, id_column: str = "id"):
    """Kaggle's call of a custom metric (its metric notebook template): ``score(solution, submission,
    row_id_column_name)`` on the rows of one ``Usage`` (Public or Private), every column of the
    solution but ``Usage``, a float back."""
    namespace: dict = {}
    exec(compile(metric.read_text(), str(metric), "exec"), namespace)
    rows = solution[solution["Usage"] == usage].drop(columns="Usage")
    return namespace["score"](rows.copy(), submission[submission[id_column].isin(rows[id_column])].copy(), id_column)


@pytest.mark.parametrize("mechanism, params", [("keyed-noisy", "scale = 0.05, rounding = 0.001"),
                                               ("kaggle", "alpha = 0.01"), ("keyed-noisy", "noise = \"laplace\"")])
def test_kaggle_metric_releases_what_serve_releases_bit_for_bit(tmp_path, mechanism, params, monkeypatch):
    path = certified(tmp_path / "challenge", mechanism, params)
    challenge = load(path)
    state = tmp_path / "challenge" / "test-state"
    state.mkdir()
    (state / "secret").write_text(f"{SECRET}\n")
    root = kaggle.export(challenge, tmp_path / "kaggle", state / "secret").root
    solution = pd.read_csv(root / "solution.csv", dtype={"id": str})
    service, issued = open_service(path, sqlite_url(tmp_path / "log.sqlite"), SECRET)
    tables = predictions(challenge, 5, seed=3)
    tables.append(tables[0].sample(frac=1, random_state=1))  # the same file again, rows in another order
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.rglob("*"))
    metric_public, metric_private, texts = [], [], []
    for table in tables:
        submission = table.astype({"id": str})
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stdout):
            metric_public.append(kaggle_score(root / "metric.py", solution, submission, "Public"))
            metric_private.append(kaggle_score(root / "metric.py", solution, submission, "Private"))
        texts.append(stdout.getvalue())
    assert set(tmp_path.rglob("*")) == before and texts == [""] * len(tables)  # the metric writes and prints nothing
    from ladderlab.serve.uploads import UploadReader

    reader = UploadReader(challenge)
    for number, table in enumerate(tables):
        service.submit(("alpha", "beta")[number % 2], service.check(reader.read(table.to_csv(index=False).encode(), "csv")))
    entries = service.storage.entries()
    assert np.array_equal(np.array(metric_public).view(np.int64), np.array([e.released for e in entries]).view(np.int64))
    assert np.array_equal(np.array(metric_private), np.array([e.private_score for e in entries]))
    assert metric_public[-1] == metric_public[0]  # a resubmitted file gets the same value
    if mechanism == "keyed-noisy":
        exact = np.array([entry.public_score for entry in entries])
        assert not np.array_equal(np.array(metric_public), np.round(exact, 3))  # noise was added
        assert kaggle.stateless_problem(challenge) is None
        assert not any(solution["ladderlab_key"].iloc[0] in line for line in (root / "metric.py").read_text().splitlines())
    service.storage.close()


def test_kaggle_refuses_a_stateful_mechanism_with_the_reason(tmp_path):
    challenge = load(certified(tmp_path, "ladder"))
    with pytest.raises(ExportError, match="'ladder' is not stateless.*neither the team nor any memory"):
        kaggle.export(challenge, tmp_path / "out", tmp_path / "secret")
    assert not (tmp_path / "out").exists() and not (tmp_path / "secret").exists()


def test_an_uncovered_challenge_is_refused_before_anything_is_written(tmp_path):
    path = certified(tmp_path / "challenge", total=40)
    path.write_text(path.read_text().replace("total = 40", "total = 41"))
    with pytest.raises(ExportError, match="more than the certificate's safe budget of 40.*--uncertified"):
        checked_challenge(path)
    assert checked_challenge(path, uncertified=True).name == "test"


def test_the_relay_refuses_a_service_that_serves_another_mechanism(tmp_path):
    path = certified(tmp_path / "challenge")
    other = certified(tmp_path / "other", params="eta = 0.02")
    service, issued = open_service(other, sqlite_url(tmp_path / "log.sqlite"), SECRET)
    with ThreadServer(service) as server:
        root = evalai.export(load(path), tmp_path / "evalai", server.url, issued["scorer"]).root
        submission = tmp_path / "s.csv"
        predictions(load(path), 1)[0].to_csv(submission, index=False)
        with pytest.raises(Exception, match="this scorer was exported for") as refused:
            evalai_worker_evaluate(root, tmp_path / "worker", root / "annotations" / "ladderlab.json", submission,
                                   "public", {"id": 1, "participant_team": 1, "challenge_phase": 4})
        assert type(refused.value).__name__ == "RelayError" and service.storage.entries() == []
    service.storage.close()


def test_the_scorer_endpoint_needs_the_scorer_credential_and_one_team(tmp_path):
    service, issued = open_service(certified(tmp_path), sqlite_url(tmp_path / "log.sqlite"), SECRET)
    with ThreadServer(service) as server:
        body = b"id,prediction\n"
        for token, headers, status in ((issued["alpha"], {"X-Ladderlab-Team": "x:1"}, 401),
                                       (issued["scorer"], {}, 400),
                                       (issued["scorer"], {"X-Ladderlab-Team": "alpha"}, 400),
                                       (issued["scorer"], {"X-Ladderlab-Team": "x:1", "X-Ladderlab-Team-Token": "t"}, 400)):
            answer = request(server.url, token, "POST", "/api/scorer/submissions", body,
                             {"Content-Type": "text/csv", **headers})
            assert answer[0] == status, answer
    assert service.storage.entries() == [] and "x:1" not in service.storage.team_hashes()
    service.storage.close()


# --- audit -------------------------------------------------------------------------------------


def test_audit_finds_the_documented_leaks_in_codabenchs_example_bundle():
    findings = audit.audit("codabench", DATA / "codabench-wheat" / "competition.yaml")
    keys = [finding.key for finding in findings]
    assert "phase 'Development Phase': hide_output" in keys and "phase 'Testing Phase': hide_score_output" in keys
    assert any("2 columns (accuracy, duration)" in finding.problem for finding in findings)
    printed = [finding for finding in findings if "prints" in finding.problem]
    assert [finding.key for finding in printed] == ["task 0 scoring_program: line 23", "task 1 scoring_program: line 23"]
    assert "prints scores" in printed[0].problem


def test_audit_finds_the_documented_leaks_in_evalais_example_config(tmp_path):
    config = DATA / "evalai-example4" / "challenge_config.yaml"
    findings = audit.audit("evalai", config)
    assert any("4 metrics" in finding.problem for finding in findings)
    assert sum("disable_logs" in finding.key for finding in findings) == 2
    challenge = load(certified(tmp_path, "kaggle", "alpha = 0.1"))  # releases on a grid of 0.1: one decimal
    precise = [f for f in audit.audit("evalai", config, challenge) if "leaderboard_decimal_precision" in f.key]
    assert len(precise) == 4 and "set it to 1" in precise[0].fix
    hidden = yaml.safe_load(config.read_text())
    hidden["challenge_phase_splits"][0]["visibility"] = 1
    (tmp_path / "hidden.yaml").write_text(yaml.safe_dump(hidden))
    assert any("visibility 1" in f.key for f in audit.audit("evalai", tmp_path / "hidden.yaml"))


def test_the_commands_exit_codes_and_lines_fit_120_columns(tmp_path, capsys):
    from ladderlab.cli.commands import main

    assert main(["audit", "codabench", str(DATA / "codabench-wheat" / "competition.yaml")]) == 1
    shown = capsys.readouterr().out
    assert "fix: set hide_output: True" in shown and max(map(len, shown.splitlines())) <= 120
    assert main(["audit", "evalai", str(tmp_path / "none.yaml")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    path = certified(tmp_path / "challenge")
    assert main(["export", "kaggle", str(path), "--out", str(tmp_path / "k")]) == 2
    refused = capsys.readouterr().err
    assert refused.count("\n") == 1 and "not stateless" in refused and not (tmp_path / "k").exists()
    assert main(["export", "codabench", str(path), "--out", str(tmp_path / "c"), "--url", "http://127.0.0.1:1"]) == 2
    assert "--tokens FILE" in capsys.readouterr().err and not (tmp_path / "c").exists()
    (tmp_path / "tokens.csv").write_text("team,token\norganiser,o\nscorer,ll_s\n")
    assert main(["export", "codabench", str(path), "--out", str(tmp_path / "c"), "--url", "http://127.0.0.1:1",
                 "--tokens", str(tmp_path / "tokens.csv")]) == 0
    shown = capsys.readouterr().out
    assert max(map(len, shown.splitlines())) <= 120 and "reference_data/ladderlab.json" in shown
    assert json.loads((tmp_path / "c" / "reference_data" / "ladderlab.json").read_text())["scorer_token"] == "ll_s"
    assert (tmp_path / "c" / "reference_data" / "ladderlab.json").stat().st_mode & 0o077 == 0


def test_a_keyed_hash_gives_copies_one_value_and_near_duplicates_fresh_noise():
    """What ``near-duplicate-boosting`` exploits: 64 copies of a file get one release, 64 variants
    that each differ in one row (moving the 0/1 loss by at most 1/n) get fresh N(0, 0.1) noise,
    whose mean is within 4 standard errors (0.05) and 1/n of the exact loss (a Gaussian tail of
    6·10⁻⁵ for a fixed seed that holds)."""
    from ladderlab.registry import MECHANISMS

    n = 400
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, n).astype(float)
    mechanism = MECHANISMS.make("keyed-noisy", scale=0.1).bind(labels, "zero-one", np.random.default_rng(6))
    vector = rng.integers(0, 2, n).astype(float)
    assert np.unique(mechanism.submit_many(vector[None], repeats=64)).size == 1
    rows = rng.choice(n, 64, replace=False)
    variants = np.repeat(vector[None], 64, axis=0)
    variants[np.arange(64), rows] = 1 - vector[rows]
    released = mechanism.submit_many(variants)
    assert np.unique(released).size == 64
    exact = np.mean(vector != labels)
    assert abs(released.mean() - exact) <= 4 * 0.1 / 8 + 1 / n
