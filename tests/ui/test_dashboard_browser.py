"""The dashboard in a real headless browser (Debian's chromium + chromium-driver, driven by Selenium),
served by `homeport ui` in a subprocess: every page of a seeded workspace, following a link, search
from the keyboard, a correction that shows up in the history. A screenshot of each page is saved
under the test's output directory, printed at the end of each test (pytest -s, or -rA).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from homeport.store import StoreCache

from ._seed import make_project, seed_store

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed: pip install -e '.[test]'")
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip("no chromium + chromedriver on PATH: apt-get install -y chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1360,1000",
    ):
        options.add_argument(flag)
    # The driver's path is given, so Selenium Manager never looks for (or downloads) one.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dashboard-screenshots")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`homeport ui` serving a seeded project; its printed address."""
    base = tmp_path_factory.mktemp("ui")
    root = make_project(base / "src", "atlas")
    cache = StoreCache()
    try:
        items = seed_store(cache.get(root, create=True), many=True)
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
        yield {"address": address, "origin": address.split("/ui/")[0], "root": root, "items": items}
    finally:
        process.terminate()
        process.communicate(timeout=60)  # also closes the pipes


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOMEPORT_") and k != "CLAUDE_PROJECT_DIR"}
    env.update(HOME=str(home), HOMEPORT_STATE_DIR=str(home / "state"), HOMEPORT_DATA_DIR=str(home / "data"))
    return env


def _first_line(stream: Any, timeout: float = 30) -> str:
    """The first line a child prints, waiting at most `timeout` seconds (a reader thread: pipes do not time out)."""
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(stream.readline() if stream else ""), daemon=True)
    reader.start()
    reader.join(timeout=timeout)
    return line[0] if line else ""


