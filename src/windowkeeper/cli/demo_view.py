"""The offline demo: inspect and compact a bundled synthetic coding-agent session.

No API key, network or server: the session ships in ``windowkeeper/data`` (written by
``scripts/make_demo_session.py``) and the handoff is written by the extractive
summarizer. The window is small (32K by default) so that the session, like a real
long-running agent, has outgrown it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..adapters.formats import parse_conversation
from ..analysis.kinds import is_handoff
from ..core.config import CompressionConfig
from ..core.messages import Message, ToolSchema, content_text, tool_calls
from ..core.report import CompressionReport
from ..core.tokens import estimate_request_tokens, message_tokens
from ..engine.compressor import ContextCompressor
from ..engine.inspection import Inspection, TokenBreakdown, breakdown, inspect_conversation

SESSION_RESOURCE = "data/demo_session.jsonl"
DEFAULT_CONTEXT_LENGTH = 32_000


def _tool(name: str, description: str, properties: dict[str, Any]) -> ToolSchema:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(properties)[:1],
            },
        },
    }


DEMO_TOOLS: list[ToolSchema] = [
    _tool(
        "bash",
        "Run a shell command in the repository and return its output and exit code.",
        {"command": {"type": "string", "description": "The command line to run."}},
    ),
    _tool(
        "read_file",
        "Read a text file of the repository.",
        {"path": {"type": "string", "description": "Path relative to the repository."}},
    ),
    _tool(
        "write_file",
        "Create or overwrite a file with the given content.",
        {"path": {"type": "string"}, "content": {"type": "string"}},
    ),
    _tool(
        "edit_file",
        "Replace one exact occurrence of old_string with new_string in a file.",
        {
            "path": {"type": "string"},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
        },
    ),
    _tool(
        "grep",
        "Search files for a regular expression; prints matching lines with line numbers.",
        {"pattern": {"type": "string"}, "path": {"type": "string"}},
    ),
]
"""The tool schemas the synthetic agent was given (sent with every request)."""


def load_demo_session() -> list[Message]:
    """The bundled synthetic session's messages."""
    text = (resources.files("windowkeeper") / SESSION_RESOURCE).read_text(encoding="utf-8")
    return parse_conversation(text).messages


@dataclass(frozen=True)
class DemoOutcome:
    """Everything the demo shows: the inspection before, the compaction, and after."""

    context_length: int
    messages: list[Message]
    result_messages: list[Message]
    inspection: Inspection
    report: CompressionReport
    triggered: bool
    after: TokenBreakdown
    handoff: str | None
    threshold_tokens: int

    def to_dict(self) -> dict[str, Any]:
        report = self.report.to_dict()
        report["threshold_tokens"] = self.threshold_tokens
        report["context_length"] = self.context_length
        return {
            "session": {
                "resource": f"windowkeeper/{SESSION_RESOURCE}",
                "messages": len(self.messages),
                "tools": len(DEMO_TOOLS),
            },
            "context_length": self.context_length,
            "threshold_tokens": self.threshold_tokens,
            "triggered": self.triggered,
            "inspection": self.inspection.to_dict(),
            "report": report,
            "after": {
                "messages": len(self.result_messages),
                "total_tokens": self.after.total,
                "breakdown": self.after.categories(),
                "fits_window": self.after.total < self.context_length,
            },
            "handoff": self.handoff,
        }


def run_demo(context_length: int = DEFAULT_CONTEXT_LENGTH) -> DemoOutcome:
    """Inspect the bundled session, then compact it as an agent loop would."""
    messages = load_demo_session()
    # The demo shows a handoff: its tier-1 target is one pruning alone cannot reach.
    config = CompressionConfig(prune_only_ratio=0.05)
    compressor = ContextCompressor(config, context_length=context_length, tools=DEMO_TOOLS)
    inspection = inspect_conversation(
        messages,
        DEMO_TOOLS,
        compressor,
        context_length=context_length,
        max_tokens=None,
        threshold=config.threshold,
        image_tokens=config.image_tokens,
    )
    tokens = estimate_request_tokens(messages, DEMO_TOOLS, image_tokens=config.image_tokens)
    triggered = compressor.should_compress(tokens)
    # With a window large enough for the session the trigger does not fire; compact
    # anyway (as a manual /compress would) so the demo always has something to show.
    result = compressor.compress(messages, force=not triggered, current_tokens=tokens)
    handoff = next((content_text(m.get("content")) for m in result.messages if is_handoff(m)), None)
    return DemoOutcome(
        context_length=context_length,
        messages=messages,
        result_messages=result.messages,
        inspection=inspection,
        report=result.report,
        triggered=triggered,
        after=breakdown(result.messages, DEMO_TOOLS, config.image_tokens),
        handoff=handoff,
        threshold_tokens=compressor.threshold_tokens,
    )


