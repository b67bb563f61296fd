"""The package's layout: its modules import one another without a cycle, and the estimators
never import the replay application (``onlinesparse/replay/``) built on them.

The imports are read from the source with ``ast``, without importing anything, so a cycle
hidden in a function-level (lazy) import counts as well.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "onlinesparse"
#: What only the replay application needs (the ``replay`` and ``dask`` extras).
OPTIONAL = ("matplotlib", "pyarrow", "tqdm", "dask", "distributed")


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__``)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _annotation_only(tree: ast.Module) -> set[int]:
    """Line numbers of the imports under ``if TYPE_CHECKING:``, which never run."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, ast.Import | ast.ImportFrom):
                        lines.add(sub.lineno)
    return lines


def _imports(name: str, path: Path, modules: dict[str, Path], annotations: bool
             ) -> dict[str, int]:
    """``{imported name: line}`` of one module: package modules by their dotted name (``from
    a import b`` is ``a.b`` when that is a module), anything else by its top-level name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = set() if annotations else _annotation_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Import | ast.ImportFrom) or node.lineno in skipped:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name if alias.name in modules
                                 else alias.name.split(".")[0], node.lineno)
            continue
        base = node.module or ""
        if node.level:
            parent = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(parent + ([node.module] if node.module else []))
        for alias in node.names:
            full = f"{base}.{alias.name}"
            target = full if full in modules else base if base in modules else base.split(".")[0]
            found.setdefault(target, node.lineno)
    found.pop(name, None)
    return found


def _graph(annotations: bool) -> dict[str, set[str]]:
    modules = _modules()
    return {name: {m for m in _imports(name, path, modules, annotations) if m in modules}
            for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_finder_sees_a_cycle_and_the_package_layout():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    graph = _graph(annotations=False)
    assert "onlinesparse.replay.target" in graph["onlinesparse.replay.pool"]
    assert "onlinesparse.replay.cli" in graph  # the application lives in replay/


def test_the_package_imports_without_a_cycle():
    """Lazy imports count; ``if TYPE_CHECKING:`` imports, which never run, do not."""
    assert _cycles(_graph(annotations=False)) == []


def test_the_replay_application_has_no_cycle_even_in_its_annotations():
    graph = _graph(annotations=True)
    replay = {name: {m for m in edges if m.startswith("onlinesparse.replay")}
              for name, edges in graph.items() if name.startswith("onlinesparse.replay")}
    assert _cycles(replay) == []


def test_nothing_outside_the_replay_application_imports_it():
    graph = _graph(annotations=True)
    offenders = {name: sorted(m for m in edges if m.startswith("onlinesparse.replay"))
                 for name, edges in graph.items() if not name.startswith("onlinesparse.replay")}
    assert {k: v for k, v in offenders.items() if v} == {}


@pytest.mark.parametrize("name", sorted(n for n in _modules() if ".replay" not in n
                                        and n != "onlinesparse.replay"))
def test_the_estimators_do_not_import_what_only_the_application_needs(name):
    modules = _modules()
    imported = _imports(name, modules[name], modules, annotations=False)
    assert {m: line for m, line in imported.items() if m in OPTIONAL} == {}
