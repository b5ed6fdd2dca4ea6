"""Turning a summary model's answer into its sections of the handoff (design §5).

A model writes only the judgment sections (:data:`~..protocol.WRITTEN_TITLES`); the
task, the user's messages and constraints, the files, the values and the ledger are
filled mechanically by the compressor and never taken from the model. What must hold for
the text :func:`shape_sections` returns: each written heading once, in order, separated
by blank lines; a section the model left out reads "None"; anything else the model wrote
(its own headings, a preface, copies of the mechanical sections) is dropped.
"""

from __future__ import annotations

import re

from ..handoff.parse import split_sections
from ..protocol import WRITTEN_TITLES

REFUSAL_MAX_CHARS = 1_500

_ALIASES = {
    "work state": "Work State", "work status": "Work State", "status": "Work State",
    "progress": "Work State", "completed actions": "Work State", "active state": "Work State",
    "key decisions": "Key Decisions", "decisions": "Key Decisions",
    "next step": "Next Step", "next steps": "Next Step", "next": "Next Step",
}  # fmt: skip
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]*(.*?)[ \t#]*$")
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


def shape_sections(text: str) -> str:
    """The written sections of a model answer (see the module docstring)."""
    bodies: dict[str, list[str]] = {title: [] for title in WRITTEN_TITLES}
    current: list[str] | None = None
    for line in _unfence(text).splitlines():
        match = _HEADING.match(line)
        if match is not None:
            key = " ".join(match.group(2).strip().strip("*_").rstrip(":").split()).lower()
            title = _ALIASES.get(key)
            current = bodies[title] if title else None
            if title and any(part.strip() for part in bodies[title]):
                bodies[title].append("")  # a repeated section: keep both bodies apart
            continue
        if current is not None:
            current.append(line)
    return "\n\n".join(
        f"## {title}\n{chr(10).join(bodies[title]).strip() or 'None'}" for title in WRITTEN_TITLES
    )


def written_part(previous: str) -> str:
    """The written sections of a previous handoff body (what a model may update)."""
    sections = split_sections(previous, titles=WRITTEN_TITLES)
    parts = [f"## {t}\n" + "\n".join(sections[t]).strip() for t in WRITTEN_TITLES if t in sections]
    return "\n\n".join(parts)
