"""The package tree is the architecture: imports only point down the layers, no cycles.

Every ``import`` in ``src/windowkeeper`` (module level or inside a function) is read from
the source with :mod:`ast`, resolved to the module it names, and checked against
``LAYERS``: a module may import its own layer and the layers below it, never a layer
above, never a peer (layers that share a rank, such as the gateway and the
integrations). Within one layer the module graph has no cycles. The package root
(``windowkeeper/__init__.py``, the public API) may import anything and nothing imports it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "windowkeeper"

# Lowest first. A name is a top-level subpackage or module of ``windowkeeper``; names in
# one tuple are peers of one rank and must not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("analysis",),
    ("compaction",),
    ("summary",),
    ("engine",),
    ("loop",),
    ("adapters",),
    ("evaluation",),
    ("store",),
    ("gateway", "integrations"),
    ("cli",),
    ("__main__",),
    ("testing",),
)
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in SRC.rglob("*.py")}


def imports(name: str, path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module) of every windowkeeper import in one module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    known = modules()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "windowkeeper":
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            elif node.module and node.module.split(".")[0] == "windowkeeper":
                target = node.module
            else:
                continue
            # ``from pkg import submodule`` imports the submodule itself.
            for alias in node.names:
                child = f"{target}.{alias.name}"
                yield node.lineno, child if child in known else target


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def test_every_module_has_a_layer() -> None:
    missing = sorted(
        name for name in modules() if layer_of(name) is not None and layer_of(name) not in RANK
    )
    assert not missing, f"modules outside every layer (add them to LAYERS): {missing}"


def test_imports_point_down() -> None:
    wrong = []
    for name, path in sorted(modules().items()):
        source = layer_of(name)
        if source is None:
            continue  # the public API may import anything
        for line, target in imports(name, path):
            destination = layer_of(target)
            if destination is None:
                wrong.append(f"{name}:{line} imports the package root ({target})")
            elif destination != source and RANK[destination] >= RANK[source]:
                wrong.append(f"{name}:{line} ({source}) imports {target} ({destination})")
    assert not wrong, "imports that point up or sideways:\n" + "\n".join(wrong)


def test_no_import_cycles() -> None:
    known = modules()
    graph = {
        name: {target for _, target in imports(name, path) if target in known and target != name}
        for name, path in known.items()
        if layer_of(name) is not None
    }
    cycles: list[str] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


@pytest.mark.parametrize("limit", [420])
def test_modules_stay_small(limit: int) -> None:
    large = {
        name: count
        for name, path in modules().items()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > limit
    }
    assert not large, f"modules over {limit} lines (split them along a real seam): {large}"


def private_imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, name) of every private name ``path`` takes from another windowkeeper module
    (a module's underscored names are its own: what others need gets a public name)."""
    known = {name.rpartition(".")[2] for name in modules()}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        ours = isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").split(".")[0] == "windowkeeper"
        )
        if not ours:
            continue
        assert isinstance(node, ast.ImportFrom)
        for alias in node.names:
            name = alias.name
            if name.startswith("_") and not name.startswith("__") and name not in known:
                yield node.lineno, name


def test_no_module_imports_private_names() -> None:
    found = [
        f"{module_name(path)}:{line} imports {name}"
        for path in sorted(SRC.rglob("*.py"))
        for line, name in private_imports(path)
    ]
    assert found == []


def test_private_imports_are_found(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from .base import _hidden, public\nfrom os import _exit\nfrom . import __version__\n",
        encoding="utf-8",
    )
    assert list(private_imports(sample)) == [(1, "_hidden")]
