"""Instructions of each session's first compaction in a fresh process, under callgrind.

Run: ``.venv/bin/python benchmarks/compaction_instructions.py [--against DIR] [--window N]
[--again] [NAME ...]`` (``NAME``: substrings of the sessions' file names; all 38 without).

"Run − load" (one process that loads and compacts, one that only loads) moves by ±0.5M
instructions between processes (the import's directory listings, the allocator's state):
as much as a small session's whole compaction. Here each session runs in one process
under ``valgrind --tool=callgrind --dump-before=getppid``, the driver calling
``os.getppid()`` right before and after the compaction, so the dump between the two calls
counts the compaction and nothing else (deterministic for the same code, input and
``PYTHONHASHSEED``; the collector is run first: a collection due from the import's
allocations, landing in one checkout's compaction and not in the other's, moved a small
session by 1.5M). ``--again`` also counts a second compaction of the same input in the
same process (what the content-keyed caches and a warmed process leave). ``--against``
measures the checkout in ``DIR/src`` the same way; the last column is this ÷ that.
Needs valgrind (says so and exits without it); ~10 s a session, more under load.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, markdown_table, session_paths

DRIVER = """
import gc, json, os, sys
from windowkeeper import ContextCompressor
path, window, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, encoding="utf-8") as lines:
    messages = [json.loads(line) for line in lines if line.strip()]
gc.collect()  # a collection the import's allocations are due must not land in a count
for _ in range(runs):
    os.getppid()
    ContextCompressor(context_length=window).compress(messages, force=True)
os.getppid()
"""


def counts(src: Path, session: Path, window: int, runs: int) -> list[int]:
    """The instructions of each of ``runs`` compactions of ``session`` in one process."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "phase.out"
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(src)}
        command = ["valgrind", "--tool=callgrind", "--dump-before=getppid",
                   f"--callgrind-out-file={out}", sys.executable, "-c", DRIVER,
                   str(session), str(window), str(runs)]  # fmt: skip
        subprocess.run(command, env=env, capture_output=True, check=True)
        # Dump 1 ends at the first getppid (import and load); dumps 2.. are compactions.
        return [_summary(Path(f"{out}.{number}")) for number in range(2, 2 + runs)]


def _summary(dump: Path) -> int:
    for line in dump.read_text(encoding="utf-8").splitlines():
        if line.startswith("summary:"):
            return int(line.split()[1])
    raise ValueError(f"{dump} holds no summary line")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="substrings of the sessions' file names")
    parser.add_argument("--against", help="another checkout, measured the same way")
    parser.add_argument("--window", type=int, default=32_000)
    parser.add_argument("--again", action="store_true", help="count a second compaction too")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed: install it (Debian: apt install valgrind)")
    paths = [p for p in session_paths() if not args.names or any(n in p.name for n in args.names)]
    runs = 2 if args.again else 1
    trees = {"this": ROOT / "src"}
    if args.against:
        trees["other"] = Path(args.against) / "src"
    found = {(path, name): counts(src, path, args.window, runs)
             for path in paths for name, src in trees.items()}  # fmt: skip
    labels = ("cold", "again")[:runs]
    header = ["session", *(f"{name} {label}" for name in trees for label in labels)]
    rows: list[list[object]] = []
    for path in paths:
        row: list[object] = [path.stem]
        row += [f"{n / 1e6:.3f}M" for name in trees for n in found[path, name]]
        if args.against:
            row.append(f"{found[path, 'this'][0] / found[path, 'other'][0]:.4f}")
        rows.append(row)
    if args.against:
        header.append("cold, this ÷ other")
    print(markdown_table(header, rows))
    totals = {name: sum(found[path, name][0] for path in paths) for name in trees}
    print("\ncold, all sessions: " + ", ".join(f"{n} {t / 1e6:.2f}M" for n, t in totals.items()))


if __name__ == "__main__":
    main()
