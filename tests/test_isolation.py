"""Hostile attack code: under isolation an attack finds no route to the labels (through its
process's objects, the operating system, the file system or seeds), in every sandbox mode,
in duels, competitions and whole runs; honest attacks give the same results, bit for bit."""

import gc
import json
import os
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ladderlab.board import BudgetExceeded
from ladderlab.competition import Rules, TeamSpec, compete
from ladderlab.competition.results import load_competition_results
from ladderlab.isolation import sandbox
from ladderlab.isolation.protocol import AttackRef
from ladderlab.isolation.wire import RELEASED_TAG, SUBMIT_TAG, AttackProcessError, Channel
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs import runner
from ladderlab.runs.duel import duel
from ladderlab.testing import (
    ConformanceError,
    check_attack,
    check_attack_keeps_to_the_public_board,
    check_attack_private_score_at_chance,
)
from tests.data.redteam_attack import RedTeam
from tests.helpers import SMALL

DATA = Path(__file__).parent / "data"
RED_TEAM = f"{DATA / 'redteam_attack.py'}:RedTeam"
HOSTILE = DATA / "hostile_attacks.py"
OBJECT_ROUTES = {"private_attributes", "object_getattribute", "gc_referrers", "gc_objects", "frames"}
"""The routes that reach the labels in-process; ``sys_modules`` (module globals) does not."""
N_PUBLIC, N_HOLDOUT = 200, 600
N_FINAL = N_HOLDOUT - N_PUBLIC
SECRET = 2**100 + 7
FAILURE = 1e-9
"""Probability that a test of chance fails although the attack had no label (exact binomial)."""


def random_labels():
    return TASKS.make("random-labels", n_public=N_PUBLIC, n_holdout=N_HOLDOUT)


def assert_at_chance(final_loss: float, n: int = N_FINAL) -> None:
    """The 0/1 loss on n random labels that the prediction is independent of: Binomial(n, 1/2)
    errors exactly, whatever the prediction; outside the central 1 − 1e-9 it had labels."""
    errors = round(final_loss * n)
    low = stats.binom.ppf(FAILURE / 2, n, 0.5)
    assert low <= errors <= n - low, f"{errors} errors in {n} random labels: the attack had labels"


def assert_every_private_loss_at_chance(run: Path, team_suffix: str, duels: int | None = None) -> None:
    """Every duel's and every hostile team's (label ending in ``team_suffix``) final private
    0/1 loss in a run of a duel table and a 3-replication competition with two such teams is at
    chance, and nothing left a mark."""
    results = runner.load_results(run)
    assert (results.status == "ok").all() and (results.marks == "{}").all()
    assert duels is None or len(results) == duels
    for loss in results.final_final:
        assert_at_chance(loss)
    competitions = load_competition_results(run, teams=True)
    assert (competitions.status == "ok").all() and len(competitions) == 3
    hostile_teams = [loss for labels, private in zip(competitions.team_labels, competitions.team_private)
                     for label, loss in zip(labels, private) if label.endswith(team_suffix)]
    assert len(hostile_teams) == 2 * 3
    for loss in hostile_teams:
        assert_at_chance(loss)


@pytest.fixture(params=["separate-user", "user-namespace"])
def mode(request, monkeypatch):
    """Each sandbox mode: root's (this machine and CI run as root) and an ordinary user's,
    whose user namespace root can create too."""
    if os.geteuid() != 0 and request.param == "separate-user":
        pytest.skip("the separate-user mode needs root")
    monkeypatch.setattr(sandbox, "_effective_user", lambda: 0 if request.param == "separate-user" else 1000)
    sandbox.close_sandboxes()
    sandbox.require.cache_clear()
    assert sandbox.require() == request.param
    yield request.param
    sandbox.close_sandboxes()
    sandbox.require.cache_clear()


