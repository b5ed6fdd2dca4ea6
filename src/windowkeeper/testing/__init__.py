"""What windowkeeper ships for testing it, and nothing in the product imports.

- :mod:`.server`: a scripted OpenAI-compatible server on loopback and a fake summarizer
  (re-exported here: ``from windowkeeper.testing import OpenAITestServer, Step``).
- :mod:`.loopback`: a model upstream on loopback for the gateway (Chat Completions,
  Messages, Responses; streaming; overflow errors), used by the demo tests and benchmarks.
- :mod:`.provider_sim`: a fake model with a real context limit and the providers'
  overflow wordings, for overflow recovery.
- :mod:`.histories`: random valid, hostile histories for the fuzz test and script.
- :mod:`.serve`: ``windowkeeper serve`` as a subprocess on loopback (``serve_process``).
"""

from .server import FakeSummarizer, OpenAITestServer, RecordedRequest, Step, unused_port

__all__ = ("FakeSummarizer", "OpenAITestServer", "RecordedRequest", "Step", "unused_port")
