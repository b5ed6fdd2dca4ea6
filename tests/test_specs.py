"""The task spec (issue 24 point 2, SPEC §6 v3): the outputs that define the task and its
work items are recognized by their general shape, kept as an excerpt with their handle in
the handoff, survive pruning (a stub keeps the excerpt) and are carried forward."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from factories import assistant, call, system, tool, user
from windowkeeper import CompressionConfig, ContextCompressor
from windowkeeper.analysis.events import Analysis
from windowkeeper.analysis.kinds import handoff_body
from windowkeeper.analysis.specexcerpt import spec_excerpt
from windowkeeper.analysis.specs import is_spec, look_up_item, named_documents, spec_text
from windowkeeper.core.messages import content_text
from windowkeeper.core.report import Tier
from windowkeeper.summary.handoff.model import SpecRole
from windowkeeper.summary.handoff.parse import parse_state, split_sections

Message = dict[str, Any]
OK = "<returncode>0</returncode>"


def event_of(name: str, args: dict[str, Any], output: str = "○ item\nsome text") -> Any:
    turns = [assistant(None, call("c1", name, **args)), tool("c1", output)]
    (event,) = Analysis(turns).events()
    return event


@pytest.mark.parametrize(
    ("command", "item"),
    [
        ("bd show app-7.1", "app-7.1"),
        ("cd /repo && bd show app-7 2>&1 | head -40", "app-7"),
        ("gh issue view 12", "12"),
        ("gh pr view 7 --comments", "7"),
        ("glab mr view 3", "3"),
        ("jira issue view PROJ-12 --plain", "PROJ-12"),
        ("linear issue view ENG-123", "ENG-123"),
        ("az boards work-item show --id 42", "42"),
        ("acli jira workitem view KEY-1", "KEY-1"),
        ("curl -s https://api.github.com/repos/o/r/issues/12", "https://api.github.com/repos/o/r/issues/12"),
    ],
)  # fmt: skip
def test_tracker_look_ups_are_recognized_by_their_shape(command: str, item: str) -> None:
    event = event_of("bash", {"command": command})
    assert look_up_item(event) == item and is_spec(event)


@pytest.mark.parametrize(
    "command",
    ["git show HEAD~1", "kubectl get pods my-pod-1", "npm view react-dom", "pip show requests",
     "gh issue list --state open", "docker inspect web-1", "cat README.md", "bd ready",
     "bd update app-7 --status in_progress", "systemctl show nginx-1"],
)  # fmt: skip
def test_other_commands_are_not_look_ups(command: str) -> None:
    event = event_of("bash", {"command": command})
    assert look_up_item(event) is None and not is_spec(event)


def test_issue_tools_fetches_and_documents_are_specs() -> None:
    assert look_up_item(event_of("mcp__linear__get_issue", {"id": "ENG-1"})) == "ENG-1"
    assert is_spec(event_of("WebFetch", {"url": "https://github.com/o/r/issues/9"}))
    assert not is_spec(event_of("WebFetch", {"url": "https://docs.python.org/3/"}))
    assert not is_spec(event_of("TaskOutput", {"task_id": "b7636e2"}))
    for path in ("docs/plan.md", "/repo/SPEC.md", "design/rfc-12.rst", "TODO"):
        assert is_spec(event_of("Read", {"file_path": path})), path
    named = named_documents(["Follow the steps in notes/howto.md please."])
    assert is_spec(event_of("Read", {"file_path": "/repo/notes/howto.md"}), named)
    for path in ("src/app.py", "requirements.txt", "README.md", "CHANGELOG.md"):
        assert not is_spec(event_of("Read", {"file_path": path}), named), path
    failed = event_of("bash", {"command": "gh issue view 99"}, "error: not found\nexit code: 1")
    assert not is_spec(failed)


EPIC = "\n".join(
    ["○ app-7 [EPIC] · CSV export of invoices   [● P1 · OPEN]", "", "DESCRIPTION", "## Goal",
     "Finance downloads every invoice of a month as one CSV file.", "## Background",
     *[f"Background paragraph {n}: how invoices were exported by hand." for n in range(40)],
     "## Acceptance", "- GIVEN a month WHEN exported THEN every invoice is one row.",
     "- Amounts use two decimals and a dot.", "## Constraints",
     "- Never change the public invoice API.", "- Do not add a dependency.", OK]
)  # fmt: skip


def test_a_long_spec_keeps_its_goal_constraint_and_acceptance_lines() -> None:
    text, shortened = spec_excerpt(EPIC, 800)
    assert shortened and len(text) <= 800
    wanted = ["○ app-7 [EPIC] · CSV export", "## Goal", "Finance downloads every invoice",
              "## Acceptance", "- Amounts use two decimals and a dot.", "## Constraints",
              "- Never change the public invoice API.", "- Do not add a dependency."]  # fmt: skip
    for line in wanted:
        assert line in text, line
    assert "Background paragraph 12" not in text and OK not in text
    assert spec_excerpt("○ app-7.2 · Add headers\nDone when: it works\n" + OK, 800) == (
        "○ app-7.2 · Add headers\nDone when: it works",
        False,
    )


def test_the_sections_that_constrain_the_work_are_kept_whole_before_narrative() -> None:
    """Readers lost points on the event name and the tests a spec asked for, cut while
    its story was kept: rules, done criteria, technical specs and edge cases come first."""
    story = [
        f"Reviewers told us story number {n} about closing reviews by hand." for n in range(12)
    ]
    technical = [
        f"- event `close_{n}` closes annotation kind {n} via action `:close`" for n in range(5)
    ]
    done = ["- LiveView tests cover close with N>0 and N=0 paths.", "- The flash shows the count."]
    edge = ["- An empty project closes nothing and says so."]
    text = "\n".join([
        "○ app-9 · Close the review", "## Why", *story, "## Technical specs", *technical,
        "## Definition of Done", *done, "## Edge cases", *edge,
    ])  # fmt: skip
    excerpt, shortened = spec_excerpt(text, 700)
    assert shortened and len(excerpt) <= 700
    for line in [*technical, *done, *edge, "## Technical specs", "## Definition of Done"]:
        assert line in excerpt.split("\n"), line
    assert story[5] not in excerpt


def test_the_excerpt_grows_with_the_summary_budget() -> None:
    from windowkeeper.analysis.specexcerpt import SPEC_CHARS, spec_chars

    assert spec_chars(500) == spec_chars(2_000) == SPEC_CHARS
    assert spec_chars(8_000) > spec_chars(4_000) > SPEC_CHARS


def test_a_lead_in_line_whose_list_was_left_out_is_left_out_too() -> None:
    """ "Event behavior:" says nothing without the lines it introduces; a lead-in whose
    lines fit stays with them."""
    long = "x" * 400
    text = "\n".join([
        "○ app-7.3 · Emit the export events", "## Acceptance", "- Event behavior:",
        f"    - emit export.started with {long}", f"    - emit export.failed with {long}",
        "- Files:", "    - exporter.py", "- The exporter has tests.", "## Notes", long, long,
    ])  # fmt: skip
    excerpt, shortened = spec_excerpt(text, 200)
    assert shortened
    assert excerpt.split("\n") == [
        "○ app-7.3 · Emit the export events", "## Acceptance", "- Files:", "    - exporter.py",
        "- The exporter has tests.",
    ]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=300), max_size=80), st.integers(100, 3_000))
def test_an_excerpt_fits_its_limit_and_keeps_its_lines_in_order(
    lines: list[str], limit: int
) -> None:
    text = "\n".join(lines)
    excerpt, shortened = spec_excerpt(text, limit)
    assert len(excerpt) <= limit or not shortened
    kept = [line for line in excerpt.split("\n") if line]
    source = [line.rstrip() for line in text.splitlines() if line.strip()]
    if not shortened:
        assert kept == source


def session(rounds: int = 40) -> list[Message]:
    """A tracker session: the task, the epic looked up, a work item claimed, long work."""
    item = "○ app-7.2 · Write the CSV exporter\n## Done when\n- the exporter has tests\n" + OK
    messages: list[Message] = [system(), user("Work on bead app-7: run bd show app-7 first.")]
    messages += [assistant(None, call("e", "bash", command="bd show app-7")), tool("e", EPIC)]
    messages += [assistant(None, call("i", "bash", command="bd show app-7.2")), tool("i", item)]
    claim = call("u", "bash", command="bd update app-7.2 --status in_progress")
    messages += [assistant(None, claim), tool("u", OK)]
    for n in range(rounds):
        messages.append(assistant(f"Step {n}.", call(f"c{n}", "bash", command=f"cat mod_{n}.py")))
        messages.append(tool(f"c{n}", f"def f_{n}():\n    return {n}\n" * 60))
    messages += [assistant("Continuing."), user("continue")]
    return messages


def handoff_of(messages: list[Message]) -> str:
    for message in messages:
        text = content_text(message.get("content"))
        if "## Task Spec" in text:
            return text
    raise AssertionError("no handoff with a Task Spec")


def test_the_task_spec_survives_the_head_pruning_and_names_a_recallable_handle() -> None:
    """The look-up sits in the protected head, whose large outputs become stubs: the
    handoff still carries its excerpt, under the handle the archive holds it by."""
    messages = session()
    config = CompressionConfig(prune_only_ratio=0.01)
    result = ContextCompressor(config, context_length=16_000).compress(messages, force=True)
    assert result.report.tier is Tier.SUMMARY
    text = handoff_of(result.messages)
    spec = "\n".join(split_sections(text)["Task Spec"])
    assert spec.startswith("Spec of the task: `bd show app-7` · item app-7 · shortened · recall wk")
    assert "- Never change the public invoice API." in spec and "## Acceptance" in spec
    assert "Spec of the item in progress: `bd show app-7.2`" in spec  # claimed
    body = parse_state(handoff_body(text) or "")
    assert body is not None and body.specs[0].item == "app-7"
    archived = {item.handle: item for item in result.archived}
    original = content_text(archived[body.specs[0].handle].message.get("content"))
    assert original == EPIC


def test_a_prune_stub_keeps_the_excerpt_and_the_next_handoff_reads_it() -> None:
    """A prune-only compaction first (the epic becomes a stub with its excerpt), then a
    compaction that writes a handoff from the pruned history."""
    messages = session()
    first = ContextCompressor(context_length=64_000).compress(messages, force=True)
    assert first.report.tier is Tier.PRUNE
    (stub,) = [m for m in first.messages if m.get("tool_call_id") == "e"]
    assert stub["content"].startswith("[bash] ran `bd show app-7`")
    assert "; spec: " in stub["content"]
    text, handle = spec_text(stub["content"])
    assert "- Never change the public invoice API." in text.split("\n") and handle
    assert handle in {item.handle for item in first.archived}
    later = [*first.messages, assistant("More."), user("go on")]
    config = CompressionConfig(prune_only_ratio=0.01, protect_first_n=0)
    second = ContextCompressor(config, context_length=16_000).compress(later, force=True)
    spec = "\n".join(split_sections(handoff_of(second.messages))["Task Spec"])
    assert f"recall {handle}" in spec and "- Never change the public invoice API." in spec


def test_the_task_spec_is_carried_across_compactions() -> None:
    messages = session()
    config = CompressionConfig(prune_only_ratio=0.01)
    comp = ContextCompressor(config, context_length=16_000)
    current = comp.compress(messages, force=True).messages
    first = parse_state(handoff_body(handoff_of(current)) or "")
    assert first is not None
    for round_ in range(3):
        more: list[Message] = []
        for n in range(30):
            cid = f"r{round_}_{n}"
            more += [assistant(f"Work {n}.", call(cid, "bash", command=f"cat new_{cid}.py"))]
            more += [tool(cid, f"x_{n} = {n}\n" * 80)]
        current = comp.compress([*current, *more, assistant("Done."), user("next")], force=True)
        current = current.messages
    handoffs = [m for m in current if "## Task Spec" in content_text(m.get("content"))]
    assert len(handoffs) == 1
    spec = "\n".join(split_sections(content_text(handoffs[0].get("content")))["Task Spec"])
    assert spec.startswith("Spec of the task: `bd show app-7`")
    assert "- Never change the public invoice API." in spec and "app-7.2" in spec
    last = parse_state(handoff_body(content_text(handoffs[0].get("content"))) or "")
    assert last is not None and last.specs[0] == first.specs[0]  # pinned, not worn down


def test_a_spec_the_user_did_not_name_is_not_called_the_task() -> None:
    """An issue looked up for reference (the user named another item, or none) is shown as
    the newest spec looked up, never as the task's."""
    messages = session()
    messages[1] = user("Pick the next ready bead and work on it.")
    config = CompressionConfig(prune_only_ratio=0.01)
    result = ContextCompressor(config, context_length=16_000).compress(messages, force=True)
    spec = "\n".join(split_sections(handoff_of(result.messages))["Task Spec"])
    assert "Spec of the task" not in spec
    assert spec.startswith("Also looked up (recall for the text):\n- `bd show app-7` · item app-7")
    assert "Spec of the item in progress: `bd show app-7.2`" in spec


