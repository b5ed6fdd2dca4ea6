"""The command line over mutated inputs (issue 25's instrument); figures for docs/benchmarks.md.

Every real session (``../shared/data/sessions``) and some random hostile histories
(:func:`windowkeeper.testing.histories.random_history`) are damaged by each mutation of
:mod:`windowkeeper.testing.mutations` (``--trials`` times, with a different random draw),
written in one of the shapes the CLI reads (JSONL, a JSON array, an OpenAI or an
Anthropic request body), and run through the CLI's commands: ``compress`` (random window
and options), ``inspect``, and in turn ``replay --json``, ``eval --json -`` or a store
round (``sessions import``, ``compress --session``, ``sessions export / show / diff /
check / undo``). Runs are in-process with the stdout and stderr a pipe would have
(``--subprocess-every`` N runs one in N as a real process instead).

Counted: tracebacks (escaped exceptions, or ``Traceback`` in stderr), internal errors
(exit 1), exit codes, exit-2 runs that are not exactly one ``error:`` line, and every
exit-0 output: a conversation (``compress -o``, ``sessions export``) must pass
:func:`windowkeeper.core.invariants.violations`, and a ``--json`` output must parse.

Run: ``.venv/bin/python scripts/cli_mutations.py [--trials 1] [--synthetic 8] [--seed 0]``;
exit code 1 when any traceback, internal error or invalid exit-0 output occurred.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from windowkeeper.adapters.formats import load_conversation
from windowkeeper.cli.app import main as cli
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import dump_jsonl
from windowkeeper.testing.histories import random_history
from windowkeeper.testing.mutations import MUTATIONS, SHAPES, reshape

SESSIONS = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "sessions"
WINDOWS = (2_000, 4_000, 8_000, 16_000, 32_000, 128_000)


@dataclass
class Outcome:
    """One command run: what it was given and what it did."""

    label: str
    command: str
    code: int
    stdout: str
    stderr: str
    escaped: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def traceback(self) -> bool:
        return self.escaped or "Traceback (most recent call last)" in self.stderr


class Runner:
    def __init__(self, subprocess_every: int) -> None:
        self.subprocess_every = subprocess_every
        self.count = 0

    def __call__(self, label: str, args: list[str]) -> Outcome:
        self.count += 1
        if self.subprocess_every and self.count % self.subprocess_every == 0:
            return _in_a_process(label, args)
        return _in_process(label, args)


def _pipe(errors: str) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)


def _in_process(label: str, args: list[str]) -> Outcome:
    """``main(args)`` with the stdout (strict UTF-8) and stderr (backslashreplace) that a
    real process has when piped."""
    out, err = _pipe("strict"), _pipe("backslashreplace")
    escaped = False
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli(args)
        except BaseException:  # what the CLI lets escape is exactly what is counted
            code, escaped = -1, True
            err.write(traceback.format_exc())
    return Outcome(label, args[0] if args[0] != "sessions" else f"sessions {args[1]}", code,
                   _text(out), _text(err), escaped)  # fmt: skip


def _text(stream: io.TextIOWrapper) -> str:
    raw = stream.buffer
    assert isinstance(raw, io.BytesIO)
    return raw.getvalue().decode("utf-8", "replace")


def _in_a_process(label: str, args: list[str]) -> Outcome:
    done = subprocess.run([sys.executable, "-m", "windowkeeper", *args], capture_output=True,
                          timeout=600, check=False)  # fmt: skip
    command = args[0] if args[0] != "sessions" else f"sessions {args[1]}"
    out, err = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    return Outcome(label, command, done.returncode, out, err)


def _judge(outcome: Outcome, output: Path | None = None, *, as_json: bool = False) -> Outcome:
    """Problems of one run: a traceback, an internal error, a malformed exit 2, an
    invalid exit-0 output."""
    lines = outcome.stderr.splitlines()
    if outcome.traceback:
        outcome.problems.append("traceback")
    elif outcome.code == 1:
        outcome.problems.append("internal error")
    elif outcome.code not in (0, 2):
        outcome.problems.append(f"exit {outcome.code}")
    elif outcome.code == 2 and not (len(lines) == 1 and lines[0].startswith("error: ")):
        outcome.problems.append("exit 2 without exactly one error line")
    elif outcome.code == 0:
        outcome.problems += _output_problems(outcome, output, as_json)
    return outcome


def _output_problems(outcome: Outcome, output: Path | None, as_json: bool) -> list[str]:
    if as_json:
        try:
            json.loads(outcome.stdout)
        except ValueError as exc:
            return [f"--json output does not parse: {exc}"]
        return []
    if output is None:
        return []
    if not output.exists():
        return ["exit 0 without its output file"]
    try:
        found = violations(load_conversation(output).messages)
    except Exception as exc:  # the CLI wrote what its own reader refuses
        return [f"output unreadable: {type(exc).__name__}: {exc}"[:200]]
    return [f"output invalid: {v}" for v in found[:3]]


def _compress(run: Runner, label: str, path: Path, folder: Path, rng: random.Random) -> Outcome:
    out = folder / "out"
    out.unlink(missing_ok=True)
    args = ["compress", str(path), "--context-length", str(rng.choice(WINDOWS)), "-o", str(out)]
    extras = ([], [], ["--if-needed"], ["--threshold", "0.3"], ["--max-tokens", "1000"],
              ["--focus", "tests"], ["--report-json", str(folder / "r.json")])  # fmt: skip
    args += rng.choice(extras)
    return _judge(run(label, args), out)


def _inspect(run: Runner, label: str, path: Path, rng: random.Random) -> Outcome:
    json_flag = rng.random() < 0.5
    args = ["inspect", str(path), "--context-length", str(rng.choice(WINDOWS))]
    return _judge(run(label, args + (["--json"] if json_flag else [])), as_json=json_flag)


def _third(run: Runner, label: str, path: Path, folder: Path, turn: int) -> Iterator[Outcome]:
    """In turn: ``replay --json``, ``eval --json -``, or a store round."""
    window = str(WINDOWS[turn % len(WINDOWS)])
    if turn % 3 == 0:
        yield _judge(run(label, ["replay", str(path), "--context-length", window, "--json"]),
                     as_json=True)  # fmt: skip
    elif turn % 3 == 1:
        yield _judge(run(label, ["eval", str(path), "--context-length", window, "--json", "-"]),
                     as_json=True)  # fmt: skip
    else:
        yield from _store_round(run, label, path, folder, window)


def _store_round(
    run: Runner, label: str, path: Path, folder: Path, window: str
) -> Iterator[Outcome]:
    store = f"sqlite:///{folder / 'store.db'}"
    (folder / "store.db").unlink(missing_ok=True)
    imported = _judge(run(label, ["sessions", "import", str(path), "--store", store]))
    yield imported
    if imported.code != 0:
        return
    session = imported.stdout.strip().split()[-1]
    yield _judge(run(label, ["compress", "--session", session, "--store", store,
                             "--context-length", window]))  # fmt: skip
    exported = folder / "export.jsonl"
    exported.unlink(missing_ok=True)
    yield _judge(run(label, ["sessions", "export", session, "--store", store, "-o", str(exported)]),
                 exported)  # fmt: skip
    for command in (["show", session], ["diff", session], ["check"], ["undo", session]):
        yield _judge(run(label, ["sessions", *command, "--store", store]))
    yield _judge(run(label, ["sessions", "export", session, "--store", store, "-o", str(exported)]),
                 exported)  # fmt: skip


def _sources(synthetic: int, seed: int) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for number in range(synthetic):
        history = random_history(random.Random(seed + number), max_turns=12)
        found[f"random-{seed + number}"] = dump_jsonl(history).splitlines()
    if SESSIONS.is_dir():
        for path in sorted(SESSIONS.glob("*.jsonl")):
            found[path.stem] = path.read_text(encoding="utf-8").splitlines()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=1, help="Draws per source and mutation.")
    parser.add_argument("--synthetic", type=int, default=8, help="Random hostile histories.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--subprocess-every", type=int, default=40, help="0: never.")
    parser.add_argument("--limit", type=int, default=0, help="Stop after N inputs (0: all).")
    args = parser.parse_args()
    run = Runner(args.subprocess_every)
    outcomes: list[Outcome] = []
    started, inputs = time.perf_counter(), 0
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for source, lines in _sources(args.synthetic, args.seed).items():
            for mutation, mutate in MUTATIONS.items():
                for trial in range(args.trials):
                    if args.limit and inputs >= args.limit:
                        break
                    rng = random.Random(f"{args.seed}/{source}/{mutation}/{trial}")
                    shape = SHAPES[(inputs + trial) % len(SHAPES)]
                    path = folder / f"in.{'jsonl' if shape == 'jsonl' else 'json'}"
                    path.write_bytes(reshape(mutate(lines, rng), shape))
                    label = f"{source} {mutation}#{trial} {shape}"
                    outcomes.append(_compress(run, label, path, folder, rng))
                    outcomes.append(_inspect(run, label, path, rng))
                    outcomes.extend(_third(run, label, path, folder, inputs))
                    inputs += 1
    return _report(outcomes, inputs, time.perf_counter() - started)


def _report(outcomes: list[Outcome], inputs: int, elapsed: float) -> int:
    problems = [o for o in outcomes if o.problems]
    print(f"inputs: {inputs:,}; command runs: {len(outcomes):,}; {elapsed:,.0f} s")
    by_command = Counter(o.command for o in outcomes)
    print("runs by command: " + ", ".join(f"{c} {n:,}" for c, n in by_command.most_common()))
    codes = Counter(o.code for o in outcomes)
    print("exit codes: " + ", ".join(f"{c}: {n:,}" for c, n in sorted(codes.items())))
    print(f"tracebacks: {sum(o.traceback for o in outcomes)}")
    print(f"internal errors (exit 1): {sum(1 for o in outcomes if o.code == 1)}")
    exit0 = [o for o in outcomes if o.code == 0]
    invalid = [o for o in exit0 if o.problems]
    print(f"exit-0 runs: {len(exit0):,}; of them with an invalid output: {len(invalid)}")
    kinds = Counter(p.split(":")[0] for o in problems for p in o.problems)
    for kind, count in kinds.most_common():
        print(f"  {count} x {kind}")
    for outcome in problems[:25]:
        print(f"- {outcome.label}: {outcome.command} exit {outcome.code}: "
              f"{'; '.join(outcome.problems)[:160]} | {outcome.stderr.strip()[-300:]}")  # fmt: skip
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
