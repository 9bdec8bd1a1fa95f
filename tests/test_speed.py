"""The fast paths are exact: same distribution, same decision, or the same bits as the direct computation."""

import functools
import platform
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from ladderlab.attack import Attack, FinalChoiceAttack
from ladderlab.engines.bootstrap import (
    MIN_CHUNK_REPLICATES,
    BootstrapMeanSampler,
    improvements_needed,
    improves_sequentially,
    posterior_odds,
    posterior_probability_of_improvement,
)
from ladderlab.engines.ladder import Ladder
from ladderlab.registry import ATTACKS, MECHANISMS, TASKS
from ladderlab.runs.duel import duel, play
from ladderlab.runs.sharing import TRANSCRIPTS, TranscriptMismatch
from ladderlab.scoring import ZeroOneLoss, get_scorer, paired_sd
from ladderlab.tasks import _FIXED_DATA
from ladderlab.validation import rows_per_block
from tests.helpers import bound, improving_stream, ks_bound, ks_distance

seeds = st.integers(0, 2**32 - 1)


def direct_bootstrap(loss: np.ndarray, b: int, N: int, rng: np.random.Generator) -> np.ndarray:
    """N means of b bootstrap means, each from b × n resampled indices (Alg. 4, lines 12–16)."""
    return np.array([loss[rng.integers(0, loss.size, (b, loss.size))].mean() for _ in range(N)])


LOSSES = {
    "zero-one (one binomial)": (lambda rng: (rng.uniform(size=40) < 0.3).astype(float), 5, "binomial"),
    "three values (multinomial over values)": (lambda rng: rng.integers(0, 3, 40) / 2.0, 5, "multinomial"),
    "continuous, small b (index draws in pairs)": (lambda rng: rng.exponential(size=40), 2, "pairs"),
    "continuous, odd b·n (pairs and the first of one more)": (lambda rng: rng.exponential(size=41), 1, "pairs"),
    "continuous, large n (index draws one by one)": (lambda rng: rng.exponential(size=400), 1, "index"),
    "continuous, large b (multinomial over samples)": (lambda rng: rng.exponential(size=40), 20, "multinomial"),
}


def sampler_path(sampler: BootstrapMeanSampler) -> str:
    if sampler.values.size == 2:
        return "binomial"
    if not sampler.by_index:
        return "multinomial"
    return "index" if sampler.pair_sums is None else "pairs"


@pytest.mark.parametrize("name", LOSSES)
@settings(max_examples=5, deadline=None)
@given(seed=seeds)
def test_bootstrap_mean_sampler_has_the_distribution_of_the_direct_bootstrap(name, seed):
    make_loss, b, path = LOSSES[name]
    rng = np.random.default_rng(seed)
    loss = make_loss(rng)
    sampler = BootstrapMeanSampler(loss, b)
    assert sampler_path(sampler) == path
    N = 3000
    assert ks_distance(sampler.draw(rng, N), direct_bootstrap(loss, b, N, rng)) <= ks_bound(N)


def test_the_distribution_check_rejects_a_sampler_that_resamples_b_instead_of_b_times_n():
    """A plausible slip, Binomial(b, k/n)/b, has n times the variance: the same check fails."""
    rng = np.random.default_rng(0)
    loss = (rng.uniform(size=40) < 0.3).astype(float)
    b, N = 5, 3000
    wrong = rng.binomial(b, loss.mean(), size=N) / b
    assert ks_distance(wrong, direct_bootstrap(loss, b, N, rng)) > ks_bound(N)


def test_the_distribution_check_rejects_pairs_mistaken_for_samples():
    """Another slip, b·n pairs drawn and each counted as one sample, doubles the release."""
    rng = np.random.default_rng(0)
    loss = rng.exponential(size=40)
    b, N = 2, 3000
    pair_sums = (loss[:, None] + loss[None, :]).ravel()
    wrong = np.take(pair_sums, rng.integers(0, loss.size**2, (N, b * loss.size))).mean(axis=1)
    assert ks_distance(wrong, direct_bootstrap(loss, b, N, rng)) > ks_bound(N)


