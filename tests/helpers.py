"""Shared test fixtures: labels and streams of submissions that sometimes improve, small scenarios, and a
headless browser."""

import math
import shutil
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from ladderlab.registry import MECHANISMS

FAST_PARAMS = {
    "ladder-boot": {"b": 20},
    "bayesboot-ladder": {"B": 50},
    "bayesboot-ladderboot": {"B": 50, "b": 20},
    "sage-bootladderboot": {"bootstrap_n": 50},
}


def improving_stream(rng: np.random.Generator, labels: np.ndarray, m: int) -> np.ndarray:
    """m random 0/1 submissions, each copying a random share of the true labels.

    Some submissions are much better than others, so every Ladder accepts several.
    """
    n = labels.size
    share = rng.uniform(0, 0.6, m)[:, None]
    copy = rng.uniform(size=(m, n)) < share
    return np.where(copy, labels, rng.integers(0, 2, (m, n))).astype(float)


def bound(mechanism_id: str, labels: np.ndarray, seed: int, scorer: str = "zero-one", **params):
    """A fresh mechanism with the test's fast parameters, bound with a seeded Generator."""
    params = {**FAST_PARAMS.get(mechanism_id, {}), **params}
    return MECHANISMS.make(mechanism_id, **params).bind(labels, scorer, np.random.default_rng(seed))


SMALL = """
schema_version = 1
name = "small"
replications = 3
seed = 7

[[matrix]]
tasks = [{ id = "random-labels", params = { n_public = 200, n_holdout = 600 } }]
mechanisms = [MECHANISMS]
attacks = [{ id = "boosting", params = { k = [50, 100], variant = "kaggle" } }]
"""


def scenario_file(tmp_path, mechanisms='{ id = "kaggle" }, { id = "ladder-boot", params = { b = 5 } }', name="small.toml", text=SMALL):
    path = tmp_path / name
    path.write_text(text.replace("MECHANISMS", mechanisms))
    return path


TINY_COMPETITION = """
[[competition]]
tasks = [{ id = "latent-classification", params = { n_train = 300, n_public = 200, n_holdout = 600, n_features = 6 } }]
mechanisms = [{ id = "kaggle" }, { id = "ladder", params = { eta = [0.01, 0.02] } }]
rules = [{ rounds = 3, per_round = 2, public_fraction = 0.4, selection = 2 }]

[[competition.mixes]]
name = "mix"
teams = [
  { policy = "progressive-analyst", count = 6, params = { view = 3, batch = 2, lam = [0.5, 0.9] } },
  { policy = "boosting", count = 1, accounts = 2, params = { k = 20 } },
]
"""
"""A competition table of three cells, 13 teams, 3 days: seconds to run."""


FAILING_PLUGIN = '''
from ladderlab.mechanisms.kaggle import Kaggle


class Failing(Kaggle):
    """Kaggle that fails at every release: a run-time failure that no check before the run can see."""

    id = "failing"

    def _release(self, P):
        raise RuntimeError("the release failed on purpose")
'''


def failing_mechanism(tmp_path) -> str:
    """A scenario entry for a local mechanism plugin whose every replication fails."""
    path = tmp_path / "failing_plugin.py"
    path.write_text(FAILING_PLUGIN)
    return f'{{ id = "{path}:Failing" }}'


VERSION_1_CERTIFICATE = Path(__file__).parent / "data" / "certificate_v1_breast_cancer.json"
"""The format fixture of a version-1 certificate (one honest entry, no ``certificate_version``): the
breast-cancer example's certificate as an older battery wrote it, safe budget 30, its honest
participant improving(days=30) replayed 20 times. The example itself has been certified again since."""

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def launch_chromium(playwright):
    """Debian's chromium, headless, without sandbox (the tests run as root), network chatter or GPU."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM,
        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--no-first-run", "--disable-quic"],
    )


def files_in(folder) -> dict[str, bytes]:
    """Every file under ``folder`` and its bytes: what a refused command must leave as it was."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def assert_one_line_error(capsys, code: int, words: list[str]) -> None:
    """The command line refused its input: exit code 2, one line ``ladderlab: error: …`` on
    standard error holding every word, and no traceback."""
    captured = capsys.readouterr()
    assert code == 2, captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ladderlab: error: "), captured.err
    assert "Traceback" not in captured.err + captured.out
    for word in words:
        assert word in lines[0], (word, lines[0])


@contextmanager
def browser_page(sync_api, width: int = 1400, height: int = 1000):
    """A page of :func:`launch_chromium`'s browser, with the console's errors and warnings and every
    requested URL collected in ``page.problems`` and ``page.requests``."""
    with sync_api.sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.problems, page.requests = [], []
            page.on("console", lambda message: page.problems.append(message.text)
                    if message.type in ("error", "warning") else None)
            page.on("pageerror", lambda error: page.problems.append(str(error)))
            page.on("request", lambda request: page.requests.append(request.url))
            yield page
        finally:
            browser.close()


def ks_bound(size: int, delta: float = 1e-9) -> float:
    """Two samples of ``size`` draws from one distribution differ in Kolmogorov–Smirnov distance by
    more than this with probability ≤ δ: DKW (Massart) on each sample and the triangle inequality."""
    return math.sqrt(2 * math.log(4 / delta) / size)


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The largest gap between the two samples' empirical CDFs."""
    grid = np.union1d(a, b)
    return float(np.max(np.abs(np.searchsorted(np.sort(a), grid, side="right") / a.size
                               - np.searchsorted(np.sort(b), grid, side="right") / b.size)))


def clopper_pearson(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """The exact (Clopper–Pearson) two-sided interval of a binomial proportion at ``confidence``;
    each end alone is a one-sided bound at confidence (1 + confidence) / 2."""
    interval = stats.binomtest(successes, trials).proportion_ci(confidence_level=confidence, method="exact")
    return float(interval.low), float(interval.high)


# A submissions log in ladderlab's schema (tests of replay and its progress bar).

START = pd.Timestamp("2024-01-01", tz="UTC")


def ladderlab_log(rows: list[tuple[str, float, float]], **extra: list) -> pd.DataFrame:
    """A log in the documented schema from (team, public, private) rows, one hour apart."""
    teams = [team for team, _, _ in rows]
    return pd.DataFrame({
        "team": teams,
        "submission_id": np.arange(101, 101 + len(rows)),
        "team_sequence": pd.Series(teams).groupby(teams).cumcount().to_numpy() + 1,
        "submitted_at": [START + pd.Timedelta(hours=h) for h in range(len(rows))],
        "public_score": [public for _, public, _ in rows],
        "private_score": [private for _, _, private in rows],
        **extra,
    })


# Four teams, a loss (smaller is better). A and D both reach a public 0.20; A first.
FOUR_TEAMS = [
    ("A", 0.30, 0.32),
    ("B", 0.22, 0.20),
    ("A", 0.20, 0.25),
    ("C", 0.35, 0.30),
    ("D", 0.20, 0.40),
    ("A", 0.25, 0.21),
    ("B", 0.28, 0.19),
]


def write_csv(tmp_path: Path, frame: pd.DataFrame, name: str = "log.csv") -> Path:
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path