def canary_places(*folders: Path) -> list[Path]:
    """Where a canary written from outside the sandbox would land: the given folders (and
    below), the working directory, /tmp, the home folder, the attack's own folder."""
    return [*folders, Path.cwd(), Path("/tmp"), Path.home(), DATA]


def assert_no_canary(name: str, *folders: Path) -> None:
    found = [path for folder in canary_places(*folders) for path in folder.glob(f"**/{name}" if folder in folders
                                                                                 else name)]
    for path in found:
        path.unlink()
    assert not found, f"the attack wrote {found}"


def red_team(**params):
    return ATTACKS.make(RED_TEAM, **params)


# --- without isolation: every route is open --------------------------------------------------

def test_in_process_the_red_team_reaches_the_labels_by_every_object_route():
    """Documented: without isolation, hostile code in the same process finds the labels."""
    result = duel(random_labels(), MECHANISMS.make("kaggle"), red_team(), seed=2, replication=1)
    assert OBJECT_ROUTES <= set(result.marks)
    assert result.final_final == 0.0 and result.final_public == 0.0


def test_in_process_the_red_team_also_finds_the_labels_in_its_processs_memory():
    """The memory scan works: run in the organiser's process, with the secret seed out of
    reach of its files, it finds the labels in its own memory."""
    result = duel(random_labels(), MECHANISMS.make("kaggle"), red_team(os_routes="read"), seed=2, replication=1,
                  secret_seed=SECRET)
    assert "operating_system" in result.marks and result.final_final == 0.0


# --- isolated: no route, in every mode --------------------------------------------------------

def test_an_isolated_red_team_finds_nothing_in_a_duel(mode, tmp_path):
    attack = red_team(os_routes="all", canary=f"canary-duel-{mode}")
    result = duel(random_labels(), MECHANISMS.make("kaggle"), attack, seed=2, replication=1, isolation="process",
                  secret_seed=SECRET)
    assert_no_canary(f"canary-duel-{mode}", tmp_path)
    assert result.marks == {}
    assert_at_chance(result.final_final)


def test_isolated_red_teams_find_nothing_in_a_competition(mode):
    """Three teams, two of them red teams: each sees its siblings, none finds anything."""
    teams = [TeamSpec(red_team(os_routes="all", canary=f"canary-competition-{mode}"), count=2),
             TeamSpec("boosting", {"k": 20})]
    result = compete(random_labels(), MECHANISMS.make("kaggle"), teams, Rules(rounds=4, per_round=50, selection="last"),
                     seed=2, isolation="process", secret_seed=SECRET)
    assert_no_canary(f"canary-competition-{mode}")
    for loss in result.private[:2]:
        assert_at_chance(loss)


