"""Critical Values, labelled (SPEC §6 v3): every value says what it is.

Commits are listed with their messages; the ids of the work items are in the Work State
and not repeated; every other id is labelled as seen in output and not worked on, so no
reader takes an id nobody acted on for work. The state holds the values grouped in the
order they are written (least needed first, so trimming to the budget drops those), and
:func:`parse_values` reads them back in that order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from ...analysis.identifiers import identifier_kind
from .quoting import inline_list, parse_list

GROUPS = (
    ("url", "URLs seen:"),
    ("uuid", "UUIDs seen:"),
    ("sha", "Other SHAs seen in output:"),
    ("id", "Other ids seen in output (not worked on):"),
    ("value", "Values:"),
)
COMMITS = "Commits (this work):"
MAX_COMMITS = 8
_SEP = "; "


def grouped_values(
    values: Iterable[str], commits: Sequence[tuple[str, str]], items: Iterable[str]
) -> tuple[str, ...]:
    """``values`` without the commits' SHAs and the work items' ids (both are named
    elsewhere), grouped by :data:`GROUPS` (each group in its own order)."""
    skip = set(items) | {sha for sha, _ in commits}
    kept = [v for v in dict.fromkeys(values) if v not in skip]
    kinds = {v: identifier_kind(v) for v in kept}
    return tuple(v for kind, _ in GROUPS for v in kept if kinds[v] == kind)


def render_values(values: Sequence[str], commits: Sequence[tuple[str, str]]) -> str:
    lines = []
    kinds = {v: identifier_kind(v) for v in values}
    for kind, label in GROUPS:
        group = [v for v in values if kinds[v] == kind]
        if group:
            lines.append(f"{label} {inline_list(group)}")
    if commits:
        shown = [f"{sha} {json.dumps(message, ensure_ascii=False)}" for sha, message in commits]
        lines.append(f"{COMMITS} {inline_list(shown, _SEP)}")
    return "\n".join(lines)


def parse_values(lines: Sequence[str]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The values and the commits of a Critical Values section (an unlabelled line, as
    older handoffs wrote them, is read as values)."""
    values: list[str] = []
    commits: list[tuple[str, str]] = []
    labels = [label for _, label in GROUPS]
    for line in lines:
        if line.startswith(COMMITS):
            for entry, _ in parse_list(line[len(COMMITS) + 1 :], _SEP):
                sha, _, message = entry.partition(" ")
                try:
                    commits.append((sha, str(json.loads(message))))
                except ValueError:
                    commits.append((sha, message))
            continue
        label = next((x for x in labels if line.startswith(x + " ")), None)
        text = line[len(label) + 1 :] if label else line
        values.extend(v for v, _ in parse_list(text.strip()) if line.strip())
    return tuple(values), tuple(commits)


def merged_commits(
    previous: Sequence[tuple[str, str]], new: Sequence[tuple[str, str]]
) -> tuple[tuple[str, str], ...]:
    found = dict(previous)
    for sha, message in new:
        found.pop(sha, None)
        found[sha] = message
    return tuple(found.items())[-MAX_COMMITS:]
