"""Compress CPU time of every real session vs the floor: ``json.loads`` + ``json.dumps``.

Run: ``.venv/bin/python benchmarks/bench_compress.py [--repeat N] [--window N]
[--against DIR] [--reference]`` with ``--scaling``, ``--stages`` or ``--warmed`` for the
series below.

``--against DIR`` measures the checkout in ``DIR/src`` too and ``--reference`` the
reference agent (``reference_agent.py``: PyPI ``hermes-agent`` 0.19.0, installed on first
use without its dependencies into ``benchmarks/.reference/``; left out, saying why, where
pip cannot install it), each session in fresh processes alternated with this checkout's;
a summary table gives the issue's figures for each.

The floor is ``json.loads`` of each line plus ``json.dumps`` of the resulting list, with
the file's lines already in memory: nothing else is inside its timer. Each session is
measured in a fresh process (``--one PATH``): the first compaction there is the *cold*
figure (regexes compiled at import, every cache of ours empty), the median of the next
``--repeat`` the *warm* one, and the floor is the median of ``--repeat`` runs in the same
process. All times are CPU time (``time.process_time``). Peak memory is ``tracemalloc``'s
peak during one compaction.

``--stages`` splits the cold compaction of every session by stage (the analysis records,
pruning, masking secrets, extracting the handoff's state, the rest), each as a ratio to
the floor: CPU timers around four functions, each stage's time without the stages it
calls, so the stages add up to the cold figure.

``--warmed`` separates what a first compaction costs because the process has not run the
code yet from what this input costs: each session's cold figure in a fresh process,
alternated with its first compaction in a fresh process that has already compacted the
embedded synthetic demo session (``windowkeeper/data/demo_session.jsonl``, at 32K, 8K and
4K: no text of a real session, so no cache of ours holds this session's texts), and the
warm figure; plus a two-message compaction's cold and warm time (the fixed cost). A
long-running agent or the gateway pays the first-run cost once per process.

``--scaling`` builds inputs of 1×, 2×, 4×, 8× and 16× the largest session's size (the
largest session, then the other real sessions in turn, cycling; tool-call ids made
unique; one system message first) and reports ``k × t(k×) / Σ t(pieces)``: a linear
compressor scores about ``k`` (the floor itself scores the same way on its own pieces).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import ROOT, markdown_table, session_paths
from reference_agent import TARGET, installed
from reference_agent import compress_runner as reference_runner
from windowkeeper import ContextCompressor

Message = dict[str, Any]


def cpu(run: Callable[[], object]) -> float:
    started = time.process_time()
    run()
    return time.process_time() - started


def floor_of(lines: list[str], repeat: int) -> float:
    def run() -> object:
        return json.dumps([json.loads(line) for line in lines])

    return statistics.median(cpu(run) for _ in range(repeat))


def compress_runner(messages: list[Message], window: int) -> Callable[[], object]:
    def run() -> object:
        return ContextCompressor(context_length=window).compress(messages, force=True)

    return run


def peak_bytes(run: Callable[[], object], collector: bool = True) -> int:
    """``run``'s peak of traced allocations. ``collector=False``: from a collected heap
    with the cyclic collector held off, so the figure is what the run allocates and not
    whether a collection happened to fall inside it (which moves this session's figure by
    tens of KB for us and by ~0.2 MB for the reference agent)."""
    if not collector:
        gc.collect()
        gc.disable()
    try:
        tracemalloc.start()
        run()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        gc.enable()
    return peak


def warm_up() -> None:
    """Run the code once on the embedded synthetic demo session (see ``--warmed``)."""
    from importlib.resources import files

    text = files("windowkeeper").joinpath("data/demo_session.jsonl").read_text("utf-8")
    demo = [json.loads(line) for line in text.splitlines() if line.strip()]
    for window in (32_000, 8_000, 4_000):
        ContextCompressor(context_length=window).compress(demo, force=True)


def measure_lines(
    lines: list[str], window: int, repeat: int, reference: bool = False
) -> dict[str, float]:
    """Cold, warm, floor and peak of one input (call first thing in a fresh process);
    the reference agent's compressor instead of ours with ``reference``."""
    messages = [json.loads(line) for line in lines]
    if reference:
        sys.path.insert(0, str(TARGET))
        run = reference_runner(messages, window)
    else:
        run = compress_runner(messages, window)
    cold = cpu(run)
    warm = statistics.median(cpu(run) for _ in range(repeat))
    floor = floor_of(lines, repeat)
    peak = peak_bytes(run)
    return {"cold": cold, "warm": warm, "floor": floor, "peak": peak,
            "peak_held": peak_bytes(run, collector=False)}  # fmt: skip


