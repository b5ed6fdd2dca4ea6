"""Retention of exact facts vs Claude Code's own compaction summaries.

For each ``cc_spotter_*`` session, the messages before Claude Code's compaction point
(``compaction_summary_indices`` in the meta file) are what overflowed. We compress that
prefix with the handoff budget set no larger than Claude Code's summary, then count how
many facts of the prefix are still findable:

* files touched (read, searched or modified through a tool) and files modified,
* error identifiers (exception/error class names and error codes seen in failing output),
* ids (commit SHAs, ticket/issue ids such as ``spotter-gqc.4`` or ``#123``, URLs).

Facts are extracted here by an independent, deliberately simple regex pass over the
prefix (not by windowkeeper's own ledger code). A file counts as findable when its base
name appears; other facts must appear verbatim. Run:
``.venv/bin/python benchmarks/retention_cc.py``.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import markdown_table, session_paths
from windowkeeper import CompressionConfig, ContextCompressor, estimate_tokens, parse_conversation
from windowkeeper.analysis.kinds import is_handoff
from windowkeeper.compaction.handoff import render_handoff
from windowkeeper.core.messages import content_text

PATH_KEYS = ("file_path", "path", "notebook_path")
MODIFY_TOOLS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}
ERROR_NAME = re.compile(r"\b([A-Z][A-Za-z]+(?:Error|Exception))\b")
ERROR_CODE = re.compile(r"\b(E[A-Z]{3,}|exit code \d+)\b")
SHA = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")
TICKET = re.compile(r"\b([a-z]+-[a-z0-9]{3}(?:\.\d+)?)\b|(?<![\w/])(#\d{2,6})\b")
URL = re.compile(r"https?://[^\s\"'<>)\]]+")
FAILURE = re.compile(r"error|exception|failed|fatal|traceback", re.IGNORECASE)


@dataclass
class Facts:
    touched: set[str]
    modified: set[str]
    errors: set[str]
    ids: set[str]


def _args(call: Mapping[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(call["function"]["arguments"])
    except (ValueError, KeyError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}


def extract_facts(messages: Iterable[Mapping[str, Any]]) -> Facts:
    facts = Facts(set(), set(), set(), set())
    for message in messages:
        text = content_text(message.get("content"))
        for call in message.get("tool_calls") or []:
            args = _args(call)
            name = call["function"]["name"]
            for key in PATH_KEYS:
                if isinstance(args.get(key), str) and "/" in args[key]:
                    facts.touched.add(args[key])
                    if name in MODIFY_TOOLS:
                        facts.modified.add(args[key])
            text += "\n" + json.dumps(args)
        if message.get("role") == "tool" and FAILURE.search(text[:4000]):
            facts.errors.update(ERROR_NAME.findall(text[:4000]))
            facts.errors.update(ERROR_CODE.findall(text[:4000]))
        facts.ids.update(URL.findall(text))
        facts.ids.update(SHA.findall(text) if message.get("role") != "user" else ())
        for ticket, issue in TICKET.findall(text):
            facts.ids.add(ticket or issue)
    return facts


def found(items: set[str], text: str, *, basename: bool = False) -> int:
    return sum(1 for item in items if (Path(item).name if basename else item) in text)


def compress_prefix(prefix: list[dict[str, Any]], budget: int, window: int) -> tuple[str, str]:
    """Our handoff text and whole output text for the prefix, handoff within ``budget``.

    Pruning alone would be enough for most prefixes in a 200K window (tier 1, no handoff);
    the comparison is of handoffs, so ``prune_only_ratio`` is set low enough that the
    summary tier always runs.
    """
    frame = estimate_tokens(render_handoff(""))
    config = CompressionConfig(
        summary_max_tokens=budget - frame,
        summary_min_tokens=min(2_000, budget - frame),
        prune_only_ratio=0.01,
    )
    comp = ContextCompressor(config, context_length=window)
    result = comp.compress(prefix, force=True)
    handoff = "\n".join(content_text(m.get("content")) for m in result.messages if is_handoff(m))
    everything = "\n".join(
        content_text(m.get("content")) + json.dumps(m.get("tool_calls") or [])
        for m in result.messages
    )
    return handoff, everything


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--window", type=int, default=200_000, help="context window")
    window = parser.parse_args().window
    rows = []
    totals = [0] * 9
    for path in session_paths("cc_spotter_"):
        meta = json.loads(path.with_suffix("").with_suffix(".meta.json").read_text())
        indices = meta.get("compaction_summary_indices") or []
        if not indices:
            continue
        messages = parse_conversation(path.read_text()).messages
        cut = indices[0]
        theirs = content_text(messages[cut]["content"])
        facts = extract_facts(messages[:cut])
        budget = estimate_tokens(theirs)
        handoff, output = compress_prefix(messages[:cut], budget, window)
        counts = []
        for text in (theirs, handoff, output):
            counts.append(
                found(facts.touched, text, basename=True)
                + found(facts.modified, text, basename=True)
                + found(facts.errors, text)
                + found(facts.ids, text)
            )
        total = len(facts.touched) + len(facts.modified) + len(facts.errors) + len(facts.ids)
        row = [
            path.stem, total,
            f"{found(facts.touched, theirs, basename=True)}/{len(facts.touched)}",
            f"{found(facts.touched, handoff, basename=True)}/{len(facts.touched)}",
            f"{found(facts.modified, theirs, basename=True)}/{len(facts.modified)}",
            f"{found(facts.modified, handoff, basename=True)}/{len(facts.modified)}",
            f"{found(facts.errors, theirs)}/{len(facts.errors)}",
            f"{found(facts.errors, handoff)}/{len(facts.errors)}",
            f"{found(facts.ids, theirs)}/{len(facts.ids)}",
            f"{found(facts.ids, handoff)}/{len(facts.ids)}",
            counts[0], counts[1], counts[2], estimate_tokens(theirs), estimate_tokens(handoff),
        ]  # fmt: skip
        rows.append(row)
        for i, value in enumerate(
            (total, *counts, estimate_tokens(theirs), estimate_tokens(handoff))
        ):
            totals[i] += value
    header = [
        "session", "facts", "touched CC", "touched ours", "modified CC", "modified ours",
        "errors CC", "errors ours", "ids CC", "ids ours", "retained CC", "retained handoff",
        "retained output", "CC tokens", "our handoff tokens",
    ]  # fmt: skip
    print(f"window {window:,}\n")
    print(markdown_table(header, rows))
    print(
        f"\ntotal facts {totals[0]}: Claude Code retained {totals[1]}, our handoff {totals[2]}, "
        f"our whole output {totals[3]}; handoff tokens CC {totals[4]} vs ours {totals[5]}"
    )


if __name__ == "__main__":
    main()
