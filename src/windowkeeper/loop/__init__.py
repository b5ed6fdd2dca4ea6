"""Layer 6, loop: an engine around an agent's requests.

The :class:`~.manager.ContextManager` (preflight, post-response, overflow recovery),
its step machine, incremental estimates, overflow classification, hooks, status events,
and the replay of a transcript request by request.
"""