# The stages --stages times: (name, module, attribute); each is wrapped in place.
STAGES = (
    ("records", "windowkeeper.analysis.record", "Analyzer.analyze"),
    ("prune", "windowkeeper.engine.compressor", "prune_outside_tail"),
    ("masking", "windowkeeper.summary.request", "masked_analysis"),
    ("extraction", "windowkeeper.summary.request", "extract_state"),
)


def timed_stages() -> dict[str, float]:
    """Wrap each of ``STAGES`` with a CPU timer; returns the times, filled as they run.

    A stage's time leaves out the wrapped stages it calls (``stack`` holds, for each
    running stage, the time its nested stages took)."""
    import importlib

    spent = {name: 0.0 for name, _, _ in STAGES}
    stack: list[float] = []

    def wrap(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def stage(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            stack.append(0.0)
            try:
                return function(*args, **kwargs)
            finally:
                elapsed = time.process_time() - started
                spent[name] += elapsed - stack.pop()
                if stack:
                    stack[-1] += elapsed

        return stage

    for name, module_name, attribute in STAGES:
        owner: Any = importlib.import_module(module_name)
        *path, last = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        setattr(owner, last, wrap(name, getattr(owner, last)))
    return spent


def measure_stages(lines: list[str], window: int, repeat: int) -> dict[str, float]:
    """The cold compaction of one input by stage (call first thing in a fresh process)."""
    spent = timed_stages()
    messages = [json.loads(line) for line in lines]
    cold = cpu(compress_runner(messages, window))
    floor = floor_of(lines, repeat)
    return {"cold": cold, "floor": floor, **spent, "rest": cold - sum(spent.values())}


def read_lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def in_fresh_process(args: list[str], src: str | None = None) -> dict[str, Any]:
    """``args`` run by this script in a new interpreter (``src`` first on its path)."""
    env = (
        {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(ROOT / "benchmarks")])}
        if src
        else None
    )
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True, env=env
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def concatenation(paths: list[Path], factor: int) -> tuple[list[str], list[Path]]:
    """The largest session followed by the others (cycling) to ``factor`` × its size."""
    target = factor * paths[0].stat().st_size
    lines: list[str] = []
    pieces: list[Path] = []
    size = 0
    turn = 0
    while size < target:
        path = paths[turn % len(paths)]
        for line in read_lines(path):
            message = json.loads(line)
            if message.get("role") in ("system", "developer") and lines:
                continue
            lines.append(json.dumps(_unique_ids(message, turn)))
            size += len(lines[-1])
        pieces.append(path)
        turn += 1
    return lines, pieces


def _unique_ids(message: Message, turn: int) -> Message:
    suffix = f"_{turn}"
    if isinstance(message.get("tool_call_id"), str):
        message["tool_call_id"] += suffix
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict) and isinstance(call.get("id"), str):
            call["id"] += suffix
    return message


