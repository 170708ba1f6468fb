"""Workspace handles are signed: any process with the deployment's secret verifies them, nothing else does."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from homeport.errors import InvalidWorkspaceError
from homeport.workspace import HandleSigner
from homeport.workspace.handles import HANDLE_PREFIX

SECRET = b"the deployment secret, thirty-two bytes or more"
OTHER_SECRET = b"another deployment's secret, also long enough"


def signer(secret: bytes = SECRET, **kw) -> HandleSigner:
    return HandleSigner(lambda: secret, **kw)


principals = st.text(min_size=1, max_size=40)
segments = st.text(st.characters(blacklist_characters="/\x00", blacklist_categories=("Cs",)), min_size=1, max_size=20)
paths = st.lists(segments, min_size=1, max_size=6).map(lambda parts: Path("/", *parts))
roots = st.none() | st.lists(paths, max_size=4).map(tuple)


def refused(handles: HandleSigner, handle: str, principal: str) -> bool:
    with pytest.raises(InvalidWorkspaceError) as caught:
        handles.lookup(handle, principal)
    assert "unknown or expired" in caught.value.message
    return not handles.bound_to_roots(handle, principal)


@given(principal=principals, root=paths, bound=roots)
def test_property_a_handle_names_what_it_was_minted_for_on_any_process_with_the_secret(principal, root, bound):
    handle = signer().mint(principal, root, bound)
    assert handle.startswith(HANDLE_PREFIX) and "/" not in handle
    entry = signer().lookup(handle, principal)  # another process: another signer, the same secret
    assert (entry.principal, entry.root, entry.roots) == (principal, root, bound)
    assert signer().bound_to_roots(handle, principal) is (bound is not None)


@given(principal=principals, other=principals, root=paths, bound=roots)
def test_property_a_handle_is_refused_to_every_other_principal(principal, other, root, bound):
    assume(other != principal)
    handles = signer()
    handle = handles.mint(principal, root, bound)
    handles.lookup(handle, principal)  # verified (and remembered) for its own principal first
    assert refused(handles, handle, other)


@given(root=paths, bound=roots)
def test_property_a_handle_of_another_deployment_is_refused(root, bound):
    assert refused(signer(), signer(OTHER_SECRET).mint("alice", root, bound), "alice")


@given(root=paths, bound=roots, data=st.data())
def test_property_a_handle_changed_anywhere_is_refused(root, bound, data):
    handle = signer().mint("alice", root, bound)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    at = data.draw(st.integers(len(HANDLE_PREFIX), len(handle) - 1))
    replacement = data.draw(st.sampled_from(alphabet).filter(lambda c: c != handle[at]))
    assert refused(signer(), handle[:at] + replacement + handle[at + 1 :], "alice")


@given(root=paths, cut=st.integers(1, 40))
def test_property_a_truncated_or_extended_handle_is_refused(root, cut):
    handle = signer().mint("alice", root)
    assert refused(signer(), handle[: max(len(HANDLE_PREFIX), len(handle) - cut)], "alice")
    assert refused(signer(), handle + "A" * cut, "alice")


def test_a_forged_body_under_a_copied_mac_is_refused(tmp_path):
    real = signer().mint("alice", tmp_path / "mine")
    raw = base64.urlsafe_b64decode(real[3:] + "=" * (-len(real[3:]) % 4))
    forged_body = bytes([1]) + b'["/etc",null,99999999999]'
    forged = HANDLE_PREFIX + base64.urlsafe_b64encode(raw[:16] + forged_body).decode().rstrip("=")
    assert refused(signer(), forged, "alice")


def test_another_spelling_of_the_same_bytes_is_refused(tmp_path):
    handle = signer().mint("alice", tmp_path)
    assert refused(signer(), handle + "==", "alice")  # padding this code never writes


def test_handles_expire_for_every_process_at_the_same_moment(tmp_path):
    now = [1_000_000.0]
    minting = signer(ttl_seconds=60, clock=lambda: now[0])
    handle = minting.mint("alice", tmp_path)
    verifying = signer(ttl_seconds=3600, clock=lambda: now[0])  # the expiry is in the handle, not the verifier
    now[0] += 59
    assert verifying.lookup(handle, "alice").root == tmp_path
    now[0] += 1
    assert refused(verifying, handle, "alice")


@pytest.mark.parametrize("value", ["ws_", "ws_!!!", "ws_AAAA", "ws_" + "A" * 200, "ws_a/b", "nothandle"])
def test_garbage_is_refused_alike(value):
    with pytest.raises(InvalidWorkspaceError, match="unknown or expired"):
        signer().lookup(value, "alice")
    assert not signer().bound_to_roots(value, "alice")


def test_the_secret_is_read_once_and_only_when_a_handle_is_used(tmp_path):
    reads = []

    def secret() -> bytes:
        reads.append(1)
        return SECRET

    handles = HandleSigner(secret)
    assert reads == []
    handle = handles.mint("alice", tmp_path)
    handles.lookup(handle, "alice")
    handles.bound_to_roots(handle, "alice")
    assert reads == [1]


def test_a_handle_of_a_deep_path_with_roots_stays_short_enough_to_pass_on_every_call():
    root = Path("/home/someone/src/github.com/acme/platform/services/billing-api")
    handle = signer().mint("agent-7", root, (Path("/home/someone/src"), Path("/home/someone/notes")))
    # What an agent repeats on every call: about a hundred tokens would be a cost worth noticing.
    assert len(handle) <= 170, len(handle)
