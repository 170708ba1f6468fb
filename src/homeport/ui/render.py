"""Turning tool results into what a page shows: safe Markdown, diffs, highlighted snippets, a link graph.

Every template is autoescaped; the only markup that reaches a page unescaped is built here from
escaped text (Markdown with raw HTML turned off, `<mark>` around escaped snippet words).
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup, escape

__all__ = ["EdgeLabel", "GraphView", "diff_lines", "environment", "graph_view", "markdown", "snippet", "title_of", "url"]

TEMPLATES = Path(__file__).parent / "templates"

# CommonMark without raw HTML: `<script>` in a context shows as text; javascript: links are dropped.
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def markdown(text: Any) -> Markup:
    """Text as Markdown; a list of texts, numbers or flags as a bulleted list of them; anything else as JSON."""
    if isinstance(text, list) and all(isinstance(v, (str, int, float, bool)) or v is None for v in text):
        items = (_inline(v) if isinstance(v, str) else escape(json.dumps(v)) for v in text)
        return Markup("<ul>{}</ul>").format(Markup("").join(Markup("<li>{}</li>").format(i) for i in items))
    if not isinstance(text, str):
        return Markup("<pre>{}</pre>").format(json.dumps(text, indent=2, ensure_ascii=False))
    return Markup(_MARKDOWN.render(text))  # safe: raw HTML is disabled above


def _inline(text: str) -> Markup:
    return Markup(_MARKDOWN.renderInline(text))  # safe: raw HTML is disabled above


def snippet(hit: Mapping[str, Any]) -> Markup:
    """A search hit's snippet with its `matches` (spans of the snippet) as <mark>, everything else escaped."""
    text, out, last = hit["snippet"], [], 0
    for start, end in hit.get("matches") or ():
        out += [escape(text[last:start]), Markup("<mark>"), escape(text[start:end]), Markup("</mark>")]
        last = end
    out.append(escape(text[last:]))
    return Markup("").join(out)


def url(path: str, **params: Any) -> str:
    query = urlencode({k: v for k, v in params.items() if v is not None and v != ""})
    return f"/ui{path}{'?' + query if query else ''}"


def title_of(item: dict[str, Any]) -> str:
    """The one line that names an item in lists, links and the graph."""
    kind = item.get("type")
    if kind == "decision":
        return str(item.get("summary", ""))
    if kind == "progress":
        return str(item.get("description", ""))
    if kind == "system_pattern":
        return str(item.get("name", ""))
    if kind == "custom_data":
        return f"{item.get('category')} / {item.get('key')}"
    if kind in ("product_context", "active_context"):
        return "Product context" if kind == "product_context" else "Active context"
    return str(item.get("title", ""))


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def diff_lines(old: Any, new: Any) -> list[tuple[str, str]]:
    """(kind, line) of a unified diff between two JSON values (None: there was nothing before):
    kind is add, del, hunk or same."""
    before = [] if old is None else pretty(old).splitlines()
    lines = difflib.unified_diff(before, pretty(new).splitlines(), lineterm="", n=2)
    out = []
    for line in list(lines)[2:]:  # the ---/+++ header says nothing here
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "same")
        out.append((kind, line))
    return out


@dataclass
class GraphNode:
    key: str
    type: str
    id: int
    label: str
    x: float
    y: float
    depth: int
    href: str


@dataclass
class EdgeLabel:
    """Where an edge's relationship is written; `shown` is False when no place along the edge is free of
    node labels (the relationship is then on the edge's hover title only, never drawn over a name)."""

    text: str
    x: float
    y: float
    shown: bool = True


@dataclass
class GraphView:
    width: int
    height: int
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[tuple[GraphNode, GraphNode, str]] = field(default_factory=list)
    edge_labels: list[EdgeLabel] = field(default_factory=list)


Box = tuple[float, float, float, float]  # left, top, right, bottom in the SVG's units

# Text sizes of dashboard.css's graph: node labels 13 px, edge labels 11 px monospace, below/at the baseline.
_NODE_CHAR, _EDGE_CHAR = 7.4, 6.8
_NODE_LABEL_DY = 24  # the node label's baseline below the node's centre (item.html)


def node_boxes(node: GraphNode) -> list[Box]:
    """The areas a node covers: its circle and its label."""
    r = 11 if node.depth == 0 else 8
    half = len(node.label) * _NODE_CHAR / 2
    base = node.y + _NODE_LABEL_DY
    return [(node.x - r, node.y - r, node.x + r, node.y + r), (node.x - half, base - 12, node.x + half, base + 4)]