def test_sessions_without_specs_have_no_task_spec_section() -> None:
    messages = [system(), user("Fix the bug in app.py")]
    for n in range(40):
        messages += [assistant(None, call(f"c{n}", "Read", file_path=f"src/m{n}.py"))]
        messages += [tool(f"c{n}", json.dumps({"n": n}) * 200)]
    messages += [assistant("Done reading."), user("now fix it")]
    config = CompressionConfig(prune_only_ratio=0.01)
    result = ContextCompressor(config, context_length=16_000).compress(messages, force=True)
    assert result.report.tier is Tier.SUMMARY
    assert not any("## Task Spec" in content_text(m.get("content")) for m in result.messages)


def claimed_after_look_up(parts: list[str], items: tuple[str, ...]) -> list[Message]:
    """One look-up of ``items`` (their outputs ``parts``), then app-7.2 claimed."""
    command = '; echo "==="; '.join(f"bd show {item}" for item in items)
    return [
        user("Work on bead app-7."),
        assistant(None, call("s", "bash", command=command)),
        tool("s", "\n===\n".join(parts) + "\n" + OK),
        assistant(None, call("u", "bash", command="bd update app-7.2 --status in_progress")),
        tool("u", OK),
    ]


def test_a_look_up_of_several_items_gives_one_spec_each_and_the_claimed_one_is_shown() -> None:
    from windowkeeper.summary.handoff.extract import Placement, extract_state
    from windowkeeper.summary.handoff.model import HandoffState

    parts = [f"○ app-7.{n} · Part {n}\n## Acceptance\n- part {n} has tests" for n in (1, 2, 3)]
    turns = claimed_after_look_up(parts, ("app-7.1", "app-7.2", "app-7.3"))
    state = extract_state(Analysis(turns), HandoffState(), Placement(user_in_tail=False))
    assert [(s.item, bool(s.text)) for s in state.specs] == [
        ("app-7.1", False),
        ("app-7.3", False),
        ("app-7.2", True),
    ]
    assert state.specs[-1].text == parts[1] and state.specs[-1].role is SpecRole.IN_PROGRESS


