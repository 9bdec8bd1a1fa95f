import itertools
import os

import pytest
from hypothesis import settings

pytest_plugins = ["tests.cpu_budget"]

# CI=true makes Hypothesis load its built-in derandomised "ci" profile (docs/decisions.md#hypothesis-seeds).
settings.register_profile("dev", deadline=None, max_examples=40)
if not os.environ.get("CI"):
    settings.load_profile("dev")


_databases = itertools.count()


@pytest.fixture(scope="session")
def postgres_cluster(tmp_path_factory):
    """A PostgreSQL cluster in a temporary folder, one for all the test processes of the run
    (Debian's server, run as the postgres user when the tests run as root); skipped, saying
    why, where it cannot start."""
    from ladderlab.serve.postgres import unavailable
    from tests.serve_helpers import shared_postgres

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    run_folder = tmp_path_factory.getbasetemp()
    with shared_postgres(run_folder.parent if os.environ.get("PYTEST_XDIST_WORKER") else run_folder) as cluster:
        yield cluster


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    """The URL of a new, empty log database: SQLite in the test's folder, or PostgreSQL."""
    if request.param == "sqlite":
        from ladderlab.serve.storage import sqlite_url

        return sqlite_url(tmp_path / "log.sqlite")
    cluster = request.getfixturevalue("postgres_cluster")
    return cluster.database(f"test_{os.getpid()}_{next(_databases)}")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """ladderlab certify keeps its batteries in the user's cache: the tests keep theirs apart.

    Matplotlib's font cache stays where it was (MPLCONFIGDIR): in a cache folder of their own,
    the commands the tests start would build it again, which costs about half a second of CPU
    and, on a loaded machine, prints "Matplotlib is building the font cache" to their stderr."""
    import matplotlib

    previous = {name: os.environ.get(name) for name in ("XDG_CACHE_HOME", "MPLCONFIGDIR")}
    os.environ.setdefault("MPLCONFIGDIR", matplotlib.get_cachedir())
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    for name, value in previous.items():
        if value is None:
            del os.environ[name]
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def quickstart_run(tmp_path_factory):
    """The built-in quickstart scenario, run once (about 4 s of CPU), read back as a report's Run."""
    from ladderlab.reports import report
    from ladderlab.runs import runner

    out = tmp_path_factory.mktemp("quickstart") / "run"
    runner.run("quickstart", out, progress=False)
    return report.load_run(out)
