"""Layer 4, summary: the handoff's content.

The summarizer contract (:mod:`.protocol`), the request a summarizer gets, the
deterministic extractive summarizer, the state ledger, the LLM summarizer (prompt,
backends, output shaping), failure classification, redaction and summary-model
feasibility.
"""
