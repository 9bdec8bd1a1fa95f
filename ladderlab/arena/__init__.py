"""Pairwise leaderboards: Chatbot-Arena-style boards rated by Bradley–Terry from votes.

The score model differs from the rest of ladderlab: a model is rated from pairwise votes
(model_a, model_b, winner), not from per-sample losses on a holdout. The area holds the
battles and their sufficient statistics (:mod:`~ladderlab.arena.battles`), the Bradley–Terry
fit as FastChat computes it and exactly (:mod:`~ladderlab.arena.bradley_terry`), rating with
bootstrap intervals and Arena ranks (:mod:`~ladderlab.arena.rating`), the fewest votes whose
removal changes the top model (:mod:`~ladderlab.arena.robustness`), a pairwise task family
(:mod:`~ladderlab.arena.family`), two plugin families (arena policies and arena attacks, built-in
ones in ``ladderlab/arena/policies/`` and ``ladderlab/arena/attacks/``), the season they play
(:mod:`~ladderlab.arena.season`), the certificate of a policy and the command line.
"""
