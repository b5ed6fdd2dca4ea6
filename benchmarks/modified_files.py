"""Does the handoff know which files the agent changed? (issue 9, "Modified files")

For every real session whose transcript ends with the final patch (a tool result holding
``diff --git``), the messages before the call that printed it are compacted (forced, at
``--window``, extractive), and the handoff's Files section is read back. Reported per
session and in total:

- recall: the share of the patch's files the handoff lists as created or modified;
- false "modified": the share of files the agent only read that the handoff lists as
  changed. "Only read" is decided here, independently of the code measured: files a read
  tool opened or a reading shell command (``cat``, ``sed -n``, ``head``, ``tail``,
  ``grep``, ``nl``) named, that no edit or write tool and no shell write touched and that
  are not in the patch.

Run: ``.venv/bin/python benchmarks/modified_files.py [--window 8000]``.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from common import markdown_table, session_paths
from windowkeeper import CompressionConfig, ContextCompressor, parse_conversation
from windowkeeper.summary.handoff.parse import parse_state

_DIFF = re.compile(r"^diff --git a/(\S+) b/", re.M)
_READERS = re.compile(r"(?:^|[;&|]\s*)(?:cat|nl|head|tail|grep|sed\s+-n)\b[^\n;&|]*", re.M)
_PATH = re.compile(r"(?<![\w./-])(/?(?:[\w.-]+/)*[\w-]+\.[A-Za-z]\w*)\b")
_WRITES = re.compile(r"sed\s+-i|>\s*\S|tee\s|cp\s|mv\s|open\([^)]*['\"][wa]")


def final_patch(messages: list[dict[str, Any]]) -> tuple[int, set[str]] | None:
    """Index of the call that printed the final patch, and the patch's files."""
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index].get("content")
        if messages[index]["role"] == "tool" and isinstance(content, str):
            files = set(_DIFF.findall(content))
            if files:
                call = index - 1
                while call > 0 and messages[call]["role"] != "assistant":
                    call -= 1
                return call, files
    return None


def only_read(messages: list[dict[str, Any]], patch: set[str]) -> set[str]:
    read: set[str] = set()
    written: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or ():
            try:
                args = json.loads(call["function"]["arguments"] or "{}")
            except ValueError:
                args = {}
            args = args if isinstance(args, dict) else {}
            path = args.get("path") or args.get("file_path")
            command = str(args.get("command") or "")
            if isinstance(path, str) and command in ("view", ""):
                read.add(path)
            elif isinstance(path, str):
                written.add(path)
            if command and command not in ("view", "create", "str_replace", "insert"):
                targets = set(_PATH.findall(command))
                if _WRITES.search(command):
                    written |= targets
                else:
                    for reader in _READERS.findall(command):
                        read |= set(_PATH.findall(reader))
    changed = written | patch
    return {p for p in read if not any(_same(p, w) or _same(w, p) for w in changed)}


def _same(path: str, patch_file: str) -> bool:
    return path == patch_file or path.endswith("/" + patch_file)


def measure(path: Path, window: int) -> dict[str, Any] | None:
    messages = parse_conversation(path.read_text(encoding="utf-8")).messages
    found = final_patch(messages)
    if found is None:
        return None
    cut, patch = found
    before = messages[:cut]
    config = CompressionConfig(prune_only_ratio=0.01)  # the handoff is what is measured
    result = ContextCompressor(config, context_length=window).compress(before, force=True)
    state = parse_state(result.summary or "")
    changed = {p for p, how in (state.files if state else ()) if how in ("created", "modified")}
    listed = [f for f in patch if any(_same(p, f) for p in changed)]
    readers = only_read(before, patch)
    wrong = [r for r in readers if any(_same(p, r) or _same(r, p) for p in changed)]
    return {"name": path.stem, "patch": len(patch), "listed": len(listed),
            "read": len(readers), "wrong": len(wrong)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--window", type=int, default=8_000)
    args = parser.parse_args()
    rows = [r for p in session_paths() if (r := measure(p, args.window)) is not None]
    print(markdown_table(
        ["session", "patch files", "listed as modified", "only-read files", "listed as modified"],
        [[r["name"], r["patch"], r["listed"], r["read"], r["wrong"]] for r in rows],
    ))  # fmt: skip
    patch, listed = sum(r["patch"] for r in rows), sum(r["listed"] for r in rows)
    read, wrong = sum(r["read"] for r in rows), sum(r["wrong"] for r in rows)
    print(
        f"\n{len(rows)} sessions at {args.window:,}: {listed}/{patch} patch files listed as "
        f"modified ({listed / max(1, patch):.0%}); {wrong}/{read} only-read files listed as "
        f"modified ({wrong / max(1, read):.0%})"
    )


if __name__ == "__main__":
    main()
