"""``ladderlab dev bench-serve``: the server measured over loopback, against scoring in process.

For every database (SQLite; PostgreSQL in a throwaway cluster), mechanism and linking
setting (``[rules] link``: off, or on, where every submission is compared with every other
team's latest and submissions are serialised), a challenge of ``n`` random 0/1 labels (half
public) is served by a ``ladderlab serve`` child process without caps (with linking: caps
too large to bind, which the link rule needs) or rate limits; 1, 8 and 32 clients (threads, each one team
on its own keep-alive connection, as RemoteBoard sends: one ``.npy`` upload per
submission) submit random 0/1 predictions for a fixed time. Reported: submissions per
second, median and 99th-percentile latency, the server's CPU time per submission
(user + system, from ``/proc``), the machine's 1-minute load average at the end of the
setting (the clients share the cores with the server, and so may other work), and the bare cost of scoring the same uploads in
process (the mechanism bound through the same path, one submission at a time, CPU
time); the server's own overhead is the difference of the two CPU times.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ladderlab.runs.workload import add_force_option
from ladderlab.utils.terminal import wrapped

BENCH_MECHANISMS = {"ladder": {"eta": 0.01}, "ladder-boot": {"b": 100}}
ROWS_PER_CLIENT = 32
MAX_CLIENTS = 256
"""The most concurrent clients: each is a thread here and a keep-alive connection to the server."""


def add_subcommand(commands: argparse._SubParsersAction) -> None:
    """``ladderlab dev bench-serve``: parser and handler."""
    from ladderlab.runs.arguments import count, positive

    parser = commands.add_parser("bench-serve", help="submissions per second and latency of 'ladderlab serve' over "
                                 "loopback", description="Submissions per second and latency of the server over loopback.")
    parser.add_argument("--n", type=count(2), default=10_000, help="holdout size, the length of a prediction (default 10000)")
    parser.add_argument("--clients", type=count(1), nargs="+", default=[1, 8, 32], help="concurrent clients (default 1 8 32)")
    parser.add_argument("--mechanisms", nargs="+", default=list(BENCH_MECHANISMS), choices=list(BENCH_MECHANISMS),
                        help="mechanisms to serve (default: ladder ladder-boot)")
    parser.add_argument("--databases", nargs="+", default=["sqlite", "postgresql"], choices=["sqlite", "postgresql"],
                        help="where the log lives (default: both)")
    parser.add_argument("--linking", nargs="+", default=["off", "on"], choices=["off", "on"],
                        help="serve without and with [rules] link = true (default: both)")
    parser.add_argument("--seconds", type=positive, default=5.0, help="measured time per setting (default 5)")
    add_force_option(parser)
    parser.add_argument("--out", help="also write the results as a Markdown table to this file (docs/serve-bench.txt)")
    parser.set_defaults(handler=_run)


@dataclass(frozen=True)
class Measurement:
    database: str
    mechanism: str
    linking: bool
    clients: int
    submissions: int
    per_second: float
    p50_ms: float
    p99_ms: float
    server_cpu_ms: float
    bare_cpu_ms: float
    load_average: float

    @property
    def overhead_ms(self) -> float:
        return self.server_cpu_ms - self.bare_cpu_ms


def write_challenge(folder: Path, n: int, mechanism: str, teams: int, link: bool = False) -> Path:
    """A challenge of ``n`` random labels without caps or rate limits (``link``: linking, with a
    total cap that never binds)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    labels = pd.DataFrame({"id": np.arange(n), "label": rng.integers(0, 2, n), "split": np.where(np.arange(n) % 2, "public", "final")})
    labels.to_parquet(folder / "labels.parquet", index=False)
    params = ", ".join(f"{key} = {value}" for key, value in BENCH_MECHANISMS[mechanism].items())
    team_tables = "\n".join(f'[[teams]]\nname = "t{i:02d}"\n' for i in range(teams))
    path = folder / f"{mechanism}{'-linked' if link else ''}.toml"
    rules = "per_day = 1000000000" + (", total = 1000000000, link = true" if link else "")
    path.write_text(f"""schema_version = 1
name = "bench-{mechanism}"
scorer = "zero-one"
labels = {{ file = "labels.parquet" }}
split = {{ column = "split" }}
mechanism = {{ id = "{mechanism}", params = {{ {params} }} }}
rules = {{ {rules} }}
limits = {{ uploads_per_second = 1e9, burst = 1000000000 }}
{team_tables}""")
    return path


