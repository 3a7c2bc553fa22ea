"""The README's screenshot, docs/browse.svg, made here from the app: the test fails when the
committed file's text differs from what the app shows now, and writes the new one (commit it;
`make browse-screenshot` writes it without failing)."""

from __future__ import annotations

import asyncio
import html
import os
import re
from pathlib import Path

from conftest import REPO, fresh, type_row
from libloader.browse._app import Browser
from libloader.browse._demo import DEMO_TABLE
from libloader.browse._table import Table, open_readonly

SVG = REPO / "docs" / "browse.svg"


def svg_text(svg: str) -> str:
    """The screenshot's text, line by line: what a reader sees, without the styling."""
    parts = re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)
    return "\n".join(html.unescape(p).replace("\xa0", " ") for p in parts)


def make_screenshot(db: Path) -> str:
    async def run() -> str:
        app = Browser(Table(open_readonly(str(db)), DEMO_TABLE), title="demo.db: events")
        async with app.run_test(size=(120, 24)) as pilot:
            await fresh(pilot, app)
            await type_row(pilot, 500_001)
            await fresh(pilot, app)
            await pilot.press("down", "down")
            await fresh(pilot, app)
            return app.export_screenshot(title="libloader-browse demo.db events")
    return asyncio.run(run())


def test_the_readme_screenshot_is_what_the_app_shows(big_db: Path) -> None:
    svg = make_screenshot(big_db)
    text = svg_text(svg)
    assert "500,003" in text and " fresh " in text and "1,000,000" in text
    old = svg_text(SVG.read_text()) if SVG.exists() else None
    if old != text:
        SVG.write_text(svg)
        if os.environ.get("LIBLOADER_UPDATE_SCREENSHOT") != "1":
            raise AssertionError(f"{SVG} was not what the app shows: rewritten, commit it")