def arrive(driver: Any, fragment: str) -> None:
    """Wait until the browser has navigated to a URL containing `fragment` and the page has loaded."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 30).until(
        lambda d: fragment in d.current_url and d.execute_script("return document.readyState") == "complete"
    )


def follow(driver: Any, act: Any, fragment: str) -> None:
    """Do `act` (a click, an Enter) and wait for the page it leads to: the page it left must be gone first.

    Waiting on the URL alone is not enough when the next page has the same address (a login form
    that answers with itself): the old page would pass for the new one.
    """
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    page = driver.find_element(By.TAG_NAME, "html")
    act()
    WebDriverWait(driver, 30).until(expected_conditions.staleness_of(page))
    arrive(driver, fragment)


def shoot(driver: Any, shots: Path, name: str) -> Path:
    path = shots / f"{name}.png"
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1360, min(max(int(height) + 40, 700), 2600))
    assert driver.save_screenshot(str(path))
    driver.set_window_size(1360, 1000)
    print(f"screenshot: {path}")
    return path


def test_every_page_of_a_seeded_workspace_loads_in_a_browser(browser, served, shots):
    from selenium.webdriver.common.by import By

    origin, root, items = served["origin"], served["root"], served["items"]
    browser.get(served["address"])
    assert "atlas" in browser.title
    assert "Use SQLite in WAL mode" in browser.find_element(By.ID, "decisions").text
    tree = browser.find_element(By.ID, "progress")
    assert tree.find_elements(By.CSS_SELECTOR, ".status-done") and tree.find_elements(
        By.CSS_SELECTOR, ".status-blocked"
    )
    assert "Write-ahead log" in browser.find_element(By.ID, "glossary").text
    shoot(browser, shots, "workspace")

    browser.get(f"{origin}/ui/")
    assert str(root) in browser.find_element(By.CSS_SELECTOR, "table.workspaces").text
    shoot(browser, shots, "workspaces")

    browser.get(f"{origin}/ui/item?ws={root}&type=progress&id={items['task']['id']}")
    assert browser.find_elements(By.CSS_SELECTOR, "svg.graph .node")
    shoot(browser, shots, "item")

    browser.get(f"{origin}/ui/item?ws={root}&type=active_context&id=1")
    assert browser.find_elements(By.CSS_SELECTOR, "pre.diff .d-add")
    shoot(browser, shots, "context-history")

    browser.get(f"{origin}/ui/activity?ws={root}")
    assert browser.find_elements(By.CSS_SELECTOR, "ol.timeline li")
    shoot(browser, shots, "activity")

    browser.execute_cdp_cmd(
        "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]}
    )
    try:
        browser.get(served["address"])
        background = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(15, 17, 21)"  # the dark palette
        shoot(browser, shots, "workspace-dark")
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def test_a_decision_leads_to_the_item_it_is_linked_to(browser, served, shots):
    from selenium.webdriver.common.by import By

    browser.get(served["address"])
    follow(browser, browser.find_element(By.LINK_TEXT, "Use SQLite in WAL mode").click, "type=decision")
    assert browser.find_element(By.CSS_SELECTOR, "h1.item-title").text == "Use SQLite in WAL mode"
    shoot(browser, shots, "decision")
    follow(
        browser,
        browser.find_element(By.CSS_SELECTOR, "#links a.linked-item[href*='type=progress']").click,
        "type=progress",
    )
    assert browser.find_element(By.CSS_SELECTOR, "h1.item-title").text == "Build the dashboard"


def test_slash_focuses_search_and_results_highlight_the_words(browser, served, shots):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(served["address"])
    ActionChains(browser).send_keys("/").perform()
    search = browser.find_element(By.ID, "search")
    assert browser.switch_to.active_element == search
    follow(browser, lambda: search.send_keys("readers", Keys.ENTER), "/ui/search")
    marks = browser.find_elements(By.CSS_SELECTOR, ".snippet mark")
    assert marks and marks[0].text.lower() == "readers"
    shoot(browser, shots, "search")
    follow(browser, browser.find_element(By.LINK_TEXT, "Use SQLite in WAL mode").click, "/ui/item")
    assert browser.find_element(By.CSS_SELECTOR, "h1.item-title").text == "Use SQLite in WAL mode"


def test_a_correction_is_saved_and_shows_in_the_history(browser, served, shots):
    from selenium.webdriver.common.by import By

    origin, root = served["origin"], served["root"]
    browser.get(f"{origin}/ui/item?ws={root}&type=active_context&id=1")
    versions = len(browser.find_elements(By.CSS_SELECTOR, "ol.versions > li"))
    content = browser.find_element(By.ID, "f-content")
    content.clear()
    content.send_keys('{"focus": "Review the dashboard screenshots"}')
    follow(browser, browser.find_element(By.ID, "save").click, "/ui/edit")
    review = browser.find_element(By.CSS_SELECTOR, "pre.diff").text
    assert "Review the dashboard screenshots" in review and "Ship the dashboard this week" in review
    shoot(browser, shots, "edit-review")
    follow(browser, browser.find_element(By.ID, "confirm-save").click, "saved=1")
    assert "Saved." in browser.find_element(By.CSS_SELECTOR, ".saved").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "ol.versions > li")) == versions + 1
    newest = browser.find_element(By.CSS_SELECTOR, "ol.versions > li")
    assert "Review the dashboard screenshots" in newest.find_element(By.CSS_SELECTOR, ".d-add").text
    # Who wrote it: the dashboard's user, with the dashboard as the client and the tool it called.
    author = newest.find_element(By.CSS_SELECTOR, ".version-head .author").text
    assert "local" in author and "homeport-dashboard" in author and "update_active_context" in author, author
    older = browser.find_elements(By.CSS_SELECTOR, "ol.versions > li .version-head .author")[1:]
    assert older and all(a.text == "author not recorded" for a in older)  # seeded straight into the store
    shoot(browser, shots, "edited")
    browser.get(f"{origin}/ui/activity?ws={root}")
    assert "homeport-dashboard" in browser.find_element(By.CSS_SELECTOR, "ol.timeline li").text
    shoot(browser, shots, "activity-after-edit")

    browser.get(f"{origin}/ui/item?ws={root}&type=decision&id={served['items']['pipeline']['id']}")
    follow(browser, browser.find_element(By.LINK_TEXT, "Delete…").click, "/ui/delete")
    assert "cannot be undone" in browser.find_element(By.CSS_SELECTOR, ".confirm").text
    shoot(browser, shots, "delete-confirm")
    follow(browser, browser.find_element(By.ID, "confirm-delete").click, "deleted=")
    assert "Every tool call takes one pipeline" not in browser.find_element(By.ID, "decisions").text
    assert browser.find_element(By.CSS_SELECTOR, ".saved").text.startswith("Deleted decision")


@pytest.fixture(scope="module")
def served_with_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`homeport serve --http --auth` with a seeded project that the agent ada may use."""
    from homeport.files.directory import DirectoryFile
    from homeport.files.tokens import TokenStore

    base = tmp_path_factory.mktemp("ui-auth")
    root = make_project(base / "src", "ledger")
    cache = StoreCache()
    try:
        seed_store(cache.get(root, create=True))
    finally:
        cache.close()
    directory = DirectoryFile(base / "data" / "directory.toml")
    directory.add_organization("acme")
    directory.add_agent("acme", "ada")
    directory.add_workspace_root("acme", str(base / "src"))
    token = TokenStore(base / "data" / "tokens.json").add("ada")
    args = ["--auth", "--data-dir", str(base / "data"), "--allow-root", str(base / "src"), "-w", str(root)]
    process = subprocess.Popen(
        [sys.executable, "-m", "homeport", "serve", "--http", "--port", "0", *args],
        cwd=base / "src",
        env=_clean_env(base),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    banner = _first_line(process.stderr)
    try:
        found = re.match(r"homeport 127\.0\.0\.1:(\d+): MCP at ", banner)
        assert found, (banner, process.poll())
        yield {"origin": f"http://127.0.0.1:{found.group(1)}", "root": root, "token": token}
    finally:
        process.terminate()
        process.communicate(timeout=60)


def test_with_auth_a_browser_logs_in_with_a_token_and_gets_a_strict_http_only_cookie(browser, served_with_auth, shots):
    from selenium.webdriver.common.by import By

    origin, root = served_with_auth["origin"], served_with_auth["root"]
    browser.get(f"{origin}/ui/w?ws={root}")
    arrive(browser, "/ui/login")
    assert "homeport_ui" not in _cookies(browser)  # only the pre-session id the form token is bound to
    shoot(browser, shots, "login")
    browser.find_element(By.ID, "token").send_keys("hp_not_a_token")
    follow(browser, browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click, "/ui/login")
    assert "not valid" in browser.find_element(By.CSS_SELECTOR, ".error").text
    browser.find_element(By.ID, "token").send_keys(served_with_auth["token"])
    follow(browser, browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click, "/ui/w")
    assert "Use SQLite in WAL mode" in browser.find_element(By.ID, "decisions").text
    assert "ada" in browser.find_element(By.CSS_SELECTOR, ".who").text
    cookies = _cookies(browser)
    assert set(cookies) == {"homeport_ui", "homeport_ui_browser"}
    for cookie in cookies.values():
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui"
    assert browser.execute_script("return document.cookie") == ""  # out of reach of any script
    follow(browser, browser.find_element(By.CSS_SELECTOR, ".who button").click, "/ui/login")
    assert "homeport_ui" not in _cookies(browser)


def _cookies(driver: Any) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in driver.get_cookies()}
