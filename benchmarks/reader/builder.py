"""Build one blind run of the reader benchmark (method: benchmarks/reader/README.md).

For every quiz in ``quizzes/``, the session's prefix ``messages[:cut]`` is compacted by the
windowkeeper of the checkout this script lives in (its CLI, run with that checkout's
``src`` first on the path, so the same script measures any commit), and each variant is
written as one reader file under a random label. Run from the checkout's root:

    PYTHONPATH=$PWD/src python benchmarks/reader/builder.py [--out DIR] [--only SESSION ...]
    python benchmarks/reader/builder.py --collect DIR     # after the readers answered

The LLM variants are built when ``WINDOWKEEPER_READER_LLM_MODEL`` names a summary model
(``WINDOWKEEPER_READER_LLM_BASE_URL`` optional; the key as for ``--summarizer llm``), or,
without an endpoint, from a stand-in whose replies a model wrote by hand (``stand_in.py``):

    python benchmarks/reader/builder.py --summary-prompts DIR   # until nothing is pending
    python benchmarks/reader/builder.py --out RUN --stand-in DIR
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from readerlib import (
    QUIZZES,
    ROOT,
    SESSIONS,
    Quiz,
    blind,
    load_quizzes,
    new_labels,
    questions_text,
    render_template,
    variant_tokens,
    write_json,
)
from stand_in import MODEL, StandIn, serving

Message = dict[str, Any]
LLM_MODEL_ENV = "WINDOWKEEPER_READER_LLM_MODEL"
LLM_URL_ENV = "WINDOWKEEPER_READER_LLM_BASE_URL"
UNANSWERED = "(not yet answered)"
# The stand-in claims a frontier model's window, so the prompt is built as for one.
STAND_IN_WINDOW = 200_000


def commit_of(root: Path) -> str:
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    sha = git("rev-parse", "--short=10", "HEAD") or "nogit"
    return sha + ("-dirty" if git("status", "--porcelain", "--", "src") else "")


def load_session(folder: Path, name: str) -> tuple[list[Message], dict[str, Any]]:
    path = folder / f"{name}.jsonl"
    messages = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    meta_path = folder / f"{name}.meta.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
    return messages, meta


def check_cut(quiz: Quiz, messages: Sequence[Message], meta: Mapping[str, Any]) -> None:
    """The cut a quiz was written for must be the one the builder uses."""
    if quiz.cut_source == "compaction_summary_indices":
        indices = meta.get("compaction_summary_indices") or []
        if not indices or indices[0] != quiz.cut:
            raise SystemExit(f"{quiz.session}: quiz cut {quiz.cut} but the meta lists {indices}")
    if not 0 < quiz.cut < len(messages):
        raise SystemExit(f"{quiz.session}: cut {quiz.cut} outside 1..{len(messages) - 1}")


def compress(
    prefix: Sequence[Message], tools: object, length: int, extra: Sequence[str]
) -> tuple[list[Message], dict[str, Any]]:
    """The checkout's ``windowkeeper compress`` of ``prefix``: its messages and report."""
    with tempfile.TemporaryDirectory(prefix="reader-") as tmp:
        work = Path(tmp)
        (work / "in.jsonl").write_text("".join(json.dumps(m) + "\n" for m in prefix))
        (work / "empty.yaml").write_text("")  # no user config may change what is measured
        command = [
            sys.executable, "-m", "windowkeeper", "compress", str(work / "in.jsonl"),
            "--context-length", str(length), "--config", str(work / "empty.yaml"),
            "-o", str(work / "out.jsonl"), "--report-json", str(work / "report.json"),
            *extra,
        ]  # fmt: skip
        if tools:
            (work / "tools.json").write_text(json.dumps(tools))
            command += ["--tools", str(work / "tools.json")]
        env = {k: v for k, v in os.environ.items() if not _setting(k)}
        env["PYTHONPATH"] = str(ROOT / "src")
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(f"windowkeeper compress failed ({done.returncode}): {done.stderr}")
        out = (work / "out.jsonl").read_text(encoding="utf-8").splitlines()
        report = json.loads((work / "report.json").read_text(encoding="utf-8"))
    return [json.loads(line) for line in out if line], report


def _setting(name: str) -> bool:
    """An environment variable that would change windowkeeper's settings (keys may stay)."""
    return name.startswith("WINDOWKEEPER_") and not name.endswith("_API_KEY")


def text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            text = part.get("text") if isinstance(part, dict) else None
            parts.append(text if isinstance(text, str) else f"[{kind or 'part'}]")
        return "\n".join(parts)
    return ""