@given(seed=seeds, draws=st.integers(1, 40), cut=st.integers(0, 40))
def test_bootstrap_mean_sampler_draws_do_not_depend_on_grouping(seed, draws, cut):
    cut = min(cut, draws)
    for size, b in ((30, 1), (31, 1), (400, 1), (30, 50)):  # pairs, pairs of an odd b·n, single indices, multinomial
        loss = np.random.default_rng(seed).exponential(size=size)
        sampler = BootstrapMeanSampler(loss, b)
        together = sampler.draw(np.random.default_rng(seed), draws)
        rng = np.random.default_rng(seed)
        parts = np.concatenate([sampler.draw(rng, cut), sampler.draw(rng, draws - cut)])
        np.testing.assert_array_equal(together, parts)


@pytest.mark.parametrize("replicates", [1, 2, 7, 100, 1000])
@pytest.mark.parametrize("threshold", [99.0, (1 - 0.15) / 0.15, 1.0, 0.3, 1e6])
def test_improvements_needed_is_where_the_full_test_starts_to_accept(replicates, threshold):
    needed = improvements_needed(replicates, threshold)
    for count in range(replicates + 1):
        assert (count >= needed) == (posterior_odds(count / replicates) >= threshold)


def full_decision(scorer, y, new, best, B, threshold, seed):
    probability = posterior_probability_of_improvement(scorer, y, new, best, B, np.random.default_rng(seed))
    return posterior_odds(probability) >= threshold


def sequential_decision(scorer, y, new, best, B, threshold, seed):
    needed = improvements_needed(B, threshold)
    return improves_sequentially(scorer, y, new, best, B, needed, np.random.default_rng(seed))


def borderline_pair(seed: int, effect: float, n: int = 60):
    """A best prediction and a new one whose improvement is uncertain: P(H₁|D) spreads over (0, 1)."""
    rng = np.random.default_rng(seed)
    y = rng.normal(size=n)
    best = y + rng.normal(size=n)
    new = best + effect * (y - best) + 0.5 * rng.normal(size=n)
    return y, new, best


@pytest.mark.parametrize("scorer", ["squared", "ccc", "pearson"])
@pytest.mark.parametrize("alpha", [0.01, 0.15, 0.5])
@settings(max_examples=30, deadline=None)
@given(seed=seeds, effect=st.floats(-0.3, 0.5))
def test_sequential_test_decides_as_the_full_b_replicates_on_the_same_draws(scorer, alpha, seed, effect):
    y, new, best = borderline_pair(seed, effect)
    threshold = (1 - alpha) / alpha
    scorer = get_scorer(scorer)
    assert sequential_decision(scorer, y, new, best, 300, threshold, seed) == full_decision(
        scorer, y, new, best, 300, threshold, seed
    )


def settling_replicate(scorer, y, new, best, B, needed, seed) -> int:
    """The number of replicates, drawn in order, after which the B-replicate decision is settled."""
    E = np.random.default_rng(seed).standard_exponential((B, y.size))
    scores = scorer.weighted_by_counts(y, np.stack([new, best]), E)
    improved = np.cumsum(scorer.sign * (scores[:, 0] - scores[:, 1]) < 0)
    drawn = np.arange(1, B + 1)
    return int(np.flatnonzero((improved >= needed) | (improved + B - drawn < needed))[0]) + 1


def replicates_drawn(rng: np.random.Generator, seed: int, n: int, most: int) -> int:
    """How many replicates of n standard exponentials take a fresh ``default_rng(seed)`` to ``rng``'s state."""
    fresh = np.random.default_rng(seed)
    for drawn in range(1, most + 1):
        fresh.standard_exponential(n)
        if fresh.bit_generator.state == rng.bit_generator.state:
            return drawn
    raise AssertionError(f"the test drew more than {most} replicates")


@pytest.mark.parametrize("scorer", ["squared", "ccc"])
@pytest.mark.parametrize("alpha", [0.01, 0.15, 0.5])
@settings(max_examples=15, deadline=None)
@given(seed=seeds, effect=st.floats(-1.0, 0.5))
def test_sequential_test_stops_within_a_chunk_of_the_replicate_that_settles_it(scorer, alpha, seed, effect):
    """Chunks that double (16, 32, 64, ...) overshoot the settling replicate by up to half of
    what they draw: 240 replicates where a clear rejection at α = 0.5 is settled after 151 of 300."""
    y, new, best = borderline_pair(seed, effect)
    scorer, B = get_scorer(scorer), 300
    needed = improvements_needed(B, (1 - alpha) / alpha)
    rng = np.random.default_rng(seed)
    improves_sequentially(scorer, y, new, best, B, needed, rng)
    settled = settling_replicate(scorer, y, new, best, B, needed, seed)
    assert settled <= replicates_drawn(rng, seed, y.size, B) <= settled + MIN_CHUNK_REPLICATES - 1


