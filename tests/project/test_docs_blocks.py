"""Every Python code block of the probe and monitor pages runs as pasted: alone, in a fresh
namespace, in an empty directory (a user copies one block at a time) — issue 46 touched them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = ("probe.md", "monitor.md")
BLOCKS = [
    (page, index, block)
    for page in PAGES
    for index, block in enumerate(
        re.findall(r"^```python\n(.*?)^```", (DOCS / page).read_text(encoding="utf-8"), re.M | re.S)
    )
]
#: Blocks that need an optional framework, by the name they import.
NEEDS = ("transformers", "lightning")


@pytest.mark.parametrize(("page", "index", "block"), BLOCKS, ids=[f"{p}-{i}" for p, i, _ in BLOCKS])
def test_docs_block_runs_as_pasted(page, index, block, tmp_path, monkeypatch):
    for name in NEEDS:
        if re.search(rf"^(from|import) {name}\b", block, re.M):
            pytest.importorskip(name)
    monkeypatch.chdir(tmp_path)
    exec(compile(block, f"docs/{page} python block {index + 1}", "exec"), {"__name__": "__docs__"})
