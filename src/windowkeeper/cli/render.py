"""Rich rendering of an inspection for the command line (tables only, no logic)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..engine.inspection import Inspection


def _pct(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "-"


def render_inspection(console: Console, inspection: Inspection, top: int = 10) -> None:
    """Rich tables: token categories, heaviest tools, window usage and the compaction plan."""
    tokens, total = inspection.tokens, inspection.tokens.total
    table = Table(title="Where the tokens go", title_justify="left")
    table.add_column("category")
    table.add_column("tokens", justify="right")
    table.add_column("share", justify="right")
    labels = {
        "system": "system prompt",
        "tool_schemas": "tool schemas",
        "user_text": "user text",
        "assistant_text": "assistant text",
        "tool_calls": f"tool calls ({tokens.tool_call_count})",
        "tool_results": "tool results",
        "images": f"images ({tokens.image_count} × {tokens.image_tokens_each:,})",
    }
    for key, value in tokens.categories().items():
        table.add_row(labels[key], f"{value:,}", _pct(value, total))
    table.add_section()
    table.add_row("[bold]total[/bold]", f"[bold]{total:,}[/bold]", _pct(total, total))
    console.print(table)
    if tokens.by_tool:
        console.print(_tools_table(inspection, top))
    console.print(_window_table(inspection))
    console.print(_plan_table(inspection))


def _tools_table(inspection: Inspection, top: int) -> Table:
    table = Table(title="Tool results by tool", title_justify="left")
    for name, justify in (("tool", "left"), ("results", "right"), ("tokens", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    table.add_column("share", justify="right")
    head, other = inspection.tokens.top_tools(top)
    for usage in (*head, *([other] if other else [])):
        share = _pct(usage.tokens, inspection.tokens.total)
        table.add_row(usage.name, str(usage.count), f"{usage.tokens:,}", share)
    return table


def _window_table(inspection: Inspection) -> Table:
    table = Table(title="Window", title_justify="left", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("messages", f"{inspection.messages:,}")
    table.add_row("estimated prompt tokens", f"{inspection.tokens.total:,}")
    table.add_row("context length", f"{inspection.context_length:,}")
    if inspection.max_tokens:
        table.add_row("reserved for output", f"{inspection.max_tokens:,}")
    table.add_row(
        f"threshold ({inspection.threshold:.0%} → trigger)", f"{inspection.threshold_tokens:,}"
    )
    table.add_row("usage of the window", f"{inspection.usage_of_window:.1%}")
    over = " (over: would compact)" if inspection.usage_of_threshold >= 1 else ""
    table.add_row("usage of the threshold", f"{inspection.usage_of_threshold:.1%}{over}")
    return table


def _plan_table(inspection: Inspection) -> Table:
    plan = inspection.plan
    title = "What a compaction would do" + ("" if plan.compressible else " (nothing to compress)")
    table = Table(title=title, title_justify="left")
    for name in ("segment", "messages", "tokens", "what happens"):
        table.add_column(name, justify="left" if name in ("segment", "what happens") else "right")
    pruned = f"; {plan.pruned_outputs} tool outputs pruned first" if plan.pruned_outputs else ""
    rows = (
        ("protected head", plan.head, "kept verbatim"),
        ("middle", plan.middle, f"summarized into the handoff{pruned}"),
        ("recent tail", plan.tail, "kept verbatim"),
    )
    for label, segment, action in rows:
        table.add_row(label, f"{segment.messages:,}", f"{segment.tokens:,}", action)
    table.add_section()
    restated = f"yes (message {plan.restated_index})" if plan.restated_index is not None else "no"
    table.add_row("in-progress request restated", "", "", restated)
    table.add_row("summary budget", "", f"{plan.summary_budget_tokens:,}", "tokens")
    return table
