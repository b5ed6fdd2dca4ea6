"""The one exception tree of windowkeeper.

Every error a caller can see derives from :class:`WindowkeeperError` and says what went
wrong and what to do about it. Third-party errors (httpx, openai, sqlite3, psycopg) are
mapped at the edge with ``raise ... from exc``.

::

    WindowkeeperError
    ├── InvalidMessagesError        malformed conversation input (names line/index + defect)
    ├── ConfigError                 bad or missing configuration
    ├── SummaryError                the summarizer could not produce a handoff
    ├── StoreError                  session store failures
    ├── UpstreamError               the upstream model endpoint failed
    └── CompressionExhaustedError   compaction could not bring a request under the window
"""

from __future__ import annotations


class WindowkeeperError(Exception):
    """Base class of every error raised by windowkeeper."""


class InvalidMessagesError(WindowkeeperError):
    """A conversation could not be read.

    Attributes:
        location: where the defect is, e.g. ``"line 12"`` or ``"message 3"``.
        defect: what is wrong there.
    """

    def __init__(self, location: str, defect: str) -> None:
        self.location = location
        self.defect = defect
        super().__init__(f"{location}: {defect}")


class ConfigError(WindowkeeperError):
    """Configuration is invalid or incomplete; the message says which setting to fix."""


class SummaryError(WindowkeeperError):
    """The summarizer failed; compaction either aborts or falls back to the extractive one."""


class StoreError(WindowkeeperError):
    """The session store failed."""


class UpstreamError(WindowkeeperError):
    """The upstream model endpoint failed."""


class CompressionExhaustedError(WindowkeeperError):
    """Compaction was retried the maximum number of times and the request still does not fit."""
