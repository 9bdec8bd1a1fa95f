"""An attack for the layout tests: its marks are where its own process maps the code of
libpython and of NumPy's core (the start of each executable mapping), then it plays honestly."""

from ladderlab.attack import Attack
from ladderlab.params import Interval

CODE = {"libpython": "libpython", "numpy": "_multiarray_umath"}


def code_addresses() -> dict[str, list[int]]:
    """Start addresses of the executable mappings of libpython and NumPy's core in this process."""
    found: dict[str, list[int]] = {name: [] for name in CODE}
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) > 5 and "x" in fields[1]:
                for name, part in CODE.items():
                    if part in fields[5]:
                        found[name].append(int(fields[0].split("-")[0], 16))
    return found


class LayoutProbe(Attack):
    """Submits one random vector ``k`` times; marks: where its process maps its code."""

    id = "layout-probe"
    reference = "test stand-in"
    task_types = frozenset({"classification"})
    _parameter_constraints = {"k": [Interval(int, 1, None)]}

    def __init__(self, k: int = 2):
        self.k = k

    def run(self, board, data, rng):
        prediction = rng.integers(0, 2, board.holdout_size).astype(float)
        for _ in range(self.k):
            board.submit(prediction)
        return prediction

    def marks(self) -> dict[str, list[int]]:
        return code_addresses()
