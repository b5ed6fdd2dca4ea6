"""The extraction's shortcuts agree with the plain computations they stand in for.

The handoff's extraction reads fewer events or fewer texts than a plain pass would (the
newest entries only, literal gates in front of patterns, a fact computed once per event);
each property here builds the same events twice and compares the shortcut with the
straightforward computation on one copy each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis.changes import edit_change
from windowkeeper.analysis.events import ToolEvent
from windowkeeper.analysis.facts import collapse, dedupe
from windowkeeper.analysis.toolshapes import ToolAction, ToolKind
from windowkeeper.summary.handoff.progress import MAX_CHANGES, newest_changes

_PATHS = ["/w/a.py", "/w/b.py", "src/c.py", "x" * 130]
_LINES = ["", "x = 1", "x = 2", "# note", "return y", "def f():", "    pass", "}"]
_text = st.lists(st.sampled_from(_LINES), max_size=4).map("\n".join)


@st.composite
def _edit(draw: st.DrawFn) -> Callable[[int], ToolEvent]:
    """An event maker (fresh memo on each call): an edit, a ``sed -i``, or a read."""
    path = draw(st.sampled_from(_PATHS))
    failed = draw(st.booleans()) and draw(st.booleans())
    shape = draw(st.sampled_from(["edit", "sed", "read"]))
    if shape == "edit":
        args: dict[str, Any] = {"path": path, "old_str": draw(_text), "new_str": draw(_text)}
        action = ToolAction("str_replace", ToolKind.EDIT, path, path=path)
    elif shape == "sed":
        old, new = draw(st.sampled_from(["a", "b", "x"])), draw(st.sampled_from(["a", "c"]))
        command = f"sed -i 's/{old}/{new}/' {path}"
        args, action = (
            {"command": command},
            ToolAction("bash", ToolKind.SHELL, command, command=command),
        )
    else:
        args, action = {"path": path}, ToolAction("read", ToolKind.READ, path, path=path)

    def make(position: int) -> ToolEvent:
        return ToolEvent(position, action, args, "ok", 1 if failed else None, failed)

    return make


_previous = st.lists(
    st.sampled_from(["a.py: `x` → `y`", "b.py: added `z`", "/w/a.py: `x = 1` → `x = 2`"])
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_edit(), max_size=12), _previous)
def test_newest_changes_match_a_gist_of_every_edit(
    makers: list[Callable[[int], ToolEvent]], previous: list[str]
) -> None:
    events = [make(i) for i, make in enumerate(makers)]
    plain = [make(i) for i, make in enumerate(makers)]
    changes = filter(None, (edit_change(e) for e in plain))
    found = [f"{collapse(path, 120)}: {gist}" for path, gist in changes]
    expected = tuple(dedupe([*previous, *found], keep_last=True)[-MAX_CHANGES:])
    assert newest_changes(events, previous) == expected
