"""The reference agent's compressor, for the benchmarks' comparison column.

PyPI ``hermes-agent`` 0.19.0 is installed without its dependencies into a folder of the
benchmarks' own (``benchmarks/.reference/``, ignored by git) with this interpreter's pip:
its compressor imports only what windowkeeper's environment already has (pyyaml, openai,
httpx, pydantic). Its LLM call is stubbed to fail, so each compaction writes its
deterministic fallback summary; its home folder is a temporary one. ``openai`` is imported
before the timer: a failed call's error check imports it (0.6–5 s on this machine), and
an agent that had really called a model would have imported it already. Where pip cannot
install it (no registry, another interpreter) :func:`installed` is ``None`` and the
benchmarks leave the column out, saying why.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import ROOT

PACKAGE = "hermes-agent==0.19.0"
TARGET = ROOT / "benchmarks" / ".reference" / "hermes-agent-0.19.0"
_MODULE = TARGET / "agent" / "context_compressor.py"


def installed() -> Path | None:
    """The folder holding the reference agent (installed on first use), or ``None``."""
    if _MODULE.is_file():
        return TARGET
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
         str(TARGET), PACKAGE],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0 or not _MODULE.is_file():
        reason = (done.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"reference agent not installed ({PACKAGE}: {reason}); its column is left out",
              file=sys.stderr)  # fmt: skip
        return None
    return TARGET


def compress_runner(messages: list[dict[str, Any]], window: int) -> Any:
    """A function running one forced compaction of ``messages`` with a fresh reference
    compressor (call in a process whose path starts with :data:`TARGET`)."""
    os.environ["HERMES_HOME"] = tempfile.mkdtemp(prefix="wk-bench-hermes-")
    import logging

    logging.disable(logging.WARNING)  # its "summary failed" warning on every run
    import agent.context_compressor as reference
    import openai  # noqa: F401  (its failure path imports the client it would have called)

    def fail(**_: Any) -> Any:
        raise RuntimeError("stubbed: the benchmark calls no model")

    reference.call_llm = fail

    def run() -> object:
        compressor = reference.ContextCompressor(
            model="bench-model", config_context_length=window, quiet_mode=True
        )
        return compressor.compress(messages, force=True)

    return run
