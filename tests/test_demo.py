"""ladderlab demo: its conclusions are computed from its own numbers, with an exact probability."""

import itertools
import re
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ladderlab.cli.commands import main
from ladderlab.cli.demo import LEVEL, optimism_probability


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 9), st.integers(1, 12), st.floats(-1.0, 1.0))
def test_the_optimism_probability_is_the_exact_binomial_tail(n, m, optimism):
    exact = sum(comb(n, x) * comb(m, y) for x, y in itertools.product(range(n + 1), range(m + 1))
                if y / m - x / n >= optimism - 1e-12) / 2 ** (n + m)
    assert optimism_probability(optimism, n, m) == pytest.approx(exact, abs=1e-12)


def test_the_demo_concludes_from_its_own_numbers(capsys):
    assert main(["demo", "--k", "200", "--n", "1000"]) == 0
    out = capsys.readouterr().out
    table = dict(re.findall(r"^(kaggle|ladder-free)\s+(\d\.\d{4}\s+\d\.\d{4})", out, re.M))
    for name, scores in table.items():
        released, final = map(float, scores.split())
        line = next(line for line in out.replace("\n  ", " ").splitlines() if line.startswith(f"{name}:"))
        gap, probability = re.search(r"loss (\d\.\d{4}) below .* probability ([\d.e+-]+):", line).groups()
        assert float(gap) == pytest.approx(final - released, abs=1.5e-4)
        assert float(probability) == pytest.approx(optimism_probability(float(gap), 1000, 2000), rel=0.05)
        assert line.endswith("overfitted.") == (float(probability) < LEVEL)
    assert len(table) == 2 and "the Ladder's is not" not in out