# --- rendering -----------------------------------------------------------------------


def render_intro(console: Console, outcome: DemoOutcome) -> None:
    total = outcome.inspection.tokens.total
    console.print(
        Panel(
            Text(
                f"A synthetic coding-agent session (ticket PAY-1423, partial refunds): "
                f"{len(outcome.messages)} messages, {total:,} estimated prompt tokens with "
                f"{len(DEMO_TOOLS)} tool schemas. The model's window is "
                f"{outcome.context_length:,} tokens, so the session no longer fits: "
                f"windowkeeper prunes old tool output, keeps the head and a recent tail "
                f"verbatim, and writes a handoff for the middle. Offline: extractive "
                f"summarizer, no API key."
            ),
            title="windowkeeper demo",
            border_style="cyan",
        )
    )


def render_outcome(console: Console, outcome: DemoOutcome) -> None:
    """The handoff text, the before/after figures and an outline of the new conversation."""
    report = outcome.report
    if outcome.handoff:
        # Printed as-is between rules, not in a panel: the handoff is hard-wrapped text
        # and a panel would wrap it a second time.
        console.rule("[bold green]The handoff message (what the model now reads)")
        console.print(Text(outcome.handoff), soft_wrap=True)
        console.rule(style="green")
    console.print(_figures(outcome))
    console.print(_outline(outcome.result_messages, preview=max(20, console.width - 31)))
    verdict = "fits" if outcome.after.total < outcome.context_length else "still exceeds"
    console.print(
        Text(
            f"{report.savings_ratio:.0%} of the prompt saved; the compacted session {verdict} "
            f"the {outcome.context_length:,}-token window.",
            style="bold",
        )
    )


def _figures(outcome: DemoOutcome) -> Table:
    report, before, after = outcome.report, outcome.inspection.tokens, outcome.after
    table = Table(title="Before and after", title_justify="left")
    for name in ("", "before", "after"):
        table.add_column(name, justify="left" if not name else "right")
    window = outcome.context_length
    table.add_row("messages", f"{report.before_messages:,}", f"{report.after_messages:,}")
    table.add_row("prompt tokens", f"{report.before_tokens:,}", f"{report.after_tokens:,}")
    table.add_row(
        "share of the window",
        f"{report.before_tokens / window:.0%}",
        f"{report.after_tokens / window:.0%}",
    )
    table.add_row("tool results", f"{before.tool_results:,}", f"{after.tool_results:,}")
    table.add_section()
    table.add_row("outcome", "", report.outcome.value)
    table.add_row("tokens saved", "", f"{report.saved_tokens:,} ({report.savings_ratio:.0%})")
    table.add_row("tool outputs pruned", "", f"{report.pruned:,}")
    table.add_row("messages summarized", "", f"{report.summarized_messages:,}")
    table.add_row("handoff tokens", "", f"{report.summary_tokens:,}")
    table.add_row("summarizer", "", report.summarizer or "-")
    table.add_row("elapsed", "", f"{report.elapsed_ms:,.1f} ms")
    return table


def _outline(messages: list[Message], preview: int = 200) -> Table:
    """One row per message; ``preview`` characters of content fit the console's width (a
    longer unbreakable cell would make rich squeeze the narrow columns to nothing)."""
    table = Table(title="The compacted conversation", title_justify="left")
    for name in ("#", "role", "tokens"):
        table.add_column(name, justify="left" if name == "role" else "right", no_wrap=True)
    table.add_column("content", no_wrap=True, overflow="ellipsis")
    for index, message in enumerate(messages):
        text = " ".join(content_text(message.get("content")).split())
        calls = [c.get("function", {}).get("name", "?") for c in tool_calls(message)]
        if calls:
            text = f"{text} → calls {', '.join(calls)}".strip()
        if is_handoff(message):
            text = f"[handoff] {text}"
        short = text if len(text) <= preview else text[: preview - 1] + "…"
        table.add_row(
            str(index), str(message.get("role")), f"{message_tokens(message):,}", Text(short)
        )
    return table
