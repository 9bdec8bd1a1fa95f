"""Every built-in mechanism's parameter has a meaningful range, in units of the loss bound B where it
is a score (issue 45: ``eta = 1e300`` was served, and released 0.0 for every upload), refused by
name and range in one place (``Plugin.validate_params``), whichever way the value came: the Python
API, a scenario file, ``certify`` and a challenge file (tests/test_hostile_serve_inputs.py)."""

from __future__ import annotations

import math

import pytest

from ladderlab.cli.commands import main
from ladderlab.params import Interval, ParameterError
from ladderlab.registry import MECHANISMS
from ladderlab.runs.scenario import ScenarioError, load
from tests.helpers import assert_one_line_error

BUILT_IN = sorted(name for name in MECHANISMS.ids() if ":" not in name and not name.endswith(".py"))


def _numeric_constraints() -> list[tuple[str, str, Interval]]:
    found = []
    for mechanism in BUILT_IN:
        for name, constraints in MECHANISMS.get(mechanism)._parameter_constraints.items():
            found += [(mechanism, name, constraint) for constraint in constraints if isinstance(constraint, Interval)]
    return found


def test_every_numeric_parameter_of_every_built_in_mechanism_is_bounded_above():
    unbounded = [f"{mechanism}.{name}" for mechanism, name, constraint in _numeric_constraints()
                 if constraint.high is None]
    assert _numeric_constraints() and unbounded == []


@pytest.mark.parametrize(("mechanism", "name", "constraint"), _numeric_constraints(),
                         ids=lambda value: value if isinstance(value, str) else "")
def test_a_value_past_the_range_is_refused_by_name_and_range_when_the_mechanism_is_checked(mechanism, name, constraint):
    beyond = constraint.high * 10 + 1 if constraint.type is float else int(constraint.high) + 1
    plugin = MECHANISMS.make(mechanism, **{name: beyond})
    with pytest.raises(ParameterError) as refused:
        plugin.validate_params()
    message = str(refused.value)
    assert "\n" not in message and repr(name) in message and constraint.describe() in message, message


@pytest.mark.parametrize(("mechanism", "params", "words"), [
    ("ladder", {"eta": 1e300}, ["'eta'", "1e+300", "(0, 1]"]),
    ("kaggle", {"alpha": 2.0}, ["'alpha'", "2.0", "(0, 1]"]),
    ("noisy", {"scale": 3.0}, ["'scale'", "3.0", "[0, 1]"]),
    ("ladder-boot", {"b": 10**9}, ["'b'", "1000000000"]),
])
def test_the_python_api_refuses_before_the_mechanism_sees_a_holdout(mechanism, params, words):
    import numpy as np

    plugin = MECHANISMS.make(mechanism, **params)
    with pytest.raises(ParameterError) as refused:
        plugin.bind(np.zeros(20), "zero-one", np.random.default_rng(0), classes=[0, 1])
    assert all(word in str(refused.value) for word in words), str(refused.value)


def test_a_scenario_file_refuses_it_naming_the_file_and_the_key(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text('schema_version = 1\nname = "s"\nreplications = 1\n[[matrix]]\n'
                        'tasks = [{ id = "random-labels", params = { n_public = 50, n_holdout = 150 } }]\n'
                        'mechanisms = [{ id = "ladder", params = { eta = [0.01, 40.0] } }]\n'
                        'attacks = [{ id = "boosting" }]\n')
    with pytest.raises(ScenarioError) as refused:
        load(scenario)
    message = str(refused.value)
    assert "\n" not in message and "s.toml" in message and "eta" in message and "40.0" in message
    assert "(0, 1]" in message


def test_certify_refuses_it_in_one_line(capsys):
    code = main(["certify", "ladder", "--param", "eta=7", "--budgets", "10"])
    assert_one_line_error(capsys, code, ["eta", "7", "(0, 1]"])


def test_the_bounds_keep_every_documented_default_and_search_value():
    for mechanism in BUILT_IN:
        cls = MECHANISMS.get(mechanism)
        MECHANISMS.make(mechanism).validate_params()
        for name, values in cls._search_space.items():
            for value in values:
                MECHANISMS.make(mechanism, **{name: value}).validate_params()
    assert math.isfinite(1.0)
