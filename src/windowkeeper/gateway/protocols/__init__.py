"""The protocols the gateway speaks, one module each (design §8): OpenAI Chat Completions,
OpenAI Responses and Anthropic Messages, each forwarded to an upstream of its own kind."""

from __future__ import annotations

from .base import Parsed, Protocol, RecallCall, StreamFilter, StreamTap, dumps, loads
from .chat import ChatProtocol
from .messages import MessagesProtocol
from .responses import ResponsesProtocol

CHAT = ChatProtocol()
RESPONSES = ResponsesProtocol()
MESSAGES = MessagesProtocol()

__all__ = [
    "CHAT",
    "MESSAGES",
    "RESPONSES",
    "Parsed",
    "Protocol",
    "RecallCall",
    "StreamFilter",
    "StreamTap",
    "dumps",
    "loads",
]