def test_the_decision_check_rejects_stopping_on_the_running_fraction():
    """A tempting but wrong rule, deciding after the first chunk by its fraction of improvements,
    disagrees with the full test on borderline pairs; the exact rule never does."""
    scorer, B, threshold = get_scorer("squared"), 300, (1 - 0.15) / 0.15
    disagreements = 0
    for seed in range(40):
        y, new, best = borderline_pair(seed, 0.15)
        E = np.random.default_rng(seed).standard_exponential((16, y.size))
        fraction = np.mean(E @ ((new - y) ** 2 - (best - y) ** 2) < 0)
        wrong = posterior_odds(fraction) >= threshold
        disagreements += wrong != full_decision(scorer, y, new, best, B, threshold, seed)
        assert sequential_decision(scorer, y, new, best, B, threshold, seed) == full_decision(
            scorer, y, new, best, B, threshold, seed
        )
    assert disagreements > 0


@given(seed=seeds)
@settings(max_examples=20, deadline=None)
def test_paired_sd_is_bit_identical_to_numpy_std(seed):
    rng = np.random.default_rng(seed)
    rows, n = rng.integers(1, 6), rng.integers(2, 300)
    losses, best = rng.normal(size=(rows, n)), rng.normal(size=n)
    np.testing.assert_array_equal(paired_sd(losses, best), np.std(losses - best, axis=1, ddof=1))


@given(seed=seeds)
@settings(max_examples=30, deadline=None)
def test_the_zero_one_paired_sd_from_counts_is_numpy_std_up_to_rounding(seed):
    rng = np.random.default_rng(seed)
    rows, n = rng.integers(1, 6), rng.integers(2, 300)
    losses, best = (rng.uniform(size=(rows, n)) < rng.uniform()).astype(float), (rng.uniform(size=n) < 0.5).astype(float)
    np.testing.assert_allclose(ZeroOneLoss().paired_sd(losses, best), np.std(losses - best, axis=1, ddof=1),
                               rtol=1e-13, atol=1e-15)


class ZeroOneLossByNumpyStd(ZeroOneLoss):
    """The 0/1 loss with the general paired sd (numpy's operations and rounding)."""

    def paired_sd(self, losses, best_loss):
        return paired_sd(losses, best_loss)


@pytest.mark.parametrize("mechanism_id", ["ladder-free", "ladder-t", "ladder-boot"])
@settings(max_examples=25, deadline=None)
@given(seed=seeds)
def test_the_zero_one_paired_sd_from_counts_makes_the_decisions_of_numpy_std(mechanism_id, seed):
    """One flipped label moves the risk by exactly 1/n, the parameter-free Ladder's margin too:
    the tie tolerance keeps such ties ties whichever way the margin was rounded."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 60).astype(float)
    flips = np.logical_xor.accumulate(np.eye(60, dtype=bool)[rng.integers(0, 60, 80)], axis=0)
    single_flips = np.logical_xor(flips, rng.uniform(size=60) < 0.5).astype(float)  # hill climbing's block 1
    P = np.vstack([improving_stream(rng, labels, 80), single_flips])
    counted = bound(mechanism_id, labels, 5, scorer=ZeroOneLoss())
    by_std = bound(mechanism_id, labels, 5, scorer=ZeroOneLossByNumpyStd())
    np.testing.assert_array_equal(counted.submit_many(P), by_std.submit_many(P))
    assert counted.acceptances_ == by_std.acceptances_


@pytest.mark.parametrize("mechanism_id", ["ladder-free", "ladder-t", "ladder-boot"])
@pytest.mark.parametrize("scorer", ["zero-one", "squared"])
@settings(max_examples=25, deadline=None)
@given(seed=seeds, rows=st.integers(1, 200))
def test_a_t_test_ladder_that_tests_only_rows_below_its_reference_decides_as_testing_every_row(
        mechanism_id, scorer, seed, rows):
    """The margin c·sd/√n is never negative, so only rows already below the reference can beat it.
    Hill climbing's flips of a few labels at a time meet margins of about c/n."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 60).astype(float)
    flips = np.logical_xor.accumulate(np.eye(60, dtype=bool)[rng.integers(0, 60, rows)], axis=0)
    P = np.vstack([improving_stream(rng, labels, rows), np.logical_xor(flips, labels).astype(float)])
    below_only = bound(mechanism_id, labels, 5, scorer=scorer)
    every_row = bound(mechanism_id, labels, 5, scorer=scorer)
    every_row._hits = functools.partial(Ladder._hits, every_row)
    np.testing.assert_array_equal(below_only.submit_many(P), every_row.submit_many(P))
    np.testing.assert_array_equal([below_only.submit(p) for p in P[:20]], [every_row.submit(p) for p in P[:20]])
    assert below_only.acceptances_ == every_row.acceptances_


