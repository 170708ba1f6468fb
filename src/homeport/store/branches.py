"""Where each write is made in git, and which decisions and patterns a reader on a branch sees.

The pipeline opens a `working_in(root)` around every store call (the workspace's directory, None for
a logical workspace): writes inside it record the branch, HEAD commit and work tree
(`place_columns`, read by `versions.record` and `provenance.note`), and a decision or system pattern
first written off the default branch gets a row in `item_branches` (`scope_new_item`). Reads of
those two types drop what the reader may not see (`hidden_ids`) and count it, so the result can say
`hidden_on_other_branches: 3` and why; the rules are `homeport.git.visibility`'s.

    with branches.working_in(root) as place:
        rows = decisions.get_decisions(store)
    place.report()   # {} or {"hidden_on_other_branches": 3, "hidden_why": [...]}

The cost of a read is the point: outside a git work tree nothing is asked; in one, a prepared
`SELECT` of three numbers says whether any item is scoped to a branch at all (none: done). Only then
are HEAD, the default branch and the named branches' tips read from their files, and the hidden set
is kept per store, keyed by those tips and the table's numbers: git itself runs only when a tip
moved, and its answers about fixed commits are kept too (`homeport.git.topology`).
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter, OrderedDict
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update

from homeport.errors import InvalidItemError
from homeport.git import refs
from homeport.git.refs import Location, Repository
from homeport.git.topology import facts_for
from homeport.git.visibility import Origin, View, hidden_because
from homeport.store._common import now
from homeport.store.database import Prepared, Store, driver
from homeport.store.loop_calls import may_wait
from homeport.store.schema import item_branches
from homeport.store.tags import filter_by_tags

__all__ = [
    "SCOPED_TYPES",
    "Place",
    "forget",
    "hidden",
    "hidden_keys",
    "hidden_keys_of",
    "note_hidden",
    "note_matching",
    "place_columns",
    "promote",
    "scope_new_item",
    "without_hidden",
    "working_in",
]

# Coordination (progress, contexts) and reference data (custom data) are shared by every branch.
SCOPED_TYPES = ("decision", "system_pattern")
_NOWHERE = {"branch": None, "head_commit": None, "worktree": None}
_UNSET: Any = object()


@dataclass(slots=True)  # one per call of the pipeline: slots make it cheap to build
class Place:
    """One call's work tree: where its writes are made, what its reads may see, what they hid."""

    root: Path | None
    scoping: bool = True  # new decisions and patterns belong to the branch (not for imports and restores)
    store: Store | None = None  # the call's own store: other workspaces' stores searched with it are not here
    hidden: dict[tuple[str, int], tuple[str | None, str]] | None = None  # item: (branch, reason), once any
    _repo: Any = _UNSET
    _location: Any = _UNSET
    _view: Any = _UNSET

    def repository(self) -> Repository | None:
        if self._repo is _UNSET:
            self._repo = refs.find_repository(self.root) if self.root is not None else None
        repo: Repository | None = self._repo
        return repo

    def location(self) -> Location | None:
        """The branch, HEAD commit and default branch at the call's start (None: not a git work tree)."""
        if self._location is _UNSET:
            repo = self.repository()
            if repo is None:
                self._location = None
            else:
                head = refs.read_head(repo)
                default = refs.default_branch(repo, head) or _configured_default(repo.worktree)
                self._location = Location(head.branch, head.commit, str(repo.worktree), default)
        location: Location | None = self._location
        return location

    @property
    def hidden_on_other_branches(self) -> int:
        return len(self.hidden) if self.hidden else 0

    def report(self) -> dict[str, Any]:
        """What a result adds when reads of the call hid items: the count, and why by branch."""
        if not self.hidden:
            return {}
        location = self.location()
        default = location.default_branch if location else None
        groups = Counter((item_type, branch, reason) for (item_type, _), (branch, reason) in self.hidden.items())
        why = []
        for (item_type, branch, reason), count in sorted(groups.items(), key=lambda kv: (-kv[1], str(kv[0]))):
            named = f"branch {branch}" if branch is not None else "a detached HEAD"
            if reason == "unknown_commit":
                text = f"written on {named} at a commit this clone does not have (fetch it, or promote the branch)"
            else:
                text = f"written on {named}, not merged into {default or 'the default branch'}"
            why.append({"item_type": item_type, "branch": branch, "reason": reason, "count": count, "why": text})
        return {
            "hidden_on_other_branches": self.hidden_on_other_branches,
            "hidden_why": why,
            "branch": location.branch if location else None,
        }


