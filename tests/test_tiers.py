"""The two tiers of a compaction (design §4 step 0) and the defects issue 9 names."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from factories import assistant, call, image_part, long_session, system, tool, user
from realdata import real_session_paths
from windowkeeper import CompressionConfig, ContextCompressor, Tier
from windowkeeper.adapters.formats import load_conversation
from windowkeeper.analysis.kinds import is_handoff
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import content_text
from windowkeeper.core.report import Reason
from windowkeeper.engine.guard import on_structural_noop
from windowkeeper.engine.pipeline import prune_outside_tail, tier1_target, tokens_of


def test_pruning_alone_when_it_is_enough() -> None:
    messages = long_session(rounds=30)
    snapshot = copy.deepcopy(messages)
    result = ContextCompressor(context_length=64_000).compress(messages, force=True)
    report = result.report
    assert messages == snapshot
    assert report.compressed and report.tier is Tier.PRUNE and report.pruned > 0
    out = result.messages
    assert len(out) == len(messages) and violations(out) == []
    assert out[0] == messages[0]  # the system prompt is untouched: no summary was made
    assert not any(is_handoff(m) for m in out)
    stubs = [m for m in out if m["role"] == "tool" and "(ref wk" in str(m["content"])]
    assert stubs and all(item.handle in str(stub["content"]) for item, stub in
                         zip(result.archived, stubs, strict=True))  # fmt: skip
    assert [m for m in out if m["role"] == "user"] == [m for m in messages if m["role"] == "user"]
    assert report.after_tokens <= 64_000 * 0.85 * 0.6  # within prune_only_ratio of the trigger


def test_the_protected_head_is_pruned_too() -> None:
    listing = "\n".join(f"./src/pkg/module_{n}.py" for n in range(3_000))
    head = [system(), user("Map the repository."),
            assistant(None, call("ls", "bash", command="ls -R")), tool("ls", listing)]  # fmt: skip
    messages = head + long_session(rounds=12, with_system=False)[1:]
    result = ContextCompressor(context_length=32_000).compress(messages, force=True)
    assert result.report.compressed
    assert "./src/pkg/module_2999.py" not in content_text(result.messages[3]["content"])
    assert "(ref wk" in content_text(result.messages[3]["content"])


def test_summary_tier_when_pruning_is_not_enough_and_for_a_focus_topic() -> None:
    messages = long_session(rounds=200, output_chars=200)  # mostly prose: pruning is not enough
    result = ContextCompressor(context_length=16_000).compress(messages, force=True)
    assert result.report.tier is Tier.SUMMARY and any(is_handoff(m) for m in result.messages)
    focused = ContextCompressor(context_length=200_000).compress(
        long_session(rounds=10), force=True, focus_topic="refunds"
    )
    assert focused.report.tier is Tier.SUMMARY  # the user asked for a summary


def test_structural_backoff_never_blocks_while_pruning_can_remove_something() -> None:
    comp = ContextCompressor(context_length=32_000)
    messages = long_session(rounds=30)
    comp.guard = on_structural_noop(comp.guard, now=comp._clock())
    result = comp.compress(messages)
    assert result.report.reason is not Reason.STRUCTURAL_BACKOFF
    assert result.report.compressed and result.report.tier is Tier.PRUNE
    comp.guard = on_structural_noop(comp.guard, now=comp._clock())
    again = comp.compress(result.messages)  # nothing left to prune: now the backoff applies
    assert again.report.reason is Reason.STRUCTURAL_BACKOFF
    assert again.messages is result.messages


def test_a_text_request_followed_by_an_image_only_send_keeps_the_request() -> None:
    messages = [system(), user("Fix the layout of the checkout page."),
                assistant("Please send a screenshot."), user([image_part()])]  # fmt: skip
    messages += long_session(rounds=30, with_system=False)[1:]
    summary_only = CompressionConfig(prune_only_ratio=0.01, protect_first_n=0)
    result = ContextCompressor(summary_only, context_length=16_000).compress(messages, force=True)
    body = result.summary or ""
    task = body.split("## Work State")[0]
    assert "Fix the layout of the checkout page." in task and "None recorded" not in task


def test_the_task_keeps_its_indentation() -> None:
    task = "Apply this exactly:\n\n    def f():\n        return 1\n"
    messages = [system(), user(task), *long_session(rounds=40, with_system=False)[1:]]
    summary_only = CompressionConfig(prune_only_ratio=0.01, protect_first_n=0)
    result = ContextCompressor(summary_only, context_length=16_000).compress(messages, force=True)
    assert "    def f():\n        return 1" in (result.summary or "")


def test_an_empty_user_message_never_leaves_two_user_messages_in_a_row() -> None:
    for empty in ("", []):
        messages = [system(), user("Start."), assistant("ok"), user(empty),  # type: ignore[arg-type]
                    assistant("Go on?"), user("Yes, continue the refund fix.")]  # fmt: skip
        messages += long_session(rounds=30, with_system=False)[1:]
        for window in (8_000, 16_000, 32_000):
            for ratio in (0.01, 0.6):
                config = CompressionConfig(prune_only_ratio=ratio)
                out = (
                    ContextCompressor(config, context_length=window)
                    .compress(messages, force=True)
                    .messages
                )
                assert violations(out) == [], (empty, window, ratio)


def test_a_forced_compaction_over_the_window_says_so_with_the_floor() -> None:
    huge_system = system("You are careful. " * 3_000)  # ~12K tokens: the floor alone
    messages = [huge_system, *long_session(rounds=20, with_system=False)]
    result = ContextCompressor(context_length=8_000).compress(messages, force=True)
    assert result.report.after_tokens > 8_000
    (warning,) = [w for w in result.report.warnings if "over the window" in w]
    assert "system prompt" in warning and "does not fit" in warning


def test_tier_two_stubs_only_the_head_it_keeps() -> None:
    listing = "\n".join(f"./src/pkg/module_{n}.py" for n in range(3_000))
    head = [system(), user("Map the repository."),
            assistant(None, call("ls", "bash", command="ls -R")), tool("ls", listing)]  # fmt: skip
    messages = head + long_session(rounds=150, output_chars=300, with_system=False)[1:]
    result = ContextCompressor(context_length=32_000).compress(messages)
    assert result.report.tier is Tier.SUMMARY
    out = result.messages
    assert "(ref wk" in content_text(out[3]["content"])  # the head's output is a stub
    handoff = next(i for i, m in enumerate(out) if is_handoff(m))
    # The middle's outputs left with the summarized turns (archived whole), not as stubs.
    summarized = {a.index for a in result.archived if a.kind == "message"}
    assert handoff <= 5 and len(summarized) == result.report.summarized_messages
    assert result.report.pruned > 1  # the head's stub and the middle's long outputs


def test_tier_two_keeps_a_small_head_output_verbatim() -> None:
    """The head's small outputs (the log the task refers to) stay as they were; only large
    ones become stubs when a handoff is written."""
    log = "\n".join(f"{n:07x} fix: ticket TKT-{n} in refunds" for n in range(40))  # ~1.3 KB
    ask = assistant(None, call("log", "bash", command="git log --oneline"))
    head = [system(), user("Fix what the log shows."), ask, tool("log", log)]
    messages = head + long_session(rounds=150, output_chars=300, with_system=False)[1:]
    result = ContextCompressor(context_length=32_000).compress(messages)
    assert result.report.tier is Tier.SUMMARY
    assert result.messages[3]["content"] == log
    # with a lower limit the same output is over it: a stub
    config = CompressionConfig(head_prune_min_chars=1_000)
    result = ContextCompressor(config, context_length=32_000).compress(messages)
    assert result.report.tier is Tier.SUMMARY
    assert "(ref wk" in content_text(result.messages[3]["content"])


PRUNING_CASES = [
    (path, window, share)
    for path in real_session_paths()
    for window in (32_000, 16_000)
    for share in (0.5, 1.0)
]


@pytest.mark.parametrize(("path", "window", "share"), PRUNING_CASES)
def test_tier_one_is_never_skipped_when_pruning_is_enough(
    path: Path, window: int, share: float
) -> None:
    """The shortcut past tier 1 (what pruning never shortens is already over the target)
    must not cost a prune-only compaction on a real session."""
    messages = load_conversation(path).messages
    messages = messages[: max(4, int(len(messages) * share))]
    compressor = ContextCompressor(context_length=window)
    job = compressor._job(messages, True, None)
    pruned = prune_outside_tail(job, compressor.config, compressor.analyzer)
    enough = job.extra + tokens_of(pruned.messages, compressor.analyzer) <= tier1_target(
        job, compressor.config, compressor.threshold_tokens
    )
    if not (enough and job.plan.compressible and pruned.messages is not messages):
        return  # pruning is not enough here (or has nothing to prune)
    result = ContextCompressor(context_length=window).compress(messages, force=True)
    assert result.report.tier is Tier.PRUNE