@pytest.mark.parametrize("mechanism_id", MECHANISMS.ids())
def test_batches_longer_than_a_block_equal_one_at_a_time_submission(mechanism_id):
    """``submit_many`` streams a batch in cache-sized blocks; the transcript is the loop's, bit for bit."""
    n = 50
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, n).astype(float)
    m = 2 * rows_per_block(n) + 7 if mechanism_id not in ("bayesboot-ladder", "bayesboot-ladderboot") else 40
    P = improving_stream(rng, labels, m)
    batched = bound(mechanism_id, labels, 5)
    single = bound(mechanism_id, labels, 5)
    np.testing.assert_array_equal(batched.submit_many(P), [single.submit(p) for p in P])
    assert batched.acceptances_ == single.acceptances_


def real_valued_stream(rng: np.random.Generator, labels: np.ndarray, m: int) -> np.ndarray:
    """m predictions of real labels, each a random mix of the labels and noise."""
    share = rng.uniform(0, 0.8, (m, 1))
    return share * labels + (1 - share) * rng.normal(size=(m, labels.size))


REPEATED_MECHANISMS = ["ladder", "ladder-free", "ladder-t", "ladder-boot", "sparse-vector-ladder", "kaggle", "noisy",
                       "bayesboot-ladderboot"]


@pytest.mark.parametrize("mechanism_id", REPEATED_MECHANISMS)
@pytest.mark.parametrize("scorer", ["zero-one", "squared"])
@settings(max_examples=10, deadline=None)
@given(seed=seeds, repeats=st.integers(1, 5))
def test_repeated_rows_release_what_submitting_each_copy_releases(mechanism_id, scorer, seed, repeats):
    """``submit_many(P, repeats)`` answers a copy after a rejected one without scoring it (the
    deterministic Ladders); the releases and acceptances are those of submitting every copy."""
    rng = np.random.default_rng(seed)
    n = 40
    if scorer == "zero-one":
        labels = rng.integers(0, 2, n).astype(float)
        P = improving_stream(rng, labels, 12)
    else:
        labels = rng.normal(size=n)
        P = real_valued_stream(rng, labels, 12)
    repeated = bound(mechanism_id, labels, 5, scorer=scorer)
    looped = bound(mechanism_id, labels, 5, scorer=scorer)
    np.testing.assert_array_equal(repeated.submit_many(P, repeats=repeats),
                                  [looped.submit(p) for p in P for _ in range(repeats)])
    assert repeated.acceptances_ == looped.acceptances_


def test_a_repeated_row_can_be_accepted_again_by_a_ladder_that_compares_with_its_rounded_release():
    """The t-test Ladder compares with R_{t−1} rounded to 1/n: a copy of the best beats it again
    whenever the risk was rounded up, so the repeated path must test the copies, not skip them."""
    rng = np.random.default_rng(4)
    labels = rng.normal(size=40)
    P = real_valued_stream(rng, labels, 30)
    mechanism = bound("ladder-t", labels, 5, scorer="squared")
    mechanism.submit_many(P, repeats=3)
    accepted = np.array(mechanism.acceptances_)
    assert np.any(np.diff(accepted) == 1)


class FixedSubmissions(Attack):
    """Submits the same noisy predictions, each ``copies`` times: as one batch, one by one, or repeated."""

    id = "fixed-submissions"
    reference = "test"

    def __init__(self, how: str = "batch", copies: int = 3):
        self.how = how
        self.copies = copies

    def run(self, board, data, rng):
        P = rng.normal(size=(20, board.holdout_size))
        if self.how == "repeats":
            board.submit_many(P, repeats=self.copies)
        else:
            copies = np.repeat(P, self.copies, axis=0)
            if self.how == "batch":
                board.submit_many(copies)
            else:
                for row in copies:
                    board.submit(row)
        return P[0]


