"""ladderlab's relay: a platform's scoring program that asks the organiser's ``ladderlab serve`` for the release.

``ladderlab export`` copies this file, unchanged, into what a platform runs: Codabench's scoring
program (``score.py``, run as ``metadata.yaml``'s ``command:``), EvalAI's ``evaluation_script``
(``main.py``, whose :func:`evaluate` the submission worker calls), EvalAI's remote evaluation
(:func:`evaluate_remote`) and Hugging Face competitions' ``metric.py`` (:func:`compute`). It
imports the Python standard library only (it runs in any Python 3.8 or later, in the platform's
own image), and it never holds the labels or an exact score: it sends the participant's file to
the service under the scorer credential, naming the team, with the platform's submission as the
``Idempotency-Key`` (a platform that runs a submission again gets the first answer), and returns
the released value, the only number it ever sees. It writes nothing but the platform's own score
file, and prints no number.

Before the first upload it checks that the service serves the challenge this file was exported
for, with its mechanism and parameters, under a certificate that covers it (``GET
/api/challenge``): the same check ``ladderlab serve`` makes at its start.

Its settings come from ``ladderlab.json`` (the ``CONFIG`` file that ``ladderlab export`` writes
next to the platform's hidden files: Codabench's reference data, EvalAI's annotation file, the
Hugging Face competition's private repository): ``url``, ``scorer_token``, ``challenge``,
``mechanism`` (``id`` and ``params``), ``column`` (the leaderboard key), and for Codabench
``prediction_file`` and ``token_file`` (what the participant's archive holds).
"""

import hashlib
import json
import os
import sys
import time
import urllib.error
import urllib.request

CONFIG = "ladderlab.json"
ATTEMPTS = 5
"""Uploads tried before giving up on a service that does not answer (a 503, a lost connection)."""
MEDIA_TYPES = {".csv": "text/csv", ".parquet": "application/vnd.apache.parquet", ".json": "application/json"}


class RelayError(Exception):
    """The service refused the submission (the message is the service's, for the participant), or it
    is not the service this relay was exported for."""


def load_config(path):
    """The relay's settings from ``path`` (a ``ladderlab.json``)."""
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle)
    missing = [key for key in ("url", "scorer_token", "challenge", "mechanism", "column") if key not in config]
    if missing:
        raise RelayError("{}: no {} (write it again with 'ladderlab export')".format(path, ", ".join(missing)))
    return config


def _request(config, method, path, data=None, headers=None):
    """(status, answer as a dict) of one request to the service; retried on a 503 or a lost connection."""
    url = config["url"].rstrip("/") + path
    for attempt in range(ATTEMPTS):
        request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
        try:
            with urllib.request.urlopen(request, timeout=float(config.get("timeout", 60))) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            body = error.read()
            if error.code != 503 or attempt == ATTEMPTS - 1:
                try:
                    answer = json.loads(body)
                except ValueError:
                    answer = {"error": body[:200].decode("utf-8", "replace")}
                return error.code, answer if isinstance(answer, dict) else {"error": str(answer)}
            wait = error.headers.get("Retry-After", "5")
        except (urllib.error.URLError, OSError) as error:
            if attempt == ATTEMPTS - 1:
                raise RelayError("the leaderboard service at {} does not answer: {}".format(config["url"], error))
            wait = "5"
        time.sleep(min(30.0, float(wait) if wait.isdigit() else 5.0))
    raise RelayError("the leaderboard service at {} does not answer".format(config["url"]))


def check_service(config):
    """Refuse a service that serves another challenge, mechanism or parameters than the export's, or
    whose certificate does not cover what it serves (unless exported with ``--uncertified``)."""
    status, served = _request(config, "GET", "/api/challenge")
    if status != 200:
        raise RelayError("GET {}/api/challenge answered {}: {}".format(config["url"], status, served.get("error")))
    wanted = config["mechanism"]
    if served.get("name") != config["challenge"]:
        raise RelayError("the service at {} serves challenge {!r}, not {!r}".format(
            config["url"], served.get("name"), config["challenge"]))
    if served.get("mechanism") != wanted:
        raise RelayError("the service serves mechanism {}, this scorer was exported for {}: export again".format(
            json.dumps(served.get("mechanism"), sort_keys=True), json.dumps(wanted, sort_keys=True)))
    if not served.get("certified") and not config.get("uncertified"):
        raise RelayError("the service's certificate does not cover what it serves: nothing is scored")


def relay(config, prediction, media_type, idempotency_key, team_token=None, platform_team=None):
    """The released value of ``prediction`` (bytes of a CSV, Parquet or JSON file) for the team of
    ``team_token`` or the platform's ``platform_team``; :class:`RelayError` with the service's reason."""
    check_service(config)
    headers = {"Authorization": "Bearer " + config["scorer_token"], "Content-Type": media_type,
               "Idempotency-Key": idempotency_key}
    if team_token is not None:
        headers["X-Ladderlab-Team-Token"] = team_token
    if platform_team is not None:
        headers["X-Ladderlab-Team"] = platform_team
    status, answer = _request(config, "POST", "/api/scorer/submissions", prediction, headers)
    if status not in (200, 201):
        raise RelayError("the leaderboard refused this submission ({}): {}".format(status, answer.get("error")))
    released = answer["submissions"][-1]["released"]
    if released is None:
        raise RelayError("the leaderboard answered this submission with no score (its linked group's caps were spent)")
    return float(released)


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


