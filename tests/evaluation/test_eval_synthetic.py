"""evaluate() on a synthetic transcript with facts planted at known turns.

A scripted compressor compacts at two known points, each time to the system prompt plus a
handoff whose text the test chooses, so every figure can be worked out by hand from the
definitions (docs/benchmarks.md, "Retention (windowkeeper eval)") and asserted exactly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from factories import assistant, call, system, tool, user
from windowkeeper import (
    CachePrices,
    CompressionReport,
    CompressionResult,
    ContextCompressor,
    Decision,
    FactKind,
    Outcome,
    Tier,
    evaluate,
)
from windowkeeper.core.tokens import message_tokens

Message = dict[str, Any]
TASK = (
    "Fix the login crash in src/auth/login.py. Ticket AUTH-42; the staging port is 54329. "
    "Keep the public API unchanged."
)
H1 = (
    "Summary: task: Fix the login crash in src/auth/login.py. Ticket AUTH-42; the staging "
    "port is 54329. Error: ValueError: token format invalid. Modified auth/login.py."
)
H2 = (
    "Summary v2: ticket AUTH-42, modified auth/login.py, docs/retries.md. Commit 3f9a2b7c. "
    + "Notes: the work continues as planned; " * 10
)
CODE = "def login(user):\n    return check(user)\n" * 60


def transcript() -> list[Message]:
    return [
        system(),  # 0
        user(TASK),  # 1
        assistant(None, call("c1", "bash", command="cat src/auth/login.py")),  # 2: request 0
        tool("c1", CODE),  # 3
        assistant(None, call("c2", "bash", command="python -m pytest tests/test_login.py")),
        tool("c2", "E   ValueError: token format invalid\nFAILED tests/test_login.py::test_login"),
        assistant(None, call("c3", "edit_file", path="src/auth/login.py", old="a", new="b")),
        tool("c3", "edited"),  # 7
        assistant("Fixed in commit 3f9a2b7c; see https://github.com/acme/app/pull/17"),  # 8
        user("Great. Next, document the retry budget in docs/retries.md please"),  # 9
        assistant(None, call("c4", "bash", command="echo budget > docs/retries.md")),  # 10
        tool("c4", "ok"),  # 11
        assistant("Done."),  # 12: request 5
    ]


class Scripted(ContextCompressor):
    """Compacts exactly when the list it is given ends with a scripted message."""

    def __init__(self, script: dict[int, Callable[[list[Message]], list[Message]]]) -> None:
        super().__init__(context_length=100_000)
        self.threshold_tokens = 0  # every request is "over": compress() decides
        self.script = script

    def decide(self, prompt_tokens: int | None = None) -> Decision:
        return Decision(True, prompt_tokens or 0, 0)

    def compress(
        self,
        messages: list[Message],
        *,
        force: bool = False,
        focus_topic: str | None = None,
        current_tokens: int | None = None,
    ) -> CompressionResult:
        make = self.script.pop(id(messages[-1]), None) if messages else None
        if make is None:
            return CompressionResult(messages, CompressionReport(Outcome.NOOP))
        out = make(messages)
        report = CompressionReport(
            Outcome.COMPRESSED, tier=Tier.SUMMARY, before_tokens=1, after_tokens=1
        )
        return CompressionResult(out, report)


def handoff(text: str) -> Callable[[list[Message]], list[Message]]:
    return lambda messages: [messages[0], {"role": "user", "content": text}]


def run(prices: CachePrices | None = None) -> tuple[list[Message], Any]:
    messages = transcript()
    engine = Scripted({id(messages[7]): handoff(H1), id(messages[11]): handoff(H2)})
    return messages, evaluate(messages, engine=engine, cache_prices=prices, name="planted")


def kinds(report: Any) -> dict[FactKind, tuple[int, int, int]]:
    return {k.kind: (k.facts, k.kept_at_end, k.kept_always) for k in report.retention_by_kind}


def test_retention_by_kind_is_exact() -> None:
    # Compaction 1 removes messages 1-7 (15 facts): files auth/login.py, tests/test_login.py
    # (touched) and auth/login.py (modified); ValueError and its two error lines; AUTH-42;
    # the task's seven key terms (src/auth/login.py, auth-42, 54329, unchanged, staging,
    # ticket, public) and the task itself. H1 keeps all but tests/test_login.py, the FAILED
    # line, "unchanged" and "public". Compaction 2 removes 8-11 (7 facts): the SHA and the
    # URL, docs/retries.md (touched and modified) and the second request's three key terms
    # (docs/retries.md, document, budget). H2 keeps the SHA, the files and docs/retries.md,
    # and of the older facts only the two files, AUTH-42, "auth-42" and "ticket".
    _, report = run()
    assert kinds(report) == {
        FactKind.FILE: (3, 2, 2),
        FactKind.MODIFIED_FILE: (2, 2, 2),
        FactKind.ERROR: (1, 0, 0),
        FactKind.ERROR_LINE: (2, 0, 0),
        FactKind.ID: (3, 2, 2),
        FactKind.USER_TERM: (10, 3, 3),
        FactKind.TASK: (1, 0, 0),
    }
    assert report.lost_count == 13
    lost = {(f.kind, f.text) for f in report.lost}
    assert (FactKind.TASK, TASK[:80]) in lost
    assert (FactKind.ID, "https://github.com/acme/app/pull/17") in lost
    assert (FactKind.FILE, "tests/test_login.py") in lost
    assert (FactKind.USER_TERM, "staging") in lost
    assert (FactKind.ERROR_LINE, "FAILED tests/test_login.py::test_login") in lost


def test_retention_by_age_is_exact() -> None:
    # Age 1: 15 facts of compaction 1 (11 in H1) + 7 of compaction 2 (4 in H2).
    # Age 2: the 15 of compaction 1 against H2: the two files, AUTH-42, auth-42, ticket.
    _, report = run()
    assert [(a.age, a.facts, a.kept) for a in report.retention_by_age] == [(1, 22, 15), (2, 15, 5)]
    records = [(c.ordinal, c.request, c.trigger, c.tier, c.left_messages, c.new_facts)
               for c in report.compactions]  # fmt: skip
    assert records == [
        (1, 3, "preflight", "summary", 7, 15),
        (2, 5, "preflight", "summary", 4, 7),
    ]


def test_tokens_match_the_requests_sent() -> None:
    messages, report = run()
    tok = [message_tokens(m) for m in messages]
    h1, h2 = (message_tokens({"role": "user", "content": h}) for h in (H1, H2))
    sent = [
        sum(tok[:2]), sum(tok[:4]), sum(tok[:6]),  # before any compaction
        tok[0] + h1, tok[0] + h1 + tok[8] + tok[9], tok[0] + h2,
    ]  # fmt: skip
    assert list(report.tokens_per_request) == sent
    assert list(report.baseline_per_request) == [sum(tok[:n]) for n in (2, 4, 6, 8, 10, 12)]
    assert report.peak_tokens == max(sent)
    assert report.by_tier == {"summary": 2} and report.by_trigger == {"preflight": 2}


def expected_break_even(prefix: int, previous: int, current: int, appended: int) -> int | None:
    read, write = 0.1, 1.25
    extra = read * prefix + write * (current - prefix) - (read * previous + write * appended)
    saving = read * (previous + appended - current)
    if extra <= 0:
        return 1
    return None if saving <= 0 else 1 + math.ceil(extra / saving - 1e-9)


def test_cache_invalidation_and_break_even_are_exact() -> None:
    messages, report = run()
    tok = [message_tokens(m) for m in messages]
    h1, h2 = (message_tokens({"role": "user", "content": h}) for h in (H1, H2))
    first, second = report.cache_breaks
    # Request 3 keeps only the system prompt of request 2 ([0..5]); request 5 keeps the
    # system prompt of request 4 ([0, H1, 8, 9]).
    assert (first.request, first.compactions) == (3, 1)
    assert first.kept_prefix_tokens == tok[0]
    assert first.invalidated_tokens == sum(tok[1:6])
    assert first.appended_tokens == tok[6] + tok[7]
    assert first.break_even_requests == expected_break_even(
        tok[0], sum(tok[:6]), tok[0] + h1, tok[6] + tok[7]
    )
    assert first.break_even_requests == 1  # 60 lines of code left: cheaper at once
    assert (second.request, second.invalidated_tokens) == (5, h1 + tok[8] + tok[9])
    assert second.break_even_requests == expected_break_even(
        tok[0], tok[0] + h1 + tok[8] + tok[9], tok[0] + h2, tok[10] + tok[11]
    )
    assert second.break_even_requests is not None and second.break_even_requests > 1
    # The session ends one request after the second break: it never paid off.
    assert first.paid_off and not second.paid_off
    assert report.invalidated_tokens == first.invalidated_tokens + second.invalidated_tokens


def test_cached_cost_against_no_compaction() -> None:
    messages, report = run(CachePrices(read=0.5, write=1.0))
    tok = [message_tokens(m) for m in messages]
    sent = list(report.tokens_per_request)
    cached = [0, sent[0], sent[1], tok[0], sent[3], tok[0]]
    pairs = zip(cached, sent, strict=True)
    assert report.cached_cost == sum(0.5 * c + 1.0 * (t - c) for c, t in pairs)
    base = list(report.baseline_per_request)
    without = base[0] + sum(0.5 * base[i - 1] + (base[i] - base[i - 1]) for i in range(1, 6))
    assert report.cached_cost_without == without


def test_report_is_frozen_and_json() -> None:
    _, report = run()
    data = json.loads(json.dumps(report.to_dict()))
    assert data["retention"]["facts"] == 22 and data["retention"]["kept_at_end"] == 9
    assert data["retention"]["by_kind"]["user_term"] == {
        "facts": 10, "kept_at_end": 3, "kept_always": 3
    }  # fmt: skip
    assert data["cache"]["breaks"][0]["request"] == 3
    assert data["tokens"]["compactions_by_tier"] == {"summary": 2}
    try:
        report.name = "x"  # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("EvalReport must be frozen")


def test_the_input_is_not_modified() -> None:
    messages = transcript()
    before = json.dumps(messages)
    engine = Scripted({id(messages[7]): handoff(H1)})
    evaluate(messages, engine=engine)
    assert json.dumps(messages) == before
