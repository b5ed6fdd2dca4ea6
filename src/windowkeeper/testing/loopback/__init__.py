"""A scripted loopback upstream that speaks OpenAI Chat Completions, OpenAI Responses and
Anthropic Messages, streamed and not (test helpers shipped with windowkeeper)::

    from windowkeeper.testing.loopback import LoopbackUpstream, Reply, call

    with LoopbackUpstream(window=16_000) as upstream:
        upstream.script(Reply.turn("hello"), Reply.turn(None, call("read", path="a.py")))
        ...  # point an OpenAI client at upstream.base_url, an Anthropic one at anthropic_url
"""

from __future__ import annotations

from .replies import Reply, ToolCall, call
from .server import LoopbackUpstream, Recorded, request_tokens

__all__ = ["LoopbackUpstream", "Recorded", "Reply", "ToolCall", "call", "request_tokens"]
