"""Patch files: the files a diff written to a file changes, once a later command applies it.

Agents write a diff to a file (``cat > fix.patch <<'EOF'``, a write tool) and apply it in
a later command (``git apply fix.patch``, ``patch -p1 < fix.patch``). The files it changes
are named only inside the diff, and ``git apply`` prints nothing, so the trail
(summary/handoff/trail.py) keeps each patch file's targets while it walks the events
(:func:`.commands.written_patches`, :func:`written_by_tool`) and lists them as modified
when a command applies that file (:func:`applied_patches`). (A patch written and applied in
one command is :func:`.commands.command_touches`' business; ``patch`` also names its files
in its output, :func:`.reported.patched_files`.)
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .shellwords import SCAN_CHARS, command_cwd, joined, steps_of
from .writers import unwrapped

__all__ = ["PATCH_CHECKS", "applied_patches", "diff_targets", "patch_program", "written_by_tool"]

_DIFF_TARGET = re.compile(r"^\+\+\+ (?:b/)?([^\t\n]+?)(?:\t[^\n]*)?$", re.M)
PATCH_CHECKS = frozenset({"--check", "--stat", "--numstat", "--summary", "--dry-run"})
"""Options of ``git apply`` / ``patch`` that make it apply nothing."""

_APPLIES = re.compile(r"\bgit\b[^\n]*\bapply\b|\bpatch\b")
_VALUED = frozenset({"-p", "-d", "--directory", "--exclude", "--include", "-C", "-D", "-F",
                     "-o", "--output", "-r", "--reject-file", "-B", "-z", "-V"})  # fmt: skip


def patch_program(words: Sequence[str]) -> str | None:
    """``patch`` or ``git`` when the step's words apply a patch, else None."""
    head = words[0].rsplit("/", 1)[-1] if words else ""
    applying = head == "patch" or (head == "git" and "apply" in words[1:4])
    return head if applying and not PATCH_CHECKS.intersection(words) else None


def diff_targets(text: str) -> tuple[str, ...]:
    """The files a unified diff changes (its ``+++`` lines, ``b/`` removed)."""
    if "+++ " not in text:
        return ()
    found = _DIFF_TARGET.findall(text[:SCAN_CHARS])
    return tuple(dict.fromkeys(t for t in found if t != "/dev/null"))


def written_by_tool(args: Mapping[str, Any]) -> tuple[str, ...]:
    """The targets of a diff a write tool's arguments hold (any string argument)."""
    for value in args.values():
        if isinstance(value, str) and "\n+++ " in value:
            return diff_targets(value)
    return ()


@functools.lru_cache(maxsize=1_024)
def applied_patches(command: str, cwd: str | None) -> tuple[tuple[str, ...], str | None]:
    """(patch files the command applies, the directory their paths are relative to):
    ``git apply [options] FILE…``, ``patch [options] < FILE`` / ``-i FILE``; checks and
    dry runs apply nothing."""
    text = command[:SCAN_CHARS]
    if "patch" not in text and "apply" not in text:
        return (), cwd
    here = command_cwd(command, cwd)
    found: list[str] = []
    for line in text.split("\n"):
        if ("patch" in line or "apply" in line) and _APPLIES.search(line):
            for tokens in steps_of(line):
                found.extend(_step_patches(unwrapped(tokens)))
    return tuple(dict.fromkeys(posixpath.normpath(joined(p, here)) for p in found)), here


def _step_patches(words: Sequence[str]) -> list[str]:
    head = patch_program(words)
    if head is None:
        return []
    args = list(words[list(words).index("apply") + 1 :] if head == "git" else words[1:])
    files: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word in ("<", "-i", "--input") and index < len(args):
            files.append(args[index])
            index += 1
        elif word.startswith(("<", "--input=")) and len(word) > 1:
            files.append(word.split("=", 1)[1] if word.startswith("--") else word[1:])
        elif word.startswith("-i") and len(word) > 2 and head == "patch":
            files.append(word[2:])
        elif word in _VALUED or word in (">", ">>", "2>"):
            index += 1
        elif head == "git" and not word.startswith(("-", ">", "2>")):
            files.append(word)
    return files