def edge_label_box(label: EdgeLabel) -> Box:
    half = len(label.text) * _EDGE_CHAR / 2
    return (label.x - half - 2, label.y - 10, label.x + half + 2, label.y + 3)


def overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def place_edge_labels(view: GraphView) -> list[EdgeLabel]:
    """A place for each edge's relationship along its line that covers no node, no node label and no other
    edge label; the middle first, then nearer either end."""
    taken = [box for node in view.nodes for box in node_boxes(node)]
    placed = []
    for a, b, rel in view.edges:
        label = EdgeLabel(rel, round((a.x + b.x) / 2, 1), round((a.y + b.y) / 2 - 4, 1), shown=False)
        for t in (0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74):
            for dy in (-4, 12, -16):
                candidate = EdgeLabel(rel, round(a.x + (b.x - a.x) * t, 1), round(a.y + (b.y - a.y) * t + dy, 1))
                box = edge_label_box(candidate)
                if not any(overlaps(box, other) for other in taken):
                    label = candidate
                    break
            if label.shown:
                break
        if label.shown:
            taken.append(edge_label_box(label))
        placed.append(label)
    return placed


def graph_view(
    ws: str, center: tuple[str, int], center_label: str, linked: list[dict[str, Any]], labels: dict[str, str]
) -> GraphView:
    """A radial layout: the item in the middle, its links on an inner ring, theirs on an outer ring
    beside the item they were reached through."""
    deep = any(x["depth"] > 1 for x in linked)
    width, height = (960, 440) if deep else (960, 300)
    cx, cy = width / 2, height / 2
    view = GraphView(width, height)
    inner, outer = ((0.2, 0.27), (0.4, 0.42)) if deep else ((0.3, 0.34), (0.3, 0.34))
    rings = ((0.0, 0.0), (width * inner[0], height * inner[1]), (width * outer[0], height * outer[1]))
    angles: dict[str, float] = {}

    def place(kind: str, item_id: int, depth: int, angle: float, label: str | None = None) -> GraphNode:
        rx, ry = rings[depth]
        key = f"{kind}:{item_id}"
        angles[key] = angle
        text = label or labels.get(key) or f"{kind.replace('_', ' ')} {item_id}"
        return GraphNode(
            key,
            kind,
            item_id,
            text if len(text) <= 26 else text[:25] + "…",
            round(cx + rx * math.cos(angle), 1),
            round(cy + ry * math.sin(angle), 1),
            depth,
            url("/item", ws=ws, type=kind, id=item_id),
        )

    start = f"{center[0]}:{center[1]}"
    nodes = {start: place(center[0], center[1], 0, 0.0, center_label)}
    first = [x for x in linked if x["depth"] == 1]
    for i, x in enumerate(first):
        # Start upper left, so two neighbours sit on a diagonal rather than on top of each other's labels.
        nodes[f"{x['type']}:{x['id']}"] = place(x["type"], x["id"], 1, -2.4 + 2 * math.pi * i / max(len(first), 1))
    children: dict[str, list[dict[str, Any]]] = {}
    for x in linked:
        if x["depth"] == 2:
            children.setdefault(f"{x['via']['type']}:{x['via']['id']}", []).append(x)
    for parent, group in children.items():
        base = angles.get(parent, 0.0)
        for j, x in enumerate(group):
            # Beside its parent, never on the line through the centre where the parent's label is.
            angle = base + 0.35 + (j - (len(group) - 1) / 2) * 0.45
            nodes[f"{x['type']}:{x['id']}"] = place(x["type"], x["id"], 2, angle)
    view.nodes = list(nodes.values())
    for x in linked:
        via = nodes.get(f"{x['via']['type']}:{x['via']['id']}")
        here = nodes.get(f"{x['type']}:{x['id']}")
        if via is not None and here is not None:
            view.edges.append((via, here, str(x["relationship"])))
    view.edge_labels = place_edge_labels(view)
    return view


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(url=url, title_of=title_of, zip=zip)
    env.filters.update(markdown=markdown, snippet=snippet, pretty=pretty, when=_when)
    return env


def _when(stamp: str | None) -> str:
    """`2026-11-25T16:20:04.123456Z` -> `2026-11-25 16:20 UTC`."""
    if not stamp:
        return "—"
    return f"{stamp[:10]} {stamp[11:16]} UTC" if len(stamp) >= 16 else stamp
