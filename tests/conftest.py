import os

import pytest
from hypothesis import settings

# CI=true makes Hypothesis load its built-in derandomised "ci" profile (docs/decisions.md#hypothesis-seeds).
settings.register_profile("dev", deadline=None, max_examples=40)
if not os.environ.get("CI"):
    settings.load_profile("dev")


@pytest.fixture(scope="session")
def quickstart_run(tmp_path_factory):
    """The built-in quickstart scenario, run once (about 4 s of CPU), read back as a report's Run."""
    from ladderlab import report, runner

    out = tmp_path_factory.mktemp("quickstart") / "run"
    runner.run("quickstart", out, progress=False)
    return report.load_run(out)
