"""The handoff's Task Spec section (SPEC §6 v3 "task spec"): the outputs that define the
task and its work items, as excerpts with their archive handles.

Which outputs are specs, and their excerpts, is :mod:`~windowkeeper.analysis.specs`'
business; here they are chosen, merged with the previous handoff's, rendered and read
back. The first spec of the session defines the task and is pinned; the newest other one
(the work item looked up last, typically the one in progress) is shown too; the others
are referred to by their source and handle, so nothing is dropped without a trace.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from ...analysis.commands import short_command
from ...analysis.events import ToolEvent
from ...analysis.gist import is_stub
from ...analysis.specs import SPEC_CHARS, is_spec, look_up_item, spec_excerpt, spec_text
from ...analysis.toolshapes import ToolKind
from ...compaction.prune import make_handle
from .model import Spec
from .quoting import fence, quote, read_fence, unquote

MAX_REFERRED = 6
"""Earlier specs referred to by their handle (the newest ones)."""
TASK_LABEL = "Spec of the task:"
ITEM_LABEL = "Spec of the newest work item looked up:"
REFERRED = "Also looked up (recall for the text):"
_SEP = " · "


def specs_of(
    events: Sequence[ToolEvent], named: Collection[str], previous: Sequence[Spec]
) -> tuple[Spec, ...]:
    """The specs after these events: the task's (the previous one, else the first found),
    then the others by their newest look-up, only the newest with its text."""
    found: dict[str, Spec] = {}
    sizes: dict[str, int] = {}
    for event in events:
        if event.result is None or not is_spec(event, named):
            continue
        spec, size = _spec(event)
        key = spec.item or spec.source
        if size >= sizes.get(key, 0):  # the fullest output of an item (not a `| head`)
            sizes[key] = size
            found[key] = spec
        found[key] = found.pop(key)  # ordered by the newest look-up
    merged = {(s.item or s.source): s for s in previous}
    for key, spec in found.items():
        # The task's spec keeps its place; any spec keeps the fuller of its texts.
        known = merged.get(key)
        if known is not None and len(known.text) > len(spec.text):
            spec = known
        if key == next(iter(merged), key):
            merged[key] = spec
        else:
            merged.pop(key, None)
            merged[key] = spec
    if not merged:
        return ()
    task, *others = merged.values()
    newest = others[-1:]
    referred = [Spec(s.source, "", s.handle, s.item) for s in others[:-1]][-MAX_REFERRED:]
    return (task, *referred, *newest)


def _spec(event: ToolEvent) -> tuple[Spec, int]:
    """The spec of one event and the size of what it shows (its output, or the excerpt
    its prune stub kept)."""
    result = event.result or ""
    text, handle = spec_text(result)
    stubbed = is_stub(result)
    excerpt, shortened = spec_excerpt(text, SPEC_CHARS)
    item = look_up_item(event) or ""
    source = _source(event)
    spec = Spec(source, excerpt, handle or make_handle(result), item, shortened or stubbed)
    return spec, len(text)


def _source(event: ToolEvent) -> str:
    action = event.action
    if action.kind is ToolKind.SHELL:
        return short_command(action.command or "", 100)
    if action.kind is ToolKind.READ:
        return action.path or action.target
    return f"{action.name} {action.target}".strip()[:100]


# --- text ---------------------------------------------------------------------------------


def render_specs(specs: Sequence[Spec], chars: int) -> str:
    """The section's body; each text cut to ``chars`` characters (by its excerpt rules)."""
    lines: list[str] = []
    shown = [s for s in specs if s.text]
    referred = [s for s in specs if not s.text]
    for index, spec in enumerate(shown):
        text, cut = spec_excerpt(spec.text, chars) if len(spec.text) > chars else (spec.text, False)
        label = TASK_LABEL if index == 0 and spec is specs[0] else ITEM_LABEL
        lines += [f"{label} {_head(spec, spec.shortened or cut)}", fence(text)]
    if referred:
        lines.append(REFERRED)
        lines.extend(f"- {_head(spec, False)}" for spec in referred)
    return "\n".join(lines)


def _head(spec: Spec, shortened: bool) -> str:
    source = spec.source
    plain = source and not any(mark in source for mark in ("`", "\n", _SEP))
    shown = f"`{source}`" if plain else quote(source)
    parts = [shown]
    if spec.item:
        parts.append(f"item {quote(spec.item) if _SEP.strip() in spec.item else spec.item}")
    if shortened:
        parts.append("shortened")
    if spec.handle:
        parts.append(f"recall {spec.handle}")
    return _SEP.join(parts)


_ITEM = re.compile(r"item (.+)")


def parse_specs(lines: Sequence[str]) -> tuple[Spec, ...]:
    """The specs of the section's lines (what :func:`render_specs` wrote)."""
    specs: list[Spec] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        for label in (TASK_LABEL, ITEM_LABEL):
            if line.startswith(label + " "):
                fenced = read_fence(lines, index)
                text, index = fenced if fenced is not None else ("", index)
                specs.append(_parsed(line[len(label) + 1 :], text))
        if line.startswith("- "):
            specs.append(_parsed(line[2:], ""))
    return tuple(specs)


def _parsed(head: str, text: str) -> Spec:
    fields = head.split(_SEP)
    first = fields[0]
    source = first[1:-1] if first[:1] == "`" == first[-1:] and len(first) > 1 else unquote(first)
    item, handle, shortened = "", "", False
    for field in fields[1:]:
        match = _ITEM.fullmatch(field)
        if match:
            item = unquote(match.group(1))
        elif field == "shortened":
            shortened = True
        elif field.startswith("recall "):
            handle = field[len("recall ") :]
    return Spec(source, text, handle, item, shortened)
