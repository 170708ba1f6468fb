"""MkDocs hook: pages that say `<!-- include: FILE -->` get that file of the repository root in its place.

SECURITY.md stays where GitHub and security scanners look for it, and the site shows the same text
(never a copy that drifts). Its links are written from the repository root (`docs/x.md`); they are
made relative to the page, and its headings move one level down under the page's own title.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_MARKER = re.compile(r"^<!-- include: ([\w.-]+) -->$", re.M)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    def include(match: re.Match[str]) -> str:
        text = (ROOT / match.group(1)).read_text(encoding="utf-8")
        here = posixpath.dirname(page.file.src_uri)
        text = re.sub(r"\]\(docs/([^)]+)\)", lambda m: "](" + posixpath.relpath(m.group(1), here or ".") + ")", text)
        return re.sub(r"^(#+) ", r"#\1 ", text, flags=re.M)

    return _MARKER.sub(include, markdown)
