"""Files that ``git status`` / ``git diff`` output reports as changed: what a command's
output says about files, beside what the command line itself says (:mod:`.commands`)."""

from __future__ import annotations

import re

from .commands import DELETED, MODIFIED, SCAN_CHARS, Touch

_STATUS_LINE = re.compile(
    r"^\s*(modified|new file|deleted|renamed):\s+(?:\S+ -> )?(\S+)\s*$"
    r"|^(?:diff --git a/\S+ b/(\S+))$"
    r"|^([ MADRCU?!]{2}) (\S+)$",
    re.M,
)
_GIT_STATUS_HOW = {"modified": MODIFIED, "new file": MODIFIED, "renamed": MODIFIED,
                   "deleted": DELETED}  # fmt: skip


def reported_touches(command: str, output: str) -> list[Touch]:
    """Files that ``git status`` / ``git diff`` output reports as changed (paths as shown,
    relative to the repository root)."""
    if "git" not in command[:2_000] or not output:
        return []
    if not re.search(r"\bgit\s+(?:-C\s+\S+\s+)?(?:status|diff)\b", command[:2_000]):
        return []
    found: list[Touch] = []
    for match in _STATUS_LINE.finditer(output[:SCAN_CHARS]):
        if match.group(1):
            found.append((match.group(2), _GIT_STATUS_HOW[match.group(1)]))
        elif match.group(3):
            found.append((match.group(3), MODIFIED))
        elif match.group(4) and match.group(5):
            code = match.group(4)
            found.append((match.group(5), DELETED if "D" in code else MODIFIED))
    return found
