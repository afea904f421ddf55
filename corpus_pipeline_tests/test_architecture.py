"""The layout stays the architecture: the import graph of the product packages, built with `ast`
from the source (function-level imports included), has no cycle and no climb.

A package imports only from its own package and from packages on lower layers: contracts and
common at the bottom, the stages in the middle, the orchestration and the entry points on top;
in the query service, the snapshot reader below retrieval, retrieval below the service, the
service below the HTTP and MCP surfaces. The read side never imports publisher code.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("corpus_pipeline", "query_service")
MAX_LINES = 600

# Layer of each unit (a sub-package, or a top-level module of the package); lower is deeper.
LAYERS: dict[str, int] = {
    "corpus_pipeline.contracts": 0,
    "corpus_pipeline.common": 1,
    "corpus_pipeline.access": 2,
    "corpus_pipeline.storage": 2,
    "corpus_pipeline.finance": 2,
    "corpus_pipeline.enrich": 2,
    "corpus_pipeline.index": 3,
    "corpus_pipeline.parsing": 3,
    "corpus_pipeline.embeddings": 3,
    "corpus_pipeline.profiling": 4,
    "corpus_pipeline.structure": 4,
    "corpus_pipeline.intake": 5,
    "corpus_pipeline.quality": 5,
    "corpus_pipeline.publish": 5,
    "corpus_pipeline.pipeline": 6,
    "corpus_pipeline.defs": 7,
    "corpus_pipeline.definitions": 8,
    "corpus_pipeline.orchestration": 8,
    "corpus_pipeline.upload_api": 9,
    "query_service.config": 10,
    "query_service.snapshot": 11,
    "query_service.retrieval": 12,
    # The analysts' reader: the snapshot reader, the job store and the run tags, read only.
    "corpus_pipeline.analysis": 12,
    "query_service.service": 13,
    "query_service.api": 14,
    # `corpus eval`: questions through the service in-process (or over HTTP), scored.
    "corpus_pipeline.evaluation": 14,
    "corpus_pipeline.cli": 15,
}
# Edges a layer alone would allow but the design forbids.
FORBIDDEN = [("query_service", "corpus_pipeline.publish")]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The product modules `name` imports (`from package import module` names both)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from package import module` runs the package's `__init__` too: both are edges.
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known)
    return {m for m in found if m.split(".")[0] in PACKAGES and m != name}


def _graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def _unit(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_every_unit_has_a_layer() -> None:
    units = {_unit(m) for m in _modules()} - set(PACKAGES)
    assert sorted(units - set(LAYERS)) == []


def _climbs(graph: dict[str, set[str]]) -> list[str]:
    return [
        f"{a} -> {b}"
        for a, targets in sorted(graph.items())
        for b in sorted(targets)
        if _unit(a) in LAYERS
        and _unit(b) in LAYERS
        and _unit(a) != _unit(b)
        and LAYERS[_unit(b)] >= LAYERS[_unit(a)]
    ]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    state: dict[str, int] = defaultdict(int)  # 0 new, 1 on the path, 2 done
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state[nxt] == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif state[nxt] == 0:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if state[start] == 0:
            visit(start, [start])
    return cycles


def test_no_module_imports_a_unit_above_its_own() -> None:
    assert _climbs(_graph()) == []


def test_the_read_side_never_imports_publisher_code() -> None:
    reaches = [
        f"{a} -> {b}"
        for a, targets in sorted(_graph().items())
        for b in sorted(targets)
        for source, target in FORBIDDEN
        if a.startswith(source) and b.startswith(target)
    ]
    assert reaches == []


def test_the_module_graph_has_no_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_checks_see_a_climb_and_a_cycle() -> None:
    graph = {
        "corpus_pipeline.parsing.text": {"corpus_pipeline.orchestration.runs"},
        "corpus_pipeline.pipeline.stages": {"corpus_pipeline.pipeline.isolation"},
        "corpus_pipeline.pipeline.isolation": {"corpus_pipeline.pipeline.stages"},
    }

    assert _climbs(graph) == ["corpus_pipeline.parsing.text -> corpus_pipeline.orchestration.runs"]
    assert _cycles(graph) == [
        [
            "corpus_pipeline.pipeline.isolation",
            "corpus_pipeline.pipeline.stages",
            "corpus_pipeline.pipeline.isolation",
        ]
    ]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_longer_than_the_limit(package: str) -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in sorted((ROOT / package).rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
