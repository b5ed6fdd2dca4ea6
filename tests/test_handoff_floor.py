"""The handoff's floor on a small window (design §6 budget; issue 24 at 8K): a compaction
that must fit gives the tail's large tool results (verbatim output the agent can read
again, archived with a handle) before the handoff drops below its budget; the handoff's
lists keep names, failed attempts are all counted, decisions keep their stated reason.
"""

from __future__ import annotations

import re

from factories import assistant, call, image_part, system, tool, user
from windowkeeper.compaction.plan import fitting_plan
from windowkeeper.compaction.truncate import TAIL_KEEP_TOKENS
from windowkeeper.core.config import CompressionConfig
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import Message, content_text
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.summary.handoff.decide import decisions
from windowkeeper.summary.handoff.model import HandoffState
from windowkeeper.summary.handoff.text import Shown, section_text

WINDOW = 8_000
TASK = "Make `Ledger.total()` return NotImplemented for foreign operands.\n" + "\n".join(
    f"Background line {n}: the ledger keeps entries in cents and rounds half to even."
    for n in range(110)
)
VIEW = "\n".join(f"{n:6}\tdef helper_{n}(value):  # unit conversion helper" for n in range(700))


def session(view: str = VIEW) -> list[Message]:
    """A short agent run like the blind quiz's OpenHands session: a long task, a script
    written, two failed edits of one file, an edit of another, a failing re-run, then a
    large file view as the newest tool result."""
    old = "    try:\n        convert(a, b)\n    except UnitsError:\n        raise"
    edits = [
        assistant("The issue is in converters.py, so I'll change it there.",
                  call("e1", "str_replace_editor", command="str_replace",
                       path="/repo/pkg/converters.py", old_str=old, new_str="    pass")),
        tool("e1", f"ERROR:\nNo replacement was performed, old_str `{old}` did not appear "
                   "verbatim in /repo/pkg/converters.py."),
        assistant("Let me try again with other indentation.",
                  call("e2", "str_replace_editor", command="str_replace",
                       path="/repo/pkg/converters.py", old_str="  " + old, new_str="    pass")),
        tool("e2", f"ERROR:\nNo replacement was performed, old_str `  {old}` did not appear "
                   "verbatim in /repo/pkg/converters.py."),
        assistant("The raise lives in helpers.py instead of converters.py.",
                  call("e3", "str_replace_editor", command="str_replace",
                       path="/repo/pkg/helpers.py", old_str="raise UnitsError",
                       new_str="return NotImplemented")),
        tool("e3", "The file /repo/pkg/helpers.py has been edited."),
    ]  # fmt: skip
    reads = []
    for n in range(6):
        reads += [
            assistant(None, call(f"r{n}", "str_replace_editor", command="view",
                                 path=f"/repo/pkg/module{n}.py")),
            tool(f"r{n}", "\n".join(f"{k}\tline {k} of module{n}" for k in range(120))),
        ]  # fmt: skip
    run = "python /repo/repro.py"
    return [
        system(),
        user(TASK),
        assistant(None, call("w1", "str_replace_editor", command="create",
                             path="/repo/repro.py", file_text="import pkg\nprint(pkg.total())\n")),
        tool("w1", "File created successfully at: /repo/repro.py"),
        *reads,
        *edits,
        assistant(None, call("t1", "bash", command=run)),
        tool("t1", f"{run}\nTraceback (most recent call last):\n  File \"/repo/repro.py\", "
                   "line 2\nValueError: Value not scalar compatible\n[Command finished with "
                   "exit code 1]"),
        assistant("Still failing in core.py. Let's look at it:",
                  call("v1", "str_replace_editor", command="view", path="/repo/pkg/core.py")),
        tool("v1", view),
    ]  # fmt: skip


def test_the_tail_result_gives_way_before_the_handoff_drops_below_its_floor() -> None:
    messages = session()
    comp = ContextCompressor(CompressionConfig(), context_length=WINDOW)
    result = comp.compress(messages, force=True)
    out, report = result.messages, result.report
    assert report.compressed and violations(out) == []
    assert report.after_tokens < WINDOW
    # The system prompt (with the one-time note) and the task stay verbatim.
    assert content_text(out[0]["content"]).startswith(messages[0]["content"])
    assert out[1] == messages[1]
    # The newest tool result keeps its head and tail around a marker with its handle,
    # and the whole original is archived under that handle.
    newest = out[-1]
    assert newest["tool_call_id"] == "v1"
    text = content_text(newest.get("content"))
    assert text.startswith(VIEW[:200]) and text.endswith(VIEW[-100:])
    handle = re.search(r"\(ref (wk\w+)\)", text)
    assert handle is not None and len(text) < len(VIEW)
    archived = {item.handle: item.message for item in result.archived}
    assert archived[handle.group(1)] == messages[-1]
    # The handoff kept its budget, so its essentials are named, not counted.
    body = result.summary or ""
    assert "(condensed)" not in body and "more)" not in body
    for name in ("repro.py", "helpers.py", "converters.py"):
        assert name in body, name
    assert "ValueError: Value not scalar compatible" in body
    assert "(the same error in 2 attempts)" in body


