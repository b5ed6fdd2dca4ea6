"""What ``scripts/cli_mutations.py`` found (issue 25, the 3,100-run instrument).

* Text that holds lone surrogates (JSON that had ``\\ud83d`` escapes is read as it is)
  failed ``eval --json -``, ``sessions show`` and ``sessions diff`` on a real UTF-8 pipe
  with "internal error (UnicodeEncodeError …)", exit 1. Now such characters go out as
  ``\\udXXX`` escapes, which JSON reads back as the same character.
* ``sessions import`` stored broken tool pairing as it was, so ``sessions export`` exited
  0 with a conversation that fails :func:`violations`. Now it repairs the input (with a
  warning) as ``compress`` does.

The subprocess tests run the real console entry point: an in-process run would write to
pytest's capture, which accepts any text.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from factories import assistant, call, system, tool, user
from windowkeeper.adapters.formats import load_conversation
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import dump_jsonl
from windowkeeper.testing.histories import random_history


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "windowkeeper", *args], capture_output=True,
                          timeout=120, check=False, cwd=cwd)  # fmt: skip


def _surrogate_session(tmp_path: Path) -> Path:
    rounds = []
    for n in range(12):
        rounds += [assistant(None, call(f"c{n}", "bash", command=f"step {n}")),
                   tool(f"c{n}", f"half an emoji \ud83d in output {n} " + "x" * 3_000),
                   assistant(f"done {n} \udfff"), user(f"next \ud800 {n}")]  # fmt: skip
    path = tmp_path / "s.jsonl"
    path.write_text(dump_jsonl([system(), user("start \ud83d"), *rounds]), encoding="utf-8")
    return path


def test_lone_surrogates_reach_a_utf8_pipe_as_escapes(tmp_path: Path) -> None:
    hostile = tmp_path / "random.jsonl"  # the instrument's case: eval's figures quote text
    hostile.write_text(dump_jsonl(random_history(random.Random(0), max_turns=12)), "utf-8")
    done = _cli("eval", str(hostile), "--context-length", "8000", "--json", "-", cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout)  # the escapes are JSON's own
    path = _surrogate_session(tmp_path)
    store = f"sqlite:///{tmp_path / 'wk.db'}"
    imported = _cli("sessions", "import", str(path), "--store", store, cwd=tmp_path)
    session = imported.stdout.decode().strip()
    assert imported.returncode == 0 and session, imported.stderr.decode()
    compacted = _cli("compress", "--session", session, "--store", store,
                     "--context-length", "8000", cwd=tmp_path)  # fmt: skip
    assert compacted.returncode == 0, compacted.stderr.decode()
    for command in (["show", session], ["diff", session], ["show", session, "--archived"]):
        done = _cli("sessions", *command, "--store", store, cwd=tmp_path)
        assert done.returncode == 0, (command, done.stderr.decode())
        assert b"Traceback" not in done.stderr and b"internal error" not in done.stderr
    shown = _cli("sessions", "show", session, "--store", store, cwd=tmp_path).stdout
    assert b"\\ud800" in shown or b"\\ud83d" in shown or b"\\udfff" in shown


def test_import_repairs_broken_pairing_so_export_is_valid(tmp_path: Path) -> None:
    messages = [system(), user("run ls"),
                {"role": "tool", "tool_call_id": "ghost", "content": "orphan"},
                assistant(None, call("c1", "bash", command="ls")), user("and?"),
                assistant("done"), system("a late system message"), user("thanks")]  # fmt: skip
    source = tmp_path / "in.jsonl"
    source.write_text(dump_jsonl(messages), encoding="utf-8")
    store = f"sqlite:///{tmp_path / 'wk.db'}"
    imported = _cli("sessions", "import", str(source), "--store", store, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr.decode()
    assert b"warning: repaired tool pairing" in imported.stderr
    assert b"warning: 1 system messages" in imported.stderr
    session = imported.stdout.decode().strip()
    out = tmp_path / "out.jsonl"
    exported = _cli("sessions", "export", session, "--store", store, "-o", str(out), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr.decode()
    assert violations(load_conversation(out).messages) == []
