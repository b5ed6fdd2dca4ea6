"""Turning a summary model's answer into its sections of the handoff (design §5).

A model writes only the judgment sections (:data:`~..protocol.WRITTEN_TITLES`); the
task, the user's messages and constraints, the files, the values and the ledger are
filled mechanically by the compressor and never taken from the model. What must hold for
the text :func:`shape_sections` returns: each written heading once, in order, separated
by blank lines; a section the model left out reads "None"; what it wrote under headings
of its own is kept, as a ``### heading`` block at the end of Work State (a model that says
more than asked still said it); a preface and copies of the mechanical sections are
dropped. Headings are read tolerantly: any ``#`` level, numbered ("2. Next Step"), bold
("**Key Decisions:**"), in any case. A reply with none of the requested headings is no
summary at all: :func:`shape_sections` returns ``None`` (a ``format`` failure).
"""

from __future__ import annotations

import re

from ..handoff.parse import split_notes, split_sections
from ..protocol import SECTION_TITLES, WRITTEN_TITLES

REFUSAL_MAX_CHARS = 1_500

_ALIASES = {
    "work state": "Work State", "work status": "Work State", "status": "Work State",
    "progress": "Work State", "completed actions": "Work State", "active state": "Work State",
    "key decisions": "Key Decisions", "decisions": "Key Decisions",
    "next step": "Next Step", "next steps": "Next Step", "next": "Next Step",
}  # fmt: skip
_HEADING = re.compile(r"^ {0,3}(?:#{1,6}[ \t]*(.*?)[ \t#]*|\*\*([^*]+?)\*\*:?[ \t]*)$")
_NUMBERING = re.compile(r"^(?:\d+|[ivx]+|[a-z])[.)][ \t]*", re.IGNORECASE)
_MECHANICAL = frozenset(t.lower() for t in SECTION_TITLES if t not in WRITTEN_TITLES)
_REFUSAL_START = re.compile(
    r"^\W*(?:i'?m sorry|sorry|i apologi[sz]e|i can'?t|i cannot|i can not|i'?m unable"
    r"|i am unable|i'?m not able|i am not able|i won'?t|i will not|i must decline"
    r"|as an ai|unfortunately,? i)\b",
    re.IGNORECASE,
)


def is_refusal_text(text: str) -> bool:
    """Short prose that opens like a refusal and has no section heading."""
    stripped = text.strip().replace("\u2019", "'")
    if not stripped or len(stripped) > REFUSAL_MAX_CHARS:
        return False
    if any(line.lstrip().startswith("## ") for line in stripped.splitlines()):
        return False
    return _REFUSAL_START.match(stripped) is not None


def _unfence(text: str) -> str:
    """The text without one code fence wrapped around the whole answer."""
    lines = text.strip().splitlines()
    if len(lines) >= 2 and lines[0].startswith("```") and lines[-1].strip() == "```":
        return "\n".join(lines[1:-1])
    return text


def _heading(line: str) -> str | None:
    """The heading a line is, normalised (lower case, no numbering or emphasis), if any."""
    match = _HEADING.match(line)
    if match is None:
        return None
    raw = (match.group(1) if match.group(1) is not None else match.group(2)) or ""
    key = " ".join(raw.strip().strip("*_").rstrip(":").strip("*_").split())
    return _NUMBERING.sub("", key).lower()


def shape_sections(text: str) -> str | None:
    """The written sections of a model answer; ``None`` when it has none of them (see
    the module docstring)."""
    bodies: dict[str, list[str]] = {title: [] for title in WRITTEN_TITLES}
    extra: list[str] = []
    current: list[str] | None = None
    found = False
    for line in _unfence(text).splitlines():
        key = _heading(line)
        if key is None:
            if current is not None:
                current.append(line)
            continue
        title = _ALIASES.get(key)
        if title is None:
            # A heading of the model's own: kept (under Work State), unless it copies
            # a section the compressor fills mechanically.
            current = None if key in _MECHANICAL or not key else extra
            if current is extra:
                extra.extend(["", f"### {_heading_text(line)}"])
            continue
        found = True
        current = bodies[title]
        if any(part.strip() for part in current):
            current.append("")  # a repeated section: keep both bodies apart
    if not found:
        return None
    if any(line.strip() and not line.startswith("### ") for line in extra):
        bodies["Work State"].extend(extra)
    return "\n\n".join(
        f"## {title}\n{chr(10).join(bodies[title]).strip() or 'None'}" for title in WRITTEN_TITLES
    )


def _heading_text(line: str) -> str:
    return line.strip().lstrip("#").strip().strip("*_").strip()


def written_part(previous: str) -> str:
    """The written sections of a previous handoff body (what a model may update)."""
    sections = split_sections(previous, titles=WRITTEN_TITLES)
    parts = [f"## {t}\n" + _notes(sections[t]) for t in WRITTEN_TITLES if t in sections]
    return "\n\n".join(parts)


def _notes(lines: list[str]) -> str:
    """A section's model-written text: what is below the notes line where the extracted
    state comes first (the model updates its notes; the state is extracted again)."""
    notes = split_notes(lines)[1]
    return notes if notes is not None else "\n".join(lines).strip()
