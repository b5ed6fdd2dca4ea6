"""The LLM summarizer over any OpenAI-compatible endpoint (or LiteLLM)."""
