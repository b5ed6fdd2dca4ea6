"""LiteLLM: the proxy pre-call hook, on the path the proxy takes for a chat request.

These tests need only the ``litellm`` extra (the real proxy, which needs the
``litellm-proxy`` extra, runs in test_litellm_proxy.py), so they take the exact path the
proxy takes: the hook is registered in
``litellm.callbacks`` (what ``litellm_settings.callbacks`` does), called as
``ProxyLogging.pre_call_hook`` calls every ``CustomLogger`` (a ``UserAPIKeyAuth``, a
``DualCache``, the request body, ``call_type="completion"``), and the body it returns goes
to the real ``litellm.acompletion``, routed to a scripted ``CustomLLM`` provider that
answers with the recorded assistant messages. The client keeps and re-sends its whole
history every turn, as proxy clients do.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import litellm
import pytest
from driving import SESSION_PARAMS, Recorded, Replayer, Watch, load
from litellm.caching.dual_cache import DualCache
from litellm.llms.custom_llm import CustomLLM
from litellm.proxy._types import UserAPIKeyAuth

from windowkeeper.core.messages import call_id, tool_calls
from windowkeeper.integrations.litellm import WindowkeeperHook

MODEL = "scripted/agent"
# LiteLLM imports provider modules lazily on the first call; one of them declares pydantic
# TypedDicts with ReadOnly items, which pydantic warns about (LiteLLM's, not ours).
pytestmark = pytest.mark.filterwarnings("ignore:Item.*ReadOnly.*qualifier:UserWarning")


class ScriptedProvider(CustomLLM):
    def __init__(self, watch: Watch, replayer: Replayer) -> None:
        super().__init__()
        self.watch, self.replayer = watch, replayer

    async def acompletion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        self.watch.see([dict(m) for m in messages])
        reply = self.replayer.respond()
        message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
        if tool_calls(reply):
            message["tool_calls"] = tool_calls(reply)
        usage = {"prompt_tokens": self.watch.tokens[-1], "completion_tokens": 5, "total_tokens": 0}
        return litellm.ModelResponse(
            model=model,
            choices=[{"index": 0, "message": message, "finish_reason": "stop"}],
            usage=usage,
        )


@pytest.fixture
def registered() -> Iterator[list[Any]]:
    before = (list(litellm.callbacks), list(litellm.custom_provider_map))
    yield litellm.callbacks
    litellm.callbacks[:] = before[0]
    litellm.custom_provider_map[:] = before[1]


async def proxy_request(hook: WindowkeeperHook, body: dict[str, Any]) -> Any:
    """What the proxy does with a chat request: every CustomLogger's pre-call hook in
    ``litellm.callbacks`` may replace the body, then the model is called with it."""
    for callback in litellm.callbacks:
        if isinstance(callback, litellm.integrations.custom_logger.CustomLogger):
            body = await callback.async_pre_call_hook(
                user_api_key_dict=UserAPIKeyAuth(api_key="sk-test"),
                cache=DualCache(),
                data=body,
                call_type="completion",
            )
    return await litellm.acompletion(**body)


def drive(session: Recorded, hook: WindowkeeperHook, registered: list[Any], **extra: Any) -> Watch:
    watch = Watch(session.context_length, session.tools)
    replayer = Replayer(session)
    provider = ScriptedProvider(watch, replayer)
    litellm.custom_provider_map[:] = [{"provider": "scripted", "custom_handler": provider}]
    litellm.callbacks.append(hook)
    history: list[dict[str, Any]] = (
        [{"role": "system", "content": session.system}] if session.system else []
    )

    async def run() -> None:
        for turn in session.turns:
            replayer.start(turn)
            history.append(turn.user)
            while True:
                body = {"model": MODEL, "messages": list(history), "tools": session.tools, **extra}
                response = await proxy_request(hook, body)
                message = response.choices[0].message
                calls = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in message.tool_calls or []
                ]
                history.append(
                    {
                        "role": "assistant",
                        "content": message.content,
                        **({"tool_calls": calls} if calls else {}),
                    }
                )
                if not calls:
                    break
                for call in calls:
                    text = session.results.get(call_id(call), "(no recorded result)")
                    history.append({"role": "tool", "tool_call_id": call["id"], "content": text})

    anyio.run(run)
    return watch


@pytest.mark.parametrize("name", SESSION_PARAMS)
def test_a_long_session_through_the_proxy_hook_stays_inside_the_window(
    name: str, registered: list[Any]
) -> None:
    session = load(name)
    hook = WindowkeeperHook(context_lengths={MODEL: session.context_length})
    watch = drive(session, hook, registered)
    managers = list(hook.conversations._managers.values())
    assert len(managers) == 1  # one conversation, recognised by its fingerprint every turn
    watch.assert_compacted_and_persistent(managers[0].engine.get_status()["compression_count"])


def test_session_ids_separate_conversations_and_other_calls_pass_through(
    registered: list[Any],
) -> None:
    session = load("synthetic")
    hook = WindowkeeperHook(context_length=session.context_length)
    watch = drive(session, hook, registered, litellm_session_id="s-1")
    assert [key for key in hook.conversations._managers] == [(MODEL, "s-1")]
    assert watch.prefix_breaks()
    body = {"model": "text-embedding-3-small", "input": ["x"]}

    async def embedding() -> Any:
        return await hook.async_pre_call_hook(UserAPIKeyAuth(), DualCache(), body, "embeddings")

    assert anyio.run(embedding) is body


def test_an_unknown_model_is_passed_through_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    hook = WindowkeeperHook()
    body = {"model": "no-such-model-xyz", "messages": [{"role": "user", "content": "hi"}]}
    assert hook.compact_request(body) is body
    assert hook.compact_request(body) is body
    assert sum("not compacted" in r.message for r in caplog.records) == 1
