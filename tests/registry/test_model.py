"""The registry's pure decisions: port choice, claim/release/prune, and the file format."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from homeport.errors import RegistryError
from homeport.registry import Owner, RegistryState, choose_port, claim, decode_state, encode_state, owner_for, prune
from homeport.registry import release as release_pid

FIRST, LAST = 28001, 28040
ports = st.integers(FIRST, LAST)
port_sets = st.frozensets(ports, max_size=40)
roots = st.sampled_from(["/src/api", "/src/web", "/src/api/sub", "/work/x", "/src"])


def owners(pid=None):
    return st.builds(
        lambda p, port, t, auth: Owner(f"http://127.0.0.1:{port}", p, t, "0.1.0", auth),
        pid if pid is not None else st.integers(1, 6),
        ports,
        st.floats(0, 2e9, allow_nan=False),
        st.booleans(),
    )


states = st.builds(
    RegistryState, st.dictionaries(roots, owners(), max_size=5), st.dictionaries(roots, ports, max_size=5)
)


@given(requested=ports, remembered=st.lists(ports, max_size=4), held=port_sets, promised=port_sets, busy=port_sets)
def test_a_requested_port_always_wins(requested, remembered, held, promised, busy):
    chosen = choose_port(
        requested=requested, remembered=remembered, held=held, promised=promised, is_free=lambda p: p not in busy
    )
    assert chosen == requested


@given(remembered=st.lists(ports, max_size=4), held=port_sets, promised=port_sets, busy=port_sets)
def test_the_chosen_port_is_free_unheld_and_the_best_available(remembered, held, promised, busy):
    def free(p):
        return p not in busy

    try:
        chosen = choose_port(
            requested=None, remembered=remembered, held=held, promised=promised, is_free=free, first=FIRST, last=LAST
        )
    except RegistryError:
        assert all(p in held or p in busy for p in range(FIRST, LAST + 1))
        return
    assert free(chosen) and chosen not in held
    usable_remembered = [p for p in remembered if p not in held and free(p)]
    if usable_remembered:
        assert chosen == usable_remembered[0]
        return
    unpromised = [p for p in range(FIRST, LAST + 1) if p not in held and p not in promised and free(p)]
    if unpromised:
        assert chosen == unpromised[0]
    else:
        assert chosen == min(p for p in range(FIRST, LAST + 1) if p not in held and free(p))


def test_a_busy_remembered_port_moves_to_the_next_free_one_from_the_first():
    chosen = choose_port(requested=None, remembered=[28001], held=set(), promised=set(), is_free=lambda p: p != 28001)
    assert chosen == 28002


@given(state=states, dead=st.frozensets(st.integers(1, 6)))
def test_prune_keeps_exactly_the_live_owners_and_every_remembered_port(state, dead):
    calls: list[int] = []

    def live(owner):
        calls.append(owner.pid)
        return owner.pid not in dead

    pruned = prune(state, live)
    assert pruned.owners == {r: o for r, o in state.owners.items() if o.pid not in dead}
    assert pruned.ports == state.ports
    assert len(calls) == len({(o.pid, o.endpoint) for o in state.owners.values()})  # each instance probed once
    assert prune(pruned, live) == pruned


@given(state=states, mine=st.lists(roots, min_size=1, max_size=3, unique=True), owner=owners(st.just(99)))
def test_claim_then_release_hands_back_the_others_and_remembers_the_port(state, mine, owner):
    claimed = claim(state, mine, owner)
    assert all(claimed.owners[r] == owner and claimed.ports[r] == owner.port for r in mine)
    assert {r: o for r, o in claimed.owners.items() if r not in mine} == {
        r: o for r, o in state.owners.items() if r not in mine
    }
    released = release_pid(claimed, 99)
    assert all(o.pid != 99 for o in released.owners.values())
    assert all(released.ports[r] == owner.port for r in mine)


@given(state=states)
def test_the_file_format_round_trips(state):
    assert decode_state(encode_state(state)) == state


@given(text=st.text(max_size=200) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_any_garbage_is_a_registry_error_or_a_registry(text):
    with contextlib.suppress(RegistryError):
        decode_state(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"version": 1, "owners": {"/a": {"endpoint": "x"}}}',
        '{"version": 2}',
        "[1]",
        '{"version": 1, "ports": {"/a": 0}}',
    ],
)
def test_malformed_registries_are_refused(text):
    with pytest.raises(RegistryError):
        decode_state(text)


def test_the_deepest_owned_directory_owns_a_workspace():
    folder = Owner("http://127.0.0.1:50001", 1, 0.0, "0.1.0")
    project = Owner("http://127.0.0.1:50002", 2, 0.0, "0.1.0")
    state = RegistryState({"/src": folder, "/src/api": project})
    assert owner_for(state, "/src/api/lib") == ("/src/api", project)
    assert owner_for(state, "/src/web") == ("/src", folder)
    assert owner_for(state, "/src-evil") is None


segments = st.sampled_from(["src", "api", "web", "api-evil", "lib"])
paths = st.lists(segments, min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))


@given(owned=st.dictionaries(paths, owners(), max_size=6), root=paths)
def test_the_owner_of_a_path_is_the_deepest_owned_directory_containing_it_by_components(owned, root):
    def contains(directory: str, path: str) -> bool:
        return path.split("/")[: len(directory.split("/"))] == directory.split("/")

    found = owner_for(RegistryState(owned), root)
    containing = [d for d in owned if contains(d, root)]
    if not containing:
        assert found is None
        return
    assert found is not None
    assert found[0] == max(containing, key=lambda d: len(d.split("/")))
    assert found[1] == owned[found[0]]


def test_an_entry_names_no_token_file_and_an_old_token_ref_only_says_the_owner_requires_an_agent():
    entry = {"endpoint": "http://127.0.0.1:50001", "pid": 7, "started_at": 0.0, "version": "0.1.0"}
    old = Owner.from_json({**entry, "token_ref": "/home/ada/.ssh/id_ed25519"})
    assert old.auth is True and "/home/ada" not in json.dumps(old.to_json())
    assert Owner.from_json(entry).auth is False
    assert Owner.from_json({**entry, "auth": True}).to_json()["auth"] is True
