"""OpenAI Agents SDK: ``Runner`` with a scripted ``Model``, the input filter and the
compacting session.

The SDK's own loop runs each recorded user turn (model call, tool calls through
``FunctionTool``, model call, ...); the scripted model answers with the recorded assistant
messages as Responses output items and checks every input it receives, read by the test's
own small Responses reader (independent of the adapter under test).
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from agents import (
    Agent,
    FunctionTool,
    Model,
    ModelResponse,
    RunConfig,
    Runner,
    SQLiteSession,
    Usage,
)
from agents.run_config import CallModelData, ModelInputData
from driving import SESSION_PARAMS, Recorded, Replayer, Watch, holds_a_compaction, load
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from windowkeeper.compaction.handoff import is_handoff
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import call_arguments, call_id, call_name, message_text, tool_calls
from windowkeeper.integrations.openai_agents import CompactingSession, input_filter

MAX_TURNS = 100_000


def canonical(instructions: str | None, items: list[Any]) -> list[dict[str, Any]]:
    """Responses input items as chat messages: a run of assistant output and calls is one
    assistant message; outputs are tool messages."""
    out: list[dict[str, Any]] = (
        [{"role": "system", "content": instructions}] if instructions else []
    )
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            if not out or out[-1]["role"] != "assistant" or out[-1].get("closed"):
                out.append({"role": "assistant", "content": ""})
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            out[-1].setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            out.append(
                {"role": "tool", "tool_call_id": item["call_id"], "content": str(item["output"])}
            )
        elif kind == "message":
            content = item["content"]
            text = (
                content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
            )
            if (
                item["role"] == "assistant"
                and out
                and out[-1]["role"] == "assistant"
                and "tool_calls" not in out[-1]
            ):
                out[-1]["content"] += text
            else:
                out.append({"role": item["role"], "content": text})
    for message in out:
        message.pop("closed", None)
    return out


class ScriptedModel(Model):
    def __init__(self, watch: Watch, replayer: Replayer) -> None:
        self.watch, self.replayer = watch, replayer

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        items = (
            [{"type": "message", "role": "user", "content": input}]
            if isinstance(input, str)
            else list(input)
        )
        self.watch.see(canonical(system_instructions, items))
        reply = self.replayer.respond()
        output: list[Any] = []
        if reply.get("content"):
            text = ResponseOutputText(type="output_text", text=message_text(reply), annotations=[])
            output.append(
                ResponseOutputMessage(
                    id=f"msg_{len(self.watch.requests)}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[text],
                )
            )
        for call in tool_calls(reply):
            output.append(
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id=call_id(call),
                    name=call_name(call),
                    arguments=call_arguments(call) or "{}",
                )
            )
        usage = Usage(
            requests=1, input_tokens=self.watch.tokens[-1], output_tokens=5, total_tokens=0
        )
        return ModelResponse(output=output, usage=usage, response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def agent_for(session: Recorded, watch: Watch, replayer: Replayer) -> Agent[Any]:
    def tool(name: str) -> FunctionTool:
        async def invoke(context: Any, arguments: str) -> str:
            return replayer.result(name, json.loads(arguments or "{}"))

        schema = next(t for t in session.tools if t["function"]["name"] == name)["function"]
        return FunctionTool(
            name=name,
            description=schema["description"],
            params_json_schema=schema["parameters"],
            on_invoke_tool=invoke,
            strict_json_schema=False,
        )

    return Agent(
        name="replay",
        instructions=session.system,
        model=ScriptedModel(watch, replayer),
        tools=[tool(n) for n in session.tool_names],
    )


@pytest.mark.parametrize("name", SESSION_PARAMS)
def test_runner_with_the_input_filter_stays_inside_the_window(name: str) -> None:
    session = load(name)
    watch, replayer = Watch(session.context_length, session.tools), Replayer(session)
    agent = agent_for(session, watch, replayer)
    keep = input_filter(context_length=session.context_length)
    config = RunConfig(call_model_input_filter=keep, tracing_disabled=True)

    async def run() -> None:
        history: list[Any] = []
        for turn in session.turns:
            replayer.start(turn)
            items = [*history, {"role": "user", "content": message_text(turn.user)}]
            result = await Runner.run(agent, items, run_config=config, max_turns=MAX_TURNS)
            history = result.to_input_list()  # the caller's full, uncompacted history

    anyio.run(run)
    (manager,) = keep.conversations._managers.values()  # one conversation, by fingerprint
    watch.assert_compacted_and_persistent(manager.engine.get_status()["compression_count"])


def test_the_compacting_session_keeps_the_compaction_across_runs(tmp_path: Any) -> None:
    session = load("synthetic")
    watch, replayer = Watch(session.context_length, session.tools), Replayer(session)
    agent = agent_for(session, watch, replayer)
    stored = SQLiteSession("s1", tmp_path / "agents.db")
    compacting = CompactingSession(
        stored, context_length=session.context_length, tools=session.tools
    )
    keep = input_filter(context_length=session.context_length)
    config = RunConfig(call_model_input_filter=keep, tracing_disabled=True)

    async def run() -> list[Any]:
        for turn in session.turns:
            replayer.start(turn)
            await Runner.run(
                agent,
                message_text(turn.user),
                session=compacting,
                run_config=config,
                max_turns=MAX_TURNS,
            )
        return await stored.get_items()

    items = anyio.run(run)
    history = canonical(None, items)
    assert violations(history) == []
    assert compacting.conversations.manager("s1").engine.get_status()["compression_count"] >= 1
    assert holds_a_compaction(history)  # the stored history holds the compaction
    assert sum(is_handoff(m) for m in history) <= 1  # one handoff at most, never stacked
    # Every request stayed inside the window, and runs began from the stored compaction.
    assert max(watch.tokens) < watch.window


def test_model_input_the_engine_cannot_read_goes_to_the_model_as_it_is(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A message whose content is a number: the engine refuses it. The filter must not be
    # what fails the run; the API judges the input.
    keep = input_filter(context_length=2_000)
    given = ModelInputData(input=[{"role": "user", "content": 5}], instructions="Be brief.")  # type: ignore[list-item]
    with caplog.at_level("WARNING", logger="windowkeeper.integrations.openai_agents"):
        assert keep(CallModelData(model_data=given, agent=Agent(name="a"), context=None)) is given
    assert any("not compacted" in r.getMessage() for r in caplog.records)
