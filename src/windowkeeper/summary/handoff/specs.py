"""The handoff's Task Spec section (SPEC §6 v3 "task spec"): the outputs that define the
task and its work items, as excerpts with their archive handles.

Which outputs are specs, and their excerpts, is :mod:`~windowkeeper.analysis.specs`'
business; here they are chosen, merged with the previous handoff's, rendered and read
back. The spec of the item or document the user named defines the task and is pinned;
one other is shown too: that of the work item in progress named last (the work items'
evidence says which are in progress and which closed), else of the item named last that
is not closed, else of the item named last; the others are referred to by their source
and handle, so nothing is dropped without a trace.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Collection, Sequence
from dataclasses import replace

from ...analysis.commands import short_command
from ...analysis.events import ToolEvent
from ...analysis.facts import dedupe
from ...analysis.gist import is_stub
from ...analysis.specexcerpt import SPEC_CHARS, done_criteria, spec_excerpt
from ...analysis.specs import is_spec, look_up_item, look_up_parts, spec_text
from ...analysis.toolshapes import READ_KIND, SHELL_KIND
from ...compaction.prune import make_handle
from .model import Spec, SpecRole
from .quoting import fence, quote, read_fence, unquote

MAX_REFERRED = 6
"""Earlier specs referred to by their handle (the newest ones)."""
LABELS = {
    SpecRole.TASK: "Spec of the task:",
    SpecRole.IN_PROGRESS: "Spec of the item in progress:",
    SpecRole.NEWEST: "Spec of the item named last:",
    SpecRole.NOT_CLOSED: "Spec of the newest item not closed:",
}
REFERRED = "Also looked up (recall for the text):"
CRITERIA_CHARS = 400
"""Characters of done criteria the next step repeats (whole lines)."""
REFERRED_SOURCE = 48
_SEP = " · "


def specs_of(
    events: Sequence[ToolEvent],
    said: Sequence[str],
    named: Collection[str],
    previous: Sequence[Spec],
    later: Sequence[ToolEvent] = (),
    working: Collection[str] = (),
    closed: Collection[str] = (),
    chars: int = SPEC_CHARS,
) -> tuple[Spec, ...]:
    """The specs after these events (oldest first), merged with the previous ones: the
    task's first (the first spec of an item or document the user named in ``said``,
    pinned once found), then the others by their newest look-up or mention (``later``:
    the events kept verbatim after the handoff, which only name items), one of them with
    its text (see the module docstring: ``working`` and ``closed`` are the work items in
    progress and closed; ``chars``: each shown spec's excerpt size)."""
    found, last = _looked_up(events, named)
    items = [*found, *(s.item for s in previous if s.item)]
    _mentioned(events, items, last)
    _mentioned(later, items, last, start=len(events) + 1)
    merged = {_key(s): s for s in previous}
    task = next((k for k, s in merged.items() if s.task), None)
    for key, spec in found.items():
        known = merged.pop(key, None)
        if known is not None and len(known.text) > len(spec.text):
            spec = known  # the fuller text of the two
        if task is None and _named(spec, said, named):
            task = key
        merged[key] = replace(spec, role=SpecRole.TASK if key == task else SpecRole.REFERRED)
    pinned = [merged.pop(task)] if task is not None else []
    # By the newest look-up or mention (a carried spec named again moves up, too).
    others = sorted(merged.values(), key=lambda spec: last.get(_key(spec), -1))
    shown = _shown(others, working, closed)
    keys = {_key(s) for s in shown}
    referred = [Spec(s.source, "", s.handle, s.item) for s in others if _key(s) not in keys]
    # The spec of the work in progress (else the task's) keeps its whole text: it is
    # what the work must meet, and a render shows more of it where the window has room.
    work = shown[0] if shown and shown[0].role is SpecRole.IN_PROGRESS else None
    work = work or (pinned[0] if pinned else None)
    cut = [_excerpted(spec, chars, spec is work) for spec in (*pinned, *shown)]
    return (*cut[: len(pinned)], *referred[-MAX_REFERRED:], *cut[len(pinned) :])


def _looked_up(
    events: Sequence[ToolEvent], named: Collection[str]
) -> tuple[dict[str, Spec], dict[str, int]]:
    """The specs these events looked up (each item's fullest output, not a ``| head``),
    and the index of each one's newest look-up, by key."""
    found: dict[str, Spec] = {}
    sizes: dict[str, int] = {}
    last: dict[str, int] = {}
    for index, event in enumerate(events):
        if event.result is None or not is_spec(event, named):
            continue
        for spec, size in _specs(event):
            key = _key(spec)
            if size >= sizes.get(key, 0):
                sizes[key] = size
                found[key] = spec
            last[key] = index
    return found, last


def _shown(specs: Sequence[Spec], working: Collection[str], closed: Collection[str]) -> list[Spec]:
    """The spec shown besides the task's (``specs`` oldest named first), with its role:
    of the work item in progress named last, else of the item named last that is not
    closed, else of the item named last; none when the chosen one's text is gone (an
    earlier handoff referred to it by its handle only)."""
    mine = {_id(i) for i in working}
    done = {_id(i) for i in closed}
    for role, wanted in (
        (SpecRole.IN_PROGRESS, [s for s in specs if s.item and _id(s.item) in mine]),
        (SpecRole.NOT_CLOSED, [s for s in specs if _id(s.item) not in done]),
        (SpecRole.NEWEST, specs),
    ):
        if wanted:
            chosen = wanted[-1]
            if role is not SpecRole.IN_PROGRESS and chosen is specs[-1]:
                role = SpecRole.NEWEST
            return [replace(chosen, role=role)] if chosen.text else []
    return []


def _id(item: str) -> str:
    """An item id as both trackers and commands write it (``#12`` and ``12`` alike)."""
    return item.lstrip("#")


def _excerpted(spec: Spec, chars: int, work: bool = False) -> Spec:
    """``spec`` with its text cut to its excerpt (only the specs shown pay for it);
    ``work``: the spec of the work in progress, whose whole output is kept beside its
    excerpt when that is shortened."""
    text, shortened = spec_excerpt(spec.text, chars)
    whole = spec.text if work and shortened else ""
    return replace(
        spec, text=text, shortened=spec.shortened or shortened, whole=whole,
        whole_shortened=spec.shortened,
    )  # fmt: skip


def _mentioned(
    events: Sequence[ToolEvent], items: Sequence[str], last: dict[str, int], start: int = 0
) -> None:
    """Record in ``last`` where each item was last named (``start`` + its index) by a
    command (a claim, a commit, a look-up): the item worked on last is the newest, even
    when one look-up showed several items. ``start`` > 0: the events kept after the
    handoff, whose look-ups are read only as mentions."""
    wanted = [i for i in dict.fromkeys(items) if i]
    for index, event in enumerate(events):
        command = event.action.command if event.action.kind is SHELL_KIND else None
        if not command or (look_up_item(event) is not None and not start):
            continue  # a look-up's own items were placed when it was read
        for item in wanted:
            if item in command and _names(item, command):
                last[item] = max(last.get(item, -1), start + index)


def _names(item: str, text: str) -> bool:
    """Whether ``text`` names ``item`` as a whole id (``app-7`` is not named by
    ``app-7.1`` or ``my-app-7``); by search, not a pattern per item."""
    start = text.find(item)
    while start >= 0:
        end = start + len(item)
        before = text[start - 1] if start else " "
        after = text[end : end + 2]
        joined = _in_word(before) or before in ".-"
        continued = (
            after[:1] == "-" or _in_word(after[:1]) or (after[:1] == "." and _in_word(after[1:]))
        )
        if not joined and not continued:
            return True
        start = text.find(item, start + 1)
    return False


def _in_word(char: str) -> bool:
    return bool(char) and (char.isalnum() or char == "_")


def _key(spec: Spec) -> str:
    return spec.item or spec.source


def _named(spec: Spec, said: Sequence[str], named: Collection[str]) -> bool:
    """Whether the user named the spec's item or document."""
    if spec.item:
        return any(_names(spec.item, text) for text in said)
    return posixpath.basename(spec.source).lower() in named


def _specs(event: ToolEvent) -> list[tuple[Spec, int]]:
    """The specs of one event (one per item a multi-item look-up shows) and the size of
    what each shows (its output, or the excerpt its prune stub kept)."""
    result = event.result or ""
    handle = make_handle(result)
    source = _source(event)
    if is_stub(result):
        text, handle = spec_text(result)
        parts = [(look_up_item(event) or "", text)]
    else:
        parts = look_up_parts(event) or [("", result)]
    # The whole text for now: only the specs that are shown are cut to their excerpt.
    return [(Spec(source, text, handle, item, is_stub(result)), len(text)) for item, text in parts]


def _source(event: ToolEvent) -> str:
    action = event.action
    if action.kind is SHELL_KIND:
        return short_command(action.command or "", 100)
    if action.kind is READ_KIND:
        return action.path or action.target
    return f"{action.name} {action.target}".strip()[:100]


def ahead_in_specs(specs: Sequence[Spec], worked: Collection[str]) -> list[str]:
    """What the specs say is still ahead, for the next step: the done criteria of the
    item in progress (to check before it is closed: whether each is met is not known) and
    the items looked up that no work was seen on (``worked``: the work items' ids)."""
    lines: list[str] = []
    current = next((s for s in specs if s.role is SpecRole.IN_PROGRESS and s.text), None)
    criteria = done_criteria(current.text) if current is not None else []
    shown: list[str] = []
    for line in criteria:
        if sum(len(c) + 2 for c in shown) + len(line) > CRITERIA_CHARS:
            break
        shown.append(line.rstrip(".;"))
    if current is not None and shown:
        more = len(criteria) - len(shown)
        rest = f" (+{more} more in its spec, Task Spec)" if more else ""
        lines.append(
            f"Before closing {current.item}, check the done criteria of its spec: "
            + "; ".join(shown) + rest
        )  # fmt: skip
    untouched = dedupe(
        s.item for s in specs
        if s.item and not s.task and s.role is not SpecRole.IN_PROGRESS and s.item not in worked
    )  # fmt: skip
    if untouched:
        lines.append("Looked up, no work on it seen yet: " + ", ".join(untouched))
    return lines


# --- text ---------------------------------------------------------------------------------


def render_specs(specs: Sequence[Spec], chars: int, extra: int = 0) -> str:
    """The section's body, in the state's order (the task's, the ones referred to, the
    newest); each text cut to ``chars`` characters by its excerpt rules, but the spec
    of the work in progress shows ``extra`` characters more of its whole output."""
    lines: list[str] = []
    for spec in specs:
        if not spec.text:
            if REFERRED not in lines:
                lines.append(REFERRED)
            lines.append(f"- {_head(spec, False, REFERRED_SOURCE)}")
            continue
        text, shortened = _shown_text(spec, chars, extra)
        label = LABELS.get(spec.role, LABELS[SpecRole.NEWEST])
        lines += [f"{label} {_head(spec, shortened)}", fence(text)]
    return "\n".join(lines)


def shown_key(specs: Sequence[Spec], chars: int, extra: int) -> bytes:
    """What :func:`render_specs`' text depends on besides the specs themselves: each
    spec's excerpt shown and whether it is shortened, as a digest. The knobs move the
    text in line steps, so most values probed show the same excerpts; an excerpt costs
    microseconds, a render and its token estimate far more. A digest, not the texts: a
    sizer keeping it would otherwise hold every excerpt tried (the peak memory)."""
    digest = hashlib.blake2b(digest_size=16)
    for spec in specs:
        if spec.text:
            text, cut = _shown_text(spec, chars, extra)
            digest.update(b"%d %d:" % (len(text), cut))
            digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.digest()


def _shown_text(spec: Spec, chars: int, extra: int) -> tuple[str, bool]:
    """A shown spec's text and whether it is shortened (see :func:`render_specs`)."""
    if spec.whole and extra > 0:
        text, cut = spec_excerpt(spec.whole, min(len(spec.text), chars) + extra)
        return text, cut or spec.whole_shortened
    if len(spec.text) > chars:
        text, cut = spec_excerpt(spec.text, chars)
        return text, spec.shortened or cut
    return spec.text, spec.shortened


def _head(spec: Spec, shortened: bool, limit: int = 0) -> str:
    """The line that names a spec; ``limit``: its source cut to this many characters
    (for one referred to by its item, whose source only says where it came from)."""
    source = spec.source
    if limit and spec.item and len(source) > limit:
        source = source[: limit - 3].rstrip() + "..."
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
        for role, label in LABELS.items():
            if line.startswith(label + " "):
                fenced = read_fence(lines, index)
                text, index = fenced if fenced is not None else ("", index)
                specs.append(replace(_parsed(line[len(label) + 1 :], text), role=role))
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