def ladderlab(*arguments: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ladderlab.cli.commands", *arguments], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


def hostile_competition(policy: str, params: str = "") -> str:
    """A competition table in which two teams play ``policy`` (with ``params``) beside a boosting team."""
    with_params = f", params = {{ {params} }}" if params else ""
    return f"""
[[competition]]
tasks = [{{ id = "random-labels", params = {{ n_public = {N_PUBLIC}, n_holdout = {N_HOLDOUT} }} }}]
mechanisms = [{{ id = "kaggle" }}]
rules = [{{ rounds = 3, per_round = 40, selection = "last" }}]

[[competition.mixes]]
name = "hostile"
teams = [
  {{ policy = "{policy}", count = 2{with_params} }},
  {{ policy = "boosting", params = {{ k = 20 }} }},
]
"""


@pytest.mark.slow
def test_an_isolated_run_keeps_the_seed_the_secret_and_the_run_directory_from_the_red_team(tmp_path):
    """The whole command: its arguments name the scenario, the secret-seed file and the run
    directory, all readable by its user; the red team, run by it in duels and as two teams of
    a competition, finds none of them."""
    scenario = tmp_path / "hostile.toml"
    scenario.write_text(SMALL.replace("MECHANISMS", '{ id = "kaggle" }').replace(
        'attacks = [{ id = "boosting", params = { k = [50, 100], variant = "kaggle" } }]',
        f'attacks = [{{ id = "{RED_TEAM}", params = {{ os_routes = "all", canary = "canary-run" }} }}]')
        + hostile_competition(RED_TEAM, 'os_routes = "all", canary = "canary-run"'))
    secret = tmp_path / "secret"
    finished = ladderlab("--quiet", "run", str(scenario), "--out", str(tmp_path / "run"), "--isolation", "process",
                         "--secret-seed", str(secret), cwd=tmp_path)
    assert_no_canary("canary-run", tmp_path)
    assert finished.returncode == 0, finished.stderr
    assert_every_private_loss_at_chance(tmp_path / "run", ":RedTeam")


@pytest.mark.slow
def test_run_in_process_the_red_team_reads_the_secret_through_its_arguments(tmp_path):
    """The same command without isolation: the red team reads the secret-seed file named in
    its process's arguments and the run's manifest, and re-derives the labels."""
    scenario = tmp_path / "hostile.toml"
    scenario.write_text(SMALL.replace("MECHANISMS", '{ id = "kaggle" }').replace(
        'attacks = [{ id = "boosting", params = { k = [50, 100], variant = "kaggle" } }]',
        f'attacks = [{{ id = "{RED_TEAM}", params = {{ os_routes = "read" }} }}]'))
    finished = ladderlab("--quiet", "run", str(scenario), "--out", str(tmp_path / "run"),
                         "--secret-seed", str(tmp_path / "secret"), cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr
    results = runner.load_results(tmp_path / "run")
    marks = json.loads(results.marks[0])
    assert "operating_system" in marks and any(mark.startswith("reached secret seed file") for mark in marks)
    assert (results.final_final == 0.0).all()


def test_a_public_seed_regenerates_simulated_labels_and_a_secret_seed_stops_that(mode):
    """What isolation does not cover: simulated data derived from the scenario's public seed,
    found by guessing it or from the attack's own generator."""
    public = duel(random_labels(), MECHANISMS.make("kaggle"), red_team(), seed=2, replication=1, isolation="process")
    assert set(public.marks) == {"regenerated_from_public_seed", "seed_from_own_generator"}
    assert public.final_final == 0.0
    secret = duel(random_labels(), MECHANISMS.make("kaggle"), red_team(), seed=2, replication=1, isolation="process",
                  secret_seed=SECRET)
    assert secret.marks == {}


def test_an_isolated_attack_leaves_no_process_behind(tmp_path):
    """Everything the attack started dies with the duel (root's mode kills every process of
    the attack's user but the attack process, which waits for the next duel)."""
    if os.geteuid() != 0:
        pytest.skip("the separate-user mode needs root")
    duel(random_labels(), MECHANISMS.make("kaggle"), ATTACKS.make(f"{HOSTILE}:Lingerer"), isolation="process")
    left = [line.split(None, 2) for line in subprocess.run(["ps", "-eo", "uid=,stat=,args="], capture_output=True,
                                                           text=True).stdout.splitlines()]
    assert not [args for uid, state, args in left  # killed ones may stay zombies until their parent waits
                if int(uid) >= sandbox.SANDBOX_UID_BASE and "sleep" in args and not state.startswith("Z")]


def test_the_organiser_is_not_dumpable_so_its_own_user_cannot_read_its_memory(tmp_path):
    """``prctl(PR_SET_DUMPABLE, 0)``: a process of the same user, without CAP_SYS_PTRACE,
    cannot open the organiser's memory; without it, it can (root with no capabilities is
    such a user)."""
    without_capabilities = ["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"]
    opened = {}
    for protect in (False, True):
        target = subprocess.Popen([*without_capabilities, sys.executable, "-c",
                                   "import sys, time; from ladderlab.isolation.sandbox import make_non_dumpable; "
                                   f"{'make_non_dumpable(); ' if protect else ''}print('ready', flush=True); "
                                   "time.sleep(60)"], stdout=subprocess.PIPE, text=True)
        try:
            assert target.stdout.readline().strip() == "ready"
            reader = subprocess.run([*without_capabilities, sys.executable, "-c",
                                     f"open('/proc/{target.pid}/mem', 'rb')"], capture_output=True, text=True)
            opened[protect] = reader.returncode == 0
        finally:
            target.kill()
            target.wait()
            target.stdout.close()
    assert opened == {False: True, True: False}


# --- refusing what the machine cannot do -----------------------------------------------------

def refused(platform="linux", euid=1000, bwrap="/usr/bin/bwrap", failure=None):
    with pytest.raises(sandbox.IsolationUnavailable) as refusal:
        sandbox.choose_mode(platform, euid, bwrap, lambda mode: failure)
    return str(refusal.value)


def test_which_sandbox_mode_is_used_when():
    assert sandbox.choose_mode("linux", 0, "/usr/bin/bwrap", lambda mode: None) == "separate-user"
    assert sandbox.choose_mode("linux", 1000, "/usr/bin/bwrap", lambda mode: None) == "user-namespace"
    assert "needs Linux" in refused(platform="darwin")
    assert "apt-get install bubblewrap" in refused(bwrap=None)
    assert "kernel.unprivileged_userns_clone=1" in refused(failure="setting up uid map: Permission denied")
    assert "SYS_ADMIN" in refused(euid=0, failure="Creating new namespace failed: Operation not permitted")


def test_the_command_refuses_isolation_without_bubblewrap_before_any_work(tmp_path):
    finished = subprocess.run([sys.executable, "-m", "ladderlab.cli.commands", "demo", "--isolation", "process"],
                              capture_output=True, text=True, env={**os.environ, "PATH": str(tmp_path)}, timeout=120)
    assert finished.returncode == 2 and finished.stdout == ""
    assert finished.stderr.count("\n") == 1 and "needs bubblewrap" in finished.stderr


# --- same results -----------------------------------------------------------------------------

@pytest.mark.parametrize(
    "task, attack",
    [
        (("diabetes", {}), ("honest", {})),
        (("random-labels", {"n_public": 200, "n_holdout": 600}), ("boosting", {"k": 60})),
        (("gaussian-regression", {"n_samples": 240, "n_features": 60}), ("freedman", {})),
        (("gaussian-regression", {"n_samples": 240, "n_features": 60}), ("step-forward", {"iterations": 2})),
        (("diabetes", {}), ("resubmission-probe", {"repeats": 30})),
        (("random-labels", {"n_public": 200, "n_holdout": 600}), ("hill-climbing", {"k": 60, "repeats": 4})),
    ],
)
def test_isolated_attacks_give_the_same_results_bit_for_bit(task, attack):
    results = {}
    for isolation in ("none", "process"):
        outcome = duel(TASKS.make(task[0], **task[1]), MECHANISMS.make("ladder-boot", b=10),
                       ATTACKS.make(attack[0], **attack[1]), seed=5, replication=2, budget=80, isolation=isolation)
        results[isolation] = outcome
    a, b = results["none"], results["process"]
    for name in ("released", "public", "final"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert (a.delta, a.leaderboard_error, a.submissions, a.marks) == (b.delta, b.leaderboard_error, b.submissions, b.marks)



NUMERIC_DUEL = """
import numpy as np
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import duel
released = [duel(TASKS.make("diabetes"), MECHANISMS.make("ladder-boot", b=10), ATTACKS.make("honest"), seed=5,
                 replication=2, budget=80, isolation=isolation).released for isolation in ("none", "process")]
print(np.array_equal(*released))
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="OpenBLAS core types named here are x86-64's")
def test_an_isolated_attack_computes_with_the_organisers_blas_kernels():
    """An organiser told to use one OpenBLAS core type (here Nehalem's, which every x86-64 machine since
    2008 runs) hands that choice to the attack process: its ridge regression then gives the same bits,
    and the leaderboard the same releases, as the same attack in process (with a cleared environment
    the attack's OpenBLAS chose the machine's own kernels, and the releases differed in the last bit)."""
    environment = {**os.environ, "OPENBLAS_CORETYPE": "Nehalem"}
    finished = subprocess.run([sys.executable, "-c", NUMERIC_DUEL], env=environment, capture_output=True, text=True,
                              timeout=300, cwd=Path(__file__).resolve().parent.parent)
    assert finished.stdout.split() == ["True"], finished.stderr[-2000:]

def test_an_isolated_competition_equals_the_in_process_one():
    teams = [TeamSpec("boosting", {"k": 30}, count=2, accounts=2), TeamSpec("hill-climbing", {"k": 20})]
    rules = Rules(rounds=3, per_round=7)
    plain, isolated = (compete(random_labels(), MECHANISMS.make("ladder"), teams, rules, seed=3, replication=1,
                               isolation=isolation) for isolation in ("none", "process"))
    for name in ("public", "private", "population", "submissions", "public_by_round", "leaderboard_errors"):
        np.testing.assert_array_equal(getattr(plain, name), getattr(isolated, name))


@pytest.mark.slow
def test_an_isolated_run_equals_the_in_process_run(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL.replace("MECHANISMS", '{ id = "kaggle" }, { id = "ladder" }'))
    plain = runner.run(path, tmp_path / "plain")
    isolated = runner.run(path, tmp_path / "isolated", isolation="process", jobs=2)
    pd.testing.assert_frame_equal(plain.drop(columns="wall_time"), isolated.drop(columns="wall_time"))


@pytest.mark.slow  # test_an_isolated_run_equals_the_in_process_run holds the same streams by default
def test_an_isolated_certification_battery_equals_the_in_process_one(tmp_path):
    """The battery names each attack's random stream by its whole identity under isolation
    too (hill-climbing has parameters the battery leaves at their defaults)."""
    from ladderlab.certification import certify

    for isolation in ("none", "process"):
        certify.certify("kaggle", n=100, budgets=[20], attacks=["hill-climbing"], replications=1,
                        run_dir=tmp_path / isolation, isolation=isolation)
    plain, isolated = (runner.load_results(tmp_path / isolation) for isolation in ("none", "process"))
    assert len(plain) > 0
    pd.testing.assert_frame_equal(plain.drop(columns="wall_time"), isolated.drop(columns="wall_time"))


BURN_SECONDS = 0.3


@pytest.mark.slow
def test_an_isolated_certificate_counts_the_cpu_time_of_its_attack_processes(tmp_path):
    """The attacks play in sandboxed processes of the workers (--jobs), which outlive their duels; the certificate's CPU time counts them: every duel of the stand-in
    burns BURN_SECONDS there, more than the organiser's process spends on it."""
    from ladderlab.certification import certify

    certificate = certify.certify("kaggle", n=100, budgets=[10], attacks=[f"{DATA / 'block_attack.py'}:Burner"
                                                                          f"(seconds={BURN_SECONDS})"],
                                  replications=2, default_battery=False, honest_replications=1, jobs=2,
                                  run_dir=tmp_path / "battery", isolation="process")
    duels = certificate["replications_used"]
    assert duels >= 2 and certificate["cpu_time_seconds"] >= duels * BURN_SECONDS
    assert "CPU time of this process and of those it started (workers, sandboxed attack processes)" in (
        certify.markdown(certificate))


@pytest.mark.slow
def test_an_isolated_run_of_ladderlabs_own_attacks_plays_in_the_organisers_process(tmp_path):
    """No attack code but ladderlab's was loaded: one job needs no fresh worker (the run
    fails if it starts one), and the numbers are those of the unisolated run."""
    path = tmp_path / "small.toml"
    path.write_text(SMALL.replace("MECHANISMS", '{ id = "kaggle" }, { id = "ladder" }'))
    script = (f"from ladderlab.runs import runner\nrunner.ProcessPoolExecutor = None\n"
              f"runner.run({str(path)!r}, {str(tmp_path / 'isolated')!r}, isolation='process', progress=False)\n"
              "assert not runner.loaded_foreign_attack_code()")
    subprocess.run([sys.executable, "-c", script], check=True, cwd=tmp_path, capture_output=True)
    plain = runner.run(path, tmp_path / "plain")
    pd.testing.assert_frame_equal(plain.drop(columns="wall_time"),
                                  runner.load_results(tmp_path / "isolated").drop(columns="wall_time"))


def test_a_plugin_attack_loaded_by_the_organiser_sends_isolated_cells_to_fresh_workers():
    script = ("from ladderlab.runs import runner\nfrom ladderlab.registry import ATTACKS\n"
              "ATTACKS.make('boosting')\nassert not runner.loaded_foreign_attack_code()\n"
              f"ATTACKS.get({str(HOSTILE) + ':OverBudget'!r})\nassert runner.loaded_foreign_attack_code()")
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)


# --- the protocol -------------------------------------------------------------------------------

def test_errors_cross_the_pipe_as_themselves():
    with pytest.raises(BudgetExceeded, match="exceed the budget of 2"):
        duel(random_labels(), MECHANISMS.make("kaggle"), ATTACKS.make(f"{HOSTILE}:OverBudget"), budget=2,
             isolation="process")


def test_the_channel_carries_small_and_large_arrays_exactly_in_order():
    left, right = socket.socketpair()
    sender, receiver = Channel(left), Channel(right)
    rng = np.random.default_rng(30)
    messages = [{"small": rng.random(3), "flags": rng.random(5) < 0.5},
                {"large": rng.random((300, 1000)), "counts": rng.integers(0, 9, (2, 70_000), dtype=np.int32)},
                {"small": rng.random((2, 2))}]
    def send_all() -> None:  # written ahead of the reads: a read may start in the middle of a buffer
        for number, arrays in enumerate(messages):
            sender.send({"kind": "batch", "number": number}, arrays)

    writer = threading.Thread(target=send_all)
    writer.start()
    for number, arrays in enumerate(messages):
        header, received = receiver.receive()
        assert header == {"kind": "batch", "number": number}
        assert received.keys() == arrays.keys()
        for name, array in arrays.items():
            assert received[name].dtype == array.dtype and np.array_equal(received[name], array)
    writer.join()


@pytest.mark.parametrize("length", [1 << 49, 1 << 60])  # beyond any address space; beyond an index
def test_a_message_that_claims_more_memory_than_exists_is_a_protocol_error(length):
    left, right = socket.socketpair()
    header = json.dumps({"kind": "batch", "arrays": [["huge", "<f8", [length]]]}).encode()
    left.sendall(struct.pack("<IQ", len(header), 8 * length) + header + bytes(100))
    with pytest.raises(AttackProcessError, match="broke the protocol"):
        Channel(right).receive()


@pytest.mark.parametrize("predictions", [
    np.arange(6.0).reshape(2, 3), np.arange(4.0), np.ones((2, 3, 2), np.float32), np.array([[True, False]]),
    np.arange(6, dtype=np.int16)[::2], np.zeros((0, 5)), np.array([1 + 2j]),
    np.arange(3.0).astype(">f8"), np.zeros((1, 1, 1, 2)),  # these two take the JSON header
])
def test_submissions_and_releases_cross_as_the_same_messages_whatever_their_header(predictions):
    left, right = socket.socketpair()
    attack, organiser = Channel(left), Channel(right)
    attack.send_submission(predictions, 3)
    header, arrays = organiser.receive()
    assert header == {"kind": "submit_many", "repeats": 3} and list(arrays) == ["predictions"]
    assert arrays["predictions"].dtype == predictions.dtype and np.array_equal(arrays["predictions"], predictions)
    for remaining in (None, 0, 7):
        organiser.send_released(np.array([0.5, -1e300, np.nan]), 12, remaining)
        header, arrays = attack.receive()
        assert header == {"kind": "released", "submissions": 12, "remaining": remaining}
        np.testing.assert_array_equal(arrays["released"], [0.5, -1e300, np.nan])
        arrays["released"][0] = 1.0  # the attack's own copy


_CODES = {b"<f8\0": 8, b"|b1\0": 1, b"<i4\0": 4, b"<c16": 16}
"""Dtype codes of the fixed header, and their item sizes."""


@st.composite
def fixed_header_messages(draw):
    """The fields and body of a well-formed fixed-header message, then perhaps one field made wrong."""
    tag = draw(st.sampled_from([SUBMIT_TAG, RELEASED_TAG]))
    code = b"<f8\0" if tag == RELEASED_TAG else draw(st.sampled_from(list(_CODES)))
    ndim = 1 if tag == RELEASED_TAG else draw(st.integers(1, 3))
    sizes = [*draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)), 0, 0][:3]
    counts = [draw(st.integers(0, 9)), draw(st.integers(-1, 9))]
    body = draw(st.binary(min_size=int(np.prod(sizes[:ndim])) * _CODES[code],
                          max_size=int(np.prod(sizes[:ndim])) * _CODES[code]))
    stated = len(body)
    wrong = draw(st.sampled_from([None, "code", "ndim", "unused size", "negative size", "huge size", "stated",
                                  "short body", "count"]))
    if wrong == "code":
        code = draw(st.sampled_from([b"|O8\0", b"<V8\0", b"<M8\0", b"f8\0\0", b"<f16"]) | st.binary(min_size=4, max_size=4))
    elif wrong == "ndim":
        ndim = draw(st.sampled_from([0, 4, 255]))
    elif wrong == "unused size" and ndim < 3:
        sizes[draw(st.integers(ndim, 2))] = draw(st.integers(1, 3))
    elif wrong == "negative size":
        sizes[draw(st.integers(0, 2))] = draw(st.integers(-3, -1))
    elif wrong == "huge size":
        sizes[draw(st.integers(0, ndim - 1))] = 1 << 45
    elif wrong == "stated":
        stated = draw(st.integers(0, 300).filter(lambda size: size != len(body)))
    elif wrong == "short body" and body:
        body = body[: draw(st.integers(0, len(body) - 1))]
    elif wrong == "count":
        counts[draw(st.integers(0, 1))] = draw(st.integers(-5, -2))
    return tag, code, ndim, sizes, counts, stated, body