_PLACE: ContextVar[Place | None] = ContextVar("homeport_place", default=None)


class working_in:  # a function to its callers: `with working_in(root) as place`
    """Writes and reads of the store inside the block are made at the git work tree `root` (None: nowhere).

    With `scoping` false, new items are not scoped to the branch (an import, a restored version). With
    `store`, only reads of that store are filtered (a search of other workspaces reads theirs too).
    A class rather than a generator: every call of the pipeline enters one.
    """

    __slots__ = ("_place", "_token")

    def __init__(self, root: Path | None, *, scoping: bool = True, store: Store | None = None) -> None:
        self._place = Place(root, scoping, store)

    def __enter__(self) -> Place:
        self._token = _PLACE.set(self._place)
        return self._place

    def __exit__(self, *_exc: object) -> None:
        _PLACE.reset(self._token)


def place_columns() -> dict[str, Any]:
    """The `branch`, `head_commit` and `worktree` of a write made now (all None outside a work tree)."""
    place = _PLACE.get()
    location = place.location() if place is not None else None
    if location is None:
        return _NOWHERE
    return {"branch": location.branch, "head_commit": location.commit, "worktree": location.worktree}


def scope_new_item(conn: Connection, item_type: str, item_id: int) -> None:
    """Record that a new decision or pattern belongs to the branch it is written on, unless that is the
    default branch (or, with a detached HEAD, a commit already on it): then it is seen everywhere."""
    place = _PLACE.get()
    if place is None or not place.scoping:
        return
    location = place.location()
    repo = place.repository()
    if location is None or repo is None or location.on_default_branch:
        return
    default_tip = refs.branch_tip(repo, location.default_branch) if location.default_branch is not None else None
    if location.commit is not None and default_tip is not None:
        may_wait("git, for the branch a decision is written on")  # a process: never on the event loop
    already_on_default = (
        location.commit is not None
        and default_tip is not None
        and facts_for(repo.common_dir).is_ancestor(location.commit, default_tip)
    )
    if location.branch is None:
        if location.commit is None or already_on_default:
            return  # a detached HEAD on the default branch's history writes as the default branch does
        fresh = False
    else:
        fresh = location.commit is None or already_on_default
    _INSERT.insert(
        conn,
        {
            "id": None,
            "item_type": item_type,
            "item_id": item_id,
            "branch": location.branch,
            "head_commit": location.commit,
            "fresh": fresh,
            "worktree": location.worktree,
            "written_at": now(),
            "promoted_at": None,
        },
    )


def forget(conn: Connection, item_type: str, item_id: int) -> None:
    """A deleted item no longer counts as hidden anywhere (its versions keep where it was written)."""
    if item_type in SCOPED_TYPES:
        c = item_branches.c
        conn.execute(delete(item_branches).where(c.item_type == item_type, c.item_id == item_id))


def promote(store: Store, branch: str) -> dict[str, Any]:
    """Make every decision and pattern written on `branch` visible on every branch; returns how many.

    Raises:
        InvalidItemError: an empty branch name.
    """
    branch = branch.strip()
    if not branch:
        raise InvalidItemError("branch is empty; name the branch whose decisions should be seen everywhere")
    c = item_branches.c
    with store.write() as conn:
        promoted = conn.execute(
            update(item_branches).where(c.branch == branch, c.promoted_at.is_(None)).values(promoted_at=now())
        ).rowcount
        found = conn.execute(select(c.item_type, func.count()).where(c.branch == branch).group_by(c.item_type))
        counts: dict[str, int] = {str(item_type): int(n) for item_type, n in found}
    return {
        "branch": branch,
        "promoted": int(promoted or 0),
        "decisions": int(counts.get("decision", 0)),
        "system_patterns": int(counts.get("system_pattern", 0)),
    }


