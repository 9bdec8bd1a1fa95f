"""Progress bars: shown on request or on a terminal, never in a pipe or a log."""

import numpy as np

from ladderlab.progress import progress_bar
from ladderlab.stats import estimate_sota

SCORES = np.array([0.80, 0.79, 0.785, 0.78, 0.77, 0.76])


def test_a_bar_is_drawn_on_standard_error_when_asked_and_not_when_not_a_terminal(capsys):
    assert list(progress_bar(range(3), progress=True, desc="work")) == [0, 1, 2]
    drawn = capsys.readouterr()
    assert "work" in drawn.err and "3/3" in drawn.err and drawn.out == ""
    assert list(progress_bar(range(3), desc="work")) == [0, 1, 2]  # pytest's stderr is no terminal
    assert capsys.readouterr().err == ""


def test_the_state_of_the_art_bootstrap_shows_its_resamples_and_the_bar_changes_no_result(capsys):
    quiet = estimate_sota(SCORES, 2000, np.random.default_rng(3), repetitions=50, bootstrap=4)
    assert capsys.readouterr().err == ""
    shown = estimate_sota(SCORES, 2000, np.random.default_rng(3), repetitions=50, bootstrap=4, progress=True)
    assert "bootstrap" in capsys.readouterr().err
    assert shown == quiet
