"""The --html page: validated structurally, and opened in headless Chromium.

The browser test renders the page, takes a screenshot and finds the tables in it by their
header colour (``HEADER_RGB``): one horizontal band of that colour per table. It also
reads the rendered DOM (``--dump-dom``). It is skipped when Debian's ``chromium`` is not
installed (``.ci/run`` installs it where it can).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from factories import long_session
from windowkeeper import CompressionConfig, EvalTotals, evaluate
from windowkeeper.evaluation.html import HEADER_RGB, render_html

TABLES = ("totals", "by-kind", "by-age", "cache", "sessions", "session-1", "receipts-1",
          "session-2", "receipts-2")  # fmt: skip
VOID = {"meta", "br", "img", "hr", "input", "link", "polyline", "line", "circle"}


def page() -> str:
    # Summary compactions (pruning alone is given a target it cannot reach), so every
    # table of the page has rows to show.
    config = CompressionConfig(prune_only_ratio=0.01)
    reports = [
        evaluate(long_session(rounds=30), context_length=16_000, config=config, name="first"),
        evaluate(long_session(rounds=20), context_length=16_000, config=config, name="second"),
    ]
    return render_html(reports, EvalTotals.of(reports))


class _Structure(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.tables: dict[str, list[int]] = {}  # id -> [header cells, body rows]
        self.current: str | None = None
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.current = dict(attrs).get("id") or "?"
            self.tables[self.current] = [0, 0]
        elif tag == "th" and self.current:
            self.tables[self.current][0] += 1
        elif tag == "tr" and self.current and "tbody" in self.stack:
            self.tables[self.current][1] += 1
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """Self-closed SVG elements open and close at once."""

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        if tag == "table":
            self.current = None


def test_page_is_well_formed_with_every_table() -> None:
    parser = _Structure()
    parser.feed(page())
    parser.close()
    assert parser.problems == [] and parser.stack == []
    assert set(TABLES) <= set(parser.tables)
    for table_id, (headers, rows) in parser.tables.items():
        assert headers >= 2 and rows >= 1, table_id


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    return found


def _browser(binary: str, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [
                binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
                *args, url,
            ],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip


def header_bands(image: Image.Image) -> list[tuple[int, int]]:
    """(top, height) of each horizontal band whose rows hold >= 80 header-coloured pixels."""
    rgb = image.convert("RGB")
    width, height = rgb.size
    pixels = rgb.load()
    assert pixels is not None
    rows = [sum(pixels[x, y] == HEADER_RGB for x in range(0, width, 2)) >= 40
            for y in range(height)]  # fmt: skip
    bands: list[tuple[int, int]] = []
    for y, hit in enumerate(rows):
        if hit and (y == 0 or not rows[y - 1]):
            bands.append((y, 1))
        elif hit:
            bands[-1] = (bands[-1][0], bands[-1][1] + 1)
    return bands


def test_page_renders_its_tables_in_headless_chromium(tmp_path: Path) -> None:
    binary = _chromium()
    html = tmp_path / "eval.html"
    html.write_text(page(), encoding="utf-8")
    shot = tmp_path / "shot.png"
    done = _browser(binary, html.as_uri(), f"--screenshot={shot}", "--window-size=1280,6000")
    assert shot.is_file(), done.stderr[-2000:]
    with Image.open(shot) as image:
        bands = header_bands(image)
    # One header band per table, in page order, each a header row's height (~30 px).
    assert len(bands) == len(TABLES), bands
    assert all(15 <= h <= 60 for _, h in bands), bands
    assert [top for top, _ in bands] == sorted(top for top, _ in bands)
    dom = _browser(binary, html.as_uri(), "--dump-dom").stdout
    for table_id in TABLES:
        assert f'<table id="{table_id}">' in dom
    assert dom.count("<svg") == 5  # retention by age in total, and two charts per session
