"""Deploying a certified mechanism where challenges already run: ``ladderlab export`` and ``ladderlab audit``.

:mod:`~ladderlab.platforms.relay` is the scoring program Codabench, EvalAI and Hugging Face
competitions run (standard library only, shipped as it is): it sends the participant's file to the
organiser's ``ladderlab serve`` under the scorer credential and returns the released value.
:mod:`~ladderlab.platforms.codabench`, :mod:`~ladderlab.platforms.evalai` and
:mod:`~ladderlab.platforms.hf_competitions` write each platform's files around it;
:mod:`~ladderlab.platforms.kaggle` writes a self-contained custom metric for a stateless mechanism
(Kaggle's scorer has neither identity nor memory); :mod:`~ladderlab.platforms.export` holds what
they share (the challenge and its certificate, the display precision, the relay's settings);
:mod:`~ladderlab.platforms.audit` reads a platform's configuration and says where raw scores
would leak; :mod:`~ladderlab.platforms.cli` registers both commands.
"""
