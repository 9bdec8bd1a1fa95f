import os

import pytest

from hypothesis import settings

# CI=true makes Hypothesis load its built-in derandomised "ci" profile (docs/decisions.md#hypothesis-seeds).
settings.register_profile("dev", deadline=None, max_examples=40)
if not os.environ.get("CI"):
    settings.load_profile("dev")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """ladderlab certify keeps its batteries in the user's cache: the tests keep theirs apart."""
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if previous is None:
        del os.environ["XDG_CACHE_HOME"]
    else:
        os.environ["XDG_CACHE_HOME"] = previous
