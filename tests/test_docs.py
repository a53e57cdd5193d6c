"""The documentation stays true: the README's example runs, code excerpts in docs/ match the files
they quote, and relative links point at files that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def code_blocks(path: Path, language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(path.read_text()) if lang == language]


def test_readme_starts_with_the_two_commands():
    first_block = code_blocks(REPO / "README.md", "bash")[0].splitlines()
    assert [line.split("#")[0].strip() for line in first_block] == ["python3 dev.py demo", "python3 dev.py test"]
    assert "python3 dev.py test" in (REPO / ".ci" / "run").read_text().splitlines()


def test_readme_example_runs():
    (example,) = code_blocks(REPO / "README.md", "python")
    assert len(example.splitlines()) <= 25
    result = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "True True"


def quoted_excerpts() -> list[tuple[str, str]]:
    """Code blocks whose first line is a comment naming the repository file they quote."""
    excerpts = []
    for doc in DOCS:
        for _, body in FENCE.findall(doc.read_text()):
            first, _, rest = body.partition("\n")
            if first.startswith("# ") and (REPO / first[2:].strip()).is_file():
                excerpts.append((first[2:].strip(), rest))
    return excerpts


@pytest.mark.parametrize(("source", "excerpt"), quoted_excerpts(), ids=lambda value: value[:40])
def test_doc_excerpts_match_the_files_they_quote(source, excerpt):
    assert excerpt.strip() in (REPO / source).read_text(), f"the excerpt of {source} is out of date"


def test_plugins_doc_quotes_the_example():
    assert {source for source, _ in quoted_excerpts()} >= {
        "examples/oar-plugin-example/pyproject.toml",
        "examples/oar-plugin-example/src/oar_plugin_example/ops.py",
        "examples/oar-plugin-example/src/oar_plugin_example/plugin.py",
    }


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: path.name)
def test_relative_links_resolve(doc):
    targets = [t for t in LINK.findall(doc.read_text()) if "://" not in t and not t.startswith("mailto:")]
    missing = [t for t in targets if not (doc.parent / t).exists()]
    assert not missing, f"{doc.name} links to missing files: {missing}"
