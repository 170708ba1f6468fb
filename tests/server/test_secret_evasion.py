"""Trivial disguises do not get a secret past the secret gate (issue 22, #22).

A zero-width character inside a token, fullwidth letters, or a token split between `summary` and
`rationale` used to be written without a word. The property: every secret of the corpus the other
secret tests use, with format characters inserted anywhere, fullwidth-mapped anywhere, and split at
any point between two fields of one item, is refused by a real tool call (`log_decision`,
`log_custom_data`) over MCP; and the corpus's ordinary texts, in any pair of fields, still pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from homeport.core import ServeSettings, build_runtime
from homeport.server import build_server

CORPUS = json.loads((Path(__file__).parents[1] / "fixtures" / "secret_corpus.json").read_text(encoding="utf-8"))
SECRETS = [e["text"] for e in CORPUS["secrets"] if not e.get("missed") and "text" in e]
ORDINARY = [e["text"] for e in CORPUS["ordinary"] if "text" in e]
# Zero-width and other format characters (Unicode category Cf), and the soft hyphen: none is visible.
INVISIBLE = [
    "\u200b",  # zero width space
    "\u200c",  # zero width non-joiner
    "\u200d",  # zero width joiner
    "\u2060",  # word joiner
    "\ufeff",  # zero width no-break space (BOM)
    "\u00ad",  # soft hyphen
    "\u200e",  # left-to-right mark
    "\u202e",  # right-to-left override
    "\u2066",  # left-to-right isolate
    "\u180e",  # mongolian vowel separator
    "\U000e0041",  # tag latin capital letter a
]


class Memory:
    """One server and one MCP client for a whole property, driven from hypothesis's thread."""

    def __init__(self, portal: BlockingPortal, client: Client, root: Path) -> None:
        self.portal, self.client, self.root = portal, client, root

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        return self.portal.call(self.client.call_tool, tool, {**arguments, "workspace": str(self.root)})


@pytest.fixture(scope="module")
def memory(tmp_path_factory) -> Iterator[Memory]:
    base = tmp_path_factory.mktemp("evasion")
    (base / "home").mkdir()
    (base / "alpha" / ".git").mkdir(parents=True)
    runtime = build_runtime(ServeSettings(cwd=Path("/"), home=base / "home"))
    try:
        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(Client(build_server(runtime))) as client,
        ):
            yield Memory(portal, client, base / "alpha")
    finally:
        runtime.close()


def fullwidth(char: str) -> str:
    if char == " ":
        return "\u3000"  # ideographic space
    return chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else char


@st.composite
def disguised(draw: st.DrawFn, text: str) -> str:
    """`text` with some characters fullwidth and invisible characters inserted anywhere."""
    mapped = [fullwidth(c) if draw(st.booleans()) else c for c in text]
    inserts = draw(st.lists(st.tuples(st.integers(0, len(text)), st.sampled_from(INVISIBLE)), max_size=12))
    for position, char in sorted(inserts, reverse=True):
        mapped.insert(position, char)
    return "".join(mapped)


# Two fields of one item, in the order the client sends them, and the first field's length cap.
FIELD_PAIRS = [
    ("log_decision", {}, "summary", "rationale", 1000),
    ("log_decision", {}, "rationale", "summary", 100_000),
    ("log_decision", {"summary": "deploy"}, "rationale", "implementation_details", 100_000),
    ("log_custom_data", {"category": "staging"}, "key", "value", 500),
]


def split_item(pair: tuple[Any, ...], text: str, at: int) -> tuple[str, dict[str, Any]]:
    tool, fixed, first, second, cap = pair
    at = min(at, cap)
    return tool, {**fixed, first: text[:at], second: text[at:]}


@settings(max_examples=200, deadline=None)
@given(data=st.data(), secret=st.sampled_from(SECRETS), pair=st.sampled_from(FIELD_PAIRS))
def test_a_disguised_or_split_secret_is_still_refused_by_a_real_tool_call(memory, data, secret, pair):
    text = data.draw(disguised(secret), label="disguised")
    at = data.draw(st.integers(1, len(text) - 1), label="split at")
    tool, arguments = split_item(pair, text, at)
    r = memory.call(tool, arguments)
    assert r.is_error, f"written: {arguments!r}"
    assert r.structured_content["error"]["code"] == "secret_detected", r.structured_content
    assert not (memory.root / ".homeport").exists()  # nothing written, not even the store


@pytest.mark.parametrize("secret", SECRETS)
@pytest.mark.parametrize(
    "disguise",
    [
        pytest.param(lambda s: s[:12] + "\u200b" + s[12:], id="a zero-width space inside"),
        pytest.param(lambda s: "".join(map(fullwidth, s)), id="fullwidth"),
    ],
)
def test_each_secret_with_one_disguise_is_refused(memory, secret, disguise):
    r = memory.call("log_decision", {"summary": "deploy", "rationale": disguise(secret)})
    assert r.structured_content["error"]["code"] == "secret_detected", secret


@pytest.mark.parametrize("secret", SECRETS)
def test_each_secret_split_between_summary_and_rationale_is_refused(memory, secret):
    middle = len(secret) // 2
    r = memory.call("log_decision", {"summary": secret[:middle], "rationale": secret[middle:]})
    assert r.structured_content["error"]["code"] == "secret_detected", secret


@settings(max_examples=100, deadline=None)
@given(data=st.data(), first=st.sampled_from(ORDINARY), second=st.sampled_from(ORDINARY))
def test_ordinary_texts_in_any_two_fields_are_still_written(memory, data, first, second):
    first = data.draw(st.sampled_from([first, data.draw(disguised(first))]), label="first")
    r = memory.call("log_decision", {"summary": first[:1000], "rationale": second})
    assert not r.is_error, r.structured_content
    r = memory.call("log_custom_data", {"category": "notes", "key": first[:500], "value": second})
    assert not r.is_error, r.structured_content


def test_a_value_too_deep_to_scan_is_refused_not_let_through_or_an_internal_error():
    # The MCP binding caps argument depth first; the shell and imports reach the gate directly.
    from homeport.core.secret_gate import SecretGate
    from homeport.errors import InvalidItemError

    deep: Any = "ghp_CItVzehdJm5gIU7nUKZnv1TlVg1giftkTe0B"
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(InvalidItemError, match="nested too deeply to be checked for secrets"):
        SecretGate("log_custom_data", allowed=True).check({"value": deep})
