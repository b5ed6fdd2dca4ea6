"""What the reader benchmark's builder and scorer share: quizzes, the run layout, blinding.

A run directory (outside the repository) holds what each party may see, one folder each:
``readers/`` (one file per variant and session, given to one fresh reader each),
``answers/`` (what the readers wrote, one ``answers-<label>.md`` each), ``graders/`` (one file
per session: the key and every labelled answer, never the mapping), ``grades/`` (what the
graders wrote, one ``<session>.json`` each) and ``sealed/`` (the label→variant mapping and
the manifest, opened only by the scorer once every answer is graded).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
QUIZZES = HERE / "quizzes"
TEMPLATES = HERE / "templates"
SESSIONS = ROOT / ".." / "shared" / "data" / "sessions"

# The variants, in the order tables list them. "A" exists only where the session has a peer
# summary; the LLM ones only when a summary model is configured.
VARIANTS = ("A", "B", "B+", "B+8k", "L", "L+")
DESCRIPTIONS = {
    "A": "peer summary alone (Claude Code)",
    "B": "handoff alone, extractive, 16000",
    "B+": "whole output, extractive, 16000",
    "B+8k": "whole output, extractive, 8000",
    "L": "handoff alone, llm, 16000",
    "L+": "whole output, llm, 16000",
}
SCORES = (-1, 0, 1, 2)
# What READER.md asks a quiz to cover; every quiz covers each topic once.
TOPICS = frozenset({
    "task", "current", "constraints", "files_modified", "test_state",
    "errors_open", "errors_fixed", "next_step", "decisions", "identifiers",
})  # fmt: skip
QUESTIONS_PER_QUIZ = 10

# Every spelling of the product's name becomes this word, so no text tells a reader or a
# grader which system wrote it. Handles (``wk`` + hex) stay: they name nothing.
NEUTRAL = "context"
PRODUCT = re.compile(r"window[\s_-]?keeper", re.IGNORECASE)
# Claude Code ends its summary with the path of the transcript it came from, which names
# it (``~/.claude/projects/...``); the path itself is no fact of the session.
PEER_PATH = re.compile(r"\S*/\.claude/projects/\S+")
LABEL_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


@dataclass(frozen=True)
class Question:
    id: str
    topic: str
    question: str
    answer: str
    key_facts: tuple[str, ...]
    sources: tuple[int, ...]
    trap: str | None


@dataclass(frozen=True)
class Quiz:
    session: str
    cut: int
    cut_source: str
    cut_reason: str
    questions: tuple[Question, ...]


class QuizError(ValueError):
    """A quiz file that does not follow the format (README, "Quizzes")."""


def load_quiz(path: Path) -> Quiz:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        questions = tuple(
            Question(
                id=str(q["id"]),
                topic=str(q["topic"]),
                question=str(q["question"]).strip(),
                answer=str(q["answer"]).strip(),
                key_facts=tuple(str(f) for f in q["key_facts"]),
                sources=tuple(int(i) for i in q["sources"]),
                trap=str(q["trap"]).strip() if q.get("trap") else None,
            )
            for q in data["questions"]
        )
        quiz = Quiz(
            session=str(data["session"]),
            cut=int(data["cut"]),
            cut_source=str(data["cut_source"]),
            cut_reason=str(data.get("cut_reason", "")).strip(),
            questions=questions,
        )
    except (KeyError, TypeError, ValueError, yaml.YAMLError) as exc:
        raise QuizError(f"{path}: {exc!r}; see benchmarks/reader/README.md") from exc
    problems = quiz_problems(quiz)
    if problems:
        raise QuizError(f"{path}: " + "; ".join(problems))
    return quiz


def quiz_problems(quiz: Quiz) -> list[str]:
    problems = []
    if len(quiz.questions) != QUESTIONS_PER_QUIZ:
        problems.append(f"{len(quiz.questions)} questions, not {QUESTIONS_PER_QUIZ}")
    topics = {q.topic for q in quiz.questions}
    if topics != TOPICS:
        missing, unknown = sorted(TOPICS - topics), sorted(topics - TOPICS)
        problems.append(f"topics: missing {missing}, unknown {unknown}")
    ids = [q.id for q in quiz.questions]
    if len(set(ids)) != len(ids):
        problems.append("question ids repeat")
    for q in quiz.questions:
        if not q.key_facts or not q.sources:
            problems.append(f"{q.id}: needs key_facts and sources")
        if any(not 0 <= i < quiz.cut for i in q.sources):
            problems.append(f"{q.id}: a source index lies outside the prefix [0, {quiz.cut})")
    return problems


def load_quizzes(folder: Path, only: Sequence[str] = ()) -> list[Quiz]:
    quizzes = [load_quiz(p) for p in sorted(folder.glob("*.yaml"))]
    return [q for q in quizzes if not only or q.session in only]


def blind(text: str) -> str:
    return PEER_PATH.sub("[path omitted]", PRODUCT.sub(NEUTRAL, text))


def new_labels(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    """``count`` fresh random labels, none in ``taken`` (which is updated)."""
    labels = []
    while len(labels) < count:
        label = "".join(rng.choice(LABEL_ALPHABET) for _ in range(5))
        if label not in taken:
            taken.add(label)
            labels.append(label)
    return labels


def variant_tokens(payload: object) -> int:
    """The method's token count: the variant's JSON text, four characters a token."""
    return len(json.dumps(payload, ensure_ascii=False)) // 4


def render_template(name: str, values: Mapping[str, str]) -> str:
    text = (TEMPLATES / name).read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def questions_text(quiz: Quiz, *, with_key: bool) -> str:
    parts = []
    for q in quiz.questions:
        parts.append(f"{q.id}. {q.question}")
        if with_key:
            parts.append(f"   Key answer: {q.answer}")
            parts.append("   Key facts: " + "; ".join(q.key_facts))
            if q.trap:
                parts.append(f"   Scores -1 if the answer says: {q.trap}")
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
