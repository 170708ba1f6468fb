"""Login CSRF (issue 22, finding 14): a page on another local port must not log a person's browser in
as the attacker's token.

The hostile peer is real: a second HTTP server on another localhost port that, on every visit,
fetches the dashboard's login form with its own client (as any local process can), plants the
pre-session cookie it got there in the visitor's browser (cookies are not separated by port), and
answers with a form that posts the attacker's token to the dashboard's login and submits itself.
It is driven first by plain HTTP requests that carry the cross-site Origin a browser sends, then
by chromium itself.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx2 as httpx
import pytest

from homeport.files.directory import DirectoryFile
from homeport.files.tokens import TokenStore

from ._seed import make_project
from .test_dashboard_browser import _clean_env, _first_line, browser  # noqa: F401 - the browser fixture

pytestmark = pytest.mark.slow

SESSION_COOKIE = "homeport_ui"
DEADLINE = 30.0


def _form_fields(page: str) -> dict[str, str]:
    return {
        html.unescape(m.group(1)): html.unescape(m.group(2))
        for m in re.finditer(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page)
    }


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """`homeport serve --http --auth` on a free port; ada is the person, mallory the attacker (both agents)."""
    base = tmp_path_factory.mktemp("login-csrf")
    root = make_project(base / "src", "ledger")
    directory = DirectoryFile(base / "data" / "directory.toml")
    directory.add_organization("acme")
    for agent in ("ada", "mallory"):
        directory.add_agent("acme", agent)
    directory.add_workspace_root("acme", str(base / "src"))
    tokens = TokenStore(base / "data" / "tokens.json")
    issued = {"ada": tokens.add("ada"), "mallory": tokens.add("mallory")}
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
        yield {"origin": f"http://127.0.0.1:{found.group(1)}", "tokens": issued}
    finally:
        process.terminate()
        process.communicate(timeout=60)


@pytest.fixture(scope="module")
def hostile(dashboard: dict[str, Any]) -> Iterator[str]:
    """The attacker's page on another localhost port; its address."""
    login_url = f"{dashboard['origin']}/ui/login"
    attacker_token = dashboard["tokens"]["mallory"]

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            # The attacker's own visit to the login form: its token and whatever cookie came with it.
            with urllib.request.urlopen(login_url, timeout=DEADLINE) as answer:
                fields = _form_fields(answer.read().decode())
                planted = [c.split(";")[0] for c in answer.headers.get_all("Set-Cookie") or []]
            inputs = "".join(
                f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                for k, v in {**fields, "token": attacker_token, "next": "/ui/"}.items()
            )
            body = (
                f'<!doctype html><title>cute cats</title><form id="f" method="post" action="{login_url}">'
                f"{inputs}</form><script>document.getElementById('f').submit()</script>"
            ).encode()
            self.send_response(200)
            for cookie in planted:  # same host, another port: the browser sends these to the dashboard too
                self.send_header("Set-Cookie", f"{cookie}; Path=/ui")
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _replay(page: httpx.Response) -> tuple[str, dict[str, str], dict[str, str]]:
    """What a browser does with the hostile page: the form's action and fields, and the cookies it was given."""
    action = re.search(r'action="([^"]+)"', page.text)
    assert action, page.text
    cookies = dict(c.split(";")[0].split("=", 1) for c in page.headers.get_list("set-cookie"))
    return html.unescape(action.group(1)), _form_fields(page.text), cookies


def arrive(driver: Any, fragment: str) -> None:
    """Wait until the browser is at a URL containing `fragment` and the page has loaded."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, DEADLINE).until(
        lambda d: fragment in d.current_url and d.execute_script("return document.readyState") == "complete"
    )


def test_a_hostile_page_on_another_local_port_cannot_log_the_browser_in(dashboard, hostile):
    with httpx.Client(timeout=DEADLINE) as client:
        action, fields, cookies = _replay(client.get(f"{hostile}/"))
        assert fields["token"] == dashboard["tokens"]["mallory"]
        for name, value in cookies.items():
            client.cookies.set(name, value, domain="127.0.0.1", path="/ui")
        posted = client.post(action, data=fields, headers={"origin": hostile})
    assert posted.status_code == 403, (posted.status_code, posted.headers)
    assert SESSION_COOKIE + "=" not in posted.headers.get("set-cookie", "")


def test_a_localhost_origin_on_another_port_is_refused_even_with_the_browsers_own_form(dashboard):
    with httpx.Client(timeout=DEADLINE) as browser_like:
        form = browser_like.get(f"{dashboard['origin']}/ui/login")
        fields = {**_form_fields(form.text), "token": dashboard["tokens"]["ada"], "next": "/ui/"}
        port = int(dashboard["origin"].rsplit(":", 1)[1])
        for origin in (f"http://localhost:{port + 1}", f"http://127.0.0.1:{port + 1}", "null"):
            refused = browser_like.post(f"{dashboard['origin']}/ui/login", data=fields, headers={"origin": origin})
            assert refused.status_code == 403, origin
            assert SESSION_COOKIE + "=" not in refused.headers.get("set-cookie", ""), origin
        own = {"origin": dashboard["origin"]}
        same = browser_like.post(f"{dashboard['origin']}/ui/login", data=fields, headers=own)
        assert same.status_code == 303 and SESSION_COOKIE + "=" in same.headers.get("set-cookie", "")


def test_a_login_form_token_from_one_browser_is_refused_in_another(dashboard):
    with httpx.Client(timeout=DEADLINE) as attacker, httpx.Client(timeout=DEADLINE) as victim:
        fields = _form_fields(attacker.get(f"{dashboard['origin']}/ui/login").text)
        victim.get(f"{dashboard['origin']}/ui/login")  # the victim has a form of its own
        stolen = {**fields, "token": dashboard["tokens"]["mallory"], "next": "/ui/"}
        refused = victim.post(f"{dashboard['origin']}/ui/login", data=stolen)
        assert refused.status_code == 403
        assert SESSION_COOKIE + "=" not in refused.headers.get("set-cookie", "")
        # No form at all (a cookie-less post) is refused too, and the attacker's own pairing still works.
        assert httpx.post(f"{dashboard['origin']}/ui/login", data=stolen, timeout=DEADLINE).status_code == 403
        assert attacker.post(f"{dashboard['origin']}/ui/login", data=stolen).status_code == 303


def test_in_a_real_browser_the_hostile_page_leaves_it_logged_out(browser, dashboard, hostile):  # noqa: F811
    from selenium.webdriver.common.by import By

    browser.delete_all_cookies()
    browser.get(f"{hostile}/")
    arrive(browser, f"{dashboard['origin']}/ui/")
    names = {c["name"] for c in browser.get_cookies()}
    text = browser.find_element(By.TAG_NAME, "body").text
    assert SESSION_COOKIE not in names, (names, text)
    assert "mallory" not in text
    browser.get(f"{dashboard['origin']}/ui/")
    arrive(browser, "/ui/login")  # still asked to log in
    browser.delete_all_cookies()
