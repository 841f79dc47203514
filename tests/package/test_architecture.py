"""The shape of the package, from its own imports (imports inside functions included): the layers of
docs/architecture.md hold, no module imports itself round a cycle, and the house's sizes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "easyfirst"
MAX_ROOT_MODULES = 12
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 90


def documented_layers() -> dict[str, int]:
    """``{unit: layer}`` from docs/architecture.md's numbered list (1 = top)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("```", 1)[0]
    layers: dict[str, int] = {}
    for number, rest in re.findall(r"^(\d+)\. (.+)$", section, re.M):
        names = rest.split(" — ")[0]
        for name in re.findall(r"`([a-z_]+)`", names):
            layers[name] = int(number)
    return layers


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve(name: str) -> str | None:
    """The module ``name`` refers to (``easyfirst.a.b.Symbol`` → ``easyfirst.a.b``), or None outside."""
    parts = name.split(".")
    while parts:
        base = ROOT.joinpath(*parts)
        if base.with_suffix(".py").exists() or (base / "__init__.py").exists():
            return ".".join(parts)
        parts.pop()
    return None


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                module = resolve(target) if target.split(".")[0] == "easyfirst" else None
                # a module's own packages (their __init__) are its face, not a dependency (as house.py)
                if module and module != name and not name.startswith(module + "."):
                    found.add(module)
        graph[name] = found
    return graph


def unit(module: str) -> str:
    """The layer unit of a module: the package or root module directly under easyfirst."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "easyfirst"


def test_the_documented_layers_name_every_unit_once():
    layers = documented_layers()
    units = {unit(name) for name in import_graph()} - {"easyfirst", "__main__"}
    assert units == set(layers), f"undocumented: {units - set(layers)}, gone: {set(layers) - units}"


def test_every_import_goes_down_the_layers():
    layers = documented_layers()
    layers["easyfirst"] = layers["__main__"] = 0  # the package's face, above everything
    wrong = []
    for name, targets in import_graph().items():
        for target in targets:
            own, other = unit(name), unit(target)
            if own == other:
                continue
            if other == "easyfirst":  # only for the package's __version__ constant
                source = (ROOT / Path(*name.split("."))).with_suffix(".py").read_text(encoding="utf-8")
                if "from easyfirst import __version__" in source:
                    continue
            if layers[other] <= layers[own]:
                wrong.append(f"{name} (layer {layers[own]}) imports {target} (layer {layers[other]})")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycle():
    graph = import_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                cycles.append(sorted([v, *component]))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, cycles


def test_the_package_root_stays_small():
    modules = [p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert len(modules) <= MAX_ROOT_MODULES, sorted(modules)


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_house_sizes(path):
    source = path.read_text(encoding="utf-8")
    assert source.count("\n") <= MAX_MODULE_LINES, f"{path.name}: {source.count(chr(10))} lines"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{path.name}:{node.lineno}: {node.name} is {length} lines"


def test_the_model_is_the_reference_and_imports_no_backend():
    """easyfirst/model/ computes everything itself; the backends (easyfirst/backends/) compute parts of it
    faster and are chosen outside it (issue #45), so no model module imports them, nor they the model."""
    graph = import_graph()
    found = [
        f"{name} imports {target}"
        for name, targets in graph.items()
        for target in targets
        if {unit(name), unit(target)} == {"model", "backends"}
    ]
    assert not found, found


# Modules no test need import, and why: `python -m easyfirst` is run as a process (importing it runs the CLI)
UNTESTED_BY_IMPORT = {"easyfirst.__main__": "run as `python -m easyfirst`, as every CLI test does"}


def imported_by_tests() -> set[str]:
    """Every easyfirst module a file under tests/ (recursively) imports, or imports a name from, read with
    ast (imports inside functions included). ``import easyfirst.a.b`` and ``from easyfirst.a.b import x``
    count for ``easyfirst.a.b`` (and ``from easyfirst.a import b`` for ``easyfirst.a.b`` when ``b`` is a
    module); importing only a package counts for the package's __init__, not for its modules."""
    found: set[str] = set()
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] == "easyfirst" and (module := resolve(target)):
                    found.add(module)
    return found


def test_every_package_module_is_imported_by_a_test():
    """Issue #45: a test file for every package module: each module under easyfirst/ (a package's
    __init__ as the package) is imported, or a name from it, by at least one file under tests/."""
    modules = {module_name(path) for path in PACKAGE.rglob("*.py")}
    missing = sorted(modules - imported_by_tests() - set(UNTESTED_BY_IMPORT))
    assert not missing, "no test file imports:\n" + "\n".join(missing)


