"""Facts read from tool calls: working directory, branch, background jobs.

Each is a bounded regular-expression scan. The files a call touches are
:mod:`.commands`' business (shell) and :mod:`.toolshapes`' (edit tools).
"""

from __future__ import annotations

import re

from .events import ToolEvent
from .facts import WINDOW_CHARS

COMMAND_SCAN = 2_000
"""Characters of a command line scanned for state hints (heredocs can be huge)."""

_CD = re.compile(r"^\s*cd\s+([^\s;&|]+)\s*(?:&&|;|$)")
# Prompts that show the working directory, each with a literal it needs; matched in the
# text after a prepended line break, so a line start is a literal ``\n`` the engine finds.
_PROMPT_CWDS = (
    ("(Current directory: ", re.compile(r"\(Current directory: ([^)\n]+)\)")),
    ("@", re.compile(r"\n[\w.-]+@[\w.-]+:((?:/|~)[^\s#$]*)\s*[#$]")),
    ("$", re.compile(r"\n(/[\w./-]*)\$\s*$", re.MULTILINE)),
)
_BRANCH_COMMAND = re.compile(
    r"git(?<!\wgit)\s+(?:checkout\s+-[bB]|switch\s+-[cC]|worktree\s+add\s+-b|switch)\s+"
    r"([\w./-]+)"
)
_BRANCH_OUTPUT = re.compile(r"^(?:On branch|Switched to (?:a new )?branch) '?([\w./-]+)'?", re.M)
_BACKGROUND = tuple(
    re.compile(pattern)
    for pattern in (
        r"nohup(?<!\Snohup)\s", r"&(?<!&&)\s*(?:$|(?:disown|echo|sleep)\b)",
        r"setsid(?<!\wsetsid)\s", r"tmux(?<!\wtmux)\s+new(?:-session)?\b.*\s-d\b",
        r"screen(?<!\wscreen)\s+-d",
    )
)  # fmt: skip


def cwd_hint(event: ToolEvent, previous: str | None) -> str | None:
    """The working directory after a shell call: prompt in the output, ``cd``, or an arg."""
    prompt = _prompt_cwd(event.result[-WINDOW_CHARS:]) if event.result else None
    if prompt is not None:
        return prompt
    match = _CD.match((event.action.command or "")[:COMMAND_SCAN])
    if match:
        target = match.group(1)
        if target.startswith(("/", "~")) or previous is None:
            return target
        return f"{previous.rstrip('/')}/{target}"
    for key in ("workdir", "cwd", "working_directory", "dir"):
        value = event.args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _prompt_cwd(text: str) -> str | None:
    """The directory of the last prompt in ``text``."""
    lined = "\n" + text
    last: tuple[int, str] | None = None
    for literal, pattern in _PROMPT_CWDS:
        if literal in text:
            for match in pattern.finditer(lined):
                if last is None or match.start() > last[0]:
                    last = (match.start(), match.group(1))
    return last[1].strip() if last else None


def branch_hint(event: ToolEvent) -> str | None:
    tail = event.result[-WINDOW_CHARS:] if event.result else ""
    if "On branch" in tail or "Switched to " in tail:
        found = _BRANCH_OUTPUT.findall(tail)
        if found:
            return str(found[-1])
    command = (event.action.command or "")[:COMMAND_SCAN]
    match = _BRANCH_COMMAND.search(command) if "git" in command else None
    if match and not match.group(1).startswith("-"):
        return match.group(1)
    return None


_BACKGROUND_WORDS = ("nohup", "&", "setsid", "tmux", "screen")


def is_background(event: ToolEvent) -> bool:
    if event.args.get("run_in_background") is True:
        return True
    command = (event.action.command or "")[:COMMAND_SCAN].strip()
    return any(
        word in command and pattern.search(command) is not None
        for word, pattern in zip(_BACKGROUND_WORDS, _BACKGROUND, strict=True)
    )
