"""A server in trouble refuses requests as too large at random (issue 25 point 7).

Without a stated window (Ollama's runner, llama.cpp, a 413) each spurious refusal used to
compact at once and lower the learned window a step; one refusal every few requests
ratcheted it down to the floor and the session failed. Now a claimed overflow that the
session's own evidence contradicts is retried once unchanged: a request no larger than
one the provider answered, or far below the window we work to. An unstated rejection
never teaches a window below what the provider answered (except on a turn's last
attempt), and a size refused twice is no longer taken as proven.
"""

from __future__ import annotations

from typing import ClassVar

import pytest

from factories import assistant, long_session, shell_round, system, user
from windowkeeper import ContextCompressor, ContextManager
from windowkeeper.analysis.kinds import is_handoff, live_text
from windowkeeper.compaction.boundaries import tail_cut
from windowkeeper.compaction.handoff import merge_into
from windowkeeper.core.messages import Message, content_text
from windowkeeper.core.tokens import message_tokens
from windowkeeper.loop.overflow import Overflow, OverflowKind
from windowkeeper.loop.recovery import retry_unchanged, target_tokens
from windowkeeper.testing.provider_sim import (
    WORDINGS,
    LimitedProvider,
    Wording,
    replay_limited,
    request_floors,
)

UNSTATED = [w for w in WORDINGS if not w.states_limit and w.name != "bare-400"]


@pytest.mark.parametrize("wording", UNSTATED, ids=lambda w: w.name)
@pytest.mark.parametrize("mismatch", (0.85, 1.0, 1.15))
def test_transient_refusals_without_a_stated_window_do_not_exhaust_a_session(
    wording: Wording, mismatch: float
) -> None:
    """Every 4th request is refused once, whatever its size, by a server that names no
    window and whose real window is the configured one: every request gets through."""
    messages = long_session(rounds=45, output_chars=2_500)
    provider = LimitedProvider(16_000, wording, mismatch, spurious_every=3)
    run = replay_limited(messages, None, 16_000, provider)
    assert run.completed, run.failure
    assert run.rejections >= run.requests // 4 - 1  # the faults really happened


def test_a_spurious_refusal_is_sent_again_unchanged() -> None:
    """A tiny session nothing can shrink, refused without a stated window before any
    answer as large: sent again unchanged (once) instead of failing the turn."""
    provider = LimitedProvider(8_000, WORDINGS[7], spurious_every=2)  # ollama-runner
    assert provider.wording.name == "ollama-runner"
    sent: list[list[Message]] = []

    def call(request: list[Message]) -> dict[str, object]:
        sent.append(request)
        return provider(request)

    manager = ContextManager(ContextCompressor(context_length=8_000))
    working: list[Message] = [system()]
    for n in range(6):
        working = [*manager.run(call, [*working, user(f"q{n}")]).messages, assistant(f"a{n}")]
    refused = [i for i in range(len(sent)) if (i + 1) % 3 == 0]
    assert provider.rejections == len(refused) == 2
    assert all(sent[i + 1] == sent[i] for i in refused)
    assert manager.context_length == 8_000  # nothing was learned from a transient fault


def _unstated(kind: OverflowKind = OverflowKind.CONTEXT_OVERFLOW) -> Overflow:
    return Overflow(kind, None, None, 500)


def test_the_retry_rule_reads_the_sessions_evidence() -> None:
    unstated = _unstated()
    rule = {"reserve": 0, "attempt": 1}
    assert not retry_unchanged(unstated, 3_000, answered=0, **rule)  # the window may be wrong
    assert retry_unchanged(unstated, 6_000, answered=6_500, **rule)  # answered bigger
    assert not retry_unchanged(unstated, 6_000, answered=6_500, reserve=0, attempt=2)
    stated = Overflow(OverflowKind.CONTEXT_OVERFLOW, 8_000, None, 400)
    assert retry_unchanged(stated, 3_000, answered=0, **rule)  # far below the stated window
    assert not retry_unchanged(stated, 5_000, answered=0, **rule)
    payload = _unstated(OverflowKind.PAYLOAD_TOO_LARGE)
    assert not retry_unchanged(payload, 3_000, answered=0, **rule)  # bytes, not tokens
    assert retry_unchanged(payload, 3_000, answered=3_000, **rule)
    counted = Overflow(OverflowKind.CONTEXT_OVERFLOW, 8_000, None, 400, 9_000)
    assert not retry_unchanged(counted, 1_000, answered=5_000, **rule)  # its count decides
    for kind in (OverflowKind.LONG_CONTEXT_TIER, OverflowKind.OUTPUT_CAP):
        assert not retry_unchanged(_unstated(kind), 1_000, answered=5_000, **rule)


