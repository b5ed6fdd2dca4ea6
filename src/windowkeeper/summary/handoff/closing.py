"""The task's closing steps: what a task says to do once the work is done (a harness's
"Submission" section: create the patch, check it, submit with an exact command).

A reader asked "what next?" at the cut needs the step after the current one too: the
current step comes from the newest actions (:mod:`.progress`), the last ones from the
task. Only a section whose heading names the end of the work is read, and only its step
lines (numbered or ``Step N:``) and the command a step gives verbatim.
"""

from __future__ import annotations

import re

from ...analysis.facts import collapse

CLOSING_LABEL = "When the work is done, the task's closing steps:"
_CLOSING_CHARS = 600
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+(.+?)|([A-Z][\w ,'-]{2,40}):)\s*$")
_CLOSING = re.compile(
    r"^(?:submission|submitting|submit\b|when (?:you(?:'re| are)|the work is) (?:done|finished)"
    r"|finish(?:ing)?\b|final steps?|wrap(?:ping)?[- ]up|deliver(?:y|ables?|ing)\b"
    r"|completion|completing)",
    re.IGNORECASE,
)
_STEP = re.compile(r"^\s*(?:step\s*\d+\s*[:.)-]|\d{1,2}[.)])\s*(.+)$", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(?:```|~~~)")


def closing_steps(task: str) -> str:
    """``CLOSING_LABEL`` and the task's closing steps on one line (``""``: none)."""
    lines = task[:40_000].splitlines()
    start = next((i for i, line in enumerate(lines) if _closing_heading(line)), None)
    if start is None:
        return ""
    steps: list[str] = []
    fenced: list[str] | None = None
    detail = False  # the step's first line with a command (`git diff … > patch.txt`) joins it
    for line in lines[start + 1 :]:
        if fenced is not None:
            if _FENCE.match(line):
                if fenced and steps:
                    steps[-1] += f": `{collapse(' '.join(fenced), 160)}`"
                fenced, detail = None, False
            else:
                fenced.append(line.strip())
            continue
        if _FENCE.match(line):
            fenced = []
        elif _markdown_heading(line):
            break
        elif step := _STEP.match(line):
            steps.append(collapse(step.group(1), 120))
            detail = True
        elif detail and "`" in line:
            steps[-1] += f" ({collapse(line.strip(), 120)})"
            detail = False
    if not steps:
        return ""
    listed = "; ".join(f"{n}. {s}" for n, s in enumerate(steps, 1))
    return f"{CLOSING_LABEL} {collapse(listed, _CLOSING_CHARS)}"


def _closing_heading(line: str) -> bool:
    match = _HEADING.match(line)
    return match is not None and bool(_CLOSING.match((match.group(1) or match.group(2)).strip()))


def _markdown_heading(line: str) -> bool:
    return line.lstrip().startswith("#")
