"""The forwarding headers' values: an agent's verified claims go to the owner and come back equal."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.errors import InvalidArgumentError
from homeport.mesh.forward_headers import claims_header, forwarded_claims

_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.text(max_size=12), _json, max_size=6))
def test_claims_survive_the_header_unchanged(claims: dict) -> None:
    said = claims_header(claims)
    if not claims:
        assert said is None
        return
    assert said is not None and "\n" not in said and "\r" not in said
    assert forwarded_claims(said) == claims


@pytest.mark.parametrize("value", ["[1, 2]", "groups", '"platform"', "{broken"])
def test_a_header_that_is_not_a_json_object_is_refused(value: str) -> None:
    with pytest.raises(InvalidArgumentError, match="x-homeport-claims"):
        forwarded_claims(value)


def test_no_header_means_no_claims() -> None:
    assert forwarded_claims(None) == {} and forwarded_claims("") == {}
