from __future__ import annotations

import copy
import json

from factories import assistant, call, image_part, tool, user
from windowkeeper.compaction.prune import (
    PruneSettings,
    dedupe_tool_outputs,
    prune,
    summarize_tool_outputs,
    truncate_arguments,
    truncate_tool_arguments,
)


def _conv(*rounds: tuple[str, dict[str, object], str]) -> list[dict[str, object]]:
    messages: list[dict[str, object]] = [user("task")]
    for n, (name, args, output) in enumerate(rounds):
        messages.append(assistant(None, call(f"c{n}", name, **args)))
        messages.append(tool(f"c{n}", output))
    messages.append(assistant("done"))
    return messages


def test_shell_result_becomes_one_informative_line() -> None:
    output = (
        "collected 47 items\n" + "test passed ok\n" * 46 + "[Command finished with exit code 0]"
    )
    messages = _conv(("bash", {"command": "npm test"}, output))
    result = summarize_tool_outputs(messages, PruneSettings(0, len(messages)))
    text = result.messages[2]["content"]
    assert text.startswith("[bash] ran `npm test` -> exit 0, 48 lines output (ref wk")
    assert result.changed == 1
    assert result.archived[0].message is messages[2]
    assert result.archived[0].handle in text


def test_common_tool_shapes() -> None:
    big = "x" * 3_400
    messages = _conv(
        ("read_file", {"path": "config.py"}, big),
        ("Read", {"file_path": "/src/app.py", "offset": 40}, big),
        ("write_file", {"path": "out.txt", "content": "hi"}, big),
        ("Edit", {"file_path": "a.py", "old_string": "a", "new_string": "b"}, big),
        ("Grep", {"pattern": "TODO", "path": "src"}, big),
        ("WebFetch", {"url": "https://example.com/doc"}, big),
        ("str_replace_editor", {"command": "view", "path": "/testbed/x.py"}, big),
        ("lookup_order", {"order_id": "A-17", "verbose": True}, big),
        ("execute_bash", {"command": "pytest -q"}, big + "\n<returncode>1</returncode>"),
    )
    pruned = summarize_tool_outputs(messages, PruneSettings(0, len(messages))).messages
    lines = [m["content"] for m in pruned if m["role"] == "tool"]
    assert lines[0].startswith("[read_file] read config.py from line 1 (3,400 chars)")
    assert lines[1].startswith("[Read] read /src/app.py from line 40")
    assert lines[2].startswith("[write_file] wrote out.txt")
    assert lines[3].startswith("[Edit] edited a.py")
    assert lines[4].startswith("[Grep] searched 'TODO' in src")
    assert lines[5].startswith("[WebFetch] fetched https://example.com/doc")
    assert lines[6].startswith("[str_replace_editor] read /testbed/x.py")
    assert lines[7].startswith("[lookup_order] order_id=A-17 verbose=True")
    assert "-> exit 1," in lines[8]
    assert all("\n" not in line for line in lines)


def test_a_stub_keeps_the_gist_of_its_result() -> None:
    sha = "4f2c9e1"
    failing = "collecting\n" + "." * 300 + "\nE   AssertionError: refund total 90 != 100\n"
    failing += "FAILED tests/test_refund.py::test_total - AssertionError\n1 failed, 9 passed\n"
    messages = _conv(
        ("bash", {"command": "pytest tests/test_refund.py"}, failing + "[exit code 1]"),
        ("bash", {"command": "git commit -am 'Fix'"}, f"[main {sha}] Fix\n" + "x" * 300),
        ("bash", {"command": "bd ready"}, "1. proj-3r6: Fix login\n" + "y" * 300),
        ("Read", {"file_path": "/home/me/projects/shop/services/billing/refunds.py"}, "z" * 900),
    )  # fmt: skip
    pruned = summarize_tool_outputs(messages, PruneSettings(0, len(messages))).messages
    lines = [str(m["content"]) for m in pruned if m["role"] == "tool"]
    assert "-> exit 1" in lines[0] and "tests: 1 failed, 9 passed" in lines[0]
    assert "AssertionError: refund total 90 != 100" in lines[0]
    assert sha in lines[1]
    assert "proj-3r6" in lines[2] and "exit ?" not in lines[2]  # no exit code: none shown
    assert "…/billing/refunds.py" in lines[3]  # the call beside it holds the whole path
    assert all(line.endswith(")") and "(ref wk" in line and "\n" not in line for line in lines)


