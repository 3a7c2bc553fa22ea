"""The Python examples of the docs, taken from the pages themselves: each sits between
``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` in a ```python block, and the first fenced
block after it is what it prints. A test runs the code and compares its output with that
block, so a page can only show an example that runs as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Tuple

REPO = Path(__file__).resolve().parents[3]


def example(page: str, name: str) -> Tuple[str, str]:
    """The code of example ``name`` on ``page`` (relative to the repository root) and the
    output the page says it prints. A missing example or output block is an error."""
    text = (REPO / page).read_text()
    found = re.search(rf"<!-- {name}:start -->\n```python\n(.*?)```\n<!-- {name}:end -->\n"
                      r"(.*?)```\n(.*?)```", text, re.S)
    assert found, f"{page} has no example {name!r} followed by its output"
    assert found[2].strip().endswith(":"), \
        f"{page}: the text between example {name!r} and its output must introduce it"
    return found[1], found[3]


def run(code: str, where: str) -> str:
    """What ``code`` prints, run as a script of its own."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, where, "exec"), {"__name__": "__doc_example__"})
    return out.getvalue()
