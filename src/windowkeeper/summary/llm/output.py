"""Turning a summary model's answer into the handoff's section body (SPEC §6).

What must hold for the body returned by :func:`shape_sections`:
- it starts with ``## Historical Task Snapshot`` whose content is the verbatim task
  snapshot chosen by the compressor (the model's paraphrase is never trusted), and that
  section appears exactly once;
- every other heading of ``SECTION_TITLES`` appears once, in order, separated by blank
  lines (a glued heading would be lost on the next update); a section the model left
  out reads "None"; extra ``##`` sections the model added are kept after them;
- it has no handoff prefix, end marker or ledger: the compressor adds those.
"""

from __future__ import annotations

import re

from ..protocol import SECTION_TITLES

SNAPSHOT_TITLE = "Historical Task Snapshot"
PREAMBLE_KEEP_CHARS = 200
"""Text before the first heading longer than this is kept (under Critical Context)."""
REFUSAL_MAX_CHARS = 1_500

_ALIASES = {
    "active task": SNAPSHOT_TITLE,
    "current task": SNAPSHOT_TITLE,
    "task snapshot": SNAPSHOT_TITLE,
    "historical task": SNAPSHOT_TITLE,
}
_KNOWN = {title.lower(): title for title in SECTION_TITLES} | _ALIASES
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


def _known_title(raw: str) -> str | None:
    key = " ".join(raw.strip().strip("*_").strip().rstrip(":").split()).lower()
    return _KNOWN.get(key)


def _split(text: str) -> tuple[list[str], dict[str, list[str]], list[tuple[str, list[str]]]]:
    """Preamble lines, bodies of the known sections, and extra ``##`` sections."""
    preamble: list[str] = []
    known: dict[str, list[str]] = {title: [] for title in SECTION_TITLES}
    extras: list[tuple[str, list[str]]] = []
    current = preamble
    for line in _unfence(text).splitlines():
        match = _HEADING.match(line)
        if match is not None:
            title = _known_title(match.group(2))
            if title is not None:
                current = known.setdefault(title, [])
                if any(part.strip() for part in current):
                    current.append("")  # a repeated section: keep both bodies apart
                continue
            if len(match.group(1)) == 2 and match.group(2).strip():
                current = []
                extras.append((match.group(2).strip(), current))
                continue
        current.append(line)
    return preamble, known, extras


def shape_sections(text: str, snapshot: str) -> str:
    """The canonical section body for a model answer (see the module docstring)."""
    preamble, known, extras = _split(text)
    blocks = [f"## {SNAPSHOT_TITLE}\n{snapshot.strip()}"]
    intro = "\n".join(preamble).strip()
    for title in SECTION_TITLES:
        if title == SNAPSHOT_TITLE:
            continue
        body = "\n".join(known.get(title, [])).strip()
        if title == "Critical Context" and len(intro) > PREAMBLE_KEEP_CHARS:
            body = f"{intro}\n\n{body}".strip()
        blocks.append(f"## {title}\n{body or 'None'}")
    for title, lines in extras:
        body = "\n".join(lines).strip()
        blocks.append(f"## {title}\n{body or 'None'}")
    return "\n\n".join(blocks)