def test_short_outputs_and_protected_region_are_left_alone() -> None:
    messages = _conv(
        ("bash", {"command": "ls"}, "a.py\nb.py"), ("bash", {"command": "cat x"}, "y" * 999)
    )
    result = summarize_tool_outputs(messages, PruneSettings(0, 3))
    assert result.messages[2] is messages[2]
    assert result.messages[4] is messages[4]  # index 4 lies outside [0, 3)
    unchanged = summarize_tool_outputs(messages, PruneSettings(0, 1))
    assert unchanged.messages is messages


def test_old_tool_images_become_text() -> None:
    messages = _conv(("screenshot", {}, "placeholder"))
    messages[2] = tool("c0", [{"type": "text", "text": "screen"}, image_part()])
    result = summarize_tool_outputs(messages, PruneSettings(0, len(messages)))
    parts = result.messages[2]["content"]
    assert parts[1] == {"type": "text", "text": "[image removed from an old tool result]"}
    assert messages[2]["content"][1]["type"] == "image_url"  # input untouched


def test_dedupe_keeps_only_the_newest_copy() -> None:
    same = "def f():\n    return 1\n" * 40
    messages = _conv(
        ("Read", {"file_path": "a.py"}, same),
        ("Read", {"file_path": "b.py"}, "other" * 100),
        ("Read", {"file_path": "a.py"}, same),
    )
    result = dedupe_tool_outputs(messages, PruneSettings(0, len(messages)))
    assert result.messages[2]["content"].startswith("[duplicate output (ref wk")
    assert result.messages[6]["content"] == same
    assert result.messages[4] is messages[4]
    assert result.changed == 1


def test_dedupe_newest_copy_may_sit_in_the_tail() -> None:
    same = "z" * 500
    messages = _conv(("Read", {"file_path": "a.py"}, same), ("Read", {"file_path": "a.py"}, same))
    result = dedupe_tool_outputs(messages, PruneSettings(0, 3))
    assert result.messages[2]["content"].startswith("[duplicate output")
    assert result.messages[4]["content"] == same


def test_huge_arguments_shortened_but_still_valid_json() -> None:
    args = {"path": "big.py", "content": "A" * 10_000, "mode": 3, "nested": {"k": ["B" * 900, 1]}}
    messages = _conv(("write_file", args, "ok"))
    result = truncate_tool_arguments(messages, PruneSettings(0, len(messages)))
    new_args = result.messages[1]["tool_calls"][0]["function"]["arguments"]
    parsed = json.loads(new_args)
    assert parsed["path"] == "big.py" and parsed["mode"] == 3
    assert parsed["content"].startswith("A" * 200)
    assert "windowkeeper elided 9,800 of 10,000 chars" in parsed["content"]
    assert "elided" in parsed["nested"]["k"][0]
    assert len(new_args) < 2_000
    assert result.archived[0].kind == "tool_arguments"


def test_truncation_is_idempotent_and_non_json_is_untouched() -> None:
    once = truncate_arguments(json.dumps({"a": "x" * 5_000}), 200)
    assert truncate_arguments(once, 200) is once
    raw = "not json " * 200
    assert truncate_arguments(raw, 200) is raw


def test_prune_never_mutates_and_returns_input_when_nothing_changes() -> None:
    messages = _conv(("bash", {"command": "make"}, "m" * 5_000), ("bash", {"command": "ls"}, "ok"))
    snapshot = copy.deepcopy(messages)
    result = prune(messages, PruneSettings(0, len(messages)))
    assert messages == snapshot
    assert result.changed == 1
    small = _conv(("bash", {"command": "ls"}, "ok"))
    assert prune(small, PruneSettings(0, len(small))).messages is small