def test_no_verb_imports_the_cli_package_and_the_app_imports_no_verb():
    """spaCy's layout (issue #45): the Typer app in a module of its own (easyfirst.cli.app) that every
    verb imports; easyfirst/cli/__init__.py imports the verbs, and no verb imports it back."""
    graph = import_graph()
    verbs = {
        f"easyfirst.cli.{verb}" for verb in ("train", "tune", "tag", "evaluate", "plot", "export", "serve")
    }
    assert verbs <= graph["easyfirst.cli"]
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "easyfirst.cli":
                raise AssertionError(f"{path.name} imports easyfirst.cli: import from easyfirst.cli.app")
            if isinstance(node, ast.Import):
                assert all(alias.name != "easyfirst.cli" for alias in node.names), path.name
    assert not verbs & graph["easyfirst.cli.app"]


def task_name_branches(source: str, where: str, names: set[str]) -> list[str]:
    """Where ``source`` (the module ``where``) compares something with a task's name (``task == "qe"``, ``task in ("pos", …)``,
    ``case "ner"``), looks a task up by its name written out (``TASKS["pos"]``) or keys a table by names."""

    def named(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(named(item) for item in node.elts)
        return False

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            hit = any(named(side) for side in (node.left, *node.comparators))
        elif isinstance(node, ast.Subscript):
            hit = named(node.slice)
        elif isinstance(node, ast.MatchValue):
            hit = named(node.value)
        elif isinstance(node, ast.Dict):
            hit = any(key is not None and named(key) for key in node.keys)
        else:
            continue
        if hit:
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_no_module_outside_the_tasks_branches_on_a_task_name():
    """What differs between tasks is asked of the task (easyfirst/tasks/): no other module compares with a
    task's name, looks one up by its name written out, or keeps a table keyed by task names."""
    from easyfirst.tasks import TASKS

    names = set(TASKS)
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        if PACKAGE / "tasks" not in path.parents
        for hit in task_name_branches(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)), names)
    ]
    assert not found, found


def test_the_task_name_check_finds_each_kind_of_branch():
    source = (
        'if task == "qe": pass\nif name in ("pos", "x"): pass\nTASKS["ner"]\nLABELS = {"pos": 1}\n'
        'match task:\n    case "qe": pass\nif kind == "upos": pass\nDEFAULT = "pos"\n'
    )
    found = task_name_branches(source, "sample.py", {"pos", "ner", "qe"})
    assert [hit.split(":")[1] for hit in found] == ["1", "2", "3", "4", "6"]


FOREIGN = ("typer", "click")  # libraries whose classes and modules easyfirst extends only by subclassing


def root(node: ast.expr) -> str | None:
    """The name an expression starts from: ``typer`` for ``typer.core.TyperOption.x``."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def foreign_names(tree: ast.Module) -> set[str]:
    """The names a module binds to Typer or Click, or to something imported from them (``typer``,
    ``TyperOption``, ``rich_utils``), or that a loop binds to them in turn (``for cls in
    (typer.core.TyperCommand, …)``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FOREIGN:
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FOREIGN:
            names.update(alias.asname or alias.name for alias in node.names)
    for node in ast.walk(tree):
        items = (
            node.iter.elts
            if isinstance(node, ast.For) and isinstance(node.iter, ast.Tuple | ast.List)
            else []
        )
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.Name)
            and any(root(i) in names for i in items)
        ):
            names.add(node.target.id)
    return names


def patches(path: Path) -> list[str]:
    """``path:line: target`` for each assignment into a foreign name's attributes or items
    (``typer.core.TyperOption.display_type = …``, ``rich_utils.X = …``) or setattr/delattr on one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    foreign = foreign_names(tree)
    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            targets = [node.args[0]] if node.func.id in ("setattr", "delattr") else []
        flat = [t for target in targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
        for target in flat:
            plain_name = isinstance(target, ast.Name) and not isinstance(node, ast.Call)
            if not plain_name and root(target) in foreign:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(target)}")
    return found


def test_nothing_assigns_into_typer_or_click():
    """Issue #45: the CLI extends Typer through its extension points only (``typer.Typer(cls=…)``, a
    command class, Click's public methods overridden in subclasses: easyfirst.cli.help_page), never by
    replacing what is in Typer's or Click's classes and modules, which changed every Typer app in the
    process and broke with Typer's private names."""
    found = [line for path in sorted(PACKAGE.rglob("*.py")) for line in patches(path)]
    assert found == [], "assigned into Typer or Click:\n" + "\n".join(found)
