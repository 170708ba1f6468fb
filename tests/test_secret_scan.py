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
