"""Which evidence of a work item a short render keeps (issue 24: "which files did sub-task
X change?" lost points where a done item showed only "N more steps; closed; committed;
pushed"): the step its status comes from first, then the commit, then the files it
changed, and the status reads back the same from what is kept."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from windowkeeper.summary.handoff.items import item_status
from windowkeeper.summary.handoff.model import WorkItem, WorkState
from windowkeeper.summary.handoff.worktext import parse_item, render_work

DONE = WorkItem("proj-a.3", "Tail workers", (
    "claimed", "wrote lib/tail_worker.ex, lib/tail_adapter.ex", "edited lib/application.ex",
    "tests passed: 7 tests, 0 failures", "closed", "committed f0b86dd", "pushed",
))  # fmt: skip


def line(work_item: WorkItem, shown: int) -> str:
    [rendered] = [x for x in render_work(WorkState(items=(work_item,)), 0, shown, False, [])
                  if x.startswith("- ")]  # fmt: skip
    return rendered


def test_a_done_item_keeps_its_status_step_its_commit_and_the_files_it_changed() -> None:
    assert line(DONE, 3) == (
        '- proj-a.3 "Tail workers": done: pushed — 4 more steps; edited lib/application.ex; '
        "committed f0b86dd; pushed"
    )
    assert "wrote lib/tail_worker.ex, lib/tail_adapter.ex" in line(DONE, 4)
    assert line(DONE, 1).endswith("— 6 more steps; pushed")


EVIDENCE = st.sampled_from([
    "claimed", "wrote a.ex", "edited b.ex ×2", "tests passed: 3 tests", "tests failed: 1",
    "lint passed", "closed", "committed 1a2b3c4", "pushed", "merged", "ran mix format",
])  # fmt: skip


@given(st.lists(EVIDENCE, unique=True, max_size=9), st.integers(min_value=1, max_value=9))
def test_a_done_status_reads_back_the_same_from_any_short_render(
    evidence: list[str], shown: int
) -> None:
    work_item = WorkItem("x-1", "T", tuple(evidence))
    status = item_status(work_item)
    parsed = parse_item(line(work_item, shown)[2:])
    assert parsed is not None
    if not status.startswith("in progress"):
        # A finished item is never read back as work in progress, nor as less finished.
        assert item_status(parsed) == status
