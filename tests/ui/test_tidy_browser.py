"""The tidy pages in a real headless browser (chromium + chromedriver, Selenium), served by `homeport ui`:
propose, review the diff, apply past the guard, see the merged item's page, revert. Screenshots of each
page are saved under the test's output directory and printed (pytest -s, or -rA).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from homeport.store import StoreCache, decisions

from ._seed import make_project, seed_store
from .test_dashboard_browser import _clean_env, _first_line, browser, follow, shoot, shots  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served_with_duplicates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("ui-tidy")
    root = make_project(base / "src", "larder")
    cache = StoreCache()
    try:
        store = cache.get(root, create=True)
        seed_store(store, many=True)
        first = decisions.log_decision(store, "Store money as integer cents, never floats")
        second = decisions.log_decision(store, "Money is stored as integer cents, never as floats")
    finally:
        cache.close()
    process = subprocess.Popen(
        [sys.executable, "-m", "homeport", "ui", "--no-browser", "--port", "0", "-w", str(root)],
        cwd=root,
        env=_clean_env(base),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = _first_line(process.stdout)
    try:
        assert line.startswith("homeport ui: http://127.0.0.1:"), (line, process.poll())
        address = line.split()[2]
        yield {"origin": address.split("/ui/")[0], "root": root, "first": first, "second": second}
    finally:
        process.terminate()
        process.communicate(timeout=60)


def test_a_duplicate_is_proposed_reviewed_applied_and_reverted_in_a_browser(browser, served_with_duplicates, shots):  # noqa: F811
    from selenium.webdriver.common.by import By

    served = served_with_duplicates
    origin, root = served["origin"], served["root"]
    browser.get(f"{origin}/ui/tidy?ws={root}")
    shoot(browser, shots, "tidy")
    follow(browser, browser.find_element(By.CSS_SELECTOR, "#propose button").click, "/ui/changeset")
    entry = browser.find_element(By.CSS_SELECTOR, "section.entry-duplicate")
    assert f"merge decision {served['first']['id']} into decision {served['second']['id']}" in entry.text
    shoot(browser, shots, "changeset-review")
    browser.find_element(By.NAME, "force").click()
    follow(browser, browser.find_element(By.ID, "apply").click, "done=applied")
    assert "Changeset applied." in browser.find_element(By.CSS_SELECTOR, ".notice").text
    shoot(browser, shots, "changeset-applied")
    browser.get(f"{origin}/ui/item?ws={root}&type=decision&id={served['first']['id']}")
    banner = browser.find_element(By.CSS_SELECTOR, ".lifecycle").text
    assert f"Merged into decision #{served['second']['id']}" in banner and "changeset #1" in banner
    shoot(browser, shots, "merged-item")
    browser.get(f"{origin}/ui/changeset?ws={root}&id=1")
    follow(browser, browser.find_element(By.ID, "revert").click, "done=reverted")
    assert "Changeset reverted." in browser.find_element(By.CSS_SELECTOR, ".notice").text
    browser.get(f"{origin}/ui/item?ws={root}&type=decision&id={served['first']['id']}")
    assert not browser.find_elements(By.CSS_SELECTOR, ".lifecycle")
