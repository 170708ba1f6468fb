"""Read a basic-memory project directory: its Markdown notes, their front matter, observations and relations.

basic-memory writes one note per file:

    ---
    title: Shop Architecture
    type: note
    permalink: shop/architecture/shop-architecture
    tags:
    - architecture
    ---

    Free text.

    ## Observations
    - [pattern] Every external call goes through a service object #services (keeps views thin)

    ## Relations
    - depends_on [[Payment Gateway]]

An observation is a list item `- [category] text #tag (context)`; a relation is a list item
`- relation_type [[Target]]`; both are recognised wherever they stand outside fenced code, as
basic-memory does. A note without front matter is named after its file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from homeport.errors import InvalidItemError

__all__ = ["MAX_FILE_BYTES", "MAX_NOTES", "Note", "Observation", "Project", "Relation", "read_project"]

MAX_FILE_BYTES = 1_000_000
MAX_NOTES = 10_000
_OBSERVATION = re.compile(r"^\s*[-*]\s+\[(?P<category>[^\[\]]+)\]\s+(?P<rest>\S.*?)\s*$")
_RELATION = re.compile(
    r"^\s*[-*]\s+(?P<type>[^\[\]\s][^\[\]]*?)\s+\[\[(?P<target>[^\[\]]+)\]\](?:\s*\((?P<context>[^()]*)\))?\s*$"
)
_CONTEXT = re.compile(r"\s*\((?P<context>[^()]*)\)\s*$")
_TAG = re.compile(r"(?<!\S)#(?P<tag>[\w/-]+)")
_TRAILING_TAGS = re.compile(r"(?:\s+#[\w/-]+)+\s*$")
_SECTION_HEADINGS = frozenset({"## observations", "## relations"})
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass
class Observation:
    category: str
    text: str
    tags: list[str]
    context: str | None
    line: int

    def as_value(self) -> dict[str, Any]:
        return {"category": self.category, "text": self.text, "tags": self.tags, "context": self.context}

    def as_line(self) -> str:
        tags = "".join(f" #{t}" for t in self.tags if f"#{t}" not in self.text)
        context = f" ({self.context})" if self.context else ""
        return f"- [{self.category}] {self.text}{tags}{context}"


@dataclass
class Relation:
    relation_type: str
    target: str
    context: str | None
    line: int


@dataclass
class Note:
    """One note as basic-memory wrote it; `text` is its body without observations and relations."""

    path: str  # relative to the project, with "/"
    title: str
    note_type: str
    permalink: str
    tags: list[str]
    text: str
    observations: list[Observation] = field(default_factory=list)
    relations: list[Relation] = field(default_factory=list)

    @property
    def folder(self) -> str:
        parts = self.path.split("/")
        return parts[0] if len(parts) > 1 else ""

    def names(self) -> list[str]:
        """What a `[[...]]` may call this note by: its title, permalink or path (case-insensitive)."""
        stem = self.path.removesuffix(".md")
        project_less = self.permalink.split("/", 1)[1] if "/" in self.permalink else self.permalink
        return list(dict.fromkeys(n.casefold() for n in (self.title, self.permalink, project_less, stem, self.path)))


@dataclass
class Project:
    """A basic-memory project directory as read, with the files it skipped and why."""

    path: Path
    notes: list[Note] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)

    def texts(self) -> dict[str, Any]:
        """What would be written, by note path, for the secret check."""
        return {
            n.path: {
                "title": n.title,
                "permalink": n.permalink,
                "tags": n.tags,
                "text": n.text,
                "observations": [o.as_line() for o in n.observations],
                "relations": [f"{r.relation_type} {r.target}" for r in n.relations],
            }
            for n in self.notes
        }


def read_project(path: Path, *, within: Path | None = None) -> Project:
    """Every note of the project directory; files that cannot be read are kept in `skipped` with the reason.

    With `within`, a file that resolves outside it (a symlink) is skipped.

    Raises:
        InvalidItemError: `path` is not a directory.
    """
    if not path.is_dir():
        raise InvalidItemError(
            f"{path} is not a directory; pass the basic-memory project's directory (the one holding its notes)"
        )
    project = Project(path)
    files = sorted(_find(path))
    for extra in files[MAX_NOTES:]:
        project.skipped.append({"where": _label(extra, path), "item": "note", "reason": f"over {MAX_NOTES} notes"})
    for file in files[:MAX_NOTES]:
        _read_note(project, file, _label(file, path), within)
    return project


def _find(root: Path) -> list[Path]:
    hits: list[Path] = []
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if not d.startswith(".")]  # .obsidian, .git, basic-memory's own
        hits.extend(Path(directory) / n for n in names if n.endswith(".md") and not n.startswith("."))
    return hits


def _label(path: Path, base: Path) -> str:
    return path.relative_to(base).as_posix()


def _read_note(project: Project, path: Path, label: str, within: Path | None) -> None:
    def skip(why: str) -> None:
        project.skipped.append({"where": label, "item": "note", "reason": why})

    real = Path(os.path.realpath(path))
    if within is not None and real != within and within not in real.parents:
        return skip(f"it resolves to {real}, outside the workspace {within}")
    try:
        if not real.is_file():
            return skip("not a regular file")
        if real.stat().st_size > MAX_FILE_BYTES:
            return skip(f"over {MAX_FILE_BYTES:,} bytes")
        text = real.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return skip(f"cannot be read as UTF-8 text ({exc})")
    try:
        front, body, body_line = _split_front_matter(text)
    except ValueError as exc:
        return skip(str(exc))
    stem = label.removesuffix(".md")
    title = _text(front.get("title")) or Path(stem).name
    note = Note(
        path=label,
        title=title,
        note_type=_text(front.get("type")) or "note",
        permalink=_text(front.get("permalink")) or _permalink(stem),
        tags=_tags(front.get("tags")),
        text="",
    )
    note.text = _parse_body(note, body, body_line)
    project.notes.append(note)


def _split_front_matter(text: str) -> tuple[dict[str, Any], str, int]:
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text, 1
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        raise ValueError("its front matter has no closing --- line")
    import yaml  # here, not at the top: starting the server must not load it

    try:
        front = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        raise ValueError(f"its front matter is not valid YAML{where}") from None
    if front is None:
        front = {}
    if not isinstance(front, dict):
        raise ValueError("its front matter is not a YAML mapping (title: ..., type: ...)")
    return front, "\n".join(lines[end + 1 :]), end + 2


def _parse_body(note: Note, body: str, first_line: int) -> str:
    kept: list[str] = []
    fenced = False
    for offset, line in enumerate(body.splitlines()):
        number = first_line + offset
        if _FENCE.match(line):
            fenced = not fenced
        if not fenced:
            observation = _observation(line, number)
            if observation is not None:
                note.observations.append(observation)
                continue
            relation = _RELATION.match(line)
            if relation is not None:
                target = relation["target"].split("|", 1)[0].strip()
                note.relations.append(Relation(relation["type"].strip(), target, relation["context"], number))
                continue
            if line.strip().casefold() in _SECTION_HEADINGS:
                continue
            if not "".join(kept).strip() and line.strip() == f"# {note.title}":  # a title heading repeats the title
                continue
        kept.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()


def _observation(line: str, number: int) -> Observation | None:
    match = _OBSERVATION.match(line)
    if match is None:
        return None
    category = match["category"].strip()
    if category.casefold() in ("", "x", "-"):  # a task list checkbox, not an observation
        return None
    rest = match["rest"]
    context = None
    found = _CONTEXT.search(rest)
    if found is not None:
        context, rest = found["context"].strip() or None, rest[: found.start()]
    tags = list(dict.fromkeys(m["tag"] for m in _TAG.finditer(rest)))
    text = _TRAILING_TAGS.sub("", rest).strip() or rest.strip()
    return Observation(category, text, tags, context, number)


def _text(value: Any) -> str:
    return str(value).strip() if value is not None and not isinstance(value, (dict, list)) else ""


def _tags(value: Any) -> list[str]:
    if isinstance(value, str):
        items: list[Any] = re.split(r"[,\s]+", value)
    elif isinstance(value, list):
        items = value
    else:
        return []
    return list(dict.fromkeys(str(t).strip().lstrip("#") for t in items if str(t).strip().lstrip("#")))


def _permalink(stem: str) -> str:
    # basic-memory's own rule, near enough: lower case, words joined by hyphens, folders kept.
    return "/".join(re.sub(r"[^\w/]+", "-", part.casefold()).strip("-") for part in stem.split("/"))