def test_an_unstated_rejection_never_aims_below_what_was_answered() -> None:
    aim = {"window": 8_000, "reserve": 0, "previous": None}
    plain = target_tokens(_unstated(), 7_000, 1_000, remaining=3, **aim)
    proven = target_tokens(_unstated(), 7_000, 1_000, remaining=3, answered=6_000, **aim)
    assert plain < 6_000 <= proven <= int(7_000 * 0.9)
    near = target_tokens(_unstated(), 7_000, 1_000, remaining=3, answered=6_900, **aim)
    assert near == int(7_000 * 0.9)  # every attempt still shrinks the request
    last = target_tokens(_unstated(), 7_000, 1_000, remaining=1, answered=6_000, **aim)
    assert last == 1_000  # the last attempt still aims at the floor


class _Refusal(Exception):
    status_code = 500
    body: ClassVar[dict[str, object]] = {
        "error": {"message": "llama runner process has terminated: context window exceeded"}
    }


def test_a_size_refused_twice_is_no_longer_proven() -> None:
    """The provider answered a large request, then (a model reloaded with a smaller
    window) refuses a smaller one twice: the second refusal compacts, and the next turn
    at that size compacts at once instead of wasting a retry."""
    manager = ContextManager(ContextCompressor(context_length=32_000))
    big = long_session(rounds=12, output_chars=2_500)
    manager.after_response({"prompt_tokens": 9_000}, big)
    request = big[:-8]
    assert manager.recover(_Refusal(), request, 1) is request  # answered bigger: retried
    compacted = manager.recover(_Refusal(), request, 2)
    assert compacted is not request
    again = manager.estimate(request)
    assert manager.recover(_Refusal(), request, 1) is not request, again


def test_a_request_carrying_an_earlier_handoff_is_restated_to_fold_it() -> None:
    """The newest request has an earlier handoff merged into it (as a compaction merges
    it when no system prompt comes first) and only one tool exchange follows: restating
    the request (its own text) lets the new handoff replace the old one; kept whole in
    the tail, nothing could be compacted at all."""
    out = (
        ContextCompressor(context_length=8_000)
        .compress(long_session(rounds=30, output_chars=4_000), force=True)
        .messages
    )
    handoff = next(m for m in out if is_handoff(m))
    request = merge_into(user("Carry on with the refund fix. " * 40),
                         content_text(handoff["content"]))  # fmt: skip
    messages = [request, *shell_round(1, "pytest -q", "1 passed")]
    costs = [message_tokens(m) for m in messages]
    cut = tail_cut(messages, costs, 0, 0, min_tail=1)
    assert cut.restated_user == 0 and cut.start == 1, cut
    folded = ContextCompressor(context_length=1_200).compress(messages, force=True)
    assert folded.report.compressed  # before: nothing to compress (the request kept whole)
    assert folded.report.after_tokens < folded.report.before_tokens
    kept = [m for m in folded.messages if "Carry on with the refund fix." in str(m["content"])]
    assert kept and live_text(kept[0]).count("Carry on with the refund fix.") == 40


def test_a_replay_knows_which_sessions_are_recoverable() -> None:
    messages = [system("rule " * 4_000), user("Go."), assistant("ok")]
    provider = LimitedProvider(4_000, WORDINGS[1])
    assert request_floors(messages, provider)[0] > 4_000
    assert not replay_limited(messages, None, 32_000, provider).recoverable
    assert replay_limited(messages[1:], None, 32_000, provider).recoverable
