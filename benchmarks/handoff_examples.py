"""Print real handoffs for docs/handoff-examples.md.

Each session is replayed at 16K with the manager's triggers active (as an agent would
send it, extractive summarizer) and the handoff of its first summary-tier compaction
after ``--skip`` of them is printed with the turns it replaced counted. Run:
``.venv/bin/python benchmarks/handoff_examples.py [--window N] [session ...]``.
"""

from __future__ import annotations

import argparse

from common import session_paths
from windowkeeper import parse_conversation
from windowkeeper.analysis.kinds import is_handoff
from windowkeeper.core.messages import content_text
from windowkeeper.engine.compressor import ContextCompressor
from windowkeeper.loop.replay import replay

DEFAULT = (
    "cc_spotter_fa812bfe",
    "openhands_sonnet35_django__django-11149",
    "msa_dschat_django__django-11910",
)


class Watching(ContextCompressor):
    """The compressor, keeping the handoff bodies of its summary-tier results."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.handoffs: list[tuple[object, str]] = []

    def compress(self, messages, **kwargs):  # type: ignore[no-untyped-def]
        result = super().compress(messages, **kwargs)
        handoff = next((m for m in result.messages if is_handoff(m)), None)
        if result.summary and handoff is not None:
            self.handoffs.append((messages[-1], content_text(handoff.get("content"))))
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sessions", nargs="*", default=DEFAULT)
    parser.add_argument("--window", type=int, default=16_000)
    parser.add_argument("--skip", type=int, default=1, help="summary compactions to skip")
    args = parser.parse_args()
    paths = {p.stem: p for p in session_paths()}
    for name in args.sessions:
        conversation = parse_conversation(paths[name].read_text(encoding="utf-8"))
        engine = Watching(context_length=args.window, tools=conversation.tools)
        replay(conversation.messages, context_length=args.window, tools=conversation.tools,
               engine=engine)  # fmt: skip
        last, body = engine.handoffs[min(args.skip, len(engine.handoffs) - 1)]
        at = next(i for i, m in enumerate(conversation.messages) if m == last) + 1
        total = len(conversation.messages)
        print(f"## {name}: after message {at} of {total} ({len(engine.handoffs)} summaries)\n")
        print("```text\n" + body.strip() + "\n```\n")


if __name__ == "__main__":
    main()
