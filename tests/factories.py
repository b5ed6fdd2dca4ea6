"""Small builders for OpenAI-format messages used across the tests."""

from __future__ import annotations

import json
from typing import Any

Message = dict[str, Any]


def system(text: str = "You are a careful coding agent.") -> Message:
    return {"role": "system", "content": text}


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant(text: str | None = None, *calls: dict[str, Any]) -> Message:
    message: Message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def tool(call_id: str, content: Any) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def image_part(url: str = "data:image/png;base64,AAAA") -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def shell_round(n: int, command: str, output: str) -> list[Message]:
    """An assistant bash call and its result."""
    cid = f"call_{n}"
    return [assistant(None, call(cid, "bash", command=command)), tool(cid, output)]


def long_session(
    rounds: int = 30, output_chars: int = 4_000, *, with_system: bool = True
) -> list[Message]:
    """A coding session: a task, many tool rounds with big outputs, a final question."""
    messages: list[Message] = [system()] if with_system else []
    messages.append(user("Fix the failing refund test in payments/refunds.py. Never push to main."))
    for n in range(rounds):
        body = f"line {n}\n" + ("x" * 60 + "\n") * (output_chars // 61)
        messages.extend(shell_round(n, f"pytest tests/test_{n}.py", body + "[exit code 0]"))
        messages.append(assistant(f"Step {n} done; the output looks fine."))
        messages.append(user(f"Continue with step {n + 1}."))
    messages.append(assistant("All steps are done. Anything else?"))
    messages.append(user("What changed in refunds.py?"))
    return messages
