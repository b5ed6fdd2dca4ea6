"""Score one run of the reader benchmark from the graders' files and the sealed mapping.

Reads ``RUN/grades/<session>.json`` (``{"scores": {LABEL: {QID: -1|0|1|2}}}``) and
``RUN/sealed/mapping.json``, and prints per variant per session (max 20), the total scaled
to 100, the count of -1 answers and the tokens of each variant; ``--markdown PATH`` also
writes the table for docs/benchmarks.md. Run:

    python benchmarks/reader/scorer.py RUN [--markdown PATH]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from readerlib import DESCRIPTIONS, QUESTIONS_PER_QUIZ, QUIZZES, SCORES, VARIANTS, load_quizzes

MAX_PER_SESSION = 2 * QUESTIONS_PER_QUIZ


class GradeError(ValueError):
    """A grade file that does not match the run (a label or question missing or extra)."""


@dataclass(frozen=True)
class Cell:
    """One variant on one session."""

    points: int
    misleading: int
    tokens: int


def read_grades(run: Path, question_ids: Mapping[str, Sequence[str]]) -> dict[str, dict[str, int]]:
    """Label → question id → score, over every session's grade file, checked whole."""
    mapping = json.loads((run / "sealed" / "mapping.json").read_text(encoding="utf-8"))
    scores: dict[str, dict[str, int]] = {}
    for session, ids in question_ids.items():
        path = run / "grades" / f"{session}.json"
        if not path.exists():
            raise GradeError(f"{path} is missing: every session must be graded before scoring")
        graded = json.loads(path.read_text(encoding="utf-8"))["scores"]
        expected = {label for label, v in mapping.items() if v["session"] == session}
        if set(graded) != expected:
            raise GradeError(f"{path}: labels {sorted(graded)} but the run has {sorted(expected)}")
        for label, per_question in graded.items():
            if sorted(per_question) != sorted(ids):
                raise GradeError(f"{path}: {label} grades {sorted(per_question)}, not {list(ids)}")
            bad = {q: s for q, s in per_question.items() if s not in SCORES}
            if bad:
                raise GradeError(f"{path}: {label} has scores outside {SCORES}: {bad}")
            scores[label] = dict(per_question)
    return scores


def cells(run: Path, quizzes_dir: Path) -> dict[tuple[str, str], Cell]:
    """(variant, session) → its points, −1 count and tokens."""
    mapping = json.loads((run / "sealed" / "mapping.json").read_text(encoding="utf-8"))
    sessions = {v["session"] for v in mapping.values()}
    quizzes = [q for q in load_quizzes(quizzes_dir) if q.session in sessions]
    scores = read_grades(run, {q.session: [x.id for x in q.questions] for q in quizzes})
    return {
        (entry["variant"], entry["session"]): Cell(
            points=sum(scores[label].values()),
            misleading=sum(1 for s in scores[label].values() if s == -1),
            tokens=int(entry["tokens"]),
        )
        for label, entry in mapping.items()
    }


def scaled(cells: Sequence[Cell]) -> str:
    """Points of ``cells`` scaled to 100 (each session is worth 20), or "-" for none."""
    if not cells:
        return "-"
    return f"{100 * sum(c.points for c in cells) / (MAX_PER_SESSION * len(cells)):.0f}"


def table(table_cells: Mapping[tuple[str, str], Cell]) -> list[list[object]]:
    """One row per variant: points per session (of 20), the total scaled to 100 over the
    sessions it was built for and over the peer's sessions (where "A" exists, so the
    variants compare on the same sessions), −1s, and the tokens (mean and range)."""
    sessions = sorted({s for _, s in table_cells})
    peer_sessions = {s for v, s in table_cells if v == "A"}
    rows: list[list[object]] = []
    for variant in [v for v in VARIANTS if any(k[0] == v for k in table_cells)]:
        mine = {s: table_cells[(variant, s)] for s in sessions if (variant, s) in table_cells}
        tokens = [c.tokens for c in mine.values()]
        rows.append([
            variant, DESCRIPTIONS[variant],
            *[mine[s].points if s in mine else "-" for s in sessions],
            scaled(list(mine.values())),
            scaled([c for s, c in mine.items() if s in peer_sessions]),
            sum(c.misleading for c in mine.values()),
            round(sum(tokens) / len(tokens)), f"{min(tokens)}-{max(tokens)}",
        ])  # fmt: skip
    return rows


def markdown(rows: Sequence[Sequence[object]], sessions: Sequence[str], meta: Any) -> str:
    header = [
        "variant", "what", *sessions, "total /100", "on peer sessions /100", "-1s",
        "tokens mean", "tokens range",
    ]  # fmt: skip
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    note = (
        f"\nCommit `{meta.get('commit')}`; per session the points of 20; the total is over the "
        "sessions the variant was built for, scaled to 100, and again over the sessions with a "
        "peer summary (variant A) only."
    )
    return "\n".join(lines) + "\n" + note + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--quizzes", type=Path, default=QUIZZES)
    parser.add_argument("--markdown", type=Path, help="write the markdown table here")
    args = parser.parse_args(argv)
    try:
        found = cells(args.run, args.quizzes)
    except GradeError as exc:
        raise SystemExit(f"cannot score {args.run}: {exc}") from None
    meta = json.loads((args.run / "sealed" / "manifest.json").read_text(encoding="utf-8"))
    sessions = sorted({s for _, s in found})
    text = markdown(table(found), sessions, meta)
    print(text)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
