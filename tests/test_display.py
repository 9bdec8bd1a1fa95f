"""Released and final scores as people see them: at the release grid's precision, else four
significant digits; the API and the log keep every bit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.registry import MECHANISMS
from ladderlab.runs.display import (
    SIGNIFICANT_DIGITS,
    described_release_step,
    grid_decimals,
    release_step,
    score_text,
)
from ladderlab.serve.storage import sqlite_url
from tests.serve_helpers import (
    ThreadServer,
    open_service,
    request,
    upload,
    write_challenge,
)

LOG_2 = math.log(2)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_multiples_of_the_release_grid_keep_apart_and_read_back(seed):
    """Any two different multiples of the step get different texts (what too few decimals break),
    and each text is its release rounded to the decimals shown (what too many would not need)."""
    rng = np.random.default_rng(seed)
    step = float(10 ** rng.uniform(-6, 0.5))
    first, second = rng.integers(-10**6, 10**6, 2)
    second = first + 1 if rng.random() < 0.5 else second  # neighbours, the hardest pair
    texts = [score_text(float(k * step), step) for k in (first, second)]
    assert (texts[0] == texts[1]) == (first == second)
    decimals = grid_decimals(step)
    assert 10.0 ** -decimals <= step * (1 + 1e-9) and (decimals == 0 or 10.0 ** -(decimals - 1) > step)
    assert abs(float(texts[0]) - first * step) <= 0.5 * 10.0 ** -decimals * (1 + 1e-9) + 1e-12 * abs(first * step)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_score_without_a_grid_shows_four_significant_digits(seed):
    rng = np.random.default_rng(seed)
    value = float(rng.choice([-1, 1]) * 10 ** rng.uniform(-8, 9))
    text = score_text(value)
    digits = text.split("e")[0].lstrip("-").replace(".", "").lstrip("0")
    assert len(digits) == SIGNIFICANT_DIGITS or (len(digits) > SIGNIFICANT_DIGITS and "." not in text)
    assert math.isclose(float(text), value, rel_tol=0.5 * 10.0 ** (1 - SIGNIFICANT_DIGITS))


def test_a_log_loss_and_missing_values_read_short():
    assert (score_text(LOG_2), score_text(None), score_text(float("nan")), score_text(0.0)) == ("0.6931", "–", "–", "0")
    assert score_text(0.13, 0.01) == "0.13" and score_text(0.135, 1e-5) == "0.13500"


def test_the_grid_is_the_mechanisms_parameter_in_units_of_the_loss_bound():
    bound = math.log(0.99 / 0.01)  # the log loss within [0.01, 0.99]: B = log(99)
    ladder = MECHANISMS.make("ladder", eta=0.01)
    assert release_step(ladder, "log-loss", (0.01, 0.99), 2) == pytest.approx(0.01 * bound)
    assert release_step(ladder, "zero-one", None, 2) == 0.01
    assert release_step(MECHANISMS.make("noisy"), "zero-one") is None
    assert release_step(MECHANISMS.make("noisy", rounding=0.02), "zero-one") == 0.02
    assert release_step(MECHANISMS.make("full-disclosure"), "log-loss", (0.01, 0.99), 2) is None
    kaggle = release_step(MECHANISMS.make("kaggle"), "zero-one")
    assert kaggle == 1e-5 and score_text(0.12345, kaggle) == "0.12345"  # five decimals, as Kaggle shows
    assert release_step(MECHANISMS.make("kaggle", alpha=0.01), "log-loss", (0.01, 0.99), 2) == pytest.approx(0.01 * bound)
    described = {"mechanism": {"id": "no-such-mechanism", "params": {}}, "scorer": "zero-one"}
    assert described_release_step(described) is None


@pytest.mark.parametrize("mechanism, params, shown", [
    ("full-disclosure", "", "0.6931"),  # no grid: four significant digits of log 2
    ("ladder", "eta = 0.01", "0.69"),  # multiples of 0.01·log(99) ≈ 0.046: two decimals tell them apart
    ("kaggle", "", "0.69313"),  # multiples of 10⁻⁵·log(99) ≈ 4.6·10⁻⁵: five decimals
])
def test_the_page_shows_a_log_loss_release_short_and_the_api_every_bit(tmp_path, mechanism, params, shown):
    path = write_challenge(tmp_path, scorer="log-loss", mechanism=mechanism, params=params,
                           extra="prediction_range = [0.01, 0.99]")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    with ThreadServer(service) as server:
        status, answer = upload(server.url, tokens["alpha"], np.full((1, 400), 0.5))
        _, _, page = request(server.url, "", "GET", "/")
        _, _, board = request(server.url, "", "GET", "/api/leaderboard")
    service.storage.close()
    released = answer["submissions"][0]["released"]
    assert status == 201 and board["teams"][0]["released"] == released  # JSON: the float itself
    text = page.decode() if isinstance(page, bytes) else page
    assert f">{shown}<" in text and repr(released) not in text
