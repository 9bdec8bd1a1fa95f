
from ladderlab.attacks.boosting import Boosting


class Probing(Boosting):
    id = "probing"
