"""The import graph of the tree: no cycle, ``builders.core`` at the bottom, builders below the commands.

Every import counts, those inside functions too (a lazy import is still a dependency: it only moves the cost),
and so does a string constant that names a module of the tree (``importlib.import_module(COMMANDS[name])``, a
worker's ``"package.module:function"``): a cycle through a table of dotted names is a cycle all the same.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from builders.registry import BUILDERS

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("builders", "classifiers", "scripts", "benchmarks")
COMMAND_MODULES = ("builders.evaluate", "builders.export", "builders.metrics")  # and their submodules
NOT_BUILDERS = {"builders", "builders.core", "builders.registry", "builders.__main__", *COMMAND_MODULES}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules_of(root: Path) -> dict[str, Path]:
    return {module_name(path, root): path for folder in FOLDERS for path in sorted((root / folder).rglob("*.py"))}


def _resolve(name: str, known: set[str]) -> str | None:
    """The deepest module of the tree that ``name`` (a module, or a name inside one) is or lies in."""
    while name:
        if name in known:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The modules of the tree that ``module`` imports: statements anywhere in the file, and string constants
    naming a module (``"builders.wicked"``, ``"builders.math_mc.plain:judge"``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            elif base not in known and path.parent.name in ("scripts", "benchmarks"):
                base = f"{path.parent.name}.{base}"  # a script's sibling, found on sys.path[0]
            names = [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.partition(":")[0]
            if text in known:
                names = [text]
        for name in names:
            target = _resolve(name, known)
            if target is not None and target != module:
                found.add(target)
    return found


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    modules = modules_of(root)
    return {module: imports_of(module, path, set(modules)) for module, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def core_reaching_up(graph: dict[str, set[str]]) -> list[str]:
    """Imports from ``builders.core`` to anything of the tree outside it (the package root included)."""
    return sorted(f"{module} -> {target}" for module, targets in graph.items() if _inside(module, "builders.core")
                  for target in targets if not _inside(target, "builders.core"))


def root_imports(graph: dict[str, set[str]]) -> list[str]:
    """Modules that import the package root ``builders`` itself (for its version or its folder): the root is the
    command-line entry, above everything; what they read lives in ``builders.core``."""
    return sorted(f"{module} -> builders" for module, targets in graph.items() if "builders" in targets)


def builders_importing_commands(graph: dict[str, set[str]]) -> list[str]:
    """Imports from a builder's module or package to ``evaluate``, ``export`` or ``metrics``: the commands read
    the builders, never the other way round."""
    def is_builder(module: str) -> bool:
        return _inside(module, "builders") and not any(
            module == other or (other not in ("builders",) and _inside(module, other)) for other in NOT_BUILDERS)

    return sorted(f"{module} -> {target}" for module, targets in graph.items() if is_builder(module)
                  for target in targets if any(_inside(target, command) for command in COMMAND_MODULES))


GRAPH = import_graph()
BUILDER_MODULES = set(BUILDERS.values())


def test_the_graph_sees_every_kind_of_import():
    """The parser itself: imports inside functions, relative imports, names imported from a package, string
    constants naming a module, and a benchmark script's sibling are all edges."""
    assert "builders.core.errors" in GRAPH["builders"]  # relative, inside an `if`
    assert "builders.core.llm.settings" in GRAPH["builders.core.pipeline.builder"]  # inside a function
    assert "builders.math_mc.warm" in GRAPH["builders.math_mc.parses"]  # a string constant
    assert "benchmarks.harness" in GRAPH["benchmarks.byte_identical"]  # `from harness import ...`
    assert len(GRAPH) > 100


