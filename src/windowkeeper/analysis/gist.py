"""The gist of a tool result: the few facts a one-line stub keeps of it (design §4 pass 2:
"one informative line that keeps what matters").

A pruned result is archived whole and the agent can recall it, but a fact the stub does
not show is out of the agent's sight until it does. A failing result keeps its newest
error lines, a test run its summary line, any result the identifiers it names (a commit
made, a ticket, a URL). The gist is derived from the same memoized event facts the
handoff reads, so pruning and summarizing never scan an output twice.
"""

from __future__ import annotations

from ..core.secrets import redact
from .events import ToolEvent, remembered
from .identifiers import output_identifiers
from .outputs import event_errors, is_test_command, test_summary
from .toolshapes import SHELL_KIND, shorten

GIST_ERRORS = 2
"""Error lines a stub keeps (the newest)."""
GIST_IDS = 8
"""Identifiers a stub keeps (the first ones the output names)."""
GIST_LINE_CHARS = 120
DUPLICATE_TAG = "[duplicate output"
"""How an older copy of an identical output starts once pruning replaced it."""
_ERROR = "; error: "


def is_stub(text: str) -> bool:
    """Whether a tool result is a stub pruning left (one line with an archive handle)."""
    # The line break first: a long output that opens with "[" (a JSON array, a log) has
    # one early, while looking for the handle reads all of it.
    return text.startswith(DUPLICATE_TAG) or (
        text.startswith("[") and "\n" not in text and "(ref wk" in text
    )


def stub_error(text: str) -> str:
    """The error lines a stub kept (``""`` when it kept none or ``text`` is no stub)."""
    if not is_stub(text):
        return ""
    _, found, rest = text.partition(_ERROR)
    return rest.split("; ids: ")[0].rsplit(" (ref wk", 1)[0].strip() if found else ""


def gist(event: ToolEvent) -> str:
    """``"; error: …; ids: …"`` for ``event``'s result (``""`` when it has none)."""
    found: str = remembered(event, "gist", _gist)
    return found


def _gist(event: ToolEvent) -> str:
    if not event.result:
        return ""
    parts = []
    command = event.action.command or ""
    if event.action.kind is SHELL_KIND and command and is_test_command(command):
        summary = test_summary(event.result)
        if summary:
            parts.append(f"tests: {shorten(redact(summary), GIST_LINE_CHARS)}")
    errors = event_errors(event) if event.failed else []
    if errors:
        # Masked before they are cut: a key cut in half is no longer recognized as one.
        shown = [shorten(redact(line), GIST_LINE_CHARS) for line in errors[-GIST_ERRORS:]]
        parts.append(_ERROR[2:] + " | ".join(shown))
    named = [value for value in output_identifiers(event) if value not in command]
    if named:
        parts.append("ids: " + ", ".join(named[:GIST_IDS]))
    if not parts:
        return ""  # most stubs' (no generator made to join nothing)
    return "".join(f"; {part}" for part in parts).replace("\n", " ")
