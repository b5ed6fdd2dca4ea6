"""Pydantic AI 2.x: ``Agent`` with tools and a ``FunctionModel``, history kept between runs.

Each user turn is one ``agent.run_sync(prompt, message_history=...)`` with the previous
run's ``all_messages()``; inside a run the agent's own loop calls the tools and the model.
The compaction runs as ``ProcessHistory(history_processor(...))`` (the 2.x way to add a
history processor) and as ``WindowkeeperCapability``.
"""

from __future__ import annotations

from typing import Any

import pytest
from driving import SESSION_PARAMS, Recorded, Replayer, Watch, load
from pydantic_ai import Agent, Tool
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    BaseToolCallPart,
    BaseToolReturnPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import UsageLimits

from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import call_arguments, call_id, call_name, message_text, tool_calls
from windowkeeper.integrations.pydantic_ai import WindowkeeperCapability, history_processor

NO_LIMITS = UsageLimits(request_limit=None)  # long recorded turns make hundreds of requests


def canonical(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """The test's own reading of what the model receives (independent of the adapter)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            calls = [
                {
                    "id": p.tool_call_id,
                    "type": "function",
                    "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
                }
                for p in message.parts
                if isinstance(p, BaseToolCallPart)
            ]
            out.append(
                {"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})}
            )
            continue
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                out.append({"role": "system", "content": part.content})
            elif isinstance(part, UserPromptPart):
                out.append({"role": "user", "content": str(part.content)})
            elif isinstance(part, BaseToolReturnPart):
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.tool_call_id,
                        "content": part.model_response_str(),
                    }
                )
    return out


def run_session(session: Recorded, capability: Any, system_in_history: bool = True) -> Watch:
    watch = Watch(session.context_length, session.tools)
    replayer = Replayer(session)

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = canonical(messages)
        if info.instructions:
            request.insert(0, {"role": "system", "content": info.instructions})
        watch.see(request)
        reply = replayer.respond()
        parts: list[Any] = [TextPart(content=reply["content"])] if reply.get("content") else []
        parts += [
            ToolCallPart(tool_name=call_name(c), args=call_arguments(c), tool_call_id=call_id(c))
            for c in tool_calls(reply)
        ]
        return ModelResponse(parts=parts or [TextPart(content="")])

    def tool(name: str) -> Tool[Any]:
        def run(**kwargs: Any) -> str:
            return replayer.result(name, kwargs)

        schema = next(t for t in session.tools if t["function"]["name"] == name)["function"]
        return Tool.from_schema(
            run, name=name, description=schema["description"], json_schema=schema["parameters"]
        )

    prompt = (
        {"system_prompt": session.system} if system_in_history else {"instructions": session.system}
    )
    agent = Agent(
        FunctionModel(model),
        tools=[tool(n) for n in session.tool_names],
        capabilities=[capability],
        **{k: v for k, v in prompt.items() if v},
    )
    history: list[ModelMessage] = []
    for turn in session.turns:
        replayer.start(turn)
        result = agent.run_sync(
            message_text(turn.user), message_history=history, usage_limits=NO_LIMITS
        )
        history = result.all_messages()
    assert violations(canonical(history)) == []
    return watch


@pytest.mark.parametrize("name", SESSION_PARAMS)
def test_process_history_keeps_a_long_session_inside_the_window(name: str) -> None:
    session = load(name)
    process = history_processor(context_length=session.context_length, tools=session.tools)
    watch = run_session(session, ProcessHistory(process))
    count = process.compactor.conversations.manager().engine.get_status()["compression_count"]  # type: ignore[attr-defined]
    watch.assert_compacted_and_persistent(count)


def test_the_capability_counts_tools_and_instructions() -> None:
    session = load("synthetic")
    capability = WindowkeeperCapability(context_length=session.context_length)
    watch = run_session(session, capability, system_in_history=False)
    count = capability.compactor.conversations.manager().engine.get_status()["compression_count"]
    watch.assert_compacted_and_persistent(count)


def test_a_test_model_run_without_pressure_is_untouched() -> None:
    process = history_processor(context_length=100_000)
    agent = Agent(TestModel(), capabilities=[ProcessHistory(process)])

    @agent.tool_plain
    def lookup(city: str) -> str:
        return f"{city}: sunny"

    first = agent.run_sync("weather in Paris?")
    again = agent.run_sync("and tomorrow?", message_history=first.all_messages())
    assert again.all_messages()[: len(first.all_messages())] == first.all_messages()
    history = again.all_messages()
    assert process(None, history) is history  # type: ignore[arg-type]  # a no-op is identity


def test_a_history_pydantic_ai_cannot_serialize_goes_to_the_model_as_it_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Tool-call args Pydantic AI's own serializer refuses (newer releases wrap a list as
    # {"INVALID_JSON": …}, but an arbitrary object still fails). The processor must not be
    # what fails the run.
    process = history_processor(context_length=2_000)
    bad = ToolCallPart(tool_name="bash", args=object(), tool_call_id="c1")  # type: ignore[arg-type]
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(content="word " * 3_000)]),
        ModelResponse(parts=[bad]),
    ]
    with pytest.raises((TypeError, ValueError)):
        bad.args_as_json_str()
    with caplog.at_level("WARNING", logger="windowkeeper.integrations.pydantic_ai"):
        assert process(None, history) is history  # type: ignore[arg-type]
    assert any("history not compacted" in r.getMessage() for r in caplog.records)
