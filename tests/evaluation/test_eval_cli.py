"""``windowkeeper eval``: tables, --json, --plot, --html, folders, one-line errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from factories import long_session
from windowkeeper import CompressionConfig, evaluate
from windowkeeper.cli import app as cli
from windowkeeper.core.messages import dump_jsonl

pytestmark = pytest.mark.usefixtures("summary_tier")


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    path = tmp_path / "long.jsonl"
    path.write_text(dump_jsonl(long_session(rounds=30)), encoding="utf-8")
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_tables_on_the_terminal(session_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["eval", str(session_file), "--context-length", "16000"], capsys)
    assert code == 0, err
    for title in ("Sessions", "Tokens and prompt cache", "Retention by kind", "Retention by age"):
        assert title in out
    assert "long" in out and "cumulative prompt tokens" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_json_has_every_figure(
    session_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "eval.json"
    code, _, err = run(
        ["eval", str(session_file), "--context-length", "16000", "--json", str(target)], capsys
    )
    assert code == 0, err
    data = json.loads(target.read_text(encoding="utf-8"))
    summary_only = CompressionConfig(prune_only_ratio=0.01)  # as the summary_tier fixture
    expected = evaluate(
        long_session(rounds=30), context_length=16_000, config=summary_only, name="long"
    ).to_dict()
    (session,) = data["sessions"]
    for key in ("tokens", "retention"):
        figures = {k: v for k, v in session[key].items() if k != "compacting_ms"}
        assert figures == {k: v for k, v in expected[key].items() if k != "compacting_ms"}
    assert data["total"]["retention"]["facts"] == expected["retention"]["facts"] > 0
    assert data["total"]["tokens"]["compactions"] == len(expected["compactions"])


def test_json_to_stdout_prints_only_json(
    session_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["eval", str(session_file), "--context-length", "16000", "--json", "-"],
                       capsys)  # fmt: skip
    assert code == 0
    assert json.loads(out)["total"]["sessions"] == 1


def test_a_folder_is_searched_and_non_transcripts_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "runs"
    (folder / "nested").mkdir(parents=True)
    (folder / "a.jsonl").write_text(dump_jsonl(long_session(rounds=12)), encoding="utf-8")
    (folder / "nested" / "b.jsonl").write_text(dump_jsonl(long_session(rounds=8)), "utf-8")
    (folder / "a.meta.json").write_text('{"name": "a"}', encoding="utf-8")
    (folder / "notes.json").write_text('{"not": "a transcript"}', encoding="utf-8")
    code, out, err = run(["eval", str(folder), "--context-length", "16000", "--json", "-"],
                         capsys)  # fmt: skip
    assert code == 0, err
    assert [s["name"] for s in json.loads(out)["sessions"]] == ["a", "b"]
    assert "skipped" in err and "notes.json" in err and "a.meta.json" not in err


def test_plot_png_per_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, rounds in (("one", 30), ("two", 20)):
        (tmp_path / f"{name}.jsonl").write_text(dump_jsonl(long_session(rounds=rounds)), "utf-8")
    single = tmp_path / "single.png"
    code, _, err = run(["eval", str(tmp_path / "one.jsonl"), "--context-length", "16000",
                        "--plot", str(single)], capsys)  # fmt: skip
    assert code == 0, err
    assert single.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    many = tmp_path / "out" / "runs.png"
    many.parent.mkdir()
    code, _, err = run(["eval", str(tmp_path / "one.jsonl"), str(tmp_path / "two.jsonl"),
                        "--context-length", "16000", "--plot", str(many)], capsys)  # fmt: skip
    assert code == 0, err
    assert sorted(p.name for p in many.parent.iterdir()) == ["runs-one.png", "runs-two.png"]


def test_html_page_is_written(session_file: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    page = tmp_path / "eval.html"
    code, _, err = run(["eval", str(session_file), "--context-length", "16000",
                        "--html", str(page)], capsys)  # fmt: skip
    assert code == 0, err
    html = page.read_text(encoding="utf-8")
    for table in ("totals", "by-kind", "by-age", "cache", "sessions", "session-1"):
        assert f'<table id="{table}">' in html
    assert "<script" not in html and "http" not in html.replace('"http://www.w3.org/2000/svg"', "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--context-length", "0"], "--context-length must be a positive integer"),
        (["--context-length", "16000", "--cache-read-price", "-1"], "must be >= 0"),
        (["--context-length", "16000", "--max-tokens", "-5"], "--max-tokens must be >= 0"),
        (["--context-length", "16000", "--summarizer", "magic"], "--summarizer must be"),
        ([], "the context window"),
    ],
)
def test_bad_options_are_one_line(
    session_file: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["eval", str(session_file), *args], capsys)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err and len(err.strip().splitlines()) == 1


def test_missing_or_invalid_named_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["eval", str(tmp_path / "nope.jsonl"), "--context-length", "9000"], capsys)
    assert code == 2 and err.startswith("error: ") and "Traceback" not in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "hi"}\n{oops\n', encoding="utf-8")
    code, _, err = run(["eval", str(bad), "--context-length", "9000"], capsys)
    assert code == 2 and "line 2" in err


def test_an_empty_folder_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["eval", str(tmp_path), "--context-length", "9000"], capsys)
    assert code == 2 and "no transcript found" in err


def test_the_demo_ends_with_a_three_line_eval_of_its_session(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from windowkeeper.cli.demo_view import DEMO_TOOLS, load_demo_session

    code, out, _ = run(["demo"], capsys)
    assert code == 0
    first, cache, second = out.rstrip("\n").splitlines()[-3:]
    # The cache line says it in words: which compaction paid back after how many requests.
    assert cache.startswith("prompt cache: ") and "/" not in cache and len(cache) <= 80
    evens = [b.break_even_requests for b in
             evaluate(load_demo_session(), context_length=32_000, tools=DEMO_TOOLS).cache_breaks
             if b.break_even_requests]  # fmt: skip
    assert all(str(n) in cache for n in evens) and ("paid back after" in cache) == bool(evens)
    report = evaluate(load_demo_session(), context_length=32_000, tools=DEMO_TOOLS)
    assert first.startswith(f"eval: {report.requests} requests, {len(report.compactions)} ")
    files = next(k for k in report.retention_by_kind if k.kind.value == "file")
    assert second.startswith(f"still findable: files {files.kept_at_end}/{files.facts}, ")
    assert len(first) <= 80 and len(second) <= 80


def test_outputs_are_checked_before_the_run(
    session_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    args = ["eval", str(session_file), "--context-length", "16000"]
    code, out, err = run([*args, "--html", str(tmp_path / "missing" / "x.html")], capsys)
    assert code == 2 and out == "" and "no folder" in err
    code, out, err = run([*args, "--plot", str(tmp_path / "missing" / "x.png")], capsys)
    assert code == 2 and out == "" and "no folder" in err
    # The PNGs need only Pillow (a core dependency), not the plot extra's matplotlib.
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, out, err = run([*args, "--plot", str(tmp_path / "x.png")], capsys)
    assert code == 0, err
    assert (tmp_path / "x.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _deep_arguments_session(depth: int) -> str:
    call = {"id": "c0", "type": "function",
            "function": {"name": "bash", "arguments": "[" * depth + "]" * depth}}  # fmt: skip
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "content": "done " * 200},
        *long_session(rounds=8)[1:],
    ]
    return "\n".join(json.dumps(m) for m in messages) + "\n"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # 5,000-deep tool-call arguments are text the model wrote: both commands run.
        ("deep-arguments", _deep_arguments_session(5000)),
        # A message itself nested 5,000 deep is refused by both, in one line.
        ("deep-message", '{"role": "user", "content": ' + "[" * 5000 + "]" * 5000 + "}\n"),
    ],
)
def test_eval_exits_like_compress_on_deep_input(
    name: str, text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / f"{name}.jsonl"
    path.write_text(text, encoding="utf-8")
    window = ["--context-length", "8000"]
    compress = run(["compress", str(path), *window, "-o", str(tmp_path / "out.jsonl")], capsys)
    evaluated = run(["eval", str(path), *window], capsys)
    assert evaluated[0] == compress[0] == (0 if name == "deep-arguments" else 2)
    assert "RecursionError" not in evaluated[2]
    if evaluated[0] == 2:
        assert evaluated[2].count("\n") == 1 and evaluated[2].startswith("error: ")
    else:
        assert "Sessions" in evaluated[1]