@pytest.mark.parametrize("mechanism", [("ladder-t", {}), ("ladder-boot", {"b": 10}), ("sparse-vector-ladder", {}),
                                       ("full-disclosure", {})])
def test_a_duel_records_the_same_bits_whether_submitted_in_a_batch_one_by_one_or_repeated(mechanism):
    """The public rows of a tabular task are scattered over the holdout; the leaderboard gathers
    them with contiguous rows, so a row's exact scores do not depend on the rows beside it."""
    split = TASKS.make("gaussian-regression", **FREEDMAN_TASK).split(np.random.default_rng(1))
    results = [play(split, MECHANISMS.make(mechanism[0], **mechanism[1]), FixedSubmissions(how),
                    np.random.default_rng(2), np.random.default_rng(3)) for how in ("batch", "loop", "repeats")]
    for result in results[1:]:
        for field in ("released", "public", "final"):
            np.testing.assert_array_equal(getattr(results[0], field), getattr(result, field))


FREEDMAN_TASK = {"preset": "ad-challenge", "n_samples": 90, "n_features": 40}


@pytest.mark.parametrize("replication", [0, 1])  # 0: played in full and checked; 1: replayed
@pytest.mark.parametrize("mechanism", [("ladder-t", {}), ("bayesboot-ladderboot", {"B": 50, "b": 20})])
def test_a_shared_transcript_gives_each_duel_the_result_it_has_alone(mechanism, replication):
    task = TASKS.make("gaussian-regression", **FREEDMAN_TASK, scorer="ccc" if "bayes" in mechanism[0] else "squared")

    def play(k):
        return duel(task, MECHANISMS.make(mechanism[0], **mechanism[1]), ATTACKS.make("freedman", k=k), 3, replication)

    TRANSCRIPTS.clear()
    alone = play(7)
    TRANSCRIPTS.clear()
    play(2)
    shared, again = play(7), play(7)
    assert len(TRANSCRIPTS) == 1  # k = 7 used the transcript recorded at k = 2
    for result in (shared, again):
        for field in ("released", "public", "final"):
            np.testing.assert_array_equal(getattr(alone, field), getattr(result, field))
        assert alone.leaderboard_error == result.leaderboard_error and alone.delta == result.delta


class SeededNoise(FinalChoiceAttack):
    """Wrongly declares ``scale`` final-only: its submissions depend on it."""

    id = "seeded-noise"
    reference = "test"
    final_only_params = frozenset({"scale"})

    def __init__(self, scale: float = 1.0):
        self.scale = scale

    def play(self, board, data, rng):
        P = self.scale * rng.normal(size=(3, board.holdout_size))
        board.submit_many(P)
        return P[0]

    def final_prediction(self, state, data):
        return state


def test_a_wrong_final_only_declaration_is_caught_in_replication_0():
    task = TASKS.make("gaussian-regression", **FREEDMAN_TASK)
    TRANSCRIPTS.clear()
    duel(task, MECHANISMS.make("ladder-t"), SeededNoise(scale=1.0), 0, 0)
    with pytest.raises(TranscriptMismatch, match="scores differ from the shared transcript"):
        duel(task, MECHANISMS.make("ladder-t"), SeededNoise(scale=2.0), 0, 0)


def test_final_only_params_need_the_two_phase_attack():
    with pytest.raises(TypeError, match="derive it from FinalChoiceAttack"):
        type("Declares", (Attack,), {"final_only_params": frozenset({"k"}), "run": lambda self, board, data, rng: None})


@pytest.mark.parametrize("mode", ["permuted", "random-split"])
def test_cached_fixed_data_give_bit_identical_splits(mode):
    task = TASKS.make("gaussian-regression", **FREEDMAN_TASK, mode=mode)
    _FIXED_DATA.clear()
    first = task.split(np.random.default_rng(11))
    again = task.split(np.random.default_rng(11))
    _FIXED_DATA.clear()
    rebuilt = task.split(np.random.default_rng(11))
    for split in (again, rebuilt):
        np.testing.assert_array_equal(first.y_holdout, split.y_holdout)
        np.testing.assert_array_equal(first.public.X_train, split.public.X_train)
        np.testing.assert_array_equal(first.public.X_holdout, split.public.X_holdout)
        np.testing.assert_array_equal(first.public_rows, split.public_rows)