def test_without_large_tail_results_the_handoff_shrinks_as_before() -> None:
    """Only output that is over its own floor gives way: a small newest result is kept
    whole, and the handoff gets what is left."""
    messages = session(view="\n".join(f"{n}\tshort" for n in range(40)))
    comp = ContextCompressor(CompressionConfig(), context_length=4_000)
    facts = comp.analyzer.analyze(messages)
    costs = [f.tokens for f in facts]
    plan = fitting_plan(messages, costs, comp.plan(messages), comp.config, 4_000, 4_000, facts)
    assert plan.tail_cut_tokens == 0
    assert plan.summary_budget_tokens < comp.config.summary_min_tokens
    result = comp.compress(messages, force=True)
    assert result.messages[-1] == messages[-1]


def test_the_plan_takes_from_the_tail_no_more_than_the_handoff_needs() -> None:
    messages = session()
    comp = ContextCompressor(CompressionConfig(), context_length=WINDOW)
    facts = comp.analyzer.analyze(messages)
    costs = [f.tokens for f in facts]
    usual = comp.plan(messages)
    plan = fitting_plan(messages, costs, usual, comp.config, WINDOW, WINDOW, facts)
    assert plan.summary_budget_tokens == comp.config.summary_min_tokens
    assert 0 < plan.tail_cut_tokens < facts[-1].tokens - TAIL_KEEP_TOKENS
    # A window with room for everything cuts nothing.
    roomy = fitting_plan(messages, costs, usual, comp.config, WINDOW, 10**6, facts)
    assert roomy.tail_cut_tokens == 0


def test_a_shrunk_file_list_keeps_its_newest_name() -> None:
    state = HandoffState(
        files=(("a/one.py", "created"), ("a/two.py", "created"), ("b/three.py", "modified"))
    )
    text = section_text("Files", state, Shown(files=0, files_read=0))
    assert "two.py (and 1 more)" in text
    assert "three.py" in text
    assert "(and 1 more)" not in text.replace("two.py (and 1 more)", "")


def test_a_decision_keeps_the_reason_stated_right_after_it() -> None:
    text = (
        "I'll use the sqlite backend instead of postgres. This is because the CI runners "
        "have no database service.\n\nNext I will run the tests."
    )
    found = decisions([(0, text)], ())
    assert found == (
        "I'll use the sqlite backend instead of postgres. This is because the CI runners "
        "have no database service.",
    )
    # A sentence that is not a reason stays apart.
    plain = decisions([(0, "I'll use the sqlite backend instead of postgres. Then I run it.")], ())
    assert plain == ("I'll use the sqlite backend instead of postgres.",)


def test_every_failed_attempt_of_a_step_is_counted_and_named_by_its_error() -> None:
    comp = ContextCompressor(CompressionConfig(), context_length=200_000)
    body = comp.compress(session(), force=True, focus_topic="ledger").summary or ""
    fixed = [line for line in body.splitlines() if "converters.py failed" in line]
    assert len(fixed) == 1, body
    line = fixed[0]
    assert "(the same error in 2 attempts)" in line
    assert "moved on: edited" in line and "helpers.py" in line
    # The error is what the tool said about the edit, not a line of the quoted old text.
    assert "No replacement was performed" in line and "UnitsError" not in line


def test_only_the_text_of_a_tail_result_counts_as_what_it_can_give() -> None:
    """A screenshot's image cannot be cut for the handoff: a result of a short caption
    and three images gives nothing, so the plan does not count on it."""
    messages = session()
    caption = {"type": "text", "text": "Screenshot of the failing page."}
    messages[-1] = tool("v1", [caption, image_part(), image_part(), image_part()])
    comp = ContextCompressor(CompressionConfig(), context_length=WINDOW)
    facts = comp.analyzer.analyze(messages)
    assert facts[-1].tokens > 3 * TAIL_KEEP_TOKENS
    costs = [f.tokens for f in facts]
    plan = fitting_plan(messages, costs, comp.plan(messages), comp.config, WINDOW, 6_000, facts)
    assert plan.tail_cut_tokens == 0
    assert plan.summary_budget_tokens < comp.config.summary_min_tokens
