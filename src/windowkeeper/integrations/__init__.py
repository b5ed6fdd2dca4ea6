"""windowkeeper inside the frameworks agents are built with (design §8).

One module per framework, each behind its own extra and each a thin layer over the same
:class:`~windowkeeper.engine.compressor.ContextCompressor` /
:class:`~windowkeeper.loop.manager.ContextManager`:

- ``langchain``: ``WindowkeeperMiddleware``, a LangChain v1 agent middleware;
- ``litellm``: ``WindowkeeperHook``, a LiteLLM proxy pre-call hook;
- ``openai_agents``: ``input_filter`` and ``CompactingSession`` for the OpenAI Agents SDK;
- ``pydantic_ai``: ``history_processor`` for Pydantic AI;
- ``mcp``: an MCP server with ``recall`` and ``search`` over the session archive.

Importing a module whose framework is not installed raises :class:`ImportError` naming
the extra to install. The package itself imports no framework.
"""
