"""The leaderboard page in Debian's chromium: upload a file, see the released score, see the cap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ladderlab.serve.storage import sqlite_url
from tests.helpers import CHROMIUM, launch_chromium
from tests.serve_helpers import ThreadServer, open_service, write_challenge



@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_a_team_uploads_through_the_page_sees_its_release_and_then_the_cap(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    path = write_challenge(tmp_path, n=200, rules="per_day = 2")
    service, tokens = open_service(path, sqlite_url(tmp_path / "log.sqlite"))
    upload_file = tmp_path / "predictions.csv"
    pd.DataFrame({"id": service.challenge.ids, "prediction": np.zeros(200, dtype=int)}).to_csv(upload_file, index=False)
    problems: list[str] = []
    requests: list[str] = []
    outcomes: list[str] = []
    with ThreadServer(service) as server, sync_api.sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.on("console", lambda message: problems.append(message.text) if message.type in ("error", "warning") else None)
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on("request", lambda request: requests.append(request.url))
        for _ in range(3):
            page.goto(server.url + "/")
            page.fill("#upload input[name=token]", tokens["alpha"])
            page.set_input_files("#upload input[name=file]", str(upload_file))
            page.click("#upload button")
            page.wait_for_selector("#outcome")
            outcomes.append(page.inner_text("#outcome"))
        rows = page.locator("#submissions tbody tr").count()
        page.goto(server.url + "/")
        leaderboard = page.inner_text("#leaderboard")
        page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
        browser.close()
    released = service.storage.entries()[0].released
    assert outcomes[0] == f"Submission 1 of alpha (id 1): released zero-one {released!r}"
    assert outcomes[1].startswith("Submission 2 of alpha (id 2)")
    assert "would exceed the daily cap of 2 submissions per team (2 made today, 0 left); it resets at" in outcomes[2]
    assert rows == 2
    assert "alpha" in leaderboard and repr(released) in leaderboard
    assert problems == ["Failed to load resource: the server responded with a status of 429 (Too Many Requests)"], \
        "the refused upload's page comes with its HTTP status, and nothing else went wrong"
    assert all(url.startswith(server.url) for url in requests)
