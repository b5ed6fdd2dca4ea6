"""Layer 7, adapters: other providers' formats to and from the canonical one.

Reading conversations from files and request bodies, the Anthropic Messages and OpenAI
Responses formats, and prompt-cache markers.
"""