@settings(max_examples=300)
@given(fixed_header_messages())
def test_a_fixed_header_message_is_what_it_says_or_a_protocol_error(message):
    """The fixed-header parser's every check: a message that names a known numeric dtype,
    1 to 3 dimensions, sizes ≥ 0 (unused ones 0) that fill the body exactly (a release: a
    float64 vector, submissions ≥ 0 and remaining ≥ -1) comes out as sent; anything else
    is refused."""
    tag, code, ndim, sizes, counts, stated, body = message
    left, right = socket.socketpair()
    left.sendall(struct.pack("<IQ4sB3xqqqqq", tag, stated, code, ndim, *sizes, *counts) + body)
    left.close()
    itemsize, shape = _CODES.get(code), tuple(sizes[:ndim])
    well_formed = (itemsize is not None and 1 <= ndim <= 3 and min(sizes) >= 0 and not any(sizes[ndim:])
                   and int(np.prod(shape)) * itemsize == stated == len(body))
    if tag == RELEASED_TAG:  # a submission's repeats are the board's to check, as in-process
        well_formed = well_formed and code == b"<f8\0" and ndim == 1 and counts[0] >= 0 and counts[1] >= -1
    if not well_formed:
        with pytest.raises(AttackProcessError, match="broke the protocol"):
            Channel(right).receive()
        return
    header, arrays = Channel(right).receive()
    array = arrays["predictions" if tag == SUBMIT_TAG else "released"]
    assert header["kind"] == ("submit_many" if tag == SUBMIT_TAG else "released")
    assert array.shape == shape and array.dtype.itemsize == itemsize and array.tobytes() == body


