"""The prune tier's size of a pruned list is the size its messages' records give (issue
27): a stub's tokens are worked out from its original's record, not counted again."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.analysis.record import Analyzer
from windowkeeper.compaction.plan import make_plan
from windowkeeper.core.config import DEFAULT_CONFIG
from windowkeeper.core.tokens import message_tokens, retexted_tokens
from windowkeeper.engine.pipeline import make_job, pruned_tokens, tokens_of

_TEXT = st.text(max_size=60) | st.text(alphabet="abc xyz\n", max_size=600)
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["tool", "assistant", "user"]), "content": _TEXT},
    optional={
        "tool_call_id": st.text(max_size=6),
        "name": st.text(max_size=6),
        "reasoning": st.text(max_size=6),
    },
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_MESSAGE, min_size=1, max_size=8), st.data())
def test_a_pruned_list_sizes_as_its_records_do(
    messages: list[dict[str, str]], data: st.DataObject
) -> None:
    analyzer = Analyzer()
    facts = analyzer.analyze(messages)
    plan = make_plan(messages, [f.tokens for f in facts], DEFAULT_CONFIG, 32_000, 1_000, facts)
    job = make_job(
        messages, facts, plan, 0, 32_000, DEFAULT_CONFIG, 32_000, force=False, focus=None
    )
    pruned = list(messages)
    for index in data.draw(st.sets(st.integers(0, len(messages) - 1))):
        pruned[index] = {**messages[index], "content": data.draw(_TEXT)}
    if data.draw(st.booleans()):  # another key changed too: looked up
        pruned[0] = {**pruned[0], "name": "other"}
    assert pruned_tokens(job, pruned, analyzer) == tokens_of(pruned, Analyzer())


@settings(max_examples=300, deadline=None)
@given(_MESSAGE, _TEXT, st.sampled_from(["same", "other name", "key added", "counter"]))
def test_a_copy_with_another_text_is_estimated_from_the_original(
    message: dict[str, str], text: str, change: str
) -> None:
    copy: dict[str, object] = {**message, "content": text}
    if change == "other name":
        copy["name"] = "other"
    elif change == "key added":
        copy["tool_calls"] = []
    count = len if change == "counter" else None
    worked = retexted_tokens(message_tokens(message), message, copy, count)
    # Worked out exactly where the estimator can (an ASCII original, nothing else changed,
    # the rough estimate); the caller counts any other copy itself.
    derivable = change == "same" and message["content"].isascii()
    assert (worked is not None) == derivable
    if worked is not None:
        assert worked == message_tokens(copy)