def test_the_checks_find_what_they_look_for():
    """Each check, on a graph that breaks its rule (of made-up builders, ``alpha`` and ``beta``)."""
    graph = {"builders.core.a": {"builders.core.b", "builders.alpha"}, "builders.core.b": {"builders.core.a"},
             "builders.alpha": {"builders.evaluate"}, "builders.evaluate": {"builders.registry"},
             "builders.registry": {"builders.alpha"}, "builders.beta.builder": {"builders.metrics.ranking"},
             "classifiers.training": {"builders"}, "builders.metrics": {"builders.metrics.ranking"}}
    assert cycles(graph) == [["builders.alpha", "builders.evaluate", "builders.registry"],
                             ["builders.core.a", "builders.core.b"]]
    assert core_reaching_up(graph) == ["builders.core.a -> builders.alpha"]
    assert root_imports(graph) == ["classifiers.training -> builders"]
    assert builders_importing_commands(graph) == ["builders.alpha -> builders.evaluate",
                                                  "builders.beta.builder -> builders.metrics.ranking"]


def test_no_import_cycle():
    assert cycles(GRAPH) == []


def core_layers(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The import graph of ``builders.core``'s subpackages (``items``, ``sources``, ``pipeline``...): an edge for every
    import from a module of one to a module of another. The core's own modules (``errors``, ``version``) are a
    layer each."""
    def layer(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[:2] == ["builders", "core"] else None

    layers: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = layer(module)
        if source is not None:
            layers.setdefault(source, set()).update(t for t in map(layer, targets) if t not in (None, source))
    return layers


def test_the_core_subpackages_are_layered():
    """``sources`` read the per-item outcomes that ``pipeline`` once held, and ``pipeline`` read ``sources``: each
    subpackage may import only those below it, so that one can be read (and tested) without those above."""
    layers = core_layers(GRAPH)
    assert {"items", "sources", "pipeline", "validation", "release", "options", "build"} <= set(layers)
    assert cycles(layers) == []


def test_the_layer_check_finds_a_cycle_between_subpackages():
    graph = {"builders.core.sources.loading": {"builders.core.pipeline.steps", "builders.core.errors"},
             "builders.core.pipeline.cli": {"builders.core.sources.loading"}, "builders.core.errors": set()}
    assert core_layers(graph) == {"sources": {"pipeline", "errors"}, "pipeline": {"sources"}, "errors": set()}
    assert cycles(core_layers(graph)) == [["pipeline", "sources"]]


def test_core_imports_nothing_above_it():
    assert core_reaching_up(GRAPH) == []


def test_nothing_imports_the_package_root():
    assert root_imports(GRAPH) == []


def test_no_builder_imports_a_command():
    assert builders_importing_commands(GRAPH) == []


def builder_modules(root: Path = REPO) -> set[str]:
    """The builders, read from the files: ``builders.<name>`` modules and packages that define or re-export
    ``BUILDER``."""
    found = set()
    for module, path in modules_of(root).items():
        if module.count(".") != 1 or not module.startswith("builders."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assigned = {target.id for node in tree.body if isinstance(node, ast.Assign) for target in node.targets
                    if isinstance(target, ast.Name)}
        imported = {alias.asname or alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                    for alias in node.names}
        if "BUILDER" in assigned | imported:
            found.add(module)
    return found


def builder_names_outside_the_registry(root: Path = REPO) -> list[str]:
    """String constants that name a builder's module (``"builders.wicked"``) or build one from its name
    (``f"builders.{name}"``), anywhere but the registry, the tests included: the registry is the one list of
    builders."""
    builders = builder_modules(root)
    files = {**modules_of(root), **{f"tests.{path.stem}": path for path in sorted((root / "tests").glob("*.py"))}}
    found = []
    for module, path in files.items():
        if module == "builders.registry":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            named = isinstance(node, ast.Constant) and node.value in builders
            built = isinstance(node, ast.JoinedStr) and bool(node.values) and isinstance(node.values[0], ast.Constant) \
                and node.values[0].value == "builders."
            if named or built:
                found.append(f"{module}:{node.lineno}")
    return found


@pytest.mark.slow
def test_builders_are_listed_only_in_the_registry():
    """Builders were found by dotted strings in six places (the command table, the metrics table, the release
    train, the benchmark scripts, the tests...): a new builder had to be added to each, and one forgotten was not
    built, or silently not tested."""
    assert builder_names_outside_the_registry() == []


def test_the_registry_lists_every_builder():
    from builders.registry import BUILDERS

    assert sorted(BUILDERS.values()) == sorted(builder_modules())


@pytest.mark.parametrize("module", sorted(BUILDER_MODULES))
def test_the_builders_are_in_the_graph(module):
    """A builder that moves (a module becoming a package) is still checked: the graph names the new file."""
    assert any(_inside(name, module) for name in GRAPH)


# ---- one builder shape ----------------------------------------------------------------------------------------

SHAPE_MODULES = ("builder", "transform", "checks", "card_statistics", "tasks", "evaluation")
MAX_BUILDER_LINES = 350
MAIN = "from . import main\n\nraise SystemExit(main())\n"


def shape_problems(name: str, root: Path = REPO) -> list[str]:
    """What keeps ``builders/<name>/`` from the shape CONTRIBUTING.md documents (WiCkeD's): one module per job,
    a ``builder.py`` of at most 350 lines that holds only its ``Options`` and ``build`` (and the declaration), the
    ``Builder`` of the core with them, ``main`` and ``build_dataset`` the declaration's, a two-line ``__main__``."""
    import importlib

    from builders.core.pipeline.builder import Builder
    from builders.core.pipeline.options import BuildOptions

    folder = root / "builders" / name
    problems = [f"no {module}.py" for module in SHAPE_MODULES if not (folder / f"{module}.py").is_file()]
    if (folder / "builder.py").is_file():
        text = (folder / "builder.py").read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_BUILDER_LINES:
            problems.append(f"builder.py has {len(text.splitlines())} lines (at most {MAX_BUILDER_LINES})")
        tree = ast.parse(text)
        defined = {(type(node).__name__, node.name) for node in tree.body
                   if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        if defined != {("ClassDef", "Options"), ("FunctionDef", "build")}:
            problems.append(f"builder.py defines {sorted(n for _, n in defined)}, not only Options and build")
    if not (folder / "__main__.py").is_file() or (folder / "__main__.py").read_text(encoding="utf-8") != MAIN:
        problems.append("__main__.py is not `from . import main` and `raise SystemExit(main())`")
    if problems:
        return problems
    package, builder = importlib.import_module(BUILDERS[name]), importlib.import_module(f"{BUILDERS[name]}.builder")
    declared = package.BUILDER
    if not isinstance(declared, Builder) or declared.options is not builder.Options or declared.build is not builder.build:
        problems.append("BUILDER is not the core's Builder of builder.Options and builder.build")
    elif not issubclass(builder.Options, BuildOptions):
        problems.append("Options does not extend BuildOptions")
    if (package.main, package.build_dataset) != (declared.main, declared.build_dataset):
        problems.append("__init__.py's main and build_dataset are not BUILDER.main and BUILDER.build_dataset")
    return problems


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_builder_has_the_one_shape(name):
    assert shape_problems(name) == []


def test_the_shape_check_finds_what_breaks_it(tmp_path):
    template = REPO / "builders" / "wicked"
    (tmp_path / "builders").mkdir()
    shutil.copytree(template, tmp_path / "builders" / "wicked", ignore=shutil.ignore_patterns("__pycache__"))
    broken = tmp_path / "builders" / "wicked"
    (broken / "evaluation.py").unlink()
    (broken / "builder.py").write_text((broken / "builder.py").read_text() + "\n\ndef add_arguments(parser):\n"
                                       "    pass\n" + "\n" * MAX_BUILDER_LINES)
    (broken / "__main__.py").write_text("from .builder import main\n\nraise SystemExit(main())\n")
    assert shape_problems("wicked", tmp_path) == [
        "no evaluation.py", f"builder.py has {len((broken / 'builder.py').read_text().splitlines())} lines (at most "
        f"{MAX_BUILDER_LINES})", "builder.py defines ['Options', 'add_arguments', 'build'], not only Options and build",
        "__main__.py is not `from . import main` and `raise SystemExit(main())`"]
