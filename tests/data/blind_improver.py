"""``improving`` as an attack (used by tests/test_certificate_artefacts.py): a participant who never reads the
board and submits ever better models, in the battery where honest participants are not."""

from ladderlab.attacks.improving import Improving


class BlindImprover(Improving):
    """Improving, not declared honest: a certificate plays it as an attack."""

    id = "blind-improver"
    honest = False
