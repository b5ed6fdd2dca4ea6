"""Files a command's output reports as changed (``git status`` / ``git diff``, ``patch``,
``git apply -v``): what the output says about files, beside what the command line itself
says (:mod:`.commands`). A patch applied from a file written earlier names its files
only in its output."""

from __future__ import annotations

import re

from .shellwords import SCAN_CHARS
from .steps import DELETED, MODIFIED, Touch

_STATUS_LINE = re.compile(
    r"^\s*(modified|new file|deleted|renamed):\s+(?:\S+ -> )?(\S+)\s*$"
    r"|^(?:diff --git a/\S+ b/(\S+))$"
    r"|^([ MADRCU?!]{2}) (\S+)$",
    re.M,
)
_GIT_STATUS_HOW = {"modified": MODIFIED, "new file": MODIFIED, "renamed": MODIFIED,
                   "deleted": DELETED}  # fmt: skip


_GIT_REPORTS = re.compile(r"\bgit\s+(?:-C\s+\S+\s+)?(?:status|diff)\b")


def reported_touches(command: str, output: str) -> list[Touch]:
    """Files that ``git status`` / ``git diff`` output reports as changed (paths as shown,
    relative to the repository root)."""
    if "git" not in command[:2_000] or not output:
        return []
    if not _GIT_REPORTS.search(command[:2_000]):
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


_PATCHING = re.compile(
    r"^patching file (?:'([^'\n]+)'|(\S[^\n]*?))(?: \(read from [^)]*\))?\s*$", re.M
)
_APPLIED = re.compile(r"^Applied patch (\S+) (?:cleanly|with conflicts)\.$", re.M)
_HUNKS = re.compile(r"^(\d+) out of (\d+) hunks? FAILED", re.M)
_PATCH_SAYS = ("patching file", "Applied patch")
_PATCHES = re.compile(r"\bpatch\b|\bgit\s+(?:-C\s+\S+\s+)?apply\b")


def patched_files(command: str, output: str) -> list[Touch]:
    """Files ``patch`` (``patching file X``) or ``git apply -v`` (``Applied patch X
    cleanly.``) says it changed; a file all of whose hunks failed is left out, one with
    some applied is kept (the command then exits non-zero, the file changed anyway)."""
    # Substring scans first (a regex without a leading literal tries every position).
    said = any(output.find(words, 0, SCAN_CHARS) >= 0 for words in _PATCH_SAYS)
    if not said or not _PATCHES.search(command[:2_000]):
        return []
    text = output[:SCAN_CHARS]
    found: list[Touch] = [(m.group(1), MODIFIED) for m in _APPLIED.finditer(text)]
    blocks = list(_PATCHING.finditer(text))
    for index, match in enumerate(blocks):
        end = blocks[index + 1].start() if index + 1 < len(blocks) else len(text)
        hunks = _HUNKS.search(text, match.end(), end)
        if hunks is None or int(hunks.group(1)) < int(hunks.group(2)):
            found.append((match.group(1) or match.group(2), MODIFIED))
    return found
