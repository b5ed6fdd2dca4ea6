"""The reader benchmark's builder, blinding and scorer (benchmarks/reader/).

The builder runs on a small synthetic session (no real data needed); the scorer on
synthetic grades. The real quizzes are checked against the real sessions when present.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from factories import assistant, call, system, tool, user
from realdata import SESSIONS_DIR

READER = Path(__file__).resolve().parents[1] / "benchmarks" / "reader"
sys.path.insert(0, str(READER))

import builder  # noqa: E402
import readerlib  # noqa: E402
import scorer  # noqa: E402

SESSION = "synthetic_cc"
CUT = 41
PEER_SUMMARY = (
    "Summary: the user asked to fix the refund rounding. Windowkeeper was mentioned. "
    "Transcript at /home/dev/.claude/projects/-work-pay/abc.jsonl"
)


def synthetic_messages() -> list[dict[str, Any]]:
    """A prefix big enough that 16000 needs a handoff, naming the product in its text."""
    messages = [system(), user("Fix refund rounding in pay/refunds.py; we vendor windowkeeper.")]
    for n in range(13):
        cid = f"call_{n}"
        messages.append(
            assistant(
                f"Step {n}: reading. " + "analysis " * 250,
                call(cid, "bash", command=f"pytest -k t{n}"),
            )
        )
        messages.append(tool(cid, f"WindowKeeper log {n}\n" + "ok line\n" * 600))
        messages.append(user(f"Go on with step {n + 1}."))
    messages.append(user(PEER_SUMMARY))
    messages.append(assistant("Continuing."))
    return messages


def quiz_data() -> dict[str, Any]:
    questions = [
        {
            "id": f"q{i}",
            "topic": sorted(readerlib.TOPICS)[i - 1],
            "question": f"Question number {i}?",
            "answer": f"SECRETANSWER{i}",
            "key_facts": [f"KEYFACT{i}"],
            "sources": [1],
            **({"trap": f"TRAPTEXT{i}"} if i == 3 else {}),
        }
        for i in range(1, 11)
    ]
    return {"session": SESSION, "cut": CUT, "cut_source": "compaction_summary_indices",
            "questions": questions}  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("reader")
    sessions, quizzes, out = base / "sessions", base / "quizzes", base / "run"
    sessions.mkdir()
    quizzes.mkdir()
    messages = synthetic_messages()
    assert messages[CUT]["content"] == PEER_SUMMARY
    lines = "".join(json.dumps(m) + "\n" for m in messages)
    (sessions / f"{SESSION}.jsonl").write_text(lines)
    meta = {"compaction_summary_indices": [CUT]}
    (sessions / f"{SESSION}.meta.json").write_text(json.dumps(meta))
    (quizzes / f"{SESSION}.yaml").write_text(yaml.safe_dump(quiz_data()))
    command = [sys.executable, str(READER / "builder.py"), "--sessions", str(sessions),
               "--quizzes", str(quizzes), "--out", str(out), "--seed", "7"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out


def mapping(run: Path) -> dict[str, dict[str, Any]]:
    value: dict[str, dict[str, Any]] = json.loads((run / "sealed" / "mapping.json").read_text())
    return value


def seen_files(run: Path) -> list[Path]:
    return sorted((run / "readers").iterdir()) + sorted((run / "graders").iterdir())


def test_builder_writes_every_variant_once(run: Path) -> None:
    variants = sorted(v["variant"] for v in mapping(run).values())
    assert variants == ["A", "B", "B+", "B+8k"]
    labels = sorted(mapping(run))
    assert sorted(p.name for p in (run / "readers").iterdir()) == [f"reader-{x}.md" for x in labels]
    assert [p.name for p in (run / "graders").iterdir()] == [f"grader-{SESSION}.md"]
    assert all(v["tokens"] > 0 for v in mapping(run).values())


def test_product_name_and_peer_path_reach_no_reader_or_grader(run: Path) -> None:
    for path in seen_files(run):
        text = path.read_text().lower()
        assert "windowkeeper" not in text, path.name
        assert "window keeper" not in text and ".claude/projects" not in text, path.name
    peer = next(x for x, v in mapping(run).items() if v["variant"] == "A")
    assert "context was mentioned" in (run / "readers" / f"reader-{peer}.md").read_text()


def test_mapping_is_only_in_the_sealed_folder(run: Path) -> None:
    sealed = mapping(run)
    for path in seen_files(run):
        text = path.read_text()
        assert '"variant"' not in text
        assert not any(d in text for d in readerlib.DESCRIPTIONS.values()), path.name
        if path.name.startswith("reader-"):
            own = path.stem.removeprefix("reader-")
            assert [x for x in sealed if x in text] == [own]
    assert not any(v in sealed for v in readerlib.VARIANTS)


def test_readers_get_the_questions_and_graders_the_key(run: Path) -> None:
    for path in (run / "readers").iterdir():
        text = path.read_text()
        assert "Question number 10?" in text
        assert not any(s in text for s in ("SECRETANSWER", "KEYFACT", "TRAPTEXT"))
    grader = (run / "graders" / f"grader-{SESSION}.md").read_text()
    assert all(f"SECRETANSWER{i}" in grader for i in range(1, 11)) and "TRAPTEXT3" in grader
    assert all(f"### Reader {x}" in grader for x in mapping(run))


def test_labels_are_shuffled_per_seed() -> None:
    """Which variant comes first (in label order) follows the seed, not a rule."""
    firsts = set()
    for seed in range(8):
        pairs = builder.assign_labels(random.Random(seed), readerlib.VARIANTS, set())
        assert sorted(v for _, v in pairs) == sorted(readerlib.VARIANTS)
        assert len({x for x, _ in pairs}) == len(pairs)
        firsts.add(min(pairs)[1])
    assert len(firsts) > 1


def test_collect_puts_answers_in_the_grader_file(run: Path) -> None:
    label = sorted(mapping(run))[0]
    (run / "answers" / f"answers-{label}.md").write_text("q1: WindowKeeper did it\n")
    command = [sys.executable, str(READER / "builder.py"), "--collect", str(run),
               "--quizzes", str(run.parent / "quizzes")]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    grader = (run / "graders" / f"grader-{SESSION}.md").read_text()
    assert "q1: context did it" in grader and "windowkeeper" not in grader.lower()


def write_grades(run: Path, per_variant: dict[str, list[int]]) -> None:
    scores = {
        label: {f"q{i + 1}": s for i, s in enumerate(per_variant[v["variant"]])}
        for label, v in mapping(run).items()
    }
    (run / "grades" / f"{SESSION}.json").write_text(json.dumps({"scores": scores}))


def test_scorer_arithmetic(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_grades(run, {
        "A": [2] * 10,
        "B": [2] * 8 + [1, -1],
        "B+": [2, 2, 2, 2, 2, 1, 1, 0, 0, -1],
        "B+8k": [-1] * 10,
    })  # fmt: skip
    table = run / "table.md"
    scorer.main([str(run), "--quizzes", str(run.parent / "quizzes"), "--markdown", str(table)])
    rows = {
        line.split(" | ")[0].strip("| "): line.split(" | ")
        for line in table.read_text().splitlines()
    }
    tokens = {v["variant"]: v["tokens"] for v in mapping(run).values()}
    # variant, what, session points, total /100, on peer sessions /100, -1s, tokens mean, range
    assert rows["A"][2:7] == ["20", "100", "100", "0", str(tokens["A"])]
    assert rows["B"][2:6] == ["16", "80", "80", "1"]
    assert rows["B+"][2:6] == ["11", "55", "55", "1"]
    assert rows["B+8k"][2:6] == ["-10", "-50", "-50", "10"]
    assert "| variant |" in capsys.readouterr().out


def test_totals_over_all_and_over_peer_sessions() -> None:
    """A variant built for more sessions than the peer's is also totalled on the peer's."""
    cells = {
        ("A", "cc"): scorer.Cell(points=18, misleading=0, tokens=100),
        ("B+", "cc"): scorer.Cell(points=16, misleading=1, tokens=300),
        ("B+", "other"): scorer.Cell(points=10, misleading=2, tokens=500),
    }
    rows = {row[0]: row for row in scorer.table(cells)}
    # variant, what, cc, other, total, on peer sessions, -1s, tokens mean, tokens range
    assert rows["A"][2:] == [18, "-", "90", "90", 0, 100, "100-100"]
    assert rows["B+"][2:] == [16, 10, "65", "80", 3, 400, "300-500"]


def test_scorer_refuses_incomplete_grades(run: Path) -> None:
    write_grades(run, {v: [2] * 9 for v in readerlib.VARIANTS})
    with pytest.raises(SystemExit, match="grades"):
        scorer.main([str(run), "--quizzes", str(run.parent / "quizzes")])
    write_grades(run, {v: [2] * 9 + [3] for v in readerlib.VARIANTS})
    with pytest.raises(SystemExit, match="outside"):
        scorer.main([str(run), "--quizzes", str(run.parent / "quizzes")])


def test_quiz_format_is_checked(tmp_path: Path) -> None:
    data = quiz_data()
    data["questions"] = data["questions"][:9]
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(readerlib.QuizError, match="9 questions"):
        readerlib.load_quiz(tmp_path / "bad.yaml")
    data = quiz_data()
    data["questions"][0]["sources"] = [CUT]
    (tmp_path / "late.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(readerlib.QuizError, match="outside the prefix"):
        readerlib.load_quiz(tmp_path / "late.yaml")


QUIZZES = sorted(readerlib.QUIZZES.glob("*.yaml"))


@pytest.mark.parametrize("path", QUIZZES, ids=[p.stem for p in QUIZZES])
def test_repository_quiz_is_well_formed(path: Path) -> None:
    quiz = readerlib.load_quiz(path)
    assert {q.topic for q in quiz.questions} == readerlib.TOPICS
    assert all(q.trap for q in quiz.questions if q.topic == "errors_fixed")


@pytest.mark.real_sessions
@pytest.mark.parametrize("path", QUIZZES, ids=[p.stem for p in QUIZZES])
def test_repository_quiz_fits_its_real_session(path: Path) -> None:
    if not SESSIONS_DIR.is_dir():
        pytest.skip(f"real sessions not available at {SESSIONS_DIR}")
    quiz = readerlib.load_quiz(path)
    lines = (SESSIONS_DIR / f"{quiz.session}.jsonl").read_text().splitlines()
    meta = json.loads((SESSIONS_DIR / f"{quiz.session}.meta.json").read_text())
    assert quiz.cut < len(lines)
    if quiz.cut_source == "compaction_summary_indices":
        assert meta["compaction_summary_indices"][0] == quiz.cut
    else:
        assert not meta.get("compaction_summary_indices") and quiz.cut_reason


# The stand-in summary model (stand_in.py): prompts for a model to answer, replies served.


def build_command(base: Path, *extra: str) -> list[str]:
    return [sys.executable, str(READER / "builder.py"), "--sessions", str(base / "sessions"),
            "--quizzes", str(base / "quizzes"), *extra]  # fmt: skip


@pytest.fixture(scope="module")
def stand_in_base(run: Path) -> Path:
    """The synthetic session's folders (next to ``run``) with a stand-in folder."""
    return run.parent


