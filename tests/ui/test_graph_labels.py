"""The dashboard's link graph: a relationship is never written over an item's name (a newcomer found edge
labels drawn across node labels), whatever links an item has."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from homeport.ui.render import edge_label_box, graph_view, node_boxes, overlaps

RELATIONSHIPS = ["implements", "blocks", "blocked_by", "superseded_by", "relates_to", "depends_on_the_cache"]
TYPES = ["decision", "progress", "system_pattern", "custom_data"]


def linked(first: list[tuple[str, str, str]], second: list[list[tuple[str, str, str]]]) -> list[dict]:
    out, next_id = [], 100
    for i, (kind, rel, _title) in enumerate(first):
        out.append({"type": kind, "id": i + 1, "depth": 1, "relationship": rel, "via": {"type": "decision", "id": 0}})
        for child_kind, child_rel, _ in second[i] if i < len(second) else []:
            out.append(
                {
                    "type": child_kind,
                    "id": next_id,
                    "depth": 2,
                    "relationship": child_rel,
                    "via": {"type": kind, "id": i + 1},
                }
            )
            next_id += 1
    return out


def labels_for(items: list[dict], titles: list[str]) -> dict[str, str]:
    return {f"{x['type']}:{x['id']}": titles[i % len(titles)] for i, x in enumerate(items)}


def drawn_over_a_name(view) -> list[tuple[str, str]]:
    names = [(n.label, box) for n in view.nodes for box in node_boxes(n)]
    return [
        (label.text, name)
        for label in view.edge_labels
        if label.shown
        for name, box in names
        if overlaps(edge_label_box(label), box)
    ]


def test_the_newcomers_graph_writes_every_relationship_and_none_over_a_name() -> None:
    # The shape a newcomer saw: a decision with three neighbours, one of which has two more.
    items = linked(
        [("system_pattern", "implements", ""), ("progress", "blocks", ""), ("decision", "superseded_by", "")],
        [[("progress", "relates_to", ""), ("custom_data", "implements", "")]],
    )
    titles = ["Retry with backoff in payments", "Ship the retry queue", "Use SQLite WAL for the store"]
    view = graph_view("/w", ("decision", 0), "Use a queue for payment retries", items, labels_for(items, titles))
    assert drawn_over_a_name(view) == []
    assert all(label.shown for label in view.edge_labels)


name = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=40)
edge = st.tuples(st.sampled_from(TYPES), st.sampled_from(RELATIONSHIPS), name)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(edge, min_size=1, max_size=9),
    st.lists(st.lists(edge, max_size=4), max_size=9),
    st.lists(name, min_size=1, max_size=12),
)
def test_no_relationship_is_ever_drawn_over_a_name(first, second, titles) -> None:
    items = linked(first, second)
    view = graph_view("/w", ("decision", 0), titles[0], items, labels_for(items, titles))
    assert drawn_over_a_name(view) == []
    assert len(view.edge_labels) == len(view.edges)  # each edge keeps its relationship, drawn or on hover