def media_type(path):
    """The content type of a prediction file, by its suffix (CSV when it has none)."""
    return MEDIA_TYPES.get(os.path.splitext(path)[1].lower(), "text/csv")


# --- Codabench ---------------------------------------------------------------------------------


def codabench_main(argv):
    """``python3 score.py /app/input /app/output``: read the participant's prediction and team token
    from ``input/res`` (as the compute worker lays out a results submission), the settings from
    ``input/ref/ladderlab.json`` (the task's reference data), and write the released value alone to
    ``output/scores.json``. The idempotency key is a hash of the prediction and the token: the
    compute worker gives the container no submission id, and a re-run of a submission (a phase
    migration, an organiser's re-run) sends the same files."""
    input_dir, output_dir = argv[1], argv[2]
    config = load_config(os.path.join(input_dir, "ref", CONFIG))
    res = os.path.join(input_dir, "res")
    token_path = os.path.join(res, config.get("token_file", "ladderlab_token.txt"))
    prediction_path = os.path.join(res, config.get("prediction_file", "predictions.csv"))
    for path, what in ((token_path, "your team's token"), (prediction_path, "your prediction")):
        if not os.path.isfile(path):
            sys.stderr.write("the submission has no {}: put {} in the archive (found: {})\n".format(
                os.path.basename(path), what, ", ".join(sorted(os.listdir(res))) or "nothing"))
            return 2
    token = _read(token_path).decode("utf-8", "replace").strip()
    prediction = _read(prediction_path)
    key = "codabench-" + hashlib.sha256(token.encode() + b"\0" + prediction).hexdigest()[:40]
    try:
        released = relay(config, prediction, media_type(prediction_path), key, team_token=token)
    except RelayError as error:
        sys.stderr.write("{}\n".format(error))
        return 1
    with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
        json.dump({config["column"]: released}, handle)
    sys.stdout.write("scored by the organiser's leaderboard: see the leaderboard for the released value\n")
    return 0


# --- EvalAI --------------------------------------------------------------------------------------


def _evalai_output(config, released):
    result = [{config.get("split", "public"): {config["column"]: released}}]
    return {"result": result, "submission_result": result[0]}


def evaluate(test_annotation_file, user_submission_file, phase_codename, **kwargs):
    """EvalAI's ``evaluate``, as its submission worker calls it: the annotation file is this relay's
    ``ladderlab.json`` (the labels stay with the organiser's service), the team is
    ``submission_metadata["participant_team"]`` (``evalai:ID``) and the idempotency key the EvalAI
    submission's ``id``; returns the released value as the phase's one split and metric."""
    config = load_config(test_annotation_file)
    return _evalai_output(config, _evalai_relay(config, user_submission_file, phase_codename, kwargs))


def evaluate_remote(user_submission_file, phase_codename, test_annotation_file=None, **kwargs):
    """The same for EvalAI's remote evaluation (EvalAI-Starters' ``remote_challenge_evaluation``,
    ``evaluate(user_submission_file, phase_codename, test_annotation_file=None, **kwargs)``), run on
    the organiser's own machine: the settings are ``test_annotation_file``, else ``ladderlab.json``
    beside this file; the worker must pass ``submission_metadata=submission``."""
    path = test_annotation_file or os.path.join(os.path.dirname(os.path.abspath(__file__)), CONFIG)
    config = load_config(path)
    return _evalai_output(config, _evalai_relay(config, user_submission_file, phase_codename, kwargs))


def _evalai_relay(config, submission_file, phase_codename, kwargs):
    phases = config.get("phases")
    if phases and phase_codename not in phases:
        raise RelayError("phase {!r} is not scored by the organiser's leaderboard (phases: {})".format(
            phase_codename, ", ".join(phases)))
    metadata = kwargs.get("submission_metadata")
    if not isinstance(metadata, dict) or "participant_team" not in metadata or "id" not in metadata:
        raise RelayError("no submission_metadata with the participant team and the submission id: the worker must "
                         "call evaluate(..., submission_metadata=submission)")
    return relay(config, _read(submission_file), media_type(submission_file), "evalai-{}".format(metadata["id"]),
                 platform_team="evalai:{}".format(metadata["participant_team"]))


# --- Hugging Face competitions ---------------------------------------------------------------------


def compute(params):
    """Hugging Face competitions' ``metric.compute(params)``: the settings and the submission
    (``submissions/{team_id}-{submission_id}.csv``) come from the private competition repository
    with the organiser's token, the team is ``hf:{team_id}`` and the idempotency key the
    ``submission_id``. The public and the private score are both the released value: the private
    board is ``ladderlab serve``'s after the close (no exact score is written before it)."""
    from huggingface_hub import hf_hub_download

    def download(name):
        return hf_hub_download(repo_id=params.competition_id, filename=name, token=params.token, repo_type="dataset")

    config = load_config(download(CONFIG))
    submission = download("submissions/{}-{}.csv".format(params.team_id, params.submission_id))
    released = relay(config, _read(submission), "text/csv", "hf-{}".format(params.submission_id),
                     platform_team="hf:{}".format(params.team_id))
    return {"public_score": {config["column"]: released}, "private_score": {config["column"]: released}}


if __name__ == "__main__":
    sys.exit(codabench_main(sys.argv))