def uploads(n: int, seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    bodies = []
    for _ in range(ROWS_PER_CLIENT):
        buffer = io.BytesIO()
        np.save(buffer, rng.integers(0, 2, n).astype(np.float64), allow_pickle=False)
        bodies.append(buffer.getvalue())
    return bodies


def bare_cpu_ms(challenge_path: Path, n: int, count: int = 200) -> float:
    """CPU milliseconds per submission of scoring uploads in process, one at a time; under
    ``rules.link``, through the service's linking (:class:`~ladderlab.serve.linked.LinkedStates`)
    by every team in turn, so that each submission is compared with every other team's latest
    (random rows: nothing links)."""
    from datetime import date

    from ladderlab.certification import challenge as challenges
    from ladderlab.runs.duel import open_board
    from ladderlab.serve.linked import LinkedStates

    challenge = challenges.load(challenge_path)
    rows = [np.load(io.BytesIO(body)) for body in uploads(n, 0)]
    if challenge.spec.rules.link:
        teams = [team.name for team in challenge.spec.teams]
        states = LinkedStates(challenge, 0, teams)
        submit = lambda i: states.submit(teams[i % len(teams)], rows[i % len(rows)][None], date(2026, 1, 1))  # noqa: E731
    else:
        board = open_board(challenge.split, challenge.mechanism(), np.random.default_rng(0))
        submit = lambda i: board.submit(rows[i % len(rows)])  # noqa: E731
    warm = len(challenge.spec.teams) if challenge.spec.rules.link else 0
    for i in range(warm):  # every team's state bound before the clock starts, as the one board is
        submit(i)
    start = time.process_time()
    for i in range(warm, warm + count):
        submit(i)
    return (time.process_time() - start) / count * 1000


def drive(url: str, tokens: list[str], n: int, seconds: float) -> tuple[int, float, list[float]]:
    """Clients submitting for ``seconds``; the count, the elapsed time and every latency."""
    from ladderlab.serve.client import Connection

    latencies: list[list[float]] = [[] for _ in tokens]
    stop = threading.Event()
    errors: list[str] = []

    def client(index: int) -> None:
        connection = Connection(url, tokens[index])
        bodies = uploads(n, index + 1)
        headers = {"Content-Type": "application/x-npy"}
        i = 0
        while not stop.is_set():
            start = time.perf_counter()
            status, _, data = connection.request("POST", "/api/submissions", bodies[i % len(bodies)], headers)
            if status != 201:
                errors.append(f"{status} {data[:200]!r}")
                return
            latencies[index].append(time.perf_counter() - start)
            i += 1
        connection.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(tokens))]
    begin = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - begin
    if errors:
        raise RuntimeError(f"a client was refused: {errors[0]}")
    joined = [latency for per_client in latencies for latency in per_client]
    return len(joined), elapsed, joined


def measure(n: int, clients: list[int], mechanisms: list[str], databases: list[str], seconds: float,
            report: Callable[[Measurement], None] = lambda result: None,
            linking: tuple[bool, ...] = (False,)) -> list[Measurement]:
    """Every setting's measurement, each handed to ``report`` as soon as it is made."""
    from ladderlab.serve.launch import ServerProcess
    from ladderlab.serve.postgres import TemporaryPostgres

    results = []
    cluster = TemporaryPostgres().start(reaped=True) if "postgresql" in databases else None  # ends with this process
    try:
        with tempfile.TemporaryDirectory(prefix="ladderlab-bench-") as scratch:
            folder = Path(scratch)
            for database, mechanism, link in ((d, m, k) for d in databases for m in mechanisms for k in linking):
                path = write_challenge(folder, n, mechanism, max(clients), link)
                bare = bare_cpu_ms(path, n)
                name = f"{database}-{mechanism}{'-linked' if link else ''}"
                options = ["--uncertified", "--quiet-access", "--state", str(folder / name)]
                if database == "postgresql":
                    options += ["--database", cluster.database(f"bench_{name.replace('-', '_')}")]
                with ServerProcess(path, *options) as server:
                    tokens = [server.tokens[f"t{i:02d}"] for i in range(max(clients))]
                    drive(server.url, tokens[:1], n, min(1.0, seconds))  # warm up
                    for count in clients:
                        cpu = server.cpu_seconds()
                        made, elapsed, latencies = drive(server.url, tokens[:count], n, seconds)
                        cpu = server.cpu_seconds() - cpu
                        results.append(Measurement(
                            database, mechanism, link, count, made, made / elapsed,
                            float(np.percentile(latencies, 50) * 1000), float(np.percentile(latencies, 99) * 1000),
                            cpu / made * 1000, bare, os.getloadavg()[0]))
                        report(results[-1])
    finally:
        if cluster is not None:
            cluster.stop()
    return results


