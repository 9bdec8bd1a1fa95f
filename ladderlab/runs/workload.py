"""How large a command's work is, before it starts: submissions, memory and CPU time.

Every command that can run long estimates its work from its inputs alone (the
scenario's replications, budgets, rounds, teams and accounts, the tasks' sizes, a
certificate's n and budgets, an extrapolation's K, a simulation's repetitions), prints
the estimate, and refuses work whose memory cannot fit in what the machine has
available (:class:`TooLarge`, a one-line error with the estimate; ``--force`` runs it
anyway). The model keeps only the terms that grow with the inputs, with constants
measured on this project's code (``tracemalloc`` peaks, CPU seconds):

- a duel cell keeps about :data:`BYTES_PER_RECORD` bytes per submission and replication
  until its file is written, and a replication in play about
  :data:`BYTES_PER_LIVE_SUBMISSION` per submission; attacks and mechanisms work in
  bounded chunks (:data:`WORKING_BYTES`);
- a competition replication keeps every team's state (:data:`BYTES_PER_TEAM_ROW` per
  holdout row: analysts hold their views and predictions), every account's bound
  mechanism (:data:`BYTES_PER_ACCOUNT_ROW` per public row), about
  :data:`BYTES_PER_COMPETITION_SUBMISSION` per submission, and the round's wave of
  predictions being scored (:data:`BYTES_PER_WAVE_ELEMENT` per prediction value, at most
  ``ladderlab.competition.engine.WAVE_ELEMENTS`` values at once);
- a task's data are its rows × columns as float64, :data:`DATA_COPIES` times over
  (raw, standardised, the split's parts), from ``Task.data_shape``; a task that does not
  declare its shape is drawn once (``ladderlab.runs.scenario``'s cached split) and measured.

Times are typical, within a few times either way: submissions × a per-submission cost
calibrated on the built-in scenarios (:func:`seconds_per_submission`), plus the values a
mechanism's bootstrap resamples weigh per submission
(:meth:`~ladderlab.mechanism.Mechanism.resampled_values`: B · n for the Bayesian-bootstrap
Ladders, none for their test on a loss of labels); an attack that fits many models costs more. Memory is
that of the parallel jobs together, compared with ``MemAvailable`` (Linux) or the
physical memory.
"""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ladderlab.utils.terminal import wrapped

BYTES_PER_RECORD = 160
"""Kept per submission and replication of a duel cell until the cell is written (measured 120 B)."""
BYTES_PER_LIVE_SUBMISSION = 100
"""Per submission of the replication in play: the board's and the mechanism's transcripts."""
WORKING_BYTES = 256 << 20
"""What a job holds beside its records: the interpreter and libraries (about 200 MB resident),
an attack's batch
(at most 32 MiB, :data:`ladderlab.attack.SUBMISSION_CHUNK_ELEMENTS`) and a mechanism's
bootstrap chunks."""
DATA_COPIES = 4
"""A task's data in memory at once, counted in copies of its rows × columns."""
BYTES_PER_TEAM_ROW = 40
"""A competition team's state per holdout row (measured 34 B with 400 to 1,200 natural analysts
at 10,000 rows: their features' view and predictions; boosting keeps its votes)."""
BYTES_PER_WAVE_ELEMENT = 48
"""Per prediction value of the wave being scored (its predictions, scores and losses; measured
30–40 B)."""
BYTES_PER_ACCOUNT_ROW = 40
"""An account's bound mechanism per public row (measured 8–35 B), plus :data:`BYTES_PER_ACCOUNT`."""
BYTES_PER_ACCOUNT = 4096
BYTES_PER_COMPETITION_SUBMISSION = 64
"""Per submission of a competition replication (records and transcripts, measured 0–45 B once
the teams' states dominate)."""
SECONDS_PER_SUBMISSION = 5e-5
SECONDS_PER_ELEMENT = 1e-8
"""A duel submission costs about 50 µs plus 10 ns per holdout value, the attack's work of making
it included (the built-in scenarios: 140 µs for Blum & Hardt's Fig. 3 at 12,000 holdout values,
117 µs for Chaibub Neto's Fig. 2 at 418, whose attack fits a regression per submission)."""
SECONDS_PER_RESAMPLED_VALUE = 2e-9
"""A loss value weighed by a mechanism's bootstrap resamples (:meth:`ladderlab.mechanism.Mechanism.resampled_values`;
measured 1.1 ns for bayesboot-ladder's B · n, 3 ns for sage-bootladderboot's 2 · bootstrap_n · n, at n = 1,000).
LadderBoot's b costs nothing measurable: its sampler draws a release in O(distinct losses) whatever b is
(75–84 µs a submission for b = 100 … 4,000 at n = 1,000)."""
SECONDS_PER_COMPETITION_SUBMISSION = 6e-5
SECONDS_PER_COMPETITION_ELEMENT = 2e-9
SECONDS_PER_COMPETITION_TEAM = 0.015
"""A competition submission costs about 60 µs plus 2 ns per holdout value, and a team about 15 ms
(it fits its first model): ``kaggle-like`` 43–86 µs a submission at 5,000 holdout values,
``kaggle-scale`` 63–84 µs at 10,000 (docs/competition-speed.md); ``kaggle-realistic``, whose
1,000 teams make about 19 submissions each, spends most of its time on the teams."""


