"""The ``ladderlab serve`` command.

``ladderlab serve CHALLENGE.toml`` (or ``--demo``) starts the server;
``ladderlab serve verify CHALLENGE.toml`` checks the log's chain and replays it, links included;
``ladderlab serve links CHALLENGE.toml`` lists the linked groups of a verified log;
``ladderlab serve attack URL --token T --attack SPEC`` plays an attack plugin against a running server.
(The server's benchmark is a maintainers' command: ``ladderlab dev bench-serve``, :mod:`ladderlab.dev.serve_bench`.)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ladderlab.runs.display import described_release_step, score_text
from ladderlab.runs.workload import add_force_option
from ladderlab.utils.atomic import write_atomically
from ladderlab.utils.terminal import wrapped

SUBCOMMANDS = ("verify", "links", "attack")
DATABASE_RECORD = "database"
"""The file of the state folder naming the log's database, when a start gave ``--database``."""


def _dispatch(args: argparse.Namespace) -> int:
    """``serve verify …``, ``serve links …`` and ``serve attack …`` go to their own parsers; any
    other first word is the challenge file of ``serve`` itself, and what follows it ``serve``'s options."""
    if args.target in SUBCOMMANDS:
        sub_args = args.subcommands[args.target].parse_args(args.rest)
        return sub_args.handler(sub_args)
    target = args.target
    if args.rest:
        args = args.serve_parser.parse_args(args.rest, args)
        if args.target is not None:
            raise ValueError(f"unexpected argument {args.target!r} after the challenge file {target!r}")
        args.target = target
    return _serve(args)


def _add_state_options(parser: argparse.ArgumentParser, creates_secret: bool) -> None:
    parser.add_argument("--state", help="folder of the secret and the SQLite log (default: <challenge folder>/<name>-state)")
    parser.add_argument("--database", help="SQLAlchemy URL of the log, e.g. postgresql+psycopg://user@host/db "
                                           "(default: SQLite in the state folder)")
    add_force_option(parser, "load the challenge")
    made = "created with 128 random bits if missing" if creates_secret else "the one the log was started with"
    parser.add_argument("--secret", help=f"file of the secret seed of the mechanisms' streams (default: <state>/secret; "
                                         f"{made})")