def test_the_organiser_never_unpickles_what_the_attack_sends(tmp_path):
    with pytest.raises(AttackProcessError, match="broke the protocol"):
        duel(random_labels(), MECHANISMS.make("kaggle"), ATTACKS.make(f"{HOSTILE}:Smuggler", target=str(tmp_path / "pwned")),
             isolation="process")
    assert not (tmp_path / "pwned").exists()


@pytest.mark.slow
def test_check_attack_flags_reading_the_boards_private_attributes():
    with pytest.raises(ConformanceError, match=r"private attributes \['_leaderboard'\]"):
        check_attack_keeps_to_the_public_board(red_team())
    with pytest.raises(ConformanceError):
        check_attack(red_team())
    check_attack_keeps_to_the_public_board(ATTACKS.make("boosting", k=20))


class ObjectsOnly(RedTeam):
    """The red team without its direct reads: only gc, frames and object.__getattribute__."""

    id = "objects-only"

    def run(self, board, data, rng):
        return self._first(gc.get_referrers(data)) if self.guess_seeds else self._frames_or_zeros(board)

    def _frames_or_zeros(self, board):
        self.n_ = board.holdout_size
        labels = self._frames()
        return np.zeros(self.n_) if labels is None else labels


@pytest.mark.parametrize("route", ["gc", "frames"])
def test_check_attack_catches_labels_found_by_any_route_and_says_that_only_isolation_is_a_boundary(route):
    attack = ObjectsOnly(guess_seeds=1 if route == "gc" else 0)
    attack.n_ = N_HOLDOUT
    check_attack_keeps_to_the_public_board(attack)  # it reads no private attribute
    with pytest.raises(ConformanceError, match=r"errs on 0 of 120 .* only isolation='process' is a boundary"):
        check_attack_private_score_at_chance(attack)
    check_attack_private_score_at_chance(ATTACKS.make("boosting", k=20))


