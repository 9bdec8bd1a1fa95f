"""A generated page says, where a reader sees it, which command wrote it and when: the site's hook
puts a line under each stamped page (and under each include of one), and ``ladderlab dev pages`` gives
the last commit that wrote a page that is not current."""

import importlib.util
import re
from pathlib import Path

import pytest

from ladderlab.dev import page_survey
from ladderlab.runs.page_stamps import stamp

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
hooks = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(hooks)

STAMPED = "# A certificate\n\nsome numbers\n\n" + stamp("ladderlab certify kaggle --n 200", {"mechanism:kaggle": "v1:0"}) + "\n"


def test_a_stamped_page_ends_with_the_command_that_wrote_it():
    shown = hooks.with_provenance(STAMPED, "docs/figures/nowhere.md")
    assert shown.startswith(STAMPED.rstrip())
    assert shown.rstrip().endswith("whether that code has changed since.*")
    assert "*Written by `ladderlab certify kaggle --n 200`; the stamp in this page's source fingerprints its code (1 plugin or core module)" in shown


def test_an_include_of_a_stamped_page_is_followed_by_its_provenance_and_a_plain_page_is_left_alone():
    page = 'Intro.\n\n--8<-- "docs/figures/red-team-ladder-n2000.md"\n\nMore.\n'
    shown = hooks.with_provenance(page, "docs/red-team-certificates.md")
    include, after = shown.split('--8<-- "docs/figures/red-team-ladder-n2000.md"')
    assert after.lstrip().startswith("*Written by `ladderlab certify ladder --n 2000")
    assert re.search(r"last written \d{4}-\d\d-\d\d, commit [0-9a-f]{7}", after)  # the page's last commit
    assert hooks.with_provenance("# Plain\n\ntext\n", "docs/plain.md") == "# Plain\n\ntext\n"


def test_a_page_that_is_not_current_says_when_it_was_last_written():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no history says when a page was written")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d, commit [0-9a-f]{7,}", page_survey.made(ROOT, "docs/serve.md"))
    assert page_survey.made(ROOT, "docs/no-such-page.md") is None
    state = page_survey.PageState("docs/x.md", None, "ladderlab x", "stale", ["mechanism:x"], made="2026-01-02, commit abc1234")
    assert "last written: 2026-01-02, commit abc1234" in page_survey.format_states([state])


def test_an_include_inside_a_code_block_has_its_provenance_under_the_block(tmp_path, monkeypatch):
    monkeypatch.setattr(hooks, "ROOT", tmp_path)
    (tmp_path / "table.txt").write_text("a table\n" + stamp("ladderlab dev bench --out table.txt", {}) + "\n")
    shown = hooks.with_provenance('Before.\n\n```text\n--8<-- "table.txt"\n```\n\nAfter.\n', "docs/page.md")
    block, after = shown.split("```")[1:]
    assert "Written by" not in block and after.lstrip().startswith("*Written by `ladderlab dev bench --out table.txt`")


def test_a_stamp_shown_as_an_example_in_a_code_block_is_not_the_pages():
    page = '# How stamps look\n\n```\n<!-- ladderlab-page {"code": {…}, "command": "ladderlab certify …"} -->\n```\n'
    assert hooks.with_provenance(page, "docs/generated-pages.md") == page
