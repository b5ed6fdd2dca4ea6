"""LangChain v1: ``create_agent`` with tools, a scripted chat model and the middleware.

The agent's own loop (LangGraph, with a checkpointer keeping the thread's state) runs a
long recorded session user turn by user turn; the scripted model answers with the
recorded assistant messages and checks every request it receives (see ``driving``).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from driving import SESSION_PARAMS, Recorded, Replayer, Watch, arguments, holds_a_compaction, load
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import StructuredTool
from langgraph.checkpoint.memory import InMemorySaver

from windowkeeper.core.errors import ConfigError
from windowkeeper.core.invariants import violations
from windowkeeper.core.messages import call_id, call_name, tool_calls
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.integrations.langchain import WindowkeeperMiddleware


class ScriptedChat(BaseChatModel):
    """Answers with the recorded assistant messages; checks each request first."""

    watch: Any = None
    replayer: Any = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        request = [dict(m) for m in convert_to_openai_messages(messages)]
        self.watch.see(request)
        reply = self.replayer.respond()
        calls = [
            {"name": call_name(c), "args": arguments(c), "id": call_id(c), "type": "tool_call"}
            for c in tool_calls(reply)
        ]
        usage = {"input_tokens": self.watch.tokens[-1], "output_tokens": 10, "total_tokens": 0}
        message = AIMessage(
            content=reply.get("content") or "", tool_calls=calls, usage_metadata=usage
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def build(session: Recorded, middleware: WindowkeeperMiddleware) -> tuple[Any, Watch, Replayer]:
    watch = Watch(session.context_length, session.tools)
    replayer = Replayer(session)

    def tool(name: str) -> StructuredTool:
        def run(**kwargs: Any) -> str:
            return replayer.result(name, kwargs)

        schema = next(t for t in session.tools if t["function"]["name"] == name)["function"]
        return StructuredTool.from_function(
            func=run, name=name, description=schema["description"], args_schema=schema["parameters"]
        )

    agent = create_agent(
        ScriptedChat(watch=watch, replayer=replayer),
        tools=[tool(n) for n in session.tool_names],
        system_prompt=session.system,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    return agent, watch, replayer


CONFIG = {"configurable": {"thread_id": "t1"}, "recursion_limit": 100_000}


@pytest.mark.parametrize("name", SESSION_PARAMS)
def test_create_agent_runs_a_long_session_inside_the_window(name: str) -> None:
    session = load(name)
    middleware = WindowkeeperMiddleware(context_length=session.context_length)
    agent, watch, replayer = build(session, middleware)
    for turn in session.turns:
        replayer.start(turn)
        agent.invoke({"messages": [HumanMessage(content=turn.user["content"])]}, CONFIG)
    compactions = middleware.conversations.manager("t1").engine.get_status()["compression_count"]
    watch.assert_compacted_and_persistent(compactions)
    state = [
        dict(m) for m in convert_to_openai_messages(agent.get_state(CONFIG).values["messages"])
    ]
    assert violations(state) == []
    assert holds_a_compaction(state)  # the agent state holds the compaction


def test_the_async_agent_and_a_ready_compressor() -> None:
    session = load("synthetic")
    compressor = ContextCompressor(context_length=session.context_length)
    middleware = WindowkeeperMiddleware(compressor=compressor)
    agent, watch, replayer = build(session, middleware)

    async def run() -> None:
        for turn in session.turns:
            replayer.start(turn)
            await agent.ainvoke({"messages": [HumanMessage(content=turn.user["content"])]}, CONFIG)

    anyio.run(run)
    watch.assert_compacted_and_persistent(compressor.compression_count)
    # The system prompt gets its one-time compaction note with the first summary (a
    # prune-only compaction leaves it alone) and is byte-stable from then on.
    noted = [r[0]["content"] for r in watch.requests if "[windowkeeper note" in r[0]["content"]]
    first = next(i for i, r in enumerate(watch.requests) if r[0]["content"] == noted[0])
    assert {r[0]["content"] for r in watch.requests[first:]} == {noted[0]}


def test_threads_have_their_own_state_and_the_window_must_be_known() -> None:
    middleware = WindowkeeperMiddleware(context_length=50_000)
    assert middleware.conversations.manager("a") is not middleware.conversations.manager("b")
    with pytest.raises(ConfigError, match="context window"):
        WindowkeeperMiddleware()


class RecordingChat(BaseChatModel):
    """Answers "ok" and keeps the messages of every call, as LangChain passed them."""

    seen: Any = None

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content="ok"))])


def test_messages_langchain_cannot_convert_go_to_the_model_unchanged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # An image block without a source: LangChain's own converter refuses it. The agent's
    # call must not fail because of the middleware; the model (or its provider) judges it.
    model = RecordingChat(seen=[])
    middleware = WindowkeeperMiddleware(context_length=2_000)
    agent = create_agent(model, tools=[], system_prompt="Be brief.", middleware=[middleware])
    content: list[str | dict[str, Any]] = [{"type": "text", "text": "word " * 3_000}]
    content.append({"type": "image", "detail": "high"})
    with pytest.raises(ValueError, match="content block"):
        convert_to_openai_messages([HumanMessage(content=content)])
    with caplog.at_level("WARNING", logger="windowkeeper.integrations.langchain"):
        agent.invoke({"messages": [HumanMessage(content=content)]})
    assert [m.content for m in model.seen[0][1:]] == [content]  # after the system prompt
    assert any("request not compacted" in r.getMessage() for r in caplog.records)
