"""The leaderboard page in Debian's chromium: a team signs in, uploads, sees its release and then the
cap; the challenge's whole life on the page: a team registers with the invite code, uploads and
selects its final submissions, the organiser signs in, sees the counts and closes, and everyone
sees the final leaderboard with the rank certificate's intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ladderlab.serve.storage import sqlite_url
from tests.helpers import CHROMIUM, launch_chromium
from tests.serve_helpers import ThreadServer, open_service, request, upload, write_challenge

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
INVITE = "open-sesame-42"


class Browser:
    """A headless chromium with one page, recording what went wrong and every URL it asked for."""

    def __init__(self, playwright):
        self.browser = launch_chromium(playwright)
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.sources: list[str] = []
        self.context = self.browser.new_context(viewport={"width": 1200, "height": 900})
        self.page = self.context.new_page()
        self.page.on("console", lambda message: self.problems.append(message.text)
                     if message.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda error: self.problems.append(str(error)))
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("response", self._keep_source)

    def _keep_source(self, response) -> None:
        if response.request.resource_type == "document":
            try:
                self.sources.append(response.text())
            except Exception:  # a redirect has no body
                pass

    def outcome(self) -> str:
        return self.page.inner_text("#outcome")

    def close(self) -> None:
        self.browser.close()


def _prediction_file(folder, name: str, ids, values) -> str:
    path = folder / name
    pd.DataFrame({"id": ids, "prediction": values}).to_csv(path, index=False)
    return str(path)


def test_a_team_signs_in_uploads_through_the_page_sees_its_release_and_then_the_cap(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    path = write_challenge(tmp_path, n=200, rules="per_day = 2")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    upload_file = _prediction_file(tmp_path, "predictions.csv", service.challenge.ids, np.zeros(200, dtype=int))
    outcomes: list[str] = []
    with ThreadServer(service) as server, sync_api.sync_playwright() as playwright:
        browser = Browser(playwright)
        page = browser.page
        page.goto(server.url + "/")
        page.fill("#login input[name=token]", tokens["alpha"])
        page.click("#login button")
        page.wait_for_selector("#upload")
        for _ in range(3):
            page.set_input_files("#upload input[name=file]", upload_file)
            page.click("#upload button")
            page.wait_for_selector("#outcome")
            outcomes.append(browser.outcome())
        rows = page.locator("#submissions tbody tr").count()
        page.goto(server.url + "/")
        leaderboard = page.inner_text("#leaderboard")
        browser.close()
    released = service.storage.entries()[0].released
    assert outcomes[0] == f"Submission 1 of alpha (id 1): released zero-one {released!r}"
    assert outcomes[1].startswith("Submission 2 of alpha (id 2)")
    assert "would exceed the daily cap of 2 submissions per team (2 made today, 0 left); it resets at" in outcomes[2]
    assert rows == 2
    assert "alpha" in leaderboard and repr(released) in leaderboard
    assert browser.problems == ["Failed to load resource: the server responded with a status of 429 (Too Many Requests)"], \
        "the refused upload's page comes with its HTTP status, and nothing else went wrong"
    assert all(url.startswith(server.url) for url in browser.requests)
    assert not any(tokens["alpha"] in url for url in browser.requests)


def test_the_challenge_s_whole_life_on_the_page(tmp_path):
    """Register with the invite code (a wrong one refused), upload twice, select one submission, sign
    out; the organiser signs in, sees every team's submissions, closes; a new visitor sees the final
    leaderboard with the certificate's intervals, the same as the API's, and no token was ever in a
    URL or a page after signing in."""
    sync_api = pytest.importorskip("playwright.sync_api")
    path = write_challenge(tmp_path, n=300, rules="per_day = 10\nselection = 2", teams=("alpha", "beta"),
                           extra=f'[registration]\ninvite = "{INVITE}"\n')
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    ids, labels = service.challenge.ids, service.challenge.split.y_holdout
    rng = np.random.default_rng(3)
    good = _prediction_file(tmp_path, "good.csv", ids, np.where(rng.random(300) < 0.9, labels, 1 - labels).astype(int))
    poor = _prediction_file(tmp_path, "poor.csv", ids, np.where(rng.random(300) < 0.55, labels, 1 - labels).astype(int))
    with ThreadServer(service) as server, sync_api.sync_playwright() as playwright:
        for team, accuracy in (("alpha", 0.8), ("beta", 0.6)):
            noisy = np.where(rng.random(300) < accuracy, labels, 1 - labels)
            assert upload(server.url, tokens[team], noisy[None])[0] == 201
        browser = Browser(playwright)
        page = browser.page
        page.goto(server.url + "/")
        page.click("#register-link")
        page.fill("#register input[name=team]", "Gamma Rays")
        page.fill("#register input[name=invite]", "not-the-code")
        page.click("#register button")
        page.wait_for_selector("#outcome")
        wrong_code = browser.outcome()
        page.fill("#register input[name=team]", "Gamma Rays")
        page.fill("#register input[name=invite]", INVITE)
        page.click("#register button")
        page.wait_for_selector("#token")
        token = page.inner_text("#token")
        signed_in = page.inner_text("#signed-in")
        registered_source = browser.sources[-1]
        for prediction in (poor, good):
            page.set_input_files("#upload input[name=file]", prediction)
            page.click("#upload button")
            page.wait_for_selector("#outcome")
        page.click("#submission-4 button")  # the good one: alpha and beta made 1 and 2
        page.wait_for_selector("#outcome")
        selected = browser.outcome()
        selected_row = page.inner_text("#submission-4")
        team_cookies = browser.context.cookies()
        page.click("#logout button")
        page.wait_for_selector("#outcome")
        after_logout = browser.context.cookies()

        page.goto(server.url + "/")
        page.fill("#login input[name=token]", tokens["organiser"])
        page.click("#login button")
        page.wait_for_selector("#teams")
        teams_table = page.inner_text("#teams")
        page.check("#close input[name=confirm]")
        page.click("#close button")
        page.wait_for_selector("#downloads")
        closed = browser.outcome()
        with page.expect_download() as download:
            page.click("#downloads a[href^='api/organiser/export']")
        exported = pd.read_parquet(download.value.path())
        sources_after_sign_in = browser.sources[browser.sources.index(registered_source) + 1:]
        browser.close()

        visitor = Browser(playwright)
        visitor.page.goto(server.url + "/")
        final = visitor.page.inner_text("#final-leaderboard")
        certificate = visitor.page.inner_text("#certificate")
        visitor.page.screenshot(path=str(tmp_path / "final.png"), full_page=True)
        visitor.close()
        board = request(server.url, "", "GET", "/api/final-leaderboard")[2]

    assert wrong_code == "wrong invite code"
    assert token.startswith("ll_") and service.team_of(token) == "Gamma Rays"
    assert signed_in == "Signed in as Gamma Rays"
    assert "selected" in selected_row and selected.startswith("Submission 4 is selected")
    assert service.storage.selected() == {"Gamma Rays": {4}}
    assert {cookie["name"] for cookie in team_cookies} == {"ladderlab-form-test", "ladderlab-session-test"}
    for cookie in team_cookies:
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
        assert token not in cookie["value"]
    assert [cookie["name"] for cookie in after_logout] == ["ladderlab-form-test"], "the session's cookie is cleared"
    assert [line.split("\t") for line in teams_table.splitlines()[1:]] == [
        ["Gamma Rays", "2", service.own_submissions("Gamma Rays")[-1]["submitted_at"], "1", "registration"],
        ["alpha", "1", service.own_submissions("alpha")[0]["submitted_at"], "0", "the challenge file"],
        ["beta", "1", service.own_submissions("beta")[0]["submitted_at"], "0", "the challenge file"]]
    assert closed.startswith("The challenge closed at")
    assert len(exported) == 4 and exported.selected[exported.team == "Gamma Rays"].tolist() == [False, True]
    rows = [line.split("\t") for line in final.splitlines()[1:]]
    assert [row[1] for row in rows] == [entry["team"] for entry in board["teams"]]
    winner = board["teams"][0]
    assert winner["team"] == "Gamma Rays" and rows[0][4] == (
        str(winner["rank_low"]) if winner["rank_low"] == winner["rank_high"]
        else f"{winner['rank_low']}–{winner['rank_high']}")
    assert rows[0][5] == f"{winner['p_best']:.3f}" and f"{board['certificate']['p_winner_best']:.3f}" in certificate
    assert all(row[3].startswith("[") for row in rows), "every team has its interval"
    for secret in (token, tokens["organiser"], tokens["alpha"]):
        assert not any(secret in url for url in browser.requests + visitor.requests)
    assert not any(token in source or tokens["organiser"] in source for source in sources_after_sign_in)
    assert not browser.problems[1:] and browser.problems[:1] == [
        "Failed to load resource: the server responded with a status of 403 (Forbidden)"], browser.problems
    assert visitor.problems == []