def test_the_next_step_carries_the_done_criteria_and_the_items_not_started() -> None:
    """The reader asked "what is next?" and the spec's remaining requirements (the tests
    it asks for, the next item looked up) were only in the Task Spec section."""
    from windowkeeper.summary.handoff.extract import Placement, extract_state, previous_state
    from windowkeeper.summary.handoff.model import HandoffState
    from windowkeeper.summary.handoff.text import render

    parts = [
        "○ app-7.2 · Close the session\nTechnical specs:\n- event `close_session`\n"
        "Definition of Done:\n- Clicking Close closes every open note.\n"
        "- LiveView tests cover N>0 and N=0.",
        "○ app-7.3 · Export the notes\n## Acceptance\n- CSV has a header",
    ]
    turns = [
        *claimed_after_look_up(parts, ("app-7.2", "app-7.3")),
        assistant(None, call("e", "Edit", file_path="/w/live.ex", old_string="a", new_string="b")),
        tool("e", "ok"),
    ]
    where = Placement(user_in_tail=False)
    state = extract_state(Analysis(turns), HandoffState(), where)
    lines = state.next_step.split("\n")
    assert lines[0].startswith("Next (derived at compaction time") and "app-7.2" in lines[0]
    assert lines[1:] == [
        "Before closing app-7.2, check the done criteria of its spec: Clicking Close closes "
        "every open note; LiveView tests cover N>0 and N=0",
        "Looked up, no work on it seen yet: app-7.3",
    ]
    body = render(state)
    reread = parse_state(body)
    assert reread is not None and reread.next_step == state.next_step
    # A compaction with nothing new carries the step as it was (nothing said twice).
    again = extract_state(Analysis([user("continue")]), previous_state(body), where)
    assert again.next_step == state.next_step