HEADER = (f"{'database':<11} {'mechanism':<12} {'linking':>7} {'clients':>7} {'submissions/s':>14} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'server CPU ms':>14} {'bare CPU ms':>12} {'overhead ms':>12} {'load':>6}")


def line(result: Measurement) -> str:
    return (f"{result.database:<11} {result.mechanism:<12} {'on' if result.linking else 'off':>7} {result.clients:>7} {result.per_second:>14.0f} "
            f"{result.p50_ms:>7.1f} {result.p99_ms:>7.1f} {result.server_cpu_ms:>14.2f} {result.bare_cpu_ms:>12.2f} "
            f"{result.overhead_ms:>12.2f} {result.load_average:>6.1f}")


def markdown(results: list[Measurement], n: int, seconds: float) -> str:
    """The results as a Markdown table, with what was measured."""
    import datetime

    lines = [f"Measured {datetime.date.today().isoformat()} on {os.cpu_count()} cores: n = {n}, {seconds:g} s per "
             f"setting; {_parameters(sorted({result.mechanism for result in results}))}.", "",
             "| database | mechanism | linking | clients | submissions/s | p50 ms | p99 ms | server CPU ms | bare CPU ms "
             "| overhead ms | load |", "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    lines += [f"| {r.database} | {r.mechanism} | {'on' if r.linking else 'off'} | {r.clients} | {r.per_second:.0f} | {r.p50_ms:.1f} | {r.p99_ms:.1f} | "
              f"{r.server_cpu_ms:.2f} | {r.bare_cpu_ms:.2f} | {r.overhead_ms:.2f} | {r.load_average:.1f} |" for r in results]
    return "\n".join(lines) + "\n"


def _parameters(mechanisms: list[str]) -> str:
    return "; ".join(f"{key} {', '.join(f'{k}={v}' for k, v in BENCH_MECHANISMS[key].items())}" for key in mechanisms)


def _run(args: argparse.Namespace) -> int:
    from ladderlab.serve import require_server_extra

    require_server_extra()
    from ladderlab.runs.arguments import output_file
    from ladderlab.runs.workload import check_work, serve_bench_work

    if max(args.clients) > MAX_CLIENTS:
        raise ValueError(f"--clients {max(args.clients)}: at most {MAX_CLIENTS} (each client is a thread and a "
                         "connection to the server)")
    if args.out:
        output_file("--out", args.out)
    check_work(serve_bench_work(args.n, args.clients, len(args.databases) * len(args.mechanisms) * len(args.linking),
                                args.seconds,
                                ROWS_PER_CLIENT),
               args.force, "a smaller --n or fewer --clients needs less")
    if "postgresql" in args.databases:
        from ladderlab.serve.postgres import unavailable

        reason = unavailable()
        if reason:
            raise ValueError(f"--databases postgresql: {reason}")
    print(wrapped(f"n = {args.n} predictions per submission (0/1 loss, half public), {args.seconds:g} s per setting; "
                  f"{_parameters(args.mechanisms)}"))
    print(wrapped("latency: one upload's round trip; CPU per submission: the server process's user + system time; "
                  "bare: scoring the same uploads in process; overhead = server − bare; load: the 1-minute load average"))
    print(HEADER)
    from ladderlab.utils.progress import progress_bar

    settings = len(args.databases) * len(args.mechanisms) * len(args.linking) * len(args.clients)
    with progress_bar(total=settings, desc="serve bench", unit="setting") as bar:
        def report(result: Measurement) -> None:
            bar.write(line(result))
            bar.update()

        results = measure(args.n, args.clients, args.mechanisms, args.databases, args.seconds, report,
                          tuple(choice == "on" for choice in args.linking))
    if args.out:
        from ladderlab.runs.rundir import write_atomically

        write_atomically(Path(args.out), markdown(results, args.n, args.seconds).encode())
        print(f"results written to {args.out}", file=sys.stderr)
    return 0
