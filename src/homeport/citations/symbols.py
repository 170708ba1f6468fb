"""Named definitions in a source file (`Retry.schedule`), read with tree-sitter grammars from packages.

The grammars are Python packages (the `citations` extra: tree-sitter and tree-sitter-python,
-javascript, -typescript, -go, -rust); nothing is downloaded or compiled at run time. Without them,
or for a language none of them knows, `definitions` returns None: a citation by symbol is refused
when written (cite lines instead), and a line citation records no symbol, so its checks on read
never say "symbol gone".

A definition's name is the dotted path of the definitions that hold it (`Retry.schedule`, a Go
method `Server.Serve` by its receiver's type, a Rust method by its `impl`'s type); its lines are the
node's, decorators included (a Python `decorated_definition`).
"""

from __future__ import annotations

import importlib
import threading
from functools import cache
from typing import Any

__all__ = ["definitions", "enclosing", "language_of"]

# extension -> (module, function returning the language pointer)
_LANGUAGES = {
    ".py": ("tree_sitter_python", "language"),
    ".pyi": ("tree_sitter_python", "language"),
    ".js": ("tree_sitter_javascript", "language"),
    ".mjs": ("tree_sitter_javascript", "language"),
    ".cjs": ("tree_sitter_javascript", "language"),
    ".jsx": ("tree_sitter_javascript", "language"),
    ".ts": ("tree_sitter_typescript", "language_typescript"),
    ".tsx": ("tree_sitter_typescript", "language_tsx"),
    ".go": ("tree_sitter_go", "language"),
    ".rs": ("tree_sitter_rust", "language"),
}
# node type -> the field that names it
_DEFINITIONS = {
    "class_definition": "name",
    "function_definition": "name",
    "class_declaration": "name",
    "abstract_class_declaration": "name",
    "function_declaration": "name",
    "generator_function_declaration": "name",
    "method_definition": "name",
    "interface_declaration": "name",
    "type_alias_declaration": "name",
    "enum_declaration": "name",
    "method_declaration": "name",
    "type_spec": "name",
    "function_item": "name",
    "struct_item": "name",
    "enum_item": "name",
    "trait_item": "name",
    "mod_item": "name",
    "impl_item": "type",
}
_local = threading.local()  # a tree-sitter Parser is not shared between threads


def language_of(path: str) -> str | None:
    """The grammar module for a file's extension, if one is known (installed or not)."""
    dot = path.rfind(".")
    entry = _LANGUAGES.get(path[dot:].lower()) if dot >= 0 else None
    return f"{entry[0]}.{entry[1]}" if entry else None


@cache
def _language(module: str, function: str) -> Any:
    try:
        import tree_sitter

        grammar = importlib.import_module(module)
    except ImportError:
        return None
    return tree_sitter.Language(getattr(grammar, function)())


def _parser(path: str) -> Any:
    dot = path.rfind(".")
    entry = _LANGUAGES.get(path[dot:].lower()) if dot >= 0 else None
    if entry is None:
        return None
    language = _language(*entry)
    if language is None:
        return None
    parsers = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    parser = parsers.get(entry)
    if parser is None:
        import tree_sitter

        parser = parsers[entry] = tree_sitter.Parser(language)
    return parser


def definitions(path: str, data: bytes) -> dict[str, tuple[int, int]] | None:
    """Each definition's dotted name and 1-based lines in the file; None when no parser knows its language.

    A name defined twice (an overload, a redefinition) keeps its first definition.
    """
    parser = _parser(path)
    if parser is None:
        return None
    found: dict[str, tuple[int, int]] = {}
    stack: list[tuple[Any, str]] = [(parser.parse(data).root_node, "")]
    while stack:
        node, prefix = stack.pop()
        below = []
        for child in node.named_children:
            name = _name_of(child)
            if name is None:
                below.append((child, prefix))
                continue
            dotted = f"{prefix}{name}"
            outer = child.parent if child.parent is not None and child.parent.type == "decorated_definition" else child
            found.setdefault(dotted, (outer.start_point[0] + 1, outer.end_point[0] + 1))
            below.append((child, dotted + "."))
        stack.extend(reversed(below))
    return dict(sorted(found.items(), key=lambda item: (item[1][0], item[0])))


def _name_of(node: Any) -> str | None:
    field = _DEFINITIONS.get(node.type)
    if field is None:
        return None
    named = node.child_by_field_name(field)
    if named is None or named.text is None:
        return None
    name: str = named.text.decode("utf-8", "replace")
    if node.type == "method_declaration":  # Go: func (s *Server) Serve() is Server.Serve
        receiver = node.child_by_field_name("receiver")
        if receiver is not None and receiver.text is not None:
            kind = receiver.text.decode("utf-8", "replace").strip("()").split()[-1].lstrip("*")
            kind = kind.split("[", 1)[0]
            return f"{kind}.{name}"
    return name


def enclosing(symbols: dict[str, tuple[int, int]], start: int, end: int) -> str | None:
    """The innermost definition whose lines hold start..end."""
    best: tuple[int, str] | None = None
    for name, (first, last) in symbols.items():
        if first <= start and end <= last and (best is None or last - first < best[0]):
            best = (last - first, name)
    return best[1] if best else None