def test_stand_in_writes_prompts_then_serves_the_replies(stand_in_base: Path) -> None:
    from windowkeeper.summary.protocol import WRITTEN_TITLES

    base, folder = stand_in_base, stand_in_base / "model"
    asked = subprocess.run(build_command(base, "--summary-prompts", str(folder)),
                           capture_output=True, text=True)  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    prompts = sorted((folder / "prompts").iterdir())
    assert prompts and f"{len(prompts)} summary prompt(s) without a reply" in asked.stdout
    page = prompts[0].read_text()
    assert "pytest -k t1" in page  # the summarized turns, as sent
    assert f"replies/{prompts[0].stem}.md" in page  # where the answering model writes

    early = build_command(base, "--out", str(base / "early"), "--stand-in", str(folder))
    refused = subprocess.run(early, capture_output=True, text=True)
    assert refused.returncode != 0 and "without a reply" in refused.stderr

    notes = "\n".join(f"## {title}\n- STANDINNOTE {n}" for n, title in enumerate(WRITTEN_TITLES))
    for prompt in prompts:
        (folder / "replies" / prompt.name).write_text(notes)
    again = subprocess.run(build_command(base, "--summary-prompts", str(folder)),
                           capture_output=True, text=True)  # fmt: skip
    assert "0 summary prompt(s) without a reply" in again.stdout, again.stdout

    out = base / "with-llm"
    command = build_command(base, "--out", str(out), "--stand-in", str(folder), "--seed", "3")
    built = subprocess.run(command, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    labels = {v["variant"]: label for label, v in mapping(out).items()}
    assert sorted(labels) == ["A", "B", "B+", "B+8k", "L", "L+"]
    for variant in ("L", "L+"):
        assert "STANDINNOTE" in (out / "readers" / f"reader-{labels[variant]}.md").read_text()
    for variant in ("B", "B+", "B+8k"):
        assert "STANDINNOTE" not in (out / "readers" / f"reader-{labels[variant]}.md").read_text()


def test_stand_in_key_ignores_the_model_but_not_the_messages() -> None:
    import stand_in

    messages = [{"role": "user", "content": "summarize this"}]
    assert stand_in.request_key(messages) == stand_in.request_key([dict(messages[0])])
    assert stand_in.request_key(messages) != stand_in.request_key(
        [{"role": "user", "content": "summarize that"}]
    )