def hidden(store: Store, conn: Connection, item_type: str) -> dict[int, tuple[str | None, str]]:
    """The `item_type` items the current call's reader may not see: {id: (branch, reason)}.

    Empty outside `working_in`, outside a git work tree, and when no item is scoped to a branch.
    """
    if item_type not in SCOPED_TYPES:
        return {}
    return _verdicts(store, conn).get(item_type, {})


def hidden_keys(store: Store, conn: Connection) -> dict[tuple[str, int], tuple[str | None, str]]:
    """`hidden` for every scoped type at once, keyed by (item type, id): for search hits."""
    return {(t, i): why for t, found in _verdicts(store, conn).items() for i, why in found.items()}


def hidden_keys_of(store: Store | None) -> dict[tuple[str, int], tuple[str | None, str]]:
    """`hidden_keys` in a read of its own (joined to the read open on this thread, if any)."""
    if store is None or not _applies(store):
        return {}
    with store.read() as conn:
        return hidden_keys(store, conn)


def without_hidden(
    hits: list[dict[str, Any]], hidden_items: dict[tuple[str, int], tuple[str | None, str]], limit: int | None = None
) -> list[dict[str, Any]]:
    """The hits (dicts with `type` and `id`) a reader may see, at most `limit`; the others are counted."""
    if not hidden_items:
        return hits if limit is None else hits[:limit]
    kept = []
    for hit in hits:
        key = (str(hit.get("type")), int(hit.get("id") or 0))
        if key in hidden_items:
            _count(key, hidden_items[key])
        else:
            kept.append(hit)
    return kept if limit is None else kept[:limit]


def note_hidden(item_type: str, hidden_items: dict[int, tuple[str | None, str]], ids: Any = None) -> None:
    """Count the hidden items `ids` (default: all of `hidden_items`) in the current call's report."""
    for item_id in hidden_items if ids is None else ids:
        _count((item_type, item_id), hidden_items[item_id])


def _count(key: tuple[str, int], why: tuple[str | None, str]) -> None:
    place = _PLACE.get()
    if place is not None:
        if place.hidden is None:
            place.hidden = {}
        place.hidden[key] = why  # an item hidden by two reads of one call counts once


def _applies(store: Store) -> bool:
    place = _PLACE.get()
    return place is not None and place.root is not None and (place.store is None or place.store is store)


def _verdicts(store: Store, conn: Connection) -> Verdicts:
    place = _PLACE.get()
    if place is None or place.root is None or (place.store is not None and place.store is not store):
        return {}
    if not _any_scoped(conn):  # nothing is scoped to a branch: the common case, one tiny query
        return {}
    stamp = tuple(_STAMP.run(conn).fetchone())
    repo = place.repository()
    if repo is None:
        return {}
    cache = _cache_of(store)
    origins = cache.origins_at(conn, stamp)
    view = _view(place, repo, origins)
    return cache.verdicts(stamp, view, origins, repo)


def note_matching(
    conn: Connection,
    item_type: str,
    id_column: Any,
    hidden_items: dict[int, tuple[str | None, str]],
    tags_any: Sequence[str] | None,
    tags_all: Sequence[str] | None,
) -> None:
    """`note_hidden` for the hidden items a tag-filtered list would have shown (all of them, unfiltered)."""
    if not (tags_any or tags_all):
        note_hidden(item_type, hidden_items)
        return
    stmt = select(id_column).where(id_column.in_(list(hidden_items)))
    stmt = filter_by_tags(stmt, id_column, item_type, tags_any=tags_any, tags_all=tags_all)
    note_hidden(item_type, hidden_items, [row[0] for row in conn.execute(stmt)])


# -- caches

Verdicts = dict[str, dict[int, tuple[str | None, str]]]