def seconds_per_submission(n: int) -> float:
    """The typical CPU seconds of one duel submission on a holdout of ``n`` values."""
    return SECONDS_PER_SUBMISSION + SECONDS_PER_ELEMENT * n


class TooLarge(ValueError):
    """Work whose estimated memory does not fit in the memory available; the message has the estimate."""


@dataclass(frozen=True)
class Estimate:
    """A command's work: submissions over all replications (None: some part does not say),
    the most memory the processes hold at once, and the CPU seconds (typical, within a few times)."""

    what: str
    submissions: int | None
    peak_bytes: int
    cpu_seconds: float
    notes: list[str] = field(default_factory=list)
    """What the estimate leaves out (parts whose size is unknown)."""

    def __str__(self) -> str:
        return f"{self.what}: {self.details()}"

    def details(self) -> str:
        """The estimate in words: submissions, memory, CPU time, and what it leaves out."""
        parts = [] if self.submissions is None else [f"{_count(self.submissions)} submissions"]
        parts.append(f"about {_bytes(self.peak_bytes)} of memory")
        if self.cpu_seconds:
            parts.append(f"roughly {_duration(self.cpu_seconds)} of CPU")
        notes = f" ({'; '.join(self.notes)})" if self.notes else ""
        return ", ".join(parts) + notes


