"""evaluate() on random valid conversations and the scanners on hostile text."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_properties import conversation
from windowkeeper import evaluate
from windowkeeper.evaluation.ids import issues, shas, tickets, urls, uuids
from windowkeeper.evaluation.text import encode, tokenize


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=conversation(), window=st.sampled_from([2_000, 8_000]))
def test_any_conversation_evaluates(messages: list[dict[str, Any]], window: int) -> None:
    before = copy.deepcopy(messages)
    report = evaluate(messages, context_length=window)
    assert messages == before
    assert report.requests == sum(
        1 for i, m in enumerate(messages) if m["role"] == "assistant" and i
    )
    for kind in report.retention_by_kind:
        assert 0 <= kind.kept_always <= kind.kept_at_end <= kind.facts
    facts = sum(k.facts for k in report.retention_by_kind)
    assert (report.retention_by_age[0].facts if report.retention_by_age else 0) == facts
    assert all(b.invalidated_tokens >= 0 for b in report.cache_breaks)
    json.dumps(report.to_dict())


@given(st.text(max_size=400))
def test_scanners_never_raise_and_find_whole_tokens(text: str) -> None:
    data = encode(text)
    tokens = tokenize(data)
    for scan in (shas, uuids, tickets, issues):
        for value in scan(data):
            assert value in data
    for url, host_path in urls(data):
        assert url in data and host_path in url
    assert all(b" " not in token for token in tokens)