def per_session(window: int, repeat: int, against: str | None, reference: bool) -> None:
    """Every session in fresh processes: this checkout, then (alternated, session by
    session) the one in ``against`` and the reference agent, when asked for."""
    paths = sorted(session_paths(), key=lambda p: p.stat().st_size, reverse=True)
    variants = {"this": []} if not against else {"this": [], "other": []}
    if reference and installed() is not None:
        variants["reference"] = []
    figures: dict[str, list[dict[str, Any]]] = variants
    for path in paths:
        args = ["--one", str(path), "--window", str(window), "--repeat", str(repeat)]
        for name, found in figures.items():
            extra = ["--reference"] if name == "reference" else []
            src = os.path.join(against, "src") if name == "other" and against else None
            found.append(in_fresh_process([*args, *extra], src))
    rows = []
    for path, mine in zip(paths, figures["this"], strict=True):
        rows.append([
            path.stem, f"{path.stat().st_size / 1e6:.2f}", mine["messages"],
            f"{mine['floor'] * 1e3:.2f}", f"{mine['cold'] * 1e3:.2f}",
            f"{mine['warm'] * 1e3:.2f}", f"{mine['cold'] / mine['floor']:.2f}x",
            f"{mine['warm'] / mine['floor']:.2f}x", f"{mine['peak'] / 1e6:.2f}",
        ])  # fmt: skip
    header = ["session", "MB", "msgs", "floor ms", "cold ms", "warm ms", "cold ratio",
              "warm ratio", "peak MB"]  # fmt: skip
    for name, found in figures.items():
        if name != "this":
            header += [f"{name} cold", f"{name} warm"]
            for row, theirs in zip(rows, found, strict=True):
                row += [f"{theirs['cold'] / theirs['floor']:.2f}x",
                        f"{theirs['warm'] / theirs['floor']:.2f}x"]  # fmt: skip
    print(markdown_table(header, rows))
    print()
    print(markdown_table(["figure", *figures], summary_rows(figures)))


def summary_rows(figures: dict[str, list[dict[str, Any]]]) -> list[list[str]]:
    """The issue's table: cold and warm ratios to the floor, the largest session's peak."""
    rows: list[list[str]] = [["cold ÷ floor, median / p75 / max"],
                             ["warm ÷ floor, median / max"],
                             ["peak memory, largest session (tracemalloc)"],
                             ["the same, collector held off (deterministic)"]]  # fmt: skip
    for found in figures.values():
        cold = [f["cold"] / f["floor"] for f in found]
        warm = [f["warm"] / f["floor"] for f in found]
        p75 = statistics.quantiles(cold, n=4)[2]
        rows[0].append(f"{statistics.median(cold):.2f}x / {p75:.2f}x / {max(cold):.2f}x")
        rows[1].append(f"{statistics.median(warm):.2f}x / {max(warm):.2f}x")
        rows[2].append(f"{found[0]['peak'] / 1e6:.3f} MB")
        rows[3].append(f"{found[0].get('peak_held', 0) / 1e6:.3f} MB")
    return rows


def stages(window: int, repeat: int) -> None:
    paths = sorted(session_paths(), key=lambda p: p.stat().st_size, reverse=True)
    names = ["cold", *(name for name, _, _ in STAGES), "rest"]
    ratios: dict[str, list[float]] = {name: [] for name in names}
    rows = []
    for path in paths:
        figures = in_fresh_process(["--one", str(path), "--window", str(window),
                                    "--repeat", str(repeat), "--by-stage"])  # fmt: skip
        row = [path.stem, f"{figures['floor'] * 1e3:.2f}"]
        for name in names:
            ratios[name].append(figures[name] / figures["floor"])
            row.append(f"{ratios[name][-1]:.2f}x")
        rows.append(row)
    print(markdown_table(["session", "floor ms", *names], rows))
    print("\nmedian: " + ", ".join(f"{n} {statistics.median(ratios[n]):.2f}x" for n in names))


TINY = [{"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test in tests/test_app.py."}]  # fmt: skip