def render_transcript(messages: Sequence[Message]) -> str:
    """The compacted output as a reader sees it: ``### [i] ROLE`` blocks."""
    blocks = []
    for i, message in enumerate(messages):
        lines = [f"### [{i}] {str(message.get('role', '?')).upper()}"]
        if message.get("tool_call_id"):
            lines.append(f"(result of {message['tool_call_id']})")
        body = text_of(message.get("content"))
        if body:
            lines.append(body)
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            lines.append(
                f"-> tool_call {call.get('id', '?')} {function.get('name', '?')}: "
                f"{function.get('arguments', '')}"
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def handoff_of(messages: Sequence[Message]) -> Message | None:
    sys.path.insert(0, str(ROOT / "src"))
    from windowkeeper.analysis.kinds import is_handoff

    return next((m for m in messages if is_handoff(m)), None)


def llm_options() -> tuple[str, ...] | None:
    """``--summarizer llm`` options for the endpoint the environment names, if any."""
    if not os.environ.get(LLM_MODEL_ENV):
        return None
    llm = ["--summarizer", "llm", "--summary-model", os.environ[LLM_MODEL_ENV]]
    if os.environ.get(LLM_URL_ENV):
        llm += ["--summary-base-url", os.environ[LLM_URL_ENV]]
    return tuple(llm)


def stand_in_options(url: str) -> tuple[str, ...]:
    return (
        "--summarizer", "llm", "--summary-model", MODEL, "--summary-base-url", url,
        "--summary-context-length", str(STAND_IN_WINDOW), "--summary-timeout", "60",
    )  # fmt: skip


def variants_of(
    quiz: Quiz,
    messages: Sequence[Message],
    meta: Mapping[str, Any],
    llm: Sequence[str] | None = None,
    stand_in: StandIn | None = None,
) -> dict:
    """Variant name → (reader text, JSON payload, compaction report or None)."""
    prefix, tools = list(messages[: quiz.cut]), meta.get("tools")
    found: dict[str, tuple[str, object, dict[str, Any] | None]] = {}
    if quiz.cut_source == "compaction_summary_indices":
        peer = messages[quiz.cut]
        found["A"] = (text_of(peer.get("content")), peer, None)
    runs: list[tuple[str, str | None, int, tuple[str, ...]]] = [
        ("B+", "B", 16_000, ()),
        ("B+8k", None, 8_000, ()),
    ]
    if llm:
        runs.append(("L+", "L", 16_000, tuple(llm)))
    for whole, alone, length, extra in runs:
        output, report = compress(prefix, tools, length, extra)
        if extra and stand_in is not None and stand_in.unanswered:
            # The summarizer fell back to the extractive handoff: not an L variant.
            raise SystemExit(
                f"{quiz.session}: {len(stand_in.unanswered)} summary prompt(s) without a reply in "
                f"{stand_in.folder / 'prompts'}; run --summary-prompts and answer them first"
            )
        found[whole] = (render_transcript(output), output, report)
        if alone is None:
            continue
        handoff = handoff_of(output)
        if handoff is None:
            print(f"{quiz.session} {alone}: no handoff (tier {report.get('tier')}); skipped")
        else:
            found[alone] = (text_of(handoff.get("content")), handoff, report)
    return found


def summary_prompts(folder: Path, quizzes: Sequence[Quiz], sessions: Path) -> int:
    """Ask the stand-in every LLM compaction's summary; the number still without a reply.

    A compaction whose input needs several summary calls (chunks) asks the next one only
    once the previous has its reply, so run this again after answering until it says 0."""
    with serving(folder) as (stand_in, url):
        for quiz in quizzes:
            messages, meta = load_session(sessions, quiz.session)
            check_cut(quiz, messages, meta)
            compress(messages[: quiz.cut], meta.get("tools"), 16_000, stand_in_options(url))
        pending = sorted(stand_in.unanswered)
    for key in pending:
        print(f"  waiting: {folder / 'prompts' / key}.md")
    print(f"{len(pending)} summary prompt(s) without a reply in {folder / 'replies'}")
    return len(pending)


def blinded(value: object) -> object:
    """``value`` with every string in it blinded (the JSON a variant's tokens count)."""
    if isinstance(value, str):
        return blind(value)
    if isinstance(value, list):
        return [blinded(v) for v in value]
    if isinstance(value, dict):
        return {k: blinded(v) for k, v in value.items()}
    return value


def assign_labels(
    rng: random.Random, variants: Sequence[str], taken: set[str]
) -> list[tuple[str, str]]:
    """(label, variant) pairs in a random order, with fresh random labels."""
    shuffled = list(variants)
    rng.shuffle(shuffled)
    return list(zip(new_labels(rng, len(shuffled), taken), shuffled, strict=True))


def write_reader(out: Path, label: str, quiz: Quiz, text: str) -> None:
    questions = questions_text(quiz, with_key=False)
    values = {"label": label, "text": blind(text), "questions": questions}
    page = render_template("reader.md", values)
    (out / "readers").mkdir(parents=True, exist_ok=True)
    (out / "readers" / f"reader-{label}.md").write_text(page, encoding="utf-8")


def build(
    out: Path,
    quizzes: Sequence[Quiz],
    sessions: Path,
    seed: int,
    llm: Sequence[str] | None = None,
    stand_in: StandIn | None = None,
) -> dict[str, Any]:
    rng = random.Random(seed)
    taken: set[str] = set()
    mapping: dict[str, dict[str, Any]] = {}
    for quiz in quizzes:
        messages, meta = load_session(sessions, quiz.session)
        check_cut(quiz, messages, meta)
        variants = variants_of(quiz, messages, meta, llm, stand_in)
        for label, variant in assign_labels(rng, list(variants), taken):
            text, payload, report = variants[variant]
            write_reader(out, label, quiz, text)
            mapping[label] = {
                "session": quiz.session,
                "variant": variant,
                "tokens": variant_tokens(blinded(payload)),
                "tier": (report or {}).get("tier"),
                "after_tokens": (report or {}).get("after_tokens"),
            }
    cuts = {q.session: q.cut for q in quizzes}
    manifest = {"commit": commit_of(ROOT), "seed": seed, "cuts": cuts}
    write_json(out / "sealed" / "mapping.json", mapping)
    write_json(out / "sealed" / "manifest.json", manifest)
    (out / "answers").mkdir(exist_ok=True)
    (out / "grades").mkdir(exist_ok=True)
    collect(out, quizzes)
    return mapping


def collect(out: Path, quizzes: Sequence[Quiz]) -> None:
    """(Re)write one grader file per session with every labelled answer found so far."""
    mapping = json.loads((out / "sealed" / "mapping.json").read_text(encoding="utf-8"))
    (out / "graders").mkdir(exist_ok=True)
    for quiz in quizzes:
        labels = sorted(label for label, v in mapping.items() if v["session"] == quiz.session)
        answers = []
        for label in labels:
            path = out / "answers" / f"answers-{label}.md"
            body = path.read_text(encoding="utf-8").strip() if path.exists() else UNANSWERED
            answers.append(f"### Reader {label}\n\n{blind(body)}")
        page = render_template(
            "grader.md",
            {
                "session": quiz.session, "labels": ", ".join(labels),
                "questions": questions_text(quiz, with_key=True), "answers": "\n\n".join(answers),
                "example": json.dumps({labels[0]: {q.id: 2 for q in quiz.questions[:2]}}),
            },
        )  # fmt: skip
        (out / "graders" / f"grader-{quiz.session}.md").write_text(page, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="run directory [/tmp/reader-run-COMMIT]")
    parser.add_argument("--collect", type=Path, metavar="RUN", help="rewrite RUN's grader files")
    parser.add_argument("--quizzes", type=Path, default=QUIZZES)
    parser.add_argument("--sessions", type=Path, default=SESSIONS)
    parser.add_argument("--only", nargs="*", default=(), help="sessions to build")
    parser.add_argument("--seed", type=int, default=None, help="label seed [random]")
    parser.add_argument(
        "--summary-prompts", type=Path, metavar="DIR",
        help="write the stand-in summary model's prompts to DIR and say how many wait",
    )  # fmt: skip
    parser.add_argument(
        "--stand-in", type=Path, metavar="DIR",
        help="build the LLM variants from the replies in DIR (stand_in.py)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    quizzes = load_quizzes(args.quizzes, args.only)
    if args.collect:
        collect(args.collect, quizzes)
        print(f"grader files rewritten in {args.collect / 'graders'}")
        return
    if not args.sessions.is_dir():
        raise SystemExit(f"sessions not found at {args.sessions.resolve()}; nothing to build")
    if args.summary_prompts:
        summary_prompts(args.summary_prompts, quizzes, args.sessions)
        return
    out = args.out or Path(tempfile.gettempdir()) / f"reader-run-{commit_of(ROOT)}"
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out} is not empty; pass another --out")
    seed = secrets.randbits(64) if args.seed is None else args.seed
    if args.stand_in:
        with serving(args.stand_in) as (stand_in, url):
            mapping = build(out, quizzes, args.sessions, seed, stand_in_options(url), stand_in)
    else:
        mapping = build(out, quizzes, args.sessions, seed, llm_options())
    print(f"run directory {out}: {len(mapping)} reader files for {len(quizzes)} sessions")
    for name in ("readers", "graders"):
        for path in sorted((out / name).iterdir()):
            print(f"  {name}/{path.name}")


if __name__ == "__main__":
    main()