def test_an_attack_reference_names_its_stream_like_the_instance():
    attack = red_team(guess_seeds=2)
    ref = AttackRef.of(attack)
    assert ref.identity == ("red-team", {"guess_seeds": 2, "canary": "", "os_routes": "none"})
    assert type(ref.make()).__name__ == "RedTeam"


def test_a_sandbox_whose_attack_still_plays_is_never_closed_for_another(monkeypatch, tmp_path):
    """Competition teams play at once: a fifth view must not close the server of a team whose
    attack process is still out; the oldest server with none out is closed instead."""
    sandbox.close_sandboxes()  # this worker's earlier tests may have left servers (a competition's still out)
    monkeypatch.setattr(sandbox, "MAX_SANDBOXES", 1)
    views = []
    for name in ("first", "second"):
        (tmp_path / f"{name}.py").write_text(f"NAME = {name!r}\n")
        views.append(sandbox.View(files=(sandbox.SourceFile.of(tmp_path / f"{name}.py"),)))
    first = sandbox.sandbox_for(views[0])
    connection, pid = first.start_attack_process()
    second = sandbox.sandbox_for(views[1])
    assert first.alive and second is not first and first.in_use == 1
    first.end_attack_process(pid)
    connection.close()
    assert first.in_use == 0
    sandbox.sandbox_for(sandbox.View())
    assert not first.alive  # the oldest with nothing out