def available_memory() -> int:
    """Bytes this process may still take: ``MemAvailable`` of /proc/meminfo (else the physical
    memory), or less when an address-space limit (``ulimit -v``) leaves less."""
    available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    used = 0
    try:
        with open("/proc/meminfo") as meminfo:
            available = next((int(line.split()[1]) * 1024 for line in meminfo if line.startswith("MemAvailable:")),
                             available)
        with open("/proc/self/status") as status:
            used = next((int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:")), 0)
    except OSError:
        pass
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    return available if limit == resource.RLIM_INFINITY else max(0, min(available, limit - used))


def refuse_if_too_large(estimate: Estimate, force: bool = False, available: int | None = None,
                        hint: str = "") -> None:
    """Raise :class:`TooLarge` when ``estimate`` needs more memory than is ``available`` (default:
    :func:`available_memory`), unless ``force``. ``hint`` says which inputs make it smaller."""
    available = available_memory() if available is None else available
    if force or estimate.peak_bytes <= available:
        return
    smaller = f"; {hint}" if hint else ""
    raise TooLarge(f"{estimate.what} needs about {_bytes(estimate.peak_bytes)} of memory, more than the "
                   f"{_bytes(available)} available (estimated: {estimate.details()}){smaller}, or pass --force "
                   "to try anyway")


def data_bytes(task: Any) -> int | None:
    """Bytes of one replication's data of ``task`` from its declared shape (None: not declared)."""
    shape = task.data_shape()
    if shape is None:
        return None
    rows, columns = shape
    return DATA_COPIES * 8 * rows * max(columns, 1)


def split_bytes(split: Any) -> int:
    """Bytes of a drawn split's arrays (its public data and labels)."""
    public = split.public
    arrays = [public.X_train, public.y_train, public.X_holdout, split.y_holdout]
    return DATA_COPIES * sum(int(getattr(array, "nbytes", 0)) for array in arrays)


UNKNOWN_SUBMISSIONS = "no budget, and the attack does not say how many submissions it makes"
"""Why an estimate leaves a duel's submissions out (said once, however many cells it holds)."""


def duel_cells(label: str, n_holdout: int, data: int, submissions: int | None, replications: int,
               cells: int = 1, resampled_values: int = 0) -> Estimate:
    """``cells`` duel cells that share one transcript (:mod:`ladderlab.runs.sharing`; usually one):
    ``submissions`` per replication (None: unknown) on a holdout of ``n_holdout``, each weighing
    ``resampled_values`` bootstrap values in the mechanism."""
    per_replication = submissions or 0
    peak = (WORKING_BYTES + data
            + per_replication * (cells * replications * BYTES_PER_RECORD + BYTES_PER_LIVE_SUBMISSION))
    seconds = replications * per_replication * (seconds_per_submission(n_holdout)
                                                + SECONDS_PER_RESAMPLED_VALUE * resampled_values)
    notes = [] if submissions is not None else [UNKNOWN_SUBMISSIONS]
    return Estimate(label, None if submissions is None else replications * submissions, peak, seconds, notes)


def competition_cell(label: str, n_holdout: int, n_public: int, data: int, teams: int, accounts: int,
                     account_submissions: float, rules: Any, replications: int, resampled_values: int,
                     wave_elements: int) -> Estimate:
    """One competition cell (:mod:`ladderlab.competition.cell_kind`): ``teams`` teams with ``accounts``
    accounts in all, which make ``account_submissions`` submissions together under ``rules``, each
    submission weighing ``resampled_values`` bootstrap values in the mechanism, and waves of at most
    ``wave_elements`` prediction values scored at once."""
    submissions = round(account_submissions) + teams
    wave = min(accounts * rules.per_round * n_holdout, wave_elements)
    live = (WORKING_BYTES + data + teams * (BYTES_PER_TEAM_ROW * n_holdout + 8 * rules.rounds)
            + accounts * (BYTES_PER_ACCOUNT_ROW * n_public + BYTES_PER_ACCOUNT)
            + submissions * BYTES_PER_COMPETITION_SUBMISSION + wave * BYTES_PER_WAVE_ELEMENT)
    seconds = replications * (submissions * (SECONDS_PER_COMPETITION_SUBMISSION + SECONDS_PER_COMPETITION_ELEMENT * n_holdout
                                             + SECONDS_PER_RESAMPLED_VALUE * resampled_values)
                              + teams * SECONDS_PER_COMPETITION_TEAM)
    return Estimate(label, replications * submissions, live + replications * teams * 3 * 8, seconds)


SECONDS_PER_EXTRAPOLATION_FIT = 0.2
"""One classifier fitted and scored on one subset of classes of Zheng et al.'s mixture, with its
predictions (zheng-figure3: 408 s of CPU for 3 classifiers × 5 mixtures × 48 subset sizes × 2 conventions)."""


def extrapolation_cell(cell: Any, replications: int) -> Estimate:
    """One extrapolation cell (:class:`ladderlab.extrapolation.scenario.ExtrapolationCell`): a
    classifier fitted on every subset size of ``replications`` simulated mixtures."""
    design = cell.design
    points = design.classes * (design.training + design.testing)
    fits = len(design.subset_sizes(cell.smallest, cell.step)) * len(cell.conventions)
    peak = WORKING_BYTES + 8 * points * (design.dimension + design.classes)
    return Estimate(cell.label, None, peak, replications * fits * SECONDS_PER_EXTRAPOLATION_FIT)


def combined(what: str, parts: list[Estimate], jobs: int = 1) -> Estimate:
    """Parts that run one after another, or ``jobs`` at a time (-1: every core): submissions
    and CPU add up, the memory is that of the ``jobs`` largest parts together."""
    workers = (os.cpu_count() or 1) if jobs == -1 else jobs
    largest = sorted((part.peak_bytes for part in parts), reverse=True)[: max(workers, 1)]
    known = [part.submissions for part in parts if part.submissions is not None]
    noted: dict[str, list[str]] = {}
    for part in parts:
        for note in part.notes:
            noted.setdefault(note, []).append(part.what)
    notes = [f"{note}: {whats[0]}" if len(whats) == 1 else f"{note}: {len(whats)} cells, the first {whats[0]}"
             for note, whats in noted.items()]
    return Estimate(what, sum(known) if len(known) == len(parts) else (sum(known) or None),
                    sum(largest), sum(part.cpu_seconds for part in parts), notes)


def _count(value: float) -> str:
    for size, suffix in ((1e12, " T"), (1e9, " G"), (1e6, " M"), (1e3, " k")):
        if value >= size:
            return f"{value / size:.3g}{suffix}"
    return f"{value:g}"


def _bytes(value: float) -> str:
    for size, suffix in ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if value >= size:
            return f"{value / size:.3g} {suffix}"
    return f"{value:.0f} B"


def _duration(seconds: float) -> str:
    for size, unit in ((365.25 * 86400, "years"), (86400, "days"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.2g} s" if seconds >= 0.01 else "under a second"


def scenario_work(scenario: Any, jobs: int = 1, force: bool = False, finished: Collection[str] = ()) -> Estimate:
    """The work of every cell of ``scenario`` (:class:`ladderlab.runs.scenario.Scenario`) run ``jobs``
    at a time, but for the cells whose keys are ``finished`` (a resumed run directory's): the
    estimate is of what is left, and says how much is done. Each group of cells that play together
    is estimated by its kind (:meth:`ladderlab.runs.cell_kinds.CellKind.estimate`). A task whose
    declared data alone cannot fit is refused before it is drawn (:class:`TooLarge`, unless
    ``force``); the others are drawn once, at a fixed seed, to measure them and to ask each attack
    how many submissions it makes."""
    from ladderlab.runs.cell_kinds import kind_of
    from ladderlab.runs.scenario import cells, transcript_groups

    every = cells(scenario)
    left = [cell for cell in every if cell.key not in finished]
    parts = [kind_of(group[0]).estimate(group, scenario.replications, force) for group in transcript_groups(left)]
    done = f" (resumed, {len(every) - len(left)} of {len(every)} cells done: what is left)" if len(left) < len(every) else ""
    return combined(f"scenario {scenario.name}{done}", parts, jobs)


def task_data(task_id: str, params: dict[str, Any], force: bool = False) -> tuple[int, Any]:
    """The bytes of one replication's data of a task, and one split of it drawn at a fixed seed
    (:func:`ladderlab.runs.scenario.drawn_split`, cached). A task whose declared data cannot fit in
    memory is refused before it is drawn (:class:`TooLarge`, unless ``force``)."""
    import json

    from ladderlab.naming import plugin_label
    from ladderlab.registry import TASKS
    from ladderlab.runs.scenario import drawn_split

    declared = data_bytes(TASKS.make(task_id, **params))
    if declared is not None:
        refuse_if_too_large(Estimate(f"the data of task {plugin_label(task_id, params)}", None, declared, 0.0), force,
                            hint="give the task fewer rows or features")
    split = drawn_split(task_id, json.dumps(params, sort_keys=True))
    return (split_bytes(split) if declared is None else declared), split


KAPPA_COLUMNS = 401
"""Grid points of EXP's mixing measure (:data:`ladderlab.stats.extrapolation.KAPPA_GRID`)."""
BYTES_PER_CURVE_VALUE = 100
"""A predicted accuracy held as a float, in Python's lists and in the JSON or text printed."""
SECONDS_PER_HD_POINT = 1.5e-4
"""One quadrature of HD's π̄_t (measured 130–140 µs): a curve to K classes takes K of them."""
SECONDS_PER_HD_RESAMPLE = 1.5e-3
"""HD's prediction at K alone, as ``--bootstrap`` recomputes it on each resample (measured 1.5 ms at
K = 100 and at K = 1,000: its cost does not grow with K)."""
SECONDS_PER_EXP_CURVE = 1e-3
SECONDS_PER_EXP_CLASS = 6e-6
"""EXP's curve (or its prediction on a resample): about 1 ms plus 6 µs per class up to K (measured
1.7 ms at K = 100, 6.9 ms at K = 1,000, 500 test points)."""
SECONDS_PER_SOLVE = 0.035
SECONDS_PER_BIN_CLASS = 7e-8
"""CONS' or MPLE's convex program (cvxpy), per curve and per resample alike: about 35 ms of setup plus
70 ns per bin and class (measured 40–56 ms at K = 100 and 110–125 ms at K = 1,000, 1,000 bins)."""
SECONDS_PER_SIMULATED_ACCURACY = 2e-7
"""One classifier's correct count in one simulated test set of the dependent model (measured 180 ns)."""
SIMULATION_CHUNK_BYTES = 4_000_000 * 8 * 3
"""``simulate_best_of_m`` draws at most 4·10⁶ counts at a time."""


def extrapolation_work(k: int, K: int, methods: list[str], bins: int, points: int, bootstrap: int = 0) -> Estimate:
    """Predicting the accuracy at t = 1 … K classes from ``points`` test points on k classes, and
    with ``bootstrap`` = B the prediction at K again on each of B resamples of the test points
    (``ladderlab stats extrapolate --bootstrap B``): EXP, CONS and MPLE cost on a resample what their
    curve costs, HD one quadrature's worth (:data:`SECONDS_PER_HD_RESAMPLE`)."""
    peak = WORKING_BYTES + 8 * points + BYTES_PER_CURVE_VALUE * K * len(methods)
    seconds = 0.0
    if "exp" in methods:
        peak += 16 * KAPPA_COLUMNS * max(K - k, 0)
        seconds += (1 + bootstrap) * (SECONDS_PER_EXP_CURVE + SECONDS_PER_EXP_CLASS * K)
    if {"cons", "mple"} & set(methods):
        peak += 16 * bins * K + 48 * bins * k
        solves = sum(method in methods for method in ("cons", "mple"))
        seconds += solves * (1 + bootstrap) * (SECONDS_PER_SOLVE + SECONDS_PER_BIN_CLASS * bins * (K + k))
    if "hd" in methods:
        seconds += SECONDS_PER_HD_POINT * K + bootstrap * SECONDS_PER_HD_RESAMPLE
    if bootstrap:
        peak += 8 * bootstrap * points  # the resampled indices, drawn at once
    what = f"extrapolation to K = {K} classes" + (f" with {_count(bootstrap)} bootstrap resamples" if bootstrap else "")
    return Estimate(what, None, peak, seconds)


def best_of_m_work(m: int, n: int, distinct: int, best: float) -> Estimate:
    """The exact distribution of the best of ``m`` accuracies (``distinct`` different θ, the
    largest ``best``) on ``n`` test points: a window of error counts per distinct θ."""
    error_rate = 1.0 - best
    window = min(n + 1, 20 * (n * max(error_rate * (1 - error_rate), 0.0)) ** 0.5 + 10)
    return Estimate(f"the best of {m} accuracies on n = {n}", None, int(WORKING_BYTES + 64 * distinct * window), 0.0)


def simulation_work(m: int, repetitions: int, runs: int = 1) -> Estimate:
    """``runs`` simulations of ``repetitions`` test sets for ``m`` dependent classifiers."""
    peak = WORKING_BYTES + 16 * repetitions + min(SIMULATION_CHUNK_BYTES, 24 * m * repetitions)
    return Estimate(f"{_count(runs)} simulations of {_count(repetitions)} test sets of {_count(m)} classifiers" if runs > 1
                    else f"a simulation of {_count(repetitions)} test sets of {_count(m)} classifiers",
                    None, peak, runs * SECONDS_PER_SIMULATED_ACCURACY * m * repetitions)


def announce(estimate: Estimate, threshold: float = 5.0) -> None:
    """Say on standard error what a command will cost when it will take more than ``threshold``
    seconds of CPU (the runner logs every run's estimate)."""
    if estimate.cpu_seconds > threshold:
        print(wrapped(f"ladderlab: estimated {estimate}"), file=sys.stderr, flush=True)


def serve_bench_work(n: int, clients: list[int], settings: int, seconds: float, rows_per_client: int) -> Estimate:
    """``ladderlab dev bench-serve``: every client keeps its uploads (``rows_per_client`` predictions of
    ``n`` float64 values, about twice over as arrays and ``.npy`` bodies) and the server the
    challenge's data; each of the ``settings`` (databases × mechanisms) runs every client count
    for ``seconds`` after a warm-up of up to a second, on about two cores."""
    peak = WORKING_BYTES + 16 * rows_per_client * n * max(clients) + DATA_COPIES * 8 * n
    return Estimate(f"the server benchmark ({settings} setting(s) × {len(clients)} client count(s))", None, peak,
                    2 * settings * (len(clients) * seconds + min(1.0, seconds)))


BYTES_PER_CHALLENGE_ROW = 250
"""Per holdout row of a challenge: the peak while its labels file is read and split (measured 234 B with
``tracemalloc``; 76 B are kept)."""
CONCURRENT_UPLOADS = 8
"""Uploads a server reads at once, each up to the challenge's upload limit, parsed into float64 twice."""
BYTES_PER_FILE_BYTE = 10
"""Peak memory of pandas reading a CSV file, per byte of the file (measured 5.6 with ``tracemalloc`` on a labels
file of ids, labels and a split column)."""


def challenge_work(rows: int, public_rows: int, values_per_row: int, teams: int, max_upload_bytes: int) -> Estimate:
    """A served challenge: its rows, every team's bound mechanism (:data:`BYTES_PER_ACCOUNT_ROW`
    per public row and :data:`BYTES_PER_ACCOUNT`), and :data:`CONCURRENT_UPLOADS` uploads of the
    largest size with their parsed predictions."""
    uploads = CONCURRENT_UPLOADS * (max_upload_bytes + 16 * rows * values_per_row)
    peak = (WORKING_BYTES + BYTES_PER_CHALLENGE_ROW * rows + teams * (BYTES_PER_ACCOUNT + BYTES_PER_ACCOUNT_ROW * public_rows)
            + uploads)
    return Estimate(f"a challenge of {_count(rows)} holdout rows and {_count(teams)} teams", None, peak, 0.0)


def file_reading_work(path: Any) -> Estimate:
    """Reading a table of ``path``'s size with pandas."""
    return Estimate(f"reading {path}", None, WORKING_BYTES + BYTES_PER_FILE_BYTE * os.path.getsize(path), 0.0)


def ranking_certificate_work(teams: int, samples: int, replicates: int) -> Estimate:
    """``ladderlab stats rank-certificate``: the replicates × teams bootstrap scores, about five copies
    over (scores, risks, ranks, ties, quantiles), the teams × samples matrix thrice, and the count
    matrices drawn in chunks; CPU about one element cost per replicate, sample and team."""
    from ladderlab.engines.bootstrap import CHUNK_ELEMENTS

    peak = WORKING_BYTES + 40 * replicates * teams + 24 * teams * samples + 24 * CHUNK_ELEMENTS
    return Estimate(f"a ranking certificate of {_count(teams)} teams on {_count(samples)} samples with "
                    f"{_count(replicates)} bootstrap resamples", None, peak,
                    SECONDS_PER_ELEMENT * replicates * samples * (teams + 2))


def benchmark_work(sizes: list[int], measurements: int, seconds: float, batch: int = 1000) -> Estimate:
    """``ladderlab dev bench``: each measurement holds a batch of ``batch`` predictions of the largest
    size, three copies over (integers, floats, the mechanism's view), for about 6 × ``seconds``."""
    return Estimate("the benchmark", None, WORKING_BYTES + 24 * batch * max(sizes), 6 * seconds * measurements)


def add_force_option(parser: Any, doing: str = "run") -> None:
    """A command's ``--force``: do (``doing``) work the estimate refuses (:func:`refuse_if_too_large`)."""
    parser.add_argument("--force", action="store_true",
                        help=f"{doing} even when the estimated memory exceeds what is available (see docs/sizes.md)")


def check_work(work: Any, force: bool, hint: str) -> None:
    """Refuse work that cannot fit in memory (:func:`refuse_if_too_large`), and say what long
    work will cost (:func:`announce`)."""
    refuse_if_too_large(work, force, hint=hint)
    announce(work)
