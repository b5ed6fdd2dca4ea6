"""The prune tier's per-stub path (session 24, wt-prune16): each cut against what it
replaced."""

from __future__ import annotations

from windowkeeper.analysis import toolshapes
from windowkeeper.analysis.toolshapes import FILE_KINDS, ToolKind


def test_kind_constants_are_the_members() -> None:
    # The hot paths compare with these by identity: each must be its own member.
    for kind in ToolKind:
        assert getattr(toolshapes, f"{kind.name}_KIND") is kind
    assert FILE_KINDS == (ToolKind.READ, ToolKind.WRITE, ToolKind.EDIT)