def register(commands: argparse._SubParsersAction) -> None:
    """``ladderlab serve``, with ``verify``, ``links`` and ``attack``."""
    from ladderlab.runs.arguments import count, port

    serve = commands.add_parser(
        "serve", help="run a challenge's certified mechanism as a leaderboard service (see docs/serve.md)",
        description="Start the leaderboard server of CHALLENGE (a challenge TOML file), or of the demo challenge "
                    "(--demo). 'ladderlab serve verify CHALLENGE' checks the log; 'ladderlab serve links CHALLENGE' "
                    "lists its linked accounts; 'ladderlab serve attack URL' plays an attack against a running server.")
    serve.add_argument("target", nargs="?", metavar="CHALLENGE | verify | links | attack",
                       help="the challenge file, or a subcommand (see 'ladderlab serve verify --help')")
    serve.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    serve.add_argument("--demo", action="store_true", help="serve a demo challenge on built-in data (written to --state, "
                                                           "default ./ladderlab-demo)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=port, default=8000, help="port (default 8000; 0: any free port)")
    _add_state_options(serve, creates_secret=True)
    serve.add_argument("--uncertified", action="store_true",
                       help="serve even where the challenge's certificate does not cover its mechanism, parameters, "
                            "holdout size or per-team budget (each is named)")
    serve.add_argument("--reissue", metavar="TEAM", help="print a new token for TEAM (or 'organiser') and exit; "
                                                         "the old token stops working")
    serve.add_argument("--tokens", metavar="FILE",
                       help="write the tokens this start issues to FILE (CSV team,token, readable by you alone) "
                            "instead of printing them; refused if FILE exists, which may hold tokens shown once")
    serve.add_argument("--quiet-access", action="store_true", help="no access log lines")
    from ladderlab.serve.limits import add_arguments as add_limit_arguments

    add_limit_arguments(serve)
    serve.add_argument("--full-sync", action="store_true",
                       help="flush the SQLite log to disk at every commit, so that a submission survives a crash of the "
                            "machine, not only of the server (costs a disk flush per submission)")
    verify = type(serve)(prog="ladderlab serve verify",
                         description="Check the log's hash chain and replay every release bit for bit.")
    verify.add_argument("challenge_file", metavar="CHALLENGE", help="the challenge file the log belongs to")
    _add_state_options(verify, creates_secret=False)
    verify.add_argument("--anchor", type=anchor, metavar="ID:HASH",
                        help="an entry's id and hash as an earlier verify printed them: refuse a log whose entry ID "
                             "is gone or has another hash (entries cut from its end, or the log rewritten since)")
    verify.set_defaults(handler=_verify)
    links = type(serve)(prog="ladderlab serve links",
                        description="The linked groups of a log (accounts, first link, the submission pairs and the "
                                    "differing holdout rows against the threshold), after verifying it as verify does.")
    links.add_argument("challenge_file", metavar="CHALLENGE", help="the challenge file the log belongs to")
    _add_state_options(links, creates_secret=False)
    links.add_argument("--out", metavar="FILE", help="also write them to FILE: JSON, or Parquet if it ends in .parquet")
    links.set_defaults(handler=_links, anchor=None)
    attack = type(serve)(prog="ladderlab serve attack",
                         description="Play an attack plugin against a running 'ladderlab serve' (red-team a live "
                                     "leaderboard): the attack holds a RemoteBoard and the challenge's public data, "
                                     "nothing else.")
    attack.add_argument("url", help="the server, e.g. http://127.0.0.1:8000")
    attack.add_argument("--token", required=True, help="the team's token")
    attack.add_argument("--attack", required=True, help="an attack id with parameters, e.g. 'hill-climbing(block=32)'")
    attack.add_argument("--budget", type=count(1), help="the most submissions to make (default: what the caps allow)")
    attack.add_argument("--seed", type=count(0), default=0, help="root seed of the attacker's coins (default 0)")
    attack.add_argument("--final-out", metavar="FILE", help="write the attack's final prediction here (CSV by id)")
    attack.add_argument("--submit-final", action="store_true", help="submit the final prediction too (counts against the caps)")
    attack.set_defaults(handler=_attack)
    serve.set_defaults(handler=_dispatch, serve_parser=serve,
                       subcommands={"verify": verify, "links": links, "attack": attack})


def _state(args: argparse.Namespace, challenge: Any, create: bool = True) -> tuple[Path, str, int]:
    """The state folder, the log's URL and the secret seed; ``create=False`` (verifying a log)
    creates nothing and refuses a state that does not exist."""
    from sqlalchemy import make_url

    from ladderlab.seeding import read_secret_seed
    from ladderlab.serve.storage import checked_url, sqlite_url

    state = Path(args.state) if args.state else challenge.path.parent / f"{challenge.name}-state"
    if state.exists() and not state.is_dir():
        raise ValueError(f"--state {state}: is a file, not a folder")
    record = state / DATABASE_RECORD
    if not args.database and record.is_file():
        raise ValueError(f"--database: the log of {challenge.name} is in {record.read_text().strip()} (recorded in "
                         f"{record} when it was served there); give --database with that URL, or remove {record} "
                         "to begin a new SQLite log with new tokens")
    url = args.database or sqlite_url(state / "log.sqlite")
    database = (checked_url(url) if args.database else make_url(url)).database
    secret_path = Path(args.secret) if args.secret else state / "secret"
    if secret_path.is_dir():
        raise ValueError(f"--secret {secret_path}: is a directory, not a secret seed file")
    if not create:
        if url.startswith("sqlite") and not (database and Path(database).is_file()):
            where = f"--database {url}" if args.database else f"--state {state}"
            raise ValueError(f"{where}: no log here; 'ladderlab serve {challenge.path}' starts one, or give the "
                             "--state or --database it was started with")
        if not secret_path.is_file():
            raise ValueError(f"--secret {secret_path}: no such file; give the secret the log was started with")
    if secret_path.is_file():
        read_secret_seed(secret_path)  # a bad secret file is refused before the state folder is made
    state.mkdir(parents=True, exist_ok=True)
    return state, url, read_secret_seed(secret_path)


def _serve(args: argparse.Namespace) -> int:
    from ladderlab.runs.arguments import ArgumentError
    from ladderlab.serve import require_server_extra

    require_server_extra()
    from ladderlab.certification import challenge as challenges

    if args.demo == (args.target is not None):
        raise ArgumentError("give a challenge file or --demo (see 'ladderlab serve --help')")
    if args.demo:
        from ladderlab.serve.demo import write_demo

        args.state = args.state or "ladderlab-demo"
        path = write_demo(Path(args.state))
    else:
        path = Path(args.target)
    _check_tokens_file(args.tokens)
    challenge = challenges.load(path, args.force)
    if args.reissue is not None:
        _check_reissue(challenge, args.reissue)
    problems = challenges.certificate_problems(challenge)
    if problems and not (args.uncertified or args.demo):
        raise ArgumentError(f"{path}: the certificate does not cover this challenge: {'; '.join(problems)} "
                            "(--uncertified serves it anyway)")
    from ladderlab.serve.limits import from_arguments

    limits = from_arguments(args, len(challenge.spec.teams), challenge.max_upload_bytes())
    state, url, secret = _state(args, challenge)
    for problem in problems:
        print(wrapped(f"ladderlab: warning: uncertified: {problem}"), file=sys.stderr)
    from ladderlab.serve.service import Service
    from ladderlab.serve.storage import Storage, StorageError

    storage = Storage(url, full_sync=args.full_sync, background_checkpoints=True)
    service = Service(challenge, storage, secret)
    try:
        with storage.readable():
            issued = service.open()
    except StorageError as error:
        storage.close()
        print(f"ladderlab: error: {storage.display_url()}: {error}; nothing was served", file=sys.stderr)
        return 1
    if args.database:  # a later start that forgets --database is refused, not served from a new SQLite log
        write_atomically(state / DATABASE_RECORD, storage.display_url() + "\n")
    closed = service.closed_at()
    if closed is not None:
        print(wrapped(f"ladderlab: warning: the challenge closed at {closed.isoformat()}: every upload is refused "
                      "(rules.end or the organiser's close)"), file=sys.stderr)
    if args.reissue:
        print(f"{args.reissue}: {service.reissue(args.reissue)}")
        return 0
    from ladderlab.serve.server import listen, run

    sock = listen(args.host, args.port, limits.backlog)
    address = f"http://{args.host}:{sock.getsockname()[1]}/"
    if args.tokens and not issued:
        print(f"no token issued at this start (every team has one; --reissue TEAM prints a new one): "
              f"--tokens {args.tokens} not written")
    elif args.tokens:
        _write_tokens(Path(args.tokens), issued)
    elif issued:
        print("tokens (shown once; only their hashes are stored):")
        for name, token in issued.items():
            print(f"  {name}: {token}")
    if args.demo:
        print(f"demo challenge in {path.parent}; a file to upload: {path.parent / 'sample_submission.csv'}")
    print(f"log: {service.storage.display_url()}")
    print(f"serving {challenge.name} at {address}", flush=True)
    run(service, sock, limits, access_log=not args.quiet_access)
    return 0


def _check_tokens_file(value: str | None) -> None:
    """``--tokens FILE`` can be written and holds no earlier tokens: checked before any token is issued."""
    from ladderlab.runs.arguments import ArgumentError, output_file

    output_file("--tokens", value)
    if value is not None and Path(value).exists():
        raise ArgumentError(f"--tokens {value}: the file exists and may hold tokens that were shown once; "
                            "move it away or name another file")


def _write_tokens(path: Path, issued: dict[str, str]) -> None:
    """The issued tokens as CSV (team,token), readable and writable by the owner alone; printed
    instead if the file cannot be written after all, since they are never shown again."""
    text = "team,token\n" + "".join(f"{name},{token}\n" for name, token in issued.items())
    try:
        write_atomically(path, text, mode=0o600)
    except OSError as error:
        print(f"ladderlab: warning: --tokens {path}: {error.strerror or error}; the tokens (shown once; only their "
              "hashes are stored):", file=sys.stderr)
        print(text, end="")
        return
    roles = [role for role in ("organiser", "scorer") if role in issued]
    teams = len(issued) - len(roles)
    holders = [f"the {role}" for role in roles] + ([f"{teams} team(s)"] if teams else [])
    whose = ", ".join(holders[:-1]) + " and " + holders[-1] if len(holders) > 1 else holders[0]
    print(f"tokens of {whose} written to {path} (shown nowhere else; only their hashes are stored)")


def _check_reissue(challenge: Any, name: str) -> None:
    """A team of the challenge file or the organiser; with ``[registration]``, also a name a team may
    have registered (the service refuses it, naming it, if none did)."""
    from ladderlab.certification.challenge import RESERVED_TEAM_NAMES, check_team_name

    names = [team.name for team in challenge.spec.teams] + list(RESERVED_TEAM_NAMES)
    if name in names:
        return
    if challenge.spec.registration is None:
        raise ValueError(f"--reissue {name!r}: not a team of {challenge.path} (teams: {', '.join(names)})")
    try:
        check_team_name(name)
    except ValueError as error:
        raise ValueError(f"--reissue: {error}") from None


def _verify(args: argparse.Namespace) -> int:
    checked = _checked_log(args)
    if checked is None:
        return 1
    display, count, states, head, report, summary = checked
    actions = summary.text() if summary else ""
    anchor_text = (f"; its head is {head[0]}:{head[1]} (keep it elsewhere: a later 'verify --anchor' with it "
                   "finds the log cut back or rewritten)") if head[0] or actions else ""
    print(f"{display}: {count} submissions of {states} mechanism state(s){f' and {actions}' if actions else ''}: the "
          f"chain is intact and every release, public and final score{', and every link,' if report['rule'] else ''} "
          f"replays bit for bit{', and every recorded action keeps the rules' if actions else ''}{anchor_text}")
    if report["rule"]:
        print(_groups_text(report))
    return 0


def _links(args: argparse.Namespace) -> int:
    checked = _checked_log(args)
    if checked is None:
        return 1
    report = checked[4]
    if args.out:
        from ladderlab.serve.organiser_links import link_table

        data = link_table(report) if args.out.endswith(".parquet") else json.dumps(report, indent=2) + "\n"
        write_atomically(args.out, data)
    print(_groups_text(report))
    for group in report["groups"]:
        print(f"group {group['group']}: {' + '.join(group['teams'])}")
        for link in group["links"]:
            print(f"  {link['submitted_at']}: {_link_text(link, report['holdout_size'])}")
    return 0


def _checked_log(args: argparse.Namespace) -> tuple[str, int, int, tuple[int, str], dict[str, Any], Any] | None:
    """Verify the log of ``args.challenge_file`` (the chain, every release and score, every link:
    a log whose recorded links differ from the ones the rule makes on replay is refused; every
    recorded action: :func:`~ladderlab.serve.events.verify_actions`) and return its URL as shown, its
    length, its mechanism states, its head, its links (:func:`~ladderlab.serve.organiser_links.link_report`)
    and what its actions did (an :class:`~ladderlab.serve.events.ActionSummary`, None for a log of an
    older schema); None, said on stderr, if it does not verify."""
    from ladderlab.serve import require_server_extra

    require_server_extra()
    from ladderlab.certification import challenge as challenges
    from ladderlab.serve import linked
    from ladderlab.serve.service import Service
    from ladderlab.serve.storage import Storage, StorageError

    if getattr(args, "out", None):
        from ladderlab.runs.arguments import output_file

        output_file("--out", args.out)
    challenge = challenges.load(args.challenge_file, args.force)
    _, url, secret = _state(args, challenge, create=False)
    _check_sqlite_header(url)
    storage = Storage(url)
    try:
        if not storage.has_log():
            raise ValueError(f"--database {storage.display_url()}: holds no ladderlab log; 'ladderlab serve "
                             f"{challenge.path}' starts one")
        with storage.readable():
            linked.check_link_record(challenge, storage)
            service = Service(challenge, storage, secret)
            states, count, summary = service.replay_log(progress=None)
            if args.anchor is not None:
                storage.check_anchor(*args.anchor)
            head = storage.chain_head()
            report = service.links()
            _check_version(storage)
    except ValueError:
        storage.close()
        raise
    except StorageError as error:
        print(f"ladderlab: error: {storage.display_url()}: {error}", file=sys.stderr)
        return None
    finally:
        storage.close()
    return storage.display_url(), count, states, head, report, summary


SQLITE_HEADER = b"SQLite format 3\x00"


def _check_sqlite_header(url: str) -> None:
    """Refuse a SQLite log file that is empty or does not begin as a database, before SQLite opens it
    (opening an empty file, it would write a new database there: verifying changes nothing)."""
    from sqlalchemy import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or not Path(parsed.database).is_file():
        return
    with open(parsed.database, "rb") as handle:
        start = handle.read(len(SQLITE_HEADER))
    if start != SQLITE_HEADER:
        raise ValueError(f"--database {url}: {'an empty file' if not start else 'not a SQLite database'}, not a "
                         "ladderlab log: restore the log from a backup, or give the --state or --database it was "
                         "started with")


def _check_version(storage: Any) -> None:
    """Say on stderr what the chain of a log not migrated yet, or migrated, does not vouch for."""
    from ladderlab.serve.storage import SCHEMA_VERSION

    version = storage.meta_value("schema_version")
    if version != SCHEMA_VERSION:
        print(f"ladderlab: warning: {storage.display_url()}: a log of schema version {version}, whose chain covers its "
              "submissions but not its tokens, selections and close; start the server on it once, which migrates it "
              f"to version {SCHEMA_VERSION} and chains them from then on", file=sys.stderr)
        return
    migrated = storage.events_migrated_from()
    if migrated is not None:
        print(f"ladderlab: warning: {storage.display_url()}: migrated from schema version {migrated}: the chain vouches "
              "for its tokens, selections and close from the migration on, not for what they were before it",
              file=sys.stderr)


def _groups_text(report: dict[str, Any]) -> str:
    """One line per linked group: its accounts, when it first linked and the link that did."""
    groups = report["groups"]
    if not groups:
        return f"no linked accounts (the rule links at most {report['threshold']} differing holdout rows)"
    lines = [f"{len(groups)} linked group{'' if len(groups) == 1 else 's'}:"]
    for group in groups:
        lines.append(f"  {' + '.join(group['teams'])} (first linked at {group['first_linked_at']}: "
                     f"{_link_text(group['links'][0], report['holdout_size'])})")
    return "\n".join(lines) if len(groups) > 1 else lines[0] + lines[1][1:]


def _link_text(link: dict[str, Any], holdout: int) -> str:
    return (f"{link['team']}'s submission {link['submission_id']} differed from {link['other']}'s submission "
            f"{link['other_submission_id']} on {link['differing']} of {holdout} holdout rows, at most "
            f"{link['threshold']} link")


def anchor(text: str) -> tuple[int, str]:
    """``ID:HASH``, an entry's id and its 64-hex-digit hash, as ``verify`` prints a log's head."""
    number, _, digest = text.partition(":")
    if not (number.isdigit() and int(number) > 0 and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
        raise argparse.ArgumentTypeError(f"{text!r} is not ID:HASH (an entry id and its 64 hex digits, "
                                         "as 'ladderlab serve verify' prints the head)")
    return int(number), digest


def _submissions(count: int) -> str:
    return f"{count} submission{'' if count == 1 else 's'}"


def _attack(args: argparse.Namespace) -> int:
    from ladderlab.certification.certify import parse_attack
    from ladderlab.registry import ATTACKS
    from ladderlab.runs.arguments import output_file
    from ladderlab.serve.client import play_remote

    output_file("--final-out", args.final_out)
    spec = parse_attack(args.attack)
    attack = ATTACKS.make(spec.id, **(spec.pinned or {}))
    board, final = play_remote(args.url, args.token, attack, args.budget, args.seed)
    transcript, step = board.transcript, described_release_step(board.challenge)
    print(f"{attack.id}: {_submissions(board.submissions)}; released: first {_value(transcript, 0, step)}, "
          f"last {_value(transcript, -1, step)}, best {_best(transcript, board.challenge['greater_is_better'], step)}")
    if board.submissions == 0 and board.remaining == 0:
        print(wrapped("ladderlab: warning: no submission made: the server's caps leave this team none (today or in "
                      "total; GET /api/me says which)"), file=sys.stderr)
    elif board.remaining == 0 and args.budget is not None and board.submissions < args.budget:
        print(wrapped(f"ladderlab: warning: the server's caps stopped the attack after {_submissions(board.submissions)} "
                      f"of the {args.budget} asked (today or in total; GET /api/me says which)"), file=sys.stderr)
    if args.final_out:
        import pandas as pd

        ids = board.challenge["ids"]
        write_atomically(args.final_out, pd.DataFrame({board.challenge["id_column"]: ids, "prediction": final}).to_csv(index=False))
        print(f"final prediction written to {args.final_out}", file=sys.stderr)
    if args.submit_final:
        from ladderlab.serve.client import RemoteBoard

        final_board = RemoteBoard(args.url, args.token)
        print(f"final prediction submitted: released {score_text(final_board.submit(final), step)}")
        final_board.close()
    return 0


def _value(transcript: Any, index: int, step: float | None) -> str:
    return score_text(float(transcript[index]), step) if len(transcript) else "-"


def _best(transcript: Any, greater_is_better: bool, step: float | None) -> str:
    if not len(transcript):
        return "-"
    return score_text(float(max(transcript) if greater_is_better else min(transcript)), step)
