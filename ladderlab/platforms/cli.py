"""``ladderlab export PLATFORM CHALLENGE --out DIR`` and ``ladderlab audit PLATFORM CONFIG``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ladderlab.runs.workload import add_force_option

EXPORT_PLATFORMS = ("codabench", "evalai", "hf-competitions", "kaggle")
RELAYED = ("codabench", "evalai", "hf-competitions")
"""The platforms whose scoring program relays to the organiser's ``ladderlab serve``."""


def register(commands: argparse._SubParsersAction) -> None:
    """``ladderlab export`` and ``ladderlab audit``."""
    export = commands.add_parser(
        "export", help="write a platform's files that run a challenge's certified mechanism (see docs/platforms.md)",
        description="Write what PLATFORM needs to score CHALLENGE with its certified mechanism: for codabench, evalai "
                    "and hf-competitions a scoring program that asks your running 'ladderlab serve' for the release "
                    "(--url, and the scorer credential from --tokens or --scorer-token); for kaggle a self-contained "
                    "custom metric of a stateless mechanism and its solution file.")
    export.add_argument("platform", choices=EXPORT_PLATFORMS)
    export.add_argument("challenge", metavar="CHALLENGE", help="the challenge file 'ladderlab serve' reads")
    export.add_argument("--out", required=True, metavar="DIR", help="folder to write the platform's files to")
    export.add_argument("--url", help="the address participants' submissions reach your 'ladderlab serve' at (relayed "
                                      "platforms; EvalAI --remote: default http://127.0.0.1:8000)")
    export.add_argument("--tokens", metavar="FILE", help="the tokens CSV 'ladderlab serve --tokens' wrote (its scorer row)")
    export.add_argument("--scorer-token", help="the scorer credential ('ladderlab serve CHALLENGE --reissue scorer')")
    export.add_argument("--remote", action="store_true", help="evalai: remote evaluation on your own machine")
    export.add_argument("--state", help="kaggle: the state folder of 'ladderlab serve' (default: <challenge "
                                        "folder>/<name>-state), whose secret keys the noise")
    export.add_argument("--secret", help="kaggle: the secret seed file (default: <state>/secret; created if missing)")
    export.add_argument("--uncertified", action="store_true",
                        help="export even where the certificate does not cover the challenge (each problem is named)")
    add_force_option(export, "load the challenge")
    export.set_defaults(handler=_export)
    audit = commands.add_parser(
        "audit", help="say where a platform's configuration lets raw scores reach participants",
        description="Read a Codabench competition.yaml or an EvalAI challenge_config.yaml (and the scoring code beside "
                    "it) and list each place raw scores would leak, with its fix. Exit code 1 when there is one.")
    audit.add_argument("platform", choices=("codabench", "evalai"))
    audit.add_argument("config", metavar="CONFIG", help="competition.yaml or challenge_config.yaml")
    audit.add_argument("--challenge", metavar="CHALLENGE", help="the challenge file: compare the display precision "
                                                                "and the caps with what was certified")
    audit.set_defaults(handler=_audit)


def _export(args: argparse.Namespace) -> int:
    from ladderlab.platforms import export as common
    from ladderlab.runs.arguments import ArgumentError, output_folder

    output_folder("--out", args.out)
    if args.platform == "kaggle" and (args.url or args.tokens or args.scorer_token or args.remote):
        raise ArgumentError("--url, --tokens, --scorer-token and --remote are for the relayed platforms: a Kaggle metric "
                            "scores on its own")
    if args.platform != "evalai" and args.remote:
        raise ArgumentError("--remote is for evalai (remote evaluation)")
    if args.platform in RELAYED and args.url is None and not args.remote:
        raise ArgumentError(f"--url: give the address at which {args.platform}'s scoring program reaches your "
                            "'ladderlab serve'")
    challenge = common.checked_challenge(args.challenge, args.uncertified, args.force)
    out = Path(args.out)
    if args.platform == "kaggle":
        from ladderlab.platforms import kaggle

        state = Path(args.state) if args.state else challenge.path.parent / f"{challenge.name}-state"
        secret = Path(args.secret) if args.secret else state / "secret"
        if kaggle.stateless_problem(challenge) is None:
            secret.parent.mkdir(parents=True, exist_ok=True)
        written = kaggle.export(challenge, out, secret)
    else:
        token = common.scorer_token(args.scorer_token, args.tokens)
        url = args.url or "http://127.0.0.1:8000"
        if args.platform == "codabench":
            from ladderlab.platforms import codabench

            written = codabench.export(challenge, out, url, token, args.uncertified)
        elif args.platform == "evalai":
            from ladderlab.platforms import evalai

            written = evalai.export(challenge, out, url, token, args.uncertified, args.remote)
        else:
            from ladderlab.platforms import hf_competitions

            written = hf_competitions.export(challenge, out, url, token, args.uncertified)
    print(f"{args.platform}: {challenge.name} ({challenge.spec.mechanism.id}) written to {out}:")
    width = max(len(relative) for relative, _ in written.files)
    for relative, purpose in written.files:
        print(f"  {relative:<{width}}  {purpose}"[:120])
    print("next: docs/platforms.md, section " + args.platform)
    return 0


def _audit(args: argparse.Namespace) -> int:
    from ladderlab.platforms import audit

    challenge = None
    if args.challenge:
        from ladderlab.certification.challenge import load

        challenge = load(args.challenge)
    findings = audit.audit(args.platform, args.config, challenge)
    print(audit.report(args.platform, args.config, findings))
    sys.stdout.flush()
    return 1 if findings else 0
