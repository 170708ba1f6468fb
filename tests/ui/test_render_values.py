"""Context values as a person reads them (issue 27: list values in contexts were shown as raw JSON)."""

from __future__ import annotations

from homeport.ui.render import markdown


def test_a_list_of_texts_is_a_bulleted_list_each_item_escaped_and_rendered() -> None:
    html = str(markdown(["Ship the **dashboard**", "<script>x</script>", "docs"]))
    assert html.startswith("<ul>") and html.count("<li>") == 3
    assert "<strong>dashboard</strong>" in html and "<script>" not in html and "&lt;script&gt;" in html
    assert "[" not in html


def test_a_list_of_numbers_and_flags_is_a_list_too() -> None:
    html = str(markdown([1, 2.5, True, None]))
    assert html.count("<li>") == 4 and "2.5" in html


def test_objects_and_nested_lists_stay_json_where_json_is_the_clearest() -> None:
    assert str(markdown({"a": 1})).startswith("<pre>")
    assert str(markdown([[1, 2], [3]])).startswith("<pre>")