def test_plugins_clone_and_set_nested_parameters_as_scikit_learn_estimators():
    mechanism = MECHANISMS.make("ladder-t", alpha=0.01)
    copy = clone(mechanism)
    assert copy is not mechanism and copy.get_params() == mechanism.get_params()
    assert repr(copy) == "TTestLadder(alpha=0.01)"
    assert copy.set_params(alpha=0.5) is copy and copy.alpha == 0.5
    with pytest.raises(ValueError, match="Invalid parameter 'beta'"):
        copy.set_params(beta=1)


def test_the_command_line_imports_no_heavy_library_for_help_and_list():
    """``ladderlab --help`` and ``ladderlab list`` must start fast: scikit-learn, scipy.stats,
    pandas, pyarrow and matplotlib are imported only by the commands that use them."""
    code = (
        "import sys, contextlib, io\n"
        "from ladderlab import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    cli.main(['list'])\n"
        "heavy = [m for m in ('sklearn', 'scipy.stats', 'pandas', 'pyarrow', 'matplotlib') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("module", ["ladderlab.certification.challenge", "ladderlab.runs.scenario"])
def test_reading_challenges_and_scenarios_imports_no_models_plots_or_statistics(module):
    """``serve`` and ``certify --challenge`` load a challenge file, ``run`` a scenario: the models
    and plots of the extrapolation experiment they can name are imported when it runs (about 1.2 s
    of CPU when it was measured), scipy.stats when a statistic needs it (0.37 s)."""
    heavy = ("sklearn", "matplotlib", "scipy.stats")
    code = f"import sys, {module}\nprint(','.join(m for m in {heavy!r} if m in sys.modules))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_quick_label_check_refuses_infinity_like_the_full_check():
    from ladderlab.scoring import PredictionKind
    from ladderlab.validation import quick_row_check

    check = quick_row_check(PredictionKind.LABEL, np.array([0.0, 1.0]))
    assert check(np.r_[1.0, 0.0, 1.0])
    for bad in (np.inf, -np.inf, np.nan, 2.0, 0.5):
        assert not check(np.r_[bad, 0.0, 1.0]), bad


FAULTS_OF_FREED_TEMPORARIES = """
import resource, sys
import numpy as np
from ladderlab.utils.memory import retain_freed_memory
if sys.argv[1] == "retain":
    assert retain_freed_memory()

def four_temporaries():
    arrays = [np.ones(3 << 17) for _ in range(4)]  # 3 MiB each, as a bootstrap release's matrices
    return sum(float(a[-1]) for a in arrays)

four_temporaries()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    four_temporaries()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc thresholds")
def test_retained_memory_is_not_faulted_in_again_for_every_temporary():
    def faults(mode: str) -> int:
        run = subprocess.run([sys.executable, "-c", FAULTS_OF_FREED_TEMPORARIES, mode],
                             capture_output=True, text=True, check=True)
        return int(run.stdout)

    default = faults("default")
    assert default >= 20 * 4  # each temporary is faulted in again (in huge pages, where the kernel uses them)
    assert 10 * faults("retain") < default


def test_transcripts_beyond_the_memory_budget_give_way_to_a_new_split():
    """A transcript holds its split's data: over the budget only the newest is kept, and none
    once a new split is about to be drawn (dwork-science-fig1-full kept four 1.2 GB splits)."""
    from ladderlab.runs.sharing import Transcript, TranscriptCache

    task = TASKS.make("correlated-feature-selection", n=10, d=5)
    transcripts = [Transcript(task.split(np.random.default_rng(i)), b"") for i in range(3)]
    size = transcripts[0].nbytes
    roomy = TranscriptCache(size=4, max_bytes=10 * size)
    tight = TranscriptCache(size=4, max_bytes=size + size // 2)
    for number, transcript in enumerate(transcripts):
        roomy.put(number, transcript)
        tight.put(number, transcript)
    assert len(roomy) == 3 and len(tight) == 1 and tight.get(2) is transcripts[2]
    tight.make_room()
    assert len(tight) == 1  # within the budget, the newest stays for the duels that share it
    tight.max_bytes = size // 2
    tight.make_room()
    roomy.make_room()
    assert len(tight) == 0 and len(roomy) == 3
