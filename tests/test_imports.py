"""Imports flow one way: no module of adrop or its Hydra plugins imports itself back through others, an import
inside a function included (one is how a module reaches a heavy or optional module late, never a way around the
order), no folder imports itself back through another, and the layers keep their order: the penalty calculus
imports nothing of adrop's, the methods and the library (adrop.sparsify) nothing of the runner (adrop.train) or the
plugins, directly or through another module."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = {
    ".".join(f.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): f
    for package in ("adrop", "hydra_plugins")
    for f in (ROOT / package).rglob("*.py")
}


def _known(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def module_imports(module: str, everywhere: bool = False, text: str | None = None) -> set[str]:
    """The modules of adrop's own that `module` imports when it is imported (its top-level statements; a try's body
    too; not `if TYPE_CHECKING:`), or `everywhere` (inside its functions too). `text`: its source, if not the file's."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    tree = ast.parse(text if text is not None else path.read_text())
    statements = _run_on_import(tree.body, functions=everywhere)
    for statement in statements:
        if isinstance(statement, ast.Import):
            found.update(_known(a.name) for a in statement.names)
        elif isinstance(statement, ast.ImportFrom):
            base = statement.module or ""
            if statement.level:
                parts = package.split(".")[: len(package.split(".")) - statement.level + 1]
                base = ".".join(parts + ([statement.module] if statement.module else []))
            found.update(_known(f"{base}.{a.name}") or _known(base) for a in statement.names)
    # importing a.b.c runs a's and a.b's __init__ first (those that are not the importer's own packages)
    found |= {parent for m in found if m for parent in _packages(m) if parent not in _packages(module)}
    return {m for m in found if m and m != module}


def _run_on_import(statements, functions: bool = False):
    """Every statement a module runs when imported: its top level and what is nested in if (but `if TYPE_CHECKING:`),
    try, with, for and while blocks and class bodies; function bodies too with `functions`."""
    for statement in statements:
        if not functions and isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            yield from _run_on_import(statement.orelse, functions)
            continue
        yield statement
        for field in ("body", "orelse", "finalbody", "handlers"):
            nested = getattr(statement, field, None)
            if isinstance(nested, list):
                yield from _run_on_import(nested, functions)


def _packages(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in MODULES}


GRAPH = {module: module_imports(module) for module in MODULES}  # what importing a module runs
FULL = {module: module_imports(module, everywhere=True) for module in MODULES}  # and what its functions import


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Import circles of a graph, each as the path that closes it."""
    state, found = {}, []

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                found.append(path[path.index(target) :] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    return found


def folders(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between folders (a module's package), a folder and the folders inside it taken as one room."""

    def folder(m):
        return m if MODULES[m].name == "__init__.py" else m.rpartition(".")[0]

    out: dict[str, set[str]] = {folder(m): set() for m in graph}
    for m, targets in graph.items():
        a = folder(m)
        out[a] |= {b for b in map(folder, targets) if not (a == b or b.startswith(a + ".") or a.startswith(b + "."))}
    return out


def test_no_module_imports_itself_back():
    assert not circles(FULL), circles(FULL)


def test_no_folder_imports_itself_back():
    assert not circles(folders(FULL)), circles(folders(FULL))


def test_a_circle_through_an_import_inside_a_function_is_seen():
    late = MODULES["adrop.methods.base"].read_text() + "\n\ndef late():\n    from adrop import sparsifier\n"
    graph = {**FULL, "adrop.methods.base": module_imports("adrop.methods.base", everywhere=True, text=late)}
    assert any(c[0] == "adrop.methods.base" or "adrop.methods.base" in c for c in circles(graph))
    at_import = {**GRAPH, "adrop.methods.base": module_imports("adrop.methods.base", text=late)}
    assert not circles(at_import)  # what the module-level graph alone would miss


def reachable(module: str) -> set[str]:
    """Every module importing `module` imports, directly or through others."""
    seen, todo = set(), [module]
    while todo:
        for target in GRAPH[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


@pytest.mark.parametrize(
    "layer, forbidden",
    [
        ("adrop.penalties", ("adrop",)),
        ("adrop.methods", ("adrop.train", "adrop.report", "adrop.commands", "hydra_plugins")),
        ("adrop.sparsifier", ("adrop.train", "adrop.report", "adrop.commands", "hydra_plugins")),
        ("adrop.selection", ("adrop.train", "adrop.report", "adrop.commands", "hydra_plugins")),
        ("adrop.heads", ("adrop.train", "adrop.report", "adrop.commands", "hydra_plugins")),
    ],
)
def test_the_core_does_not_import_what_is_built_around_it(layer, forbidden):
    inside = [m for m in GRAPH if m == layer or m.startswith(layer + ".")]
    assert inside
    wrong = {
        (m, t)
        for m in inside
        for t in reachable(m)
        if t.startswith(forbidden) and not (t == layer or t.startswith(layer + "."))
    }
    assert not wrong, sorted(wrong)


def test_the_graph_sees_imports():  # the test above cannot pass for want of edges
    app = GRAPH["adrop.train.command.app"]
    assert {"adrop.train.command.start_checks", "adrop.train.command.registry"} <= app
    assert "hydra_plugins.adrop_plugins" in GRAPH["adrop.train.command.registry"]
    assert (
        "adrop.methods.base" in GRAPH["adrop.selection"]
        and "adrop.train.config.settings" in GRAPH["adrop.train.loop.engine"]
    )


# The runner's rooms (adrop/train/), each importing only rooms after it in this order (module level).
ROOMS = [
    "adrop.train.command",
    "hydra_plugins",  # the app registers adrop's plugins; they read the settings and the run folder
    "adrop.train.sweep",
    "adrop.train.loop",
    "adrop.train.config",
    "adrop.train.nets",
    "adrop.train.data",
    "adrop.train.run_folder",
    "adrop.train.tasks",
    "adrop.train.runtime",
    "adrop.train.errors",
]


def room_of(module: str) -> str | None:
    return next((r for r in ROOMS if module == r or module.startswith(r + ".")), None)


def test_the_runners_rooms_import_one_way():
    assert all(room_of(m) for m in MODULES if m.startswith("adrop.train.") or m.startswith("hydra_plugins."))
    wrong = {
        (m, t)
        for m in GRAPH
        for t in GRAPH[m]
        if room_of(m) and room_of(t) and ROOMS.index(room_of(t)) < ROOMS.index(room_of(m))
    }
    assert not wrong, sorted(wrong)
    assert ("adrop.train.loop.engine", "adrop.train.config.settings") in {(m, t) for m in GRAPH for t in GRAPH[m]}


def test_every_package_is_installed():
    """pyproject.toml lists the packages a wheel holds: each folder of adrop/ with an __init__.py (one left out
    imports in a checkout and an editable install, and is missing from a built wheel)."""
    tomllib = pytest.importorskip("tomllib")
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {".".join(f.parent.relative_to(ROOT).parts) for f in (ROOT / "adrop").rglob("__init__.py")}
    assert packages <= listed, sorted(packages - listed)
