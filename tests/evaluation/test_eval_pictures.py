"""What eval's pictures show: receipts joined to the cache figures, headings, legends, n,
notes instead of empty charts, and PNGs that depend on their own report only."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from PIL import Image

from factories import long_session
from windowkeeper import CompressionConfig, EvalTotals, evaluate
from windowkeeper.cli import app as cli
from windowkeeper.core.messages import dump_jsonl
from windowkeeper.evaluation.html import render_html
from windowkeeper.evaluation.receipts import receipts
from windowkeeper.evaluation.report import EvalReport

CONFIG = CompressionConfig(prune_only_ratio=0.01)


def compacted(rounds: int = 30, name: str = "long") -> EvalReport:
    return evaluate(long_session(rounds=rounds), context_length=16_000, config=CONFIG,
                    name=name)  # fmt: skip


def short() -> EvalReport:
    return evaluate(long_session(rounds=2), context_length=16_000, config=CONFIG, name="short")


def test_every_compaction_has_a_receipt_joined_to_its_cache_break() -> None:
    report = compacted()
    found = receipts(report)
    assert len(report.compactions) >= 2
    assert [r.ordinal for r in found] == [c.ordinal for c in report.compactions]
    assert [(r.before_tokens, r.after_tokens) for r in found] == [
        (c.before_tokens, c.after_tokens) for c in report.compactions
    ]
    with_cache = [r for r in found if r.invalidated_tokens is not None]
    breaks = [b for b in report.cache_breaks if b.compactions]
    assert [(r.invalidated_tokens, r.break_even_requests, r.paid_off) for r in with_cache] == [
        (b.invalidated_tokens, b.break_even_requests, b.paid_off) for b in breaks
    ]
    # each break's figures sit on the last compaction before its request
    assert all(r.request <= b.request for r, b in zip(with_cache, breaks, strict=True))


def test_a_session_without_compactions_has_no_receipt() -> None:
    report = short()
    assert report.compactions == () and receipts(report) == ()


def _tables_with_headings(page: str) -> list[str]:
    """Ids of tables whose nearest preceding element is a heading."""
    return re.findall(r"</h[1-6]>\s*<table id=\"([^\"]+)\"", page)


def test_html_headings_legends_sample_sizes_and_no_empty_charts() -> None:
    reports = [compacted(name="first"), short()]
    page = render_html(reports, EvalTotals.of(reports))
    tables = re.findall(r'<table id="([^"]+)"', page)
    assert "receipts-1" in tables and "receipts-2" not in tables
    assert _tables_with_headings(page) == tables
    receipt_rows = re.search(r'<table id="receipts-1">.*?</table>', page, re.S)
    assert receipt_rows is not None
    assert receipt_rows.group(0).count("<tr>") == len(reports[0].compactions) + 1
    assert f"compaction receipts (n={len(reports[0].compactions)})" in page
    # charts: totals' retention, first session's two; the short one only its replay
    charts = re.findall(r"<svg .*?</svg>", page, re.S)
    assert [re.search(r'class="([^"]+)"', c).group(1) for c in charts] == [  # type: ignore[union-attr]
        "retention-by-age", "context", "retention-by-age", "context",
    ]  # fmt: skip
    for chart in charts:
        assert "<title>" in chart and chart.count("<text") >= 8  # title, ticks, labels
    # the short session (3 requests): each request tick once, none between two requests
    ticks = re.findall(r'text-anchor="middle">([0-9,]+)</text>', charts[3])
    assert ticks == [str(i) for i in range(reports[1].requests)]
    ages = [a for a in reports[0].retention_by_age if a.facts]
    assert all(f"n={a.facts}<" in charts[2] for a in ages)
    assert f"compaction (n={len(reports[0].compactions)})" in charts[1]
    assert "No compaction in this session." in page and "no fact left" in page


def test_a_writer_draws_each_png_exactly_as_a_fresh_one_does(tmp_path: Path) -> None:
    from windowkeeper.evaluation.plot import plot_writer, write_plot

    first, second = compacted(name="first"), short()
    with plot_writer() as writer:
        writer.write(first, tmp_path / "reused-first.png")
        writer.write(second, tmp_path / "reused-second.png")
        writer.write(first, tmp_path / "reused-again.png")
    write_plot(second, tmp_path / "fresh-second.png")
    write_plot(first, tmp_path / "fresh-first.png")
    fresh = (tmp_path / "fresh-first.png").read_bytes()
    assert (tmp_path / "reused-second.png").read_bytes() == (
        tmp_path / "fresh-second.png"
    ).read_bytes()
    assert (tmp_path / "reused-first.png").read_bytes() == fresh
    assert (tmp_path / "reused-again.png").read_bytes() == fresh
    assert fresh != (tmp_path / "fresh-second.png").read_bytes()


def test_piped_eval_prints_a_line_per_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WINDOWKEEPER_COMPRESSION__PRUNE_ONLY_RATIO", "0.01")
    for name, rounds in (("one", 30), ("two", 2)):
        (tmp_path / f"{name}.jsonl").write_text(dump_jsonl(long_session(rounds=rounds)), "utf-8")
    assert not sys.stderr.isatty()
    code = cli.main(["eval", str(tmp_path / "one.jsonl"), str(tmp_path / "two.jsonl"),
                     "--context-length", "16000", "--plot", str(tmp_path / "run.png")])  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 0, err
    lines = err.strip().splitlines()
    assert [line.split(" ")[:2] for line in lines] == [
        ["eval", "1/2"], ["eval", "2/2"], ["plot", "1/2"], ["plot", "2/2"],
    ]  # fmt: skip
    assert lines[1].startswith("eval 2/2 two: ") and lines[1].endswith(" requests, 0 compactions")
    assert lines[3].endswith("run-two.png") and (tmp_path / "run-two.png").is_file()
    code = cli.main(["eval", str(tmp_path / "one.jsonl"), "--context-length", "16000",
                     "--json", "-"])  # fmt: skip
    _, err = capsys.readouterr()
    assert code == 0 and err == ""


def _count_near(image: Image.Image, colour: tuple[int, int, int], box: tuple[int, ...]) -> int:
    """Pixels within a small distance of ``colour`` inside ``box`` (x0, y0, x1, y1)."""
    region = image.crop(box).convert("RGB")
    return sum(n for n, c in region.getcolors(1 << 20) or []
               if sum(abs(a - b) for a, b in zip(c, colour, strict=True)) <= 40)  # fmt: skip


def test_the_png_draws_every_series_and_no_frame_for_an_empty_panel(tmp_path: Path) -> None:
    from windowkeeper.evaluation.plot import write_plot

    write_plot(compacted(name="first"), tmp_path / "long.png")
    write_plot(short(), tmp_path / "short.png")
    long_png, short_png = Image.open(tmp_path / "long.png"), Image.open(tmp_path / "short.png")
    assert long_png.size == short_png.size == (1200, 760)
    assert long_png.convert("RGB").getpixel((3, 3)) == (255, 255, 255)
    replay, ages, bars = (84, 76, 748, 304), (836, 76, 1176, 304), (84, 468, 1176, 668)
    for colour, box in (((0x1F, 0x77, 0xB4), replay), ((0xE6, 0x95, 0x00), replay),
                        ((0xCC, 0x00, 0x00), replay), ((0x2A, 0x9D, 0x3A), ages),
                        ((0xBB, 0xBB, 0xBB), bars), ((0x1F, 0x77, 0xB4), bars),
                        ((0xE6, 0x95, 0x00), bars)):  # fmt: skip
        assert _count_near(long_png, colour, box) > 50, (colour, box)
    # The short session compacted nothing: its two lower panels are notes, not boxes.
    assert _count_near(short_png, (0, 0, 0), (84, 667, 1176, 670)) == 0
    assert _count_near(long_png, (0, 0, 0), (84, 667, 1176, 670)) > 500
    assert _count_near(short_png, (0x2A, 0x9D, 0x3A), ages) == 0
