"""docs/concepts.md draws the core's areas exactly as the import-linter contract in pyproject.toml layers them
(issue 48): the same layers, top first, the same areas side by side."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "concepts.md"


def contracts() -> dict[str, list[str]]:
    """Each layers contract's layers, by container."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    return {contract["containers"][0]: contract["layers"] for contract in config["contracts"]
            if contract["type"] == "layers"}


def drawn_layers(text: str) -> list[str]:
    """The layers of the page's diagram: the first column of each line that does not continue the one above."""
    diagram = re.search(r"<!-- areas -->\n```text\n(.*?)```\n<!-- /areas -->", text, re.S)[1]
    return [re.split(r"\s{2,}", line.strip())[0] for line in diagram.splitlines() if not line.startswith(" ")]


def test_the_diagram_of_areas_is_the_contracts_layers():
    assert drawn_layers(PAGE.read_text(encoding="utf-8")) == contracts()["ladderlab"]


def test_the_isolation_layers_are_the_second_contracts():
    named = re.search(r"<!-- isolation -->(.*?)<!-- /isolation -->", PAGE.read_text(encoding="utf-8"), re.S)[1]
    assert re.findall(r"`([^`]+)`", named) == contracts()["ladderlab.isolation"]

