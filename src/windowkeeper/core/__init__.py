"""Layer 1, core: the canonical message format and everything every layer shares.

Messages (shape, validation), token estimates, configuration and settings, the
invariants as code, the result types of a compaction, templates, the exception tree.
Nothing here imports another windowkeeper layer.
"""
