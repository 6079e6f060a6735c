"""Dependencies point one way:
``ir <- ops <- {frontends, passes, targets} <- verification <- session <- {api, testing} <- cli``.

Read from the source with ``ast``, so nothing is imported. Three rules:
- every portx import (module level or inside a function) goes to a lower layer, to the importer's own
  group, or to a leaf utility (``errors``, ``options``, ``outputs``), and leaves import only leaves;
- imports between portx modules form no cycle, whether at module level or inside a function (a lazy import
  is for frameworks; one of a portx module breaks nothing, so its cycle is still a cycle), nor through the
  ``__init__`` of a package, which runs before any of its modules is imported from outside it;
- no ``_private`` name is imported from another portx module.
"""
import ast
from pathlib import Path

import pytest

from tests.support.paths import SRC


#: module group -> layer; a module may import its own group, lower layers and LEAVES
LAYERS = {"ir": 0, "ops": 1, "weights": 1, "frontends": 2, "passes": 2, "targets": 2, "verification": 3,
          "session": 4, "testing": 5, "api": 5, "cli": 6, "": 7}
#: modules that belong to another group than their path says (the op tables are read by passes/legalize;
#: Model Explorer output is written by the conversion session; the CLI's option decorators are the CLI's)
GROUP_OF = {"portx.optables": "passes", "portx.reporting.explorer": "session",
            "portx.reporting.explorer_graph": "session", "portx.oplist": "api", "portx.cli.options": "cli"}
#: utilities importable from anywhere; they import only each other (the typed report too: Note [the report is a
#: leaf] in session/__init__.py)
LEAVES = {"portx.errors", "portx.options", "portx.outputs", "portx.outputs.staging", "portx.progress", "portx.logs",
          "portx.reporting", "portx.reporting.html", "portx.reporting.text", "portx.session.report",
          "portx.session.report_sections", "portx.session.report_base", "portx.session.report_rows", "portx.version"}


