"""The extractive summarizer: a deterministic handoff body written without an LLM."""