def test_a_design_limit_outside_a_rules_section_is_kept_with_the_rules() -> None:
    """ "Keep all logic in X; no new module" under a heading that names no rule binds the
    work as much as a rules section: a tight excerpt keeps it (and its heading) before
    the technical details, and a line that only names a file does not rank with it."""
    spec = "\n".join(
        [
            "item-7 · Close the review session",
            "DESCRIPTION",
            "Close every open annotation of the project in one action.",
            "Technical specs:",
            *(
                f"- step {k}: compute and reload the assigns of part {k} of the page"
                for k in range(8)
            ),
            "Component usage:",
            "- Use the existing :close action of the annotation resource.",
            "- Keep all logic in `ReviewLive`; no new service module for this task.",
            "Source references:",
            "- lib/app/review_live.ex",
            "Architecture constraints:",
            "- No extra state values or reopen workflow.",
            "Definition of Done:",
            "- Tests cover N>0 and N=0.",
        ]
    )
    text, cut = spec_excerpt(spec, 420)
    assert cut
    lines = text.splitlines()
    assert "- Keep all logic in `ReviewLive`; no new service module for this task." in lines
    assert "Component usage:" in lines
    assert "- No extra state values or reopen workflow." in lines
    assert "- Tests cover N>0 and N=0." in lines
    assert "- lib/app/review_live.ex" not in lines