def warmed(window: int, repeat: int) -> None:
    """Cold in a fresh process, cold after ``warm_up``, warm: each session, alternated."""
    paths = sorted(session_paths(), key=lambda p: p.stat().st_size, reverse=True)
    columns: dict[str, list[float]] = {"cold": [], "warmed cold": [], "warm": []}
    rows = []
    for path in paths:
        args = ["--one", str(path), "--window", str(window), "--repeat", str(repeat)]
        fresh = in_fresh_process(args)
        after = in_fresh_process([*args, "--warm-up"])
        ratios = (fresh["cold"] / fresh["floor"], after["cold"] / after["floor"],
                  fresh["warm"] / fresh["floor"])  # fmt: skip
        for column, ratio in zip(columns.values(), ratios, strict=True):
            column.append(ratio)
        rows.append([path.stem, f"{fresh['floor'] * 1e3:.2f}", *(f"{r:.2f}x" for r in ratios)])
    print(markdown_table(["session", "floor ms", *columns], rows))
    print()
    summary = [[name, f"{statistics.median(found):.2f}x",
                f"{statistics.quantiles(found, n=4)[2]:.2f}x", f"{max(found):.2f}x"]
               for name, found in columns.items()]  # fmt: skip
    print(markdown_table(["figure", "median", "p75", "max"], summary))
    tiny = [in_fresh_process(["--tiny", "--repeat", str(repeat)]) for _ in range(repeat)]
    cold = statistics.median(t["cold"] for t in tiny) * 1e3
    warm = statistics.median(t["warm"] for t in tiny) * 1e3
    print(f"\na two-message compaction (median of {repeat} fresh processes): "
          f"cold {cold:.3f} ms, warm {warm:.3f} ms")  # fmt: skip


def scaling(window: int, repeat: int) -> None:
    alone: dict[Path, dict[str, Any]] = {}
    rows = []
    for factor in (1, 2, 4, 8, 16):
        figures = in_fresh_process(["--concat", str(factor), "--window", str(window),
                                    "--repeat", str(repeat)])  # fmt: skip
        pieces = [Path(p) for p in figures["pieces"]]
        for piece in pieces:
            if piece not in alone:
                alone[piece] = in_fresh_process(
                    ["--one", str(piece), "--window", str(window), "--repeat", str(repeat)]
                )
        ours = factor * figures["warm"] / sum(alone[p]["warm"] for p in pieces)
        floor = factor * figures["floor"] / sum(alone[p]["floor"] for p in pieces)
        rows.append([
            f"{factor}x", figures["messages"], f"{figures['bytes'] / 1e6:.1f}", len(pieces),
            f"{figures['floor'] * 1e3:.1f}", f"{figures['warm'] * 1e3:.1f}",
            f"{figures['warm'] / figures['floor']:.2f}x", f"{ours:.1f}", f"{floor:.1f}",
        ])  # fmt: skip
    header = ["input", "msgs", "MB", "pieces", "floor ms", "compress ms", "ratio",
              "k·t(k×)/Σt(pieces)", "same for the floor"]  # fmt: skip
    print(markdown_table(header, rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--scaling", action="store_true")
    parser.add_argument("--stages", action="store_true")
    parser.add_argument("--warmed", action="store_true")
    parser.add_argument("--against", help="a checkout to alternate with, session by session")
    parser.add_argument(
        "--reference",
        action="store_true",
        help="add the reference agent (hermes-agent 0.19.0, installed here)",
    )
    parser.add_argument("--by-stage", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--concat", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--warm-up", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.tiny:
        run = compress_runner([dict(m) for m in TINY], args.window)
        cold = cpu(run)
        print(json.dumps({"cold": cold, "warm": statistics.median(cpu(run) for _ in range(9))}))
    elif args.one:
        if args.warm_up:
            warm_up()
        lines = read_lines(Path(args.one))
        if args.by_stage:
            figures: dict[str, Any] = measure_stages(lines, args.window, args.repeat)
        else:
            figures = measure_lines(lines, args.window, args.repeat, args.reference)
        print(json.dumps({**figures, "messages": len(lines)}))
    elif args.concat:
        lines, pieces = concatenation(
            sorted(session_paths(), key=lambda p: p.stat().st_size, reverse=True), args.concat
        )
        figures = measure_lines(lines, args.window, max(3, args.repeat // 2))
        print(json.dumps({**figures, "messages": len(lines), "bytes": sum(map(len, lines)),
                          "pieces": [str(p) for p in pieces]}))  # fmt: skip
    elif args.scaling:
        scaling(args.window, args.repeat)
    elif args.stages:
        stages(args.window, args.repeat)
    elif args.warmed:
        warmed(args.window, args.repeat)
    else:
        per_session(args.window, args.repeat, args.against, args.reference)


if __name__ == "__main__":
    main()
