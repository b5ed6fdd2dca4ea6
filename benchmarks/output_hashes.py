"""A sha256 of every compaction of the real sessions, to show a change leaves output alone.

Each of the 38 real sessions is compacted (forced, extractive, the embedded default) at
8K, 16K and 32K; the hash covers the compacted messages, the archived originals (handle,
kind, index, message) and the report's outcome and tier, serialized with sorted keys.
Prints one line per compaction and one combined sha256 per window (the sha256 of that
window's per-session hashes in session order); ``--compare FILE`` checks against a
previous run's output and exits 1 on any difference.

Run: ``.venv/bin/python benchmarks/output_hashes.py [--out FILE] [--compare FILE]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from common import session_paths
from windowkeeper import ContextCompressor

WINDOWS = (8_000, 16_000, 32_000)


def compaction_hash(lines: list[str], window: int) -> str:
    messages = [json.loads(line) for line in lines]
    result = ContextCompressor(context_length=window).compress(messages, force=True)
    archived = [[a.handle, a.kind, a.index, a.message] for a in result.archived]
    report = [str(result.report.outcome), str(result.report.tier)]
    payload = json.dumps([result.messages, archived, report], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(payload.encode()).hexdigest()


def all_hashes() -> dict[str, str]:
    hashes: dict[str, str] = {}
    for path in session_paths():
        text = path.read_text(encoding="utf-8")
        lines = [line for line in text.splitlines() if line.strip()]
        for window in WINDOWS:
            hashes[f"{window} {path.stem}"] = compaction_hash(lines, window)
    return hashes


def combined(hashes: dict[str, str]) -> dict[int, str]:
    out = {}
    for window in WINDOWS:
        mine = [h for key, h in hashes.items() if key.startswith(f"{window} ")]
        out[window] = hashlib.sha256("\n".join(mine).encode()).hexdigest()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the per-compaction hashes here")
    parser.add_argument("--compare", type=Path, help="a previous --out file to compare with")
    args = parser.parse_args()
    hashes = all_hashes()
    if args.out:
        args.out.write_text(json.dumps(hashes, indent=1) + "\n", encoding="utf-8")
    for window, digest in combined(hashes).items():
        print(f"{window}: {digest} ({sum(k.startswith(f'{window} ') for k in hashes)} sessions)")
    if args.compare:
        before = json.loads(args.compare.read_text(encoding="utf-8"))
        differ = sorted(k for k in before.keys() | hashes.keys() if before.get(k) != hashes.get(k))
        for key in differ:
            print(f"differs: {key}")
        print(f"{len(hashes) - len(differ)} of {len(hashes)} compactions identical")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
