"""The final leaderboard the page shows to everyone after the close, with its rank certificate.

The ranking is the service's final ranking (:meth:`~ladderlab.serve.service.Service.final`, under
the challenge's selection rule and the organiser's linked-teams policy), by the exact private
scores; beside each team, what :func:`~ladderlab.final_rankings.certificate.certify_ranking` says of
it from the teams' counted submissions on the private rows: the 95% bootstrap interval of its
score and of its rank, its rank as Chatbot Arena reports it, and the probability that it is best
(P(winner is best) for the first), from :data:`REPLICATES` resamples of the private rows drawn
from :func:`~ladderlab.final_rankings.certificate.certificate_stream` with seed 0: what
``ladderlab stats rank-certificate`` gives on the organiser's private losses with its defaults. The
fewest private rows whose removal changes the winner are given where one sort per team finds
them exactly (a mean of per-sample risks); for other metrics (ROC AUC, correlations) the page
leaves them to the command, whose search can take long.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ladderlab.final_rankings.certificate import (
    LEVEL,
    REPLICATES,
    certificate_stream,
    certify_ranking,
)
from ladderlab.serve.events import text_time

if TYPE_CHECKING:
    from ladderlab.serve.service import Service

CERTIFICATE_SEED = 0


def final_board(service: Service, linked: str) -> dict[str, Any]:
    """The board as JSON-ready data: the ranking's facts, one row per entry in rank order, and the
    certificate's summary (``certificate`` None, with a ``note`` saying why, when a score is undefined)."""
    final, samples = service.private_samples(linked)
    closed = service.closed_at()
    board: dict[str, Any] = {
        "challenge": final["challenge"], "scorer": final["scorer"], "greater_is_better": final["greater_is_better"],
        "selection": final["selection"], "linked": linked, "closed_at": None if closed is None else text_time(closed),
        "disqualified": [row["team"] for row in final["disqualified"]], "private_rows": samples.size,
        "teams": [{"rank": row["private_rank"], "team": row["team"], "private": row["private"],
                   "public_rank": row["public_rank"], "submissions": row["submissions"]} for row in final["teams"]],
        "certificate": None, "note": None,
    }
    if not samples.teams:
        return board
    try:
        certificate = certify_ranking(samples, certificate_stream(CERTIFICATE_SEED, samples), REPLICATES, LEVEL,
                                      search=False)
    except ValueError as error:
        board["note"] = f"no rank certificate: {error}"
        return board
    for index, row in enumerate(board["teams"]):
        row.update({"low": float(certificate.score_low[index]), "high": float(certificate.score_high[index]),
                    "rank_low": int(certificate.rank_low[index]), "rank_high": int(certificate.rank_high[index]),
                    "arena_rank": int(certificate.arena_rank[index]), "p_best": float(certificate.p_best[index])})
    removal = certificate.removal
    board["certificate"] = {
        "replicates": certificate.replicates, "level": certificate.level, "seed": CERTIFICATE_SEED,
        "undefined_replicates": certificate.undefined, "winner": certificate.teams[certificate.winner],
        "p_winner_best": float(certificate.p_best[certificate.winner]),
        "fewest_removals": {"count": removal.count, "challenger": removal.challenger, "exact": removal.exact,
                            "method": removal.method},
    }
    return board