class _StoreCache:
    """One store's scoped items (read again when the table changes) and the verdicts of recent views."""

    def __init__(self) -> None:
        self.stamp: tuple[Any, ...] | None = None
        self.origins: dict[tuple[str, int], Origin] = {}
        self.by_view: OrderedDict[tuple[Any, ...], Verdicts] = OrderedDict()
        self.lock = threading.Lock()

    def origins_at(self, conn: Connection, stamp: tuple[Any, ...]) -> dict[tuple[str, int], Origin]:
        if stamp != self.stamp:
            c = item_branches.c
            found = conn.execute(
                select(c.item_type, c.item_id, c.branch, c.head_commit, c.fresh).where(c.promoted_at.is_(None))
            ).all()
            origins = {(r.item_type, r.item_id): Origin(r.branch, r.head_commit, bool(r.fresh)) for r in found}
            with self.lock:
                self.stamp, self.origins = stamp, origins
                self.by_view.clear()
        return self.origins

    def verdicts(
        self, stamp: tuple[Any, ...], view: View, origins: dict[tuple[str, int], Origin], repo: Repository
    ) -> Verdicts:
        key = (stamp, view)
        found = self.by_view.get(key)
        if found is not None:
            return found
        may_wait("git, for what other branches merged")  # processes: never on the event loop
        facts = facts_for(repo.common_dir)
        works = {o.commit for o in origins.values() if o.commit} | {t for _, t in view.tips if t}
        facts.prefetch(works, {c for c in (view.default_tip, view.commit) if c})
        verdicts: Verdicts = {}
        for (item_type, item_id), origin in origins.items():
            reason = hidden_because(origin, view, facts)
            if reason is not None:
                verdicts.setdefault(item_type, {})[item_id] = (origin.branch, reason)
        with self.lock:
            self.by_view[key] = verdicts
            while len(self.by_view) > 16:
                self.by_view.popitem(last=False)
        return verdicts


_caches: weakref.WeakKeyDictionary[Store, _StoreCache] = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def _cache_of(store: Store) -> _StoreCache:
    cache = _caches.get(store)
    if cache is None:
        with _caches_lock:
            cache = _caches.setdefault(store, _StoreCache())
    return cache


def _view(place: Place, repo: Repository, origins: dict[tuple[str, int], Origin]) -> View:
    """Where the reader stands: read once per call (get_context reads several times)."""
    if place._view is _UNSET:
        location = place.location()
        assert location is not None
        default = location.default_branch
        default_tip = refs.branch_tip(repo, default) if default else None
        names = sorted({o.branch for o in origins.values() if o.branch is not None})
        tips = tuple((name, refs.branch_tip(repo, name)) for name in names)
        place._view = View(location.branch, location.commit, default, default_tip, tips)
    view: View = place._view
    return view


def _configured_default(root: Path) -> str | None:
    """`[branches] default` in the project's `.homeport/config.toml`, when git names no default branch."""
    import tomllib

    try:
        document = tomllib.loads((root / ".homeport" / "config.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    table = document.get("branches")
    value = table.get("default") if isinstance(table, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def _any_scoped(conn: Connection) -> bool:
    """Whether any item is scoped and not promoted: on SQLite straight on the driver (0.7 µs, every read)."""
    if conn.dialect.name == "sqlite":
        return driver(conn).execute(_ANY_SQL).fetchone() is not None
    known = conn.info.get("homeport_scoped")  # PostgreSQL: answered with the read's BEGIN (store.postgres)
    if known is not None:
        return bool(known)
    return _ANY.run(conn).first() is not None


_c = item_branches.c
_ANY_SQL = "SELECT 1 FROM item_branches WHERE promoted_at IS NULL LIMIT 1"
_ANY = Prepared(select(_c.id).where(_c.promoted_at.is_(None)).limit(1))
_INSERT = Prepared(insert(item_branches))
# (scoped and not promoted, the newest id, promoted, all): any write, promotion or delete changes it.
_STAMP = Prepared(
    select(
        func.count(_c.id) - func.count(_c.promoted_at),
        func.coalesce(func.max(_c.id), 0),
        func.count(_c.promoted_at),
        func.count(_c.id),
    )
)
