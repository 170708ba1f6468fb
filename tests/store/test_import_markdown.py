"""Importing agent instruction files: splitting by heading, rules vs instructions, re-imports that follow the file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from homeport.errors import InvalidItemError
from homeport.store import Store
from homeport.store._markdown_sections import is_rule, split_sections
from homeport.store.custom_data import get_custom_data
from homeport.store.import_markdown import import_instructions, read_instructions
from homeport.store.patterns import get_system_patterns, log_system_pattern

FIXTURES = Path(__file__).parents[1] / "fixtures" / "instructions"


@pytest.fixture
def store(tmp_path, copy_store) -> Store:
    s = copy_store(tmp_path / "ws")
    yield s
    s.close()


@pytest.fixture
def project(tmp_path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(FIXTURES, target)
    return target


def test_a_directory_yields_every_instruction_file_split_by_heading(store):
    summary = import_instructions(store, read_instructions(FIXTURES))
    assert sorted(summary["files"]) == [
        ".cursorrules",
        ".github/copilot-instructions.md",
        "AGENTS.md",
        "CLAUDE.md",
        "services/payments/CLAUDE.md",
    ]
    assert summary["created"]["system_pattern"] == 6 and summary["created"]["custom_data"] == 6
    patterns = {p["name"]: p for p in get_system_patterns(store)}
    style = patterns["CLAUDE.md > Code style"]
    assert style["description"].startswith("- Use type hints on every public function\n")
    assert style["description"].endswith("\n\nsource: CLAUDE.md:10")
    assert sorted(style["tags"]) == ["CLAUDE.md", "markdown"]
    # the heading path; a list of "Always/Do not ..." items is a rule
    assert patterns["CLAUDE.md > Architecture > Testing"]["description"].endswith("source: CLAUDE.md:27")
    assert patterns["Coding conventions"]["description"].endswith("source: .github/copilot-instructions.md:5")
    assert {".cursorrules", "Naming"} <= set(patterns)  # every section of .cursorrules is a rule
    checkout = get_custom_data(store, category="ProjectInstructions", key="CLAUDE.md > Architecture > Checkout")[0]
    assert checkout["value"]["source"] == "CLAUDE.md:18"
    assert "# not a heading" in checkout["value"]["text"]  # a code block is text, not a heading
    nested = get_custom_data(store, category="ProjectInstructions", key="Payments service")[0]
    assert nested["value"]["source"] == "services/payments/CLAUDE.md:1"


def test_importing_twice_adds_nothing(store):
    first = import_instructions(store, read_instructions(FIXTURES))
    second = import_instructions(store, read_instructions(FIXTURES))
    assert sum(second["created"].values()) == 0 and second["updated"] == 0 and second["moved"] == 0
    assert second["unchanged"] == sum(first["created"].values())


def test_a_changed_file_updates_the_changed_sections_only(store, project):
    import_instructions(store, read_instructions(project))
    claude = project / "CLAUDE.md"
    text = claude.read_text().replace("Prefer service functions over fat views", "Prefer services; views stay thin")
    claude.write_text("\n" + text.replace("### Testing\n", "### Testing\n\n"))  # every line moves down
    summary = import_instructions(store, read_instructions(project))
    changed = {i["name"]: i["action"] for i in summary["items"] if i["action"] != "unchanged"}
    assert changed == {
        "CLAUDE.md": "moved",
        "CLAUDE.md > Code style": "updated",
        "CLAUDE.md > Commands": "moved",
        "CLAUDE.md > Architecture > Checkout": "moved",
        "CLAUDE.md > Architecture > Testing": "moved",
    }
    assert summary["updated"] == 1 and summary["moved"] == 4 and summary["unchanged"] == 7
    style = next(p for p in get_system_patterns(store) if p["name"] == "CLAUDE.md > Code style")
    assert "Prefer services; views stay thin" in style["description"]
    assert style["description"].endswith("source: CLAUDE.md:11")
    testing = get_custom_data(store, category="ProjectInstructions", key="CLAUDE.md > Commands")[0]
    assert testing["value"]["source"] == "CLAUDE.md:6"


def test_sections_gone_from_the_file_are_reported_stale_and_left_in_place(store, project):
    import_instructions(store, read_instructions(project))
    (project / "AGENTS.md").write_text("# Agent instructions\n\n## Setup\n\nInstall with `uv sync`; Python 3.12.\n")
    summary = import_instructions(store, read_instructions(project))
    assert [(s["type"], s["name"]) for s in summary["stale"]] == [
        ("system_pattern", "Agent instructions > Pull requests")
    ]
    assert "Agent instructions > Pull requests" in {p["name"] for p in get_system_patterns(store)}


def test_an_item_of_the_same_name_not_from_the_file_is_left_alone(store):
    log_system_pattern(store, "Coding conventions", "Our own words")
    summary = import_instructions(store, read_instructions(FIXTURES / ".github" / "copilot-instructions.md"))
    [kept] = summary["skipped"]
    assert kept["item"] == "Coding conventions" and "did not come from the file" in kept["reason"]
    assert next(p for p in get_system_patterns(store) if p["name"] == "Coding conventions")["description"] == (
        "Our own words"
    )


def test_a_dry_run_reports_the_same_and_writes_nothing(store, store_backend):
    dry = import_instructions(store, read_instructions(FIXTURES), dry_run=True)
    assert get_system_patterns(store) == [] and get_custom_data(store) == []
    real = import_instructions(store, read_instructions(FIXTURES))
    if store_backend == "postgres":  # a sequence is not rolled back with the dry run: the real ids come after
        for summary in (dry, real):
            summary["items"] = [{k: v for k, v in item.items() if k != "id"} for item in summary["items"]]
    assert {k: v for k, v in dry.items() if k != "dry_run"} == {k: v for k, v in real.items() if k != "dry_run"}


def test_a_file_outside_the_allowed_directory_is_skipped(project, tmp_path):
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# Secret plans\n\ntext\n")
    (project / "services" / "CLAUDE.md").symlink_to(outside)
    found = read_instructions(project, within=project)
    [skipped] = found.skipped
    assert skipped["where"] == "services/CLAUDE.md" and "outside the workspace" in skipped["reason"]
    with pytest.raises(InvalidItemError):
        read_instructions(project / "services" / "CLAUDE.md", within=project)


def test_same_headings_in_two_files_get_distinct_names(tmp_path):
    (tmp_path / "CLAUDE.md").write_text("## Testing\n\nrun it\n")
    (tmp_path / "AGENTS.md").write_text("## Testing\n\nrun it too\n")
    names = [i.name for i in read_instructions(tmp_path).items]
    assert names == ["Testing", "Testing (CLAUDE.md)"]  # AGENTS.md is read first


_LINE = st.one_of(
    st.text(alphabet="ab #-*`~\t", max_size=12),
    st.sampled_from(["# Top", "## Sub", "### Deep", "```", "~~~", "- Always test", "", "   ", "#", "## "]),
)


@given(st.lists(_LINE, max_size=40))
def test_every_non_blank_line_lands_in_exactly_one_section(lines):
    text = "\n".join(lines)
    sections = split_sections(text)
    held = [n for s in sections for n in s.lines]
    non_blank = {n for n, line in enumerate(text.splitlines(), start=1) if line.strip()}
    assert len(held) == len(set(held))  # no line in two sections
    assert non_blank <= set(held)  # every non-blank line in one
    source = text.splitlines()
    for s in sections:
        assert s.line in s.lines and (s.path or s.text)
        for n in s.lines:  # its text is in the item: in the body, or a heading of its path
            line = source[n - 1].strip()
            assert not line or line in s.text or any(title in line for title in s.path), (n, line)
        is_rule(s, "CLAUDE.md")


def test_any_file_imported_twice_adds_nothing_the_second_time(tmp_path_factory, copy_store, examples):
    @settings(max_examples=examples(25), deadline=None)
    @given(st.lists(_LINE, max_size=30))
    def imported_twice(lines) -> None:
        root = tmp_path_factory.mktemp("ws")
        (root / "CLAUDE.md").write_text("\n".join(lines), encoding="utf-8")
        store = copy_store(root)
        try:
            import_instructions(store, read_instructions(root / "CLAUDE.md"))
            again = import_instructions(store, read_instructions(root / "CLAUDE.md"))
        finally:
            store.close()
        assert sum(again["created"].values()) == 0 and again["updated"] == 0 and again["moved"] == 0

    imported_twice()
