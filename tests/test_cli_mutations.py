"""The command line over mutated sessions (issue 10): never a traceback; every defect is one
``error:`` line with exit code 2, or is repaired with a ``warning:`` line.

Each mutation (:mod:`windowkeeper.testing.mutations`) is applied to real sessions
(``../shared/data/sessions``, skipped when absent; every 4th one unless
``WINDOWKEEPER_ALL_MUTATIONS=1``) and to synthetic ones that always run: drop a line,
duplicate one, swap two, corrupt one (cut, garbage bytes, not a message, a wrong role),
nest one 100,000 levels deep (content) or 5,000 deep (tool arguments), put a 5,000-digit
integer literal in one, break the file (empty, truncated, BOM and CRLF), a 1.5 MB line,
orphan results, calls without results, malformed calls, odd contents. An exit-0
``compress`` output must pass :func:`violations` (issue 25 point 2).
``scripts/cli_mutations.py`` runs every command over them in every input shape.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from factories import long_session, system, user
from realdata import real_session_paths
from windowkeeper.adapters.formats import load_conversation
from windowkeeper.cli.app import main
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import dump_jsonl
from windowkeeper.testing.mutations import MUTATIONS, deep_arguments, deep_content

# What a line of stderr may start with: results, notes, warnings and the one error line.
LINE_STARTS = (
    "error:", "warning:", "note:", "compressed ", "compression ", "below the threshold",
    "not compressed",
)  # fmt: skip


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.err


def _check(path: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """Problems of compress and inspect over ``path`` (empty: behaved)."""
    problems = []
    for args in (["compress", str(path), "--context-length", "16000", "-o", str(out)],
                 ["inspect", str(path), "--context-length", "16000"]):  # fmt: skip
        code, err = _run(args, capsys)
        lines = err.splitlines()
        if "Traceback" in err or code not in (0, 2):
            problems.append(f"{args[0]}: exit {code}: {err[-300:]}")
        elif code == 2 and not (len(lines) == 1 and lines[0].startswith("error: ")):
            problems.append(f"{args[0]}: exit 2 without exactly one error line: {err[:300]}")
        elif code == 0 and any(not line.startswith(LINE_STARTS) for line in lines):
            problems.append(f"{args[0]}: an unexpected stderr line: {err[:300]}")
        elif code == 0 and args[0] == "compress":
            problems += [f"compress: exit 0, output invalid: {v}" for v in output_violations(out)]
    return problems


def output_violations(out: Path) -> list[str]:
    """What :func:`violations` finds in a JSONL output the CLI wrote (exit 0 promises none)."""
    return violations(load_conversation(out).messages)


def _sessions() -> dict[str, list[str]]:
    synthetic = {
        "synthetic-long": long_session(rounds=25),
        "synthetic-chat": [system(), *[user(f"question {i}") if i % 2 == 0 else
                                       {"role": "assistant", "content": f"answer {i}"}
                                       for i in range(30)]],
    }  # fmt: skip
    found = {name: dump_jsonl(m).splitlines() for name, m in synthetic.items()}
    real = real_session_paths()
    step = 1 if os.environ.get("WINDOWKEEPER_ALL_MUTATIONS") == "1" else 4
    for path in real[::step]:
        found[path.stem] = path.read_text(encoding="utf-8").splitlines()
    return found


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_mutated_sessions_never_show_a_traceback(
    mutation: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problems = []
    for name, lines in _sessions().items():
        for trial in range(2):
            rng = random.Random(f"{name}/{mutation}/{trial}")
            path = tmp_path / f"{name}.jsonl"
            path.write_bytes(MUTATIONS[mutation](lines, rng))
            problems += [f"{name}#{trial}: {p}" for p in _check(path, tmp_path / "o", capsys)]
    assert not problems, problems[:5]


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [("deep_content", "nested deeper than 100 levels"),
     ("huge_number", "longer than 4,300 digits"),
     ("not_a_message", "line "),
     ("cut", "bad JSON")],
)  # fmt: skip
def test_defects_are_one_line_naming_the_line(
    mutation: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = dump_jsonl(long_session(rounds=6)).splitlines()
    path = tmp_path / "s.jsonl"
    path.write_bytes(MUTATIONS[mutation](lines, random.Random(7)))
    code, err = _run(["compress", str(path), "--context-length", "16000"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: line ") and expected in err


def test_deep_arguments_are_text_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = dump_jsonl(long_session(rounds=6)).splitlines()
    path = tmp_path / "s.jsonl"
    path.write_bytes(deep_arguments(lines, random.Random(3)))
    code, err = _run(["compress", str(path), "--context-length", "16000", "-o",
                      str(tmp_path / "out.jsonl")], capsys)  # fmt: skip
    assert code == 0, err
    assert "[" * 5_000 in (tmp_path / "out.jsonl").read_text(encoding="utf-8") or (
        "deep1" not in (tmp_path / "out.jsonl").read_text(encoding="utf-8")
    )  # kept verbatim, or summarized away with its turn


def test_a_real_process_prints_no_traceback(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "deep.jsonl"
    path.write_bytes(deep_content(dump_jsonl(long_session(rounds=3)).splitlines(),
                                  random.Random(1)))  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "windowkeeper", "compress", str(path), "--context-length", "8000"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: line ") and done.stderr.count("\n") == 1


def test_an_orphan_between_two_assistants_exits_0_with_a_valid_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The shape of ../shared/repro/cli_adjacent_assistants.jsonl (issue 25 point 2).
    messages = [system(), user("run ls"),
                {"role": "assistant", "content": "running", "tool_calls": []},
                {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\n" * 400},
                {"role": "assistant", "content": "done: a.txt"}, user("thanks, next")]  # fmt: skip
    path, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    path.write_text(dump_jsonl(messages), encoding="utf-8")
    code, err = _run(["compress", str(path), "--context-length", "2000", "-o", str(out)], capsys)
    assert code == 0, err
    assert "1 orphan results removed" in err and "1 adjacent same-role turns merged" in err
    assert output_violations(out) == []
