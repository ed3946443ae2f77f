"""The documentation is the project's own: nothing cites files outside the repository, every cited anchor exists.

Code, tests and docs cite the documentation as ``docs/<page>.md#<anchor>``; this
checks each such citation names an existing page and a section anchor in it
(an explicit ``{#anchor}`` or the slug of a heading), and that no tracked file
points at the design notes or formula sheet that used to live outside the
repository.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# Built from pieces so that this file does not cite them itself.
FORBIDDEN = re.compile("|".join([r"FORMULAS" + r"\.md", r"DESIGN" + r"\.md", r"\.\./" + r"shared/"]))
CITATION = re.compile(r"docs/([\w-]+\.md)(?:#([\w-]+))?")
DOC_LINK = re.compile(r"\]\(([\w-]+\.md)(?:#([\w-]+))?\)")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yml", ".yaml", ".txt", ".cfg", ".ini", ""}


def _tracked_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        files = [ROOT / name for name in out.decode("utf-8").split("\0") if name]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file but the ignored places
        skip = {".git", ".venv", "site", "build", "dist", "__pycache__"}
        files = [
            p for p in ROOT.rglob("*") if p.is_file() and not skip.intersection(p.relative_to(ROOT).parts)
        ]
    return [p for p in files if p.is_file() and p.suffix in TEXT_SUFFIXES]


def _slug(heading: str) -> str:
    """Python-Markdown's default toc slug of a heading."""
    text = re.sub(r"[^\w\s-]", "", heading).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    anchors = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        match = re.match(r"#{1,6}\s+(.*?)\s*(?:\{#([\w-]+)\})?\s*$", line)
        if match:
            title, explicit = match.groups()
            anchors.add(explicit if explicit else _slug(title))
    return anchors


FILES = _tracked_files()
PAGES = {page.name: _anchors(page) for page in DOCS.glob("*.md")}


def test_the_docs_exist():
    for name in (
        "index.md",
        "mechanisms.md",
        "accounting.md",
        "report-format.md",
        "architecture.md",
        "cli.md",
        "adding-a-mechanism.md",
    ):
        assert name in PAGES, name
    assert {"oue", "rappor-epsilon", "numeric", "variance"} <= PAGES["mechanisms.md"]


def test_nothing_cites_files_outside_the_repository():
    offenders = []
    for path in FILES:
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if FORBIDDEN.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def _citations():
    for path in FILES:
        text = path.read_text(encoding="utf-8", errors="replace")
        pattern = DOC_LINK if path.parent == DOCS else CITATION
        for number, line in enumerate(text.splitlines(), 1):
            for match in pattern.finditer(line):
                yield f"{path.relative_to(ROOT)}:{number}", match.group(1), match.group(2)


CITATIONS = list(_citations())


def test_code_cites_the_docs():
    assert sum(1 for where, _, _ in CITATIONS if where.endswith(".py") or ".py:" in where) > 50


@pytest.mark.parametrize("where, page, anchor", CITATIONS)
def test_every_cited_page_and_anchor_exists(where, page, anchor):
    assert page in PAGES, f"{where} cites docs/{page}, which does not exist"
    if anchor is not None:
        assert anchor in PAGES[page], f"{where} cites docs/{page}#{anchor}, which has no such section"
