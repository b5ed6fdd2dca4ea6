"""Layer 5, engine: the context engines that run a compaction end to end.

The :class:`~.base.ContextEngine` contract, the built-in
:class:`~.compressor.ContextCompressor` (triggers, guard state, the compaction pipeline),
plugin discovery, and the inspection of where a conversation's tokens go.
"""
