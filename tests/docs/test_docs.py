"""The documentation is the project's own: nothing cites files outside the repository, every cited anchor exists.

Code, tests and docs cite the documentation as ``docs/<page>.md#<anchor>``; this
checks each such citation names an existing page and a section anchor in it
(an explicit ``{#anchor}`` or the slug of a heading), and that no tracked file
points at the design notes or formula sheet that used to live outside the
repository.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
# Built from pieces so that this file does not cite them itself.
FORBIDDEN = re.compile("|".join([r"FORMULAS" + r"\.md", r"DESIGN" + r"\.md", r"\.\./" + r"shared/"]))
CITATION = re.compile(r"docs/((?:[\w-]+/)*[\w-]+\.md)(?:#([\w-]+))?")
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
PAGES = {page.relative_to(DOCS).as_posix(): _anchors(page) for page in DOCS.rglob("*.md")}


def test_the_docs_exist():
    for name in (
        "index.md",
        "mechanisms.md",
        "accounting.md",
        "report-format.md",
        "architecture.md",
        "cli.md",
        "adding-a-mechanism.md",
        "tutorial.md",
        "how-to/choose.md",
        "how-to/budgets.md",
        "how-to/reverse-proxy.md",
        "how-to/postgresql.md",
        "how-to/dask.md",
        "how-to/audit.md",
        "how-to/heavy-hitters.md",
        "reference/http-api.md",
        "reference/typescript.md",
        "privacy-model.md",
        "performance.md",
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


def test_every_cited_page_and_anchor_exists():
    """One test over every citation (a test per citation cost more in pytest's overhead than its check);
    each broken one is named."""
    broken = []
    for where, page, anchor in CITATIONS:
        if page not in PAGES:
            broken.append(f"{where} cites docs/{page}, which does not exist")
        elif anchor is not None and anchor not in PAGES[page]:
            broken.append(f"{where} cites docs/{page}#{anchor}, which has no such section")
    assert CITATIONS and not broken, "\n".join(broken)


def _generator():
    """docs/_ext/generate.py, the script that writes the generated pages, as a module."""
    path = DOCS / "_ext" / "generate.py"
    spec = importlib.util.spec_from_file_location("ldp_docs_generate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_generated_pages_are_current():
    """The API stubs (every public module) and the HTTP API page (the collector's OpenAPI schema) are as
    docs/_ext/generate.py writes them today: a new module, a moved one or a changed route fails here."""
    stale = _generator().stale_pages()
    assert not stale, f"stale generated pages {stale}: run python docs/_ext/generate.py and commit the result"


def test_the_http_api_page_lists_every_route_of_the_schema():
    from ldp.collector.app import create_app

    schema = create_app("sqlite:///:memory:").openapi()
    page = (DOCS / "reference" / "http-api.md").read_text(encoding="utf-8")
    for path, methods in schema["paths"].items():
        for method in methods:
            assert f"## {method.upper()} {path}" in page, f"{method.upper()} {path}"


def test_every_public_module_has_an_api_stub():
    stubs = "\n".join(page.read_text(encoding="utf-8") for page in (DOCS / "api").glob("*.md"))
    for directory, package in _generator().PACKAGE_DIRS.items():
        for path in (ROOT / directory).rglob("*.py"):
            name = path.relative_to(ROOT / directory).with_suffix("").parts
            if any(part.startswith("_") for part in name[:-1]) or name[-1] in {"__main__"}:
                continue
            module = ".".join([package, *name[:-1]] + ([] if name[-1] == "__init__" else [name[-1]]))
            if not name[-1].startswith("_") or name[-1] == "__init__":
                assert f"::: {module}\n" in stubs, f"{module} has no API stub in docs/api/"


def test_the_sizing_page_lists_every_registered_mechanism():
    """docs/how-to/sizing.md quotes benchmarks/bench_sizing.py's bytes per report for every built-in mechanism:
    a mechanism registered since the figures were measured fails here until the table is measured again."""
    from ldp.registry import declarations

    page = (DOCS / "how-to" / "sizing.md").read_text(encoding="utf-8")
    section = page.split("{#bytes}", 1)[1].split("\n#", 1)[0]
    names = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")]
    assert names[0] == "mechanism", "the section's first table is the bytes per report, by mechanism"
    assert sorted(names[1:]) == sorted(d.name for d in declarations(installed=False))
