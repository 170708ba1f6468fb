"""The secret detectors on a corpus of fake secrets and of ordinary project text that must pass."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.secret_scan import find_secrets

CORPUS = json.loads((Path(__file__).parent / "fixtures" / "secret_corpus.json").read_text(encoding="utf-8"))


def _value(entry):
    return entry["json"] if "json" in entry else entry["text"]


@pytest.mark.parametrize("entry", [e for e in CORPUS["secrets"] if not e.get("missed")], ids=lambda e: e["label"])
def test_each_fake_secret_is_found_with_its_kind(entry):
    assert entry["kind"] in {f.kind for f in find_secrets({"text": _value(entry)})}


@pytest.mark.parametrize("entry", [e for e in CORPUS["secrets"] if e.get("missed")], ids=lambda e: e["label"])
def test_the_known_misses_are_still_missed(entry):
    # The README lists these; a detector update that finds one should move it to the found list.
    assert find_secrets({"text": _value(entry)}) == []


@pytest.mark.parametrize("entry", CORPUS["ordinary"], ids=lambda e: e["label"])
def test_ordinary_text_passes(entry):
    assert find_secrets({"text": _value(entry)}) == []


def test_findings_name_the_field_and_line_and_never_the_secret():
    key = "ghp_" + "x7Gh2kLmQ9" * 3 + "AbCdEf"
    findings = find_secrets({"items": [{"summary": "ok"}, {"summary": "deploy", "rationale": f"one\ntwo {key}"}]})
    assert [(f.kind, f.field, f.line) for f in findings] == [("GitHub Token", "items[1].rationale", 2)]
    assert key not in repr(findings)


_HEX = st.text(alphabet="0123456789abcdef", min_size=7, max_size=64)


@given(_HEX, st.uuids(), st.binary(min_size=1, max_size=3000))
def test_hashes_uuids_and_base64_images_never_count_as_secrets(digest, an_id, image):
    text = f"sha {digest} id {an_id} {uuid.uuid4().hex} ![x](data:image/png;base64,{base64.b64encode(image).decode()})"
    assert find_secrets({"text": text}) == []


_PROSE = [
    "the",
    "password",
    "is",
    "stored",
    "in",
    "vault",
    "secret",
    "api",
    "key",
    "token",
    "rotate",
    "monthly",
    "never",
    "log",
    "it",
    ":",
    "=",
    "and",
]


@given(st.lists(st.sampled_from(_PROSE), max_size=60))
def test_prose_about_secrets_is_not_a_secret(words):
    assert find_secrets({"text": " ".join(words)}) == []


def test_the_keyword_prefilter_covers_every_word_of_the_detectors_deny_list():
    # The keyword detector runs only on lines holding a stem; a new deny-list word must not slip past it.
    from detect_secrets.plugins.keyword import DENYLIST

    from homeport.secret_scan import _KEYWORD_STEMS

    for word in DENYLIST:
        assert any(stem in word.replace("_?", "") for stem in _KEYWORD_STEMS), word


# Issue 22, #22: trivial disguises. The property over real tool calls is in tests/server/test_secret_evasion.py.
GITHUB = "ghp_CItVzehdJm5gIU7nUKZnv1TlVg1giftkTe0B"


def test_a_token_across_the_boundary_of_two_long_line_slices_is_found():
    for start in range(19_980, 20_001, 4):  # the token straddles character 20,000 of the line
        text = "x " * (start // 2) + GITHUB + " and more"
        assert {f.kind for f in find_secrets({"text": text})} == {"GitHub Token"}, start


def test_a_token_split_between_two_fields_is_named_by_both():
    findings = find_secrets({"summary": "CI pushes with " + GITHUB[:10], "rationale": GITHUB[10:] + " daily"})
    assert [(f.kind, f.field) for f in findings] == [("GitHub Token", "summary+rationale")]


def test_a_token_split_between_two_strings_of_a_list_is_found():
    findings = find_secrets({"observations": ["ok", GITHUB[:20], GITHUB[20:]]})
    assert [f.field for f in findings] == ["observations[1]+observations[2]"]


def test_a_line_break_between_two_fields_keeps_them_apart():
    # "ghp_" ending one field's line and a word starting the next is not one token.
    assert find_secrets({"summary": "prefix ghp_\n", "rationale": GITHUB[4:]}) == []


def test_every_pair_of_ordinary_texts_in_one_item_passes():
    texts = [_value(e) for e in CORPUS["ordinary"]]
    for first in texts:
        for second in texts:
            assert find_secrets({"summary": first, "rationale": second}) == [], (first, second)
            assert find_secrets({"items": [first, second]}) == [], (first, second)


def test_ascii_text_is_scanned_as_it_is_and_other_text_normalised():
    from homeport.secret_scan import normalise

    text = "plain ASCII, as nearly every write"
    assert normalise(text) is text
    assert normalise("\uff47\uff48\uff50\uff3f\u200bx\u00ady\ufeff") == "ghp_xy"


def test_every_format_character_of_this_pythons_unicode_is_removed_before_scanning():
    import sys
    import unicodedata

    from homeport.secret_scan import normalise

    missed = [
        hex(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf" and normalise(chr(c)) != ""
    ]
    assert missed == [], "add these to secret_scan._INVISIBLE"
