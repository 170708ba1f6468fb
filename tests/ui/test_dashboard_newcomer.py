"""What a newcomer tripped over in the dashboard (issue 27): no request for a favicon that is not there, the
edit panel titled "Edit", and a search box still usable on a 390 px phone screen."""

from __future__ import annotations

from typing import Any

from .test_dashboard_browser import arrive, browser, served  # noqa: F401  (module fixtures)


def _workspace_page(driver: Any, served: dict[str, Any]) -> None:  # noqa: F811
    driver.get(f"{served['address'].split('/ui/')[0]}/ui/w?ws={served['root']}")
    arrive(driver, "/ui/w")


def test_no_page_makes_the_browser_ask_for_a_missing_favicon(browser, served) -> None:  # noqa: F811
    _workspace_page(browser, served)
    icons = browser.execute_script(
        "return [...document.querySelectorAll('link[rel~=icon]')].map(l => l.getAttribute('href'))"
    )
    # An icon link keeps the browser from asking the server for /favicon.ico (a 404 on every page).
    assert icons and all(href for href in icons), icons


def test_the_edit_panel_is_titled_edit(browser, served) -> None:  # noqa: F811
    item = served["items"]["wal"]["id"]
    browser.get(f"{served['address'].split('/ui/')[0]}/ui/item?ws={served['root']}&type=decision&id={item}")
    arrive(browser, "/ui/item")
    headings = browser.execute_script("return [...document.querySelectorAll('h2')].map(h => h.textContent.trim())")
    assert "Edit" in headings and "Correct" not in headings, headings


def test_on_a_390_px_screen_the_search_box_keeps_room_for_a_query(browser, served) -> None:  # noqa: F811
    browser.set_window_size(390, 844)
    try:
        _workspace_page(browser, served)
        width = browser.execute_script("return document.getElementById('search').getBoundingClientRect().width")
        assert width >= 200, f"the search box is {width:.0f} px wide"
    finally:
        browser.set_window_size(1360, 1000)