def _module_name(path: Path) -> str:
    parts = ["portx", *path.relative_to(SRC).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _group(module: str) -> str:
    return GROUP_OF.get(module) or (module.split(".") + [""])[1]


def _imports(module: str):
    """(line, imported module, imported names, at module level) for every portx import of ``module``."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "portx":
                    yield node.lineno, alias.name, (), id(node) in top
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "portx":
                continue
            for alias in node.names:  # ``from pkg import submodule`` imports the submodule
                target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                yield node.lineno, target, (() if target != base else (alias.name,)), id(node) in top


def _edges(module_level_only=False):
    for module in MODULES:
        for line, target, names, at_top in _imports(module):
            if target in MODULES and target != module and (at_top or not module_level_only):
                yield module, line, target, names


def test_every_module_is_in_a_layer():
    unknown = sorted(m for m in MODULES if m not in LEAVES and _group(m) not in LAYERS)
    assert not unknown, f"modules in no layer of LAYERS: {unknown}"


def test_imports_point_one_way():
    bad = []
    for module, line, target, names in _edges():
        mine, theirs = _group(module), _group(target)
        if (target, names) == ("portx", ("__version__",)):
            continue  # the version string lives in the package itself
        if module in LEAVES:
            ok = target in LEAVES
        else:
            ok = target in LEAVES or mine == theirs or LAYERS[theirs] < LAYERS[mine]
        if not ok:
            bad.append(f"{MODULES[module].relative_to(SRC)}:{line} ({mine}) imports {target} ({theirs})")
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


def test_the_cli_goes_through_api():
    """``cli`` imports ``api``, its own modules and the leaves only (STYLE: the CLI imports api), not a stage."""
    bad = [f"{MODULES[module].relative_to(SRC)}:{line} imports {target}" for module, line, target, _ in _edges()
           if _group(module) == "cli" and target not in LEAVES and target != "portx.api" and _group(target) != "cli"]
    assert not bad, "the CLI reaches past api:\n" + "\n".join(bad)

def _cycle(graph):
    """One cycle of ``graph`` (node -> set of nodes) as a list of nodes, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycles_at_module_level():
    graph = {}
    for module, _, target, _ in _edges(module_level_only=True):
        graph.setdefault(module, set()).add(target)
    cycle = _cycle(graph)
    assert cycle is None, "module-level import cycle: " + " -> ".join(cycle)


def test_no_import_cycles_through_function_level_imports():
    graph = {}
    for module, _, target, _ in _edges():
        graph.setdefault(module, set()).add(target)
    cycle = _cycle(graph)
    assert cycle is None, "import cycle (function-level imports count): " + " -> ".join(cycle)


def _with_packages(graph):
    """``graph`` with the imports Python adds: importing ``a.b.c`` first runs the package ``a.b``'s ``__init__``
    (and ``a``'s), unless the importer is inside that package, whose ``__init__`` has started already."""
    full = {module: set(targets) for module, targets in graph.items()}
    for module, targets in graph.items():
        for target in targets:
            parts = target.split(".")
            for end in range(2, len(parts)):
                package = ".".join(parts[:end])
                if package in MODULES and package != module and not module.startswith(package + "."):
                    full[module].add(package)
    return full


def test_no_import_cycles_through_packages():
    """A cycle through a package's ``__init__`` is a cycle too: ``targets/base.py`` importing a module that imports
    ``targets.torch_xla.runtime`` runs ``torch_xla/__init__.py``, which imports ``base`` half-initialized."""
    graph = {}
    for module, _, target, _ in _edges():
        graph.setdefault(module, set()).add(target)
    cycle = _cycle(_with_packages(graph))
    assert cycle is None, "import cycle (a package's __init__ runs first): " + " -> ".join(cycle)


#: modules that may import portx modules inside functions, and why (STYLE 6: a lazy import is for frameworks)
LAZY = {
    "portx": "``import portx`` stays light: ``portx.convert`` imports api (with JAX) on first use",
    "portx.cli": "``portx --help`` imports no framework; the work's imports run under the signal handlers",
    "portx.frontends": "one source's framework package only (torch, Keras, ONNX, TensorFlow)",
    "portx.testing": "a pytest plugin loaded into every test session of a user who installed portx",
}


def test_portx_modules_import_each_other_at_module_level():
    """A function-level import of a portx module hides the dependency (and any cycle) from a reader; only the
    modules of ``LAZY`` keep one, each for a framework's import time."""
    bad = [f"{MODULES[module].relative_to(SRC)}:{line} imports {target} inside a function"
           for module in MODULES if module not in LAZY for line, target, _, at_top in _imports(module)
           if not at_top and target in MODULES and target != module]
    assert not bad, "move these imports to the top of the module:\n" + "\n".join(bad)
    lazy = {module for module in MODULES for _, target, _, at_top in _imports(module)
            if not at_top and target in MODULES and target != module}
    assert set(LAZY) <= lazy, f"LAZY names modules with no lazy portx import (drop them): {sorted(set(LAZY) - lazy)}"


def test_no_private_names_cross_modules():
    bad = [f"{MODULES[module].relative_to(SRC)}:{line} imports {name} from {target}"
           for module, line, target, names in _edges() for name in names
           if name.startswith("_") and not name.startswith("__")]
    assert not bad, "private names imported from another module:\n" + "\n".join(bad)


@pytest.mark.parametrize("code, expected", [
    ("a -> b", None), ("a -> b, b -> a", ["a", "b", "a"]), ("a -> b, b -> c, c -> a", ["a", "b", "c", "a"])])
def test_cycle_finder(code, expected):
    graph = {}
    for edge in code.split(", "):
        src, dst = edge.split(" -> ")
        graph.setdefault(src, set()).add(dst)
    assert _cycle(graph) == expected


def test_package_edges_are_added_outside_the_package_only():
    graph = {"portx.targets.base": {"portx.targets.torch_xla.runtime"},
             "portx.targets.torch_xla.emitter": {"portx.targets.torch_xla.shards"}}
    full = _with_packages(graph)
    assert full["portx.targets.base"] == {"portx.targets.torch_xla.runtime", "portx.targets.torch_xla"}
    assert full["portx.targets.torch_xla.emitter"] == {"portx.targets.torch_xla.shards"}


def test_checker_resolves_relative_and_submodule_imports():
    targets = {t for _, t, _, _ in _imports("portx.targets.keras_jax")}
    assert {"portx.targets.base", "portx.targets.keras_jax.emitter", "portx.targets.keras_jax.tpu"} <= targets
    assert {t for _, t, _, _ in _imports("portx.api")} >= {"portx.verification.recheck", "portx.frontends"}


def test_checker_sees_function_level_imports():
    lazy = {t for _, t, _, at_top in _imports("portx.testing") if not at_top}
    assert "portx.session.dims" in lazy


def test_the_typed_report_imports_without_the_conversion():
    """Note [the report is a leaf] (session/__init__.py): verification imports session/report.py, so importing it
    must not import the conversion (which imports verification): a fresh interpreter, verification first."""
    import subprocess
    import sys

    code = ("import sys, portx.verification.recheck, portx.session.report; "
            "print('portx.session.conversion' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=SRC.parents[1])
    assert run.returncode == 0 and run.stdout.strip() == "False", run.stderr[-2000:]
