"""The import structure that docs/architecture.md states, checked on the source of every module.

The table of layers in docs/architecture.md is the one place that says which
layer a module is in; this file reads it from there.  Every import counts:
at module level, inside a function, relative (``from . import x``) or lazy (a
package's table of names loaded on first use), and importing ``a.b.c`` also
runs ``a/__init__`` and ``a/b/__init__``.  The rules, each failure naming the
file, the line and the rule:

* ``layer``: every module is in a layer, and imports only from its own layer
  or lower ones;
* ``cycle``: no loop of imports between modules that can run (``if
  TYPE_CHECKING:`` imports never run);
* ``private``: no private name (``_x``) taken from another module, and a
  private module imported only from inside its own package;
* ``length``: no module over 800 lines, no ``__init__.py`` over 100;
* ``init``: an ``__init__.py`` only re-exports (imports, tables of names,
  ``__all__``) and loads lazily (``__getattr__``, ``__dir__``);
* ``parameters``: no function takes more than 10 parameters (every argument
  but ``self`` and ``cls``), except in the numerical kernels of
  :data:`KERNELS`: a run's circumstances travel as one
  :class:`spherecodes.context.RunContext` and a method's settings as one
  options value.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "spherecodes"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAX_LINES = 800
MAX_INIT_LINES = 100
#: Calls an ``__init__.py`` may make at its top level, to spell a table of names.
TABLE_CALLS = {"dict", "frozenset", "list", "set", "sorted", "tuple"}
FRACTIONS = {"¼": 0.25, "½": 0.5, "¾": 0.75}
#: Most parameters a function may take outside the numerical kernels.
MAX_PARAMETERS = 10
#: The numerical kernels (paths inside the package; a folder covers its modules), where a function may take more
#: parameters, and why.
KERNELS = {
    "solvers/": "the optimisers: like scipy.optimize's minimisers, each annealing knob (steps, restarts, schedule, "
                "polish, neighbour lists) is a keyword of the solver, and its inner loops pass tensors and resolved "
                "settings on the hot path",
    "semantic/ranking.py": "the privileged optimiser (Mettes et al. 2019, Eq. 5 and 6), a solver like those above",
    "certificate/_solve.py": "the QP's block driver: the arrays, budgets and deadline of one pass over blocks of "
                             "classes, called in a loop and shipped to threads",
}


# --------------------------------------------------------------------------- the table of layers


def layer_number(text: str) -> float:
    """``"4¾"`` -> 4.75."""
    text = text.strip()
    whole = text.rstrip("".join(FRACTIONS))
    return float(whole) + sum(FRACTIONS[c] for c in text[len(whole):])


def layer_table(markdown: str) -> dict[str, float]:
    """Module -> layer, from the table whose header is ``| layer | modules | ...``.

    ``a/b`` is the module ``a.b``; a trailing ``/`` says that a name is a
    package (``structured/``); ``__init__`` is the package's own ``__init__.py``.
    """
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"^\|\s*layer\s*\|\s*modules\s*\|", line))
    table = {}
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = line.split("|")
        for name in re.findall(r"`([^`]+)`", cells[2]):
            table[name.replace("/", ".").replace(".py", "")] = layer_number(cells[1])
    return table


def layer_of(module: str, package: str, table: dict[str, float]) -> float | None:
    """The layer of ``module``: its own row, else the row of the innermost package that holds it.

    A name covers everything inside it, with or without its ``/``: a module
    that becomes a package of the same name keeps its layer.
    """
    parts = (module[len(package) + 1:] if module != package else "__init__").split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        for key in (name, name + "."):
            if key in table:
                return table[key]
    return None


# --------------------------------------------------------------------------- the modules and their imports


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool  # an __init__.py


@dataclass(frozen=True)
class Edge:
    """``source`` makes ``target`` run (or reads from it) at ``line``."""

    source: str
    target: str
    line: int
    runs: bool  # False inside ``if TYPE_CHECKING:``


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    rule: str
    message: str

    def __str__(self):
        return f"{self.path}:{self.line}: [{self.rule}] {self.message}"


def find_modules(root: Path, package: str) -> dict[str, Module]:
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = path.relative_to(root).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        found[name] = Module(name, path, is_package)
    return found


def ancestors(name: str) -> list[str]:
    """``a.b.c`` -> ``["a", "a.b"]``: the packages whose ``__init__`` runs before ``a.b.c``."""
    parts = name.split(".")
    return [".".join(parts[:n]) for n in range(1, len(parts))]


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def resolve(module: Module, level: int, name: str | None) -> str:
    """The absolute name of ``from <level dots><name> import ...`` written in ``module``."""
    if level == 0:
        return name or ""
    base = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def lazy_table(module: Module, modules: dict[str, Module]) -> dict[str, tuple[str, int]]:
    """Name -> (submodule, line), from the tables of an ``__init__.py`` that loads names on first use.

    A table is a dict at the top level whose values are all module names
    relative to the package (``{"fetch": ".download"}`` or ``{"fetch": "download"}``).
    """
    if not module.is_package:
        return {}
    homes = {}
    for node in ast.parse(module.path.read_text(), str(module.path)).body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if not isinstance(value, ast.Dict) or not value.values:
            continue
        pairs = {}
        for key, target in zip(value.keys, value.values):
            if not (isinstance(key, ast.Constant) and isinstance(target, ast.Constant)
                    and isinstance(key.value, str) and isinstance(target.value, str)):
                break
            dots = len(target.value) - len(target.value.lstrip("."))
            home = resolve(module, max(dots, 1), target.value.lstrip("."))
            if home not in modules:
                break
            pairs[key.value] = (home, target.lineno)
        else:
            homes.update(pairs)
    return homes


def _statements(tree: ast.AST):
    """(node, runs) for every import in ``tree``, at any depth; ``runs`` is False under ``if TYPE_CHECKING:``."""
    def walk(node, runs):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from walk_body(child.body, False)
                yield from walk_body(child.orelse, runs)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, runs
            yield from walk(child, runs)

    def walk_body(body, runs):
        for statement in body:
            yield from walk(ast.Module(body=[statement], type_ignores=[]), runs)

    yield from walk(tree, True)


def imports(module: Module, modules: dict[str, Module], tables: dict[str, dict[str, tuple[str, int]]],
            tree: ast.Module, package: str, where: str):
    """The edges out of ``module`` and the private names it takes, as (edges, violations)."""
    edges, wrong = [], []
    own = set(ancestors(module.name))

    def reach(target: str, line: int, runs: bool, names_from_package: bool = False):
        # Importing a.b.c runs a and a.b first; the importer's own packages are already running.
        for name in [*ancestors(target), target]:
            if name in modules and name != module.name and (name not in own or names_from_package and name == target):
                edges.append(Edge(module.name, name, line, runs))

    def check_private_module(target: str, line: int):
        parts = target.split(".")
        for n in range(1, len(parts)):
            if is_private(parts[n]):
                holder = ".".join(parts[:n])
                if not (module.name + ".").startswith(holder + "."):
                    wrong.append(Violation(where, line, "private",
                                           f"{module.name} imports the private module {'.'.join(parts[:n + 1])} "
                                           f"from outside {holder}"))
                return

    aliases = {}  # local name -> a module of the package, for the attributes read from it
    for node, runs in _statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != package:
                    continue
                reach(alias.name, node.lineno, runs)
                check_private_module(alias.name, node.lineno)
                aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else package
            continue
        base = resolve(module, node.level, node.module)
        if base.split(".")[0] != package:
            continue
        for alias in node.names:
            child = f"{base}.{alias.name}"
            if child in modules:  # from a import b: the module a.b
                reach(child, node.lineno, runs)
                check_private_module(child, node.lineno)
                aliases[alias.asname or alias.name] = child
                continue
            check_private_module(base, node.lineno)
            if is_private(alias.name):
                wrong.append(Violation(where, node.lineno, "private",
                                       f"{module.name} takes the private name {alias.name} from {base}"))
            # A name read from one's own package's __init__ depends on it (a dunder such as
            # __version__ is set before anything is imported).
            reach(base, node.lineno, runs, names_from_package=not alias.name.startswith("__"))
            home = tables.get(base, {}).get(alias.name)
            if home is not None:
                reach(home[0], node.lineno, runs)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and is_private(node.attr) and isinstance(node.value, ast.Name)
                and aliases.get(node.value.id, module.name) != module.name):
            wrong.append(Violation(where, node.lineno, "private",
                                   f"{module.name} reads the private name {node.attr} of {aliases[node.value.id]}"))
    return edges, wrong


def init_logic(module: Module, tree: ast.Module, where: str) -> list[Violation]:
    """What an ``__init__.py`` does beyond re-exporting and loading names on first use."""
    wrong = []

    def only_imports(body):
        return all(isinstance(s, (ast.Import, ast.ImportFrom, ast.Pass)) for s in body)

    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # the docstring
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            calls = [c for c in ast.walk(node) if isinstance(c, ast.Call)]
            if all(isinstance(c.func, ast.Name) and c.func.id in TABLE_CALLS for c in calls):
                continue
        if isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__dir__"):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and only_imports(node.body):
            continue
        if isinstance(node, ast.With) and only_imports(node.body):
            continue  # a guard around the imports (the command-line tool's Ctrl-C handling)
        what = getattr(node, "name", type(node).__name__)
        wrong.append(Violation(where, node.lineno, "init",
                               f"{module.name}'s __init__.py holds logic ({what}); only re-exports and lazy "
                               "loading belong there"))
    return wrong


def shortest_cycle(component: set[str], graph: dict[str, dict[str, Edge]]) -> list[Edge]:
    """The edges of a shortest loop through the smallest-named module of a strongly connected component."""
    start = min(component)
    came = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target, edge in sorted(graph.get(node, {}).items()):
            if target not in component:
                continue
            if target == start:
                path = [edge]
                while came[node] is not None:
                    path.append(came[node])
                    node = came[node].source
                return path[::-1]
            if target not in came:
                came[target] = edge
                queue.append(target)
    raise AssertionError("a strongly connected component without a loop")


def strong_components(graph: dict[str, dict[str, Edge]]) -> list[set[str]]:
    """Tarjan's strongly connected components (iterative), those with more than one module."""
    index, low, stack, on, found = {}, {}, [], set(), []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on.add(target)
                    work.append((target, iter(sorted(graph.get(target, {})))))
                elif target in on:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def check(root: Path, package: str, table: dict[str, float]) -> list[Violation]:
    """Every violation of the rules in ``root/package``, given the table of layers."""
    modules = find_modules(root, package)
    trees = {name: ast.parse(m.path.read_text(), str(m.path)) for name, m in modules.items()}
    tables = {name: lazy_table(m, modules) for name, m in modules.items()}
    wrong, edges = [], []
    for name, module in modules.items():
        where = str(module.path.relative_to(root))
        found, private = imports(module, modules, tables, trees[name], package, where)
        edges += found
        wrong += private
        # Lazy tables: the package loads each home on first use, as a function-local import would.
        first = {}
        for home, line in tables[name].values():
            first[home] = min(line, first.get(home, line))
        edges += [Edge(name, home, line, True) for home, line in first.items()]
        length = len(module.path.read_text().splitlines())
        limit = MAX_INIT_LINES if module.is_package else MAX_LINES
        if length > limit:
            wrong.append(Violation(where, limit + 1, "length",
                                   f"{name} is {length} lines long; the limit is {limit}"))
        if module.is_package:
            wrong += init_logic(module, trees[name], where)
        if layer_of(name, package, table) is None:
            wrong.append(Violation(where, 1, "layer", f"{name} is in no layer of the table in docs/architecture.md"))
    graph: dict[str, dict[str, Edge]] = {}
    for edge in edges:
        source_layer = layer_of(edge.source, package, table)
        target_layer = layer_of(edge.target, package, table)
        if source_layer is not None and target_layer is not None and target_layer > source_layer:
            wrong.append(Violation(str(modules[edge.source].path.relative_to(root)), edge.line, "layer",
                                   f"{edge.source} (layer {source_layer:g}) imports {edge.target} "
                                   f"(layer {target_layer:g}), a higher layer"))
        if edge.runs:
            graph.setdefault(edge.source, {}).setdefault(edge.target, edge)
    for component in strong_components(graph):
        loop = shortest_cycle(component, graph)
        first = loop[0]
        path = " -> ".join(
            [first.source] + [f"{e.target} ({modules[e.source].path.relative_to(root)}:{e.line})" for e in loop])
        wrong.append(Violation(str(modules[first.source].path.relative_to(root)), first.line, "cycle",
                               f"import cycle: {path}"))
    return sorted(set(wrong), key=lambda v: (v.rule, v.path, v.line, v.message))


def parameter_count(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The arguments a function takes, ``*args`` and ``**kwargs`` one each, ``self`` and ``cls`` not counted."""
    args = function.args
    count = len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs) + bool(args.vararg) + bool(args.kwarg)
    bound = (args.posonlyargs + args.args)[:1]
    return count - (1 if bound and bound[0].arg in ("self", "cls") else 0)


def long_signatures(root: Path, package: str, kernels) -> list[Violation]:
    """The functions outside ``kernels`` (paths inside the package, a folder ending in ``/``) with more than
    :data:`MAX_PARAMETERS` parameters."""
    wrong = []
    for module in find_modules(root, package).values():
        inside = module.path.relative_to(root / package).as_posix()
        if any(inside == kernel or (kernel.endswith("/") and inside.startswith(kernel)) for kernel in kernels):
            continue
        for node in ast.walk(ast.parse(module.path.read_text(), str(module.path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and parameter_count(node) > MAX_PARAMETERS:
                wrong.append(Violation(str(module.path.relative_to(root)), node.lineno, "parameters",
                                       f"{node.name} takes {parameter_count(node)} parameters; the limit outside the "
                                       f"numerical kernels is {MAX_PARAMETERS} (pass a RunContext, an options value)"))
    return sorted(wrong, key=lambda v: (v.path, v.line))


# --------------------------------------------------------------------------- the package itself


@pytest.fixture(scope="module")
def violations() -> list[Violation]:
    return check(ROOT, PACKAGE, layer_table(ARCHITECTURE.read_text()))


def _of(violations, rule):
    return "\n".join(str(v) for v in violations if v.rule == rule)


def test_every_module_is_in_a_layer_and_imports_none_above_its_own(violations):
    assert _of(violations, "layer") == ""


def test_no_import_cycle_can_run(violations):
    assert _of(violations, "cycle") == ""


def test_no_private_name_is_taken_from_another_module(violations):
    assert _of(violations, "private") == ""


def test_modules_are_short(violations):
    assert _of(violations, "length") == ""


def test_init_files_only_re_export_and_load_lazily(violations):
    assert _of(violations, "init") == ""


def test_no_function_outside_the_kernels_takes_more_than_ten_parameters():
    assert "\n".join(str(v) for v in long_signatures(ROOT, PACKAGE, KERNELS)) == ""


def test_every_kernel_named_exists():
    assert [k for k in KERNELS if not (ROOT / PACKAGE / k).exists()] == []


def test_the_table_of_layers_is_read_from_the_docs():
    table = layer_table(ARCHITECTURE.read_text())
    assert layer_of("spherecodes.errors", PACKAGE, table) == 1
    assert layer_of("spherecodes.generation", PACKAGE, table) == 6
    assert layer_of("spherecodes.run", PACKAGE, table) == 7  # above export: a run stores matrix files too
    assert layer_of("spherecodes.solvers._core", PACKAGE, table) == 5  # by its package's row
    assert layer_of("spherecodes.bank.read", PACKAGE, table) == layer_of("spherecodes.bank", PACKAGE, table)
    assert layer_of("spherecodes.registry.bundled", PACKAGE, table) < layer_of("spherecodes.best_of", PACKAGE, table)
    assert layer_of("spherecodes", PACKAGE, table) == max(table.values())  # the package's lazy front
    assert layer_of("spherecodes.nowhere", PACKAGE, table) is None


# --------------------------------------------------------------------------- the check can fail


TOY_TABLE = """
| layer | modules | what they hold |
|---|---|---|
| 1 | `low`, `a`, `b`, `c`, `long`, `pkg/`, `up/down` | the bottom |
| 2 | `high`, `pkg/top` | above |
| 3 | `__init__`, `up/` | the top |
"""


def toy(tmp_path: Path, files: dict[str, str]) -> list[str]:
    """The violations found in a package ``toy`` made of ``files``, as text."""
    for name, text in {"__init__.py": "", "pkg/__init__.py": "", **files}.items():
        path = tmp_path / "toy" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return [str(v) for v in check(tmp_path, "toy", layer_table(TOY_TABLE))]


def test_a_clean_package_passes(tmp_path):
    assert toy(tmp_path, {
        "low.py": "VALUE = 1\n",
        "high.py": "from .low import VALUE\nfrom . import low\n\n\ndef f():\n    from .pkg import inner\n\n"
                   "    return low.VALUE, inner\n",
        "pkg/inner.py": "from ._private import shared\n",
        "pkg/_private.py": "def shared():\n    return 1\n",
        "pkg/deeper/__init__.py": "from .._private import shared\n",
    }) == []


def test_a_climb_is_reported_with_its_file_and_line(tmp_path):
    found = toy(tmp_path, {"low.py": "import os\n\n\ndef f():\n    from .high import X\n", "high.py": "X = 1\n"})
    assert found == ["toy/low.py:5: [layer] toy.low (layer 1) imports toy.high (layer 2), a higher layer"]


def test_importing_a_module_runs_its_packages(tmp_path):
    # toy.up.down is in layer 1, but importing it runs toy/up/__init__.py, in layer 3.
    found = toy(tmp_path, {"low.py": "import toy.up.down\n", "a.py": "from .up.down import x\n",
                           "up/__init__.py": "", "up/down.py": "x = 1\n"})
    assert found == ["toy/a.py:1: [layer] toy.a (layer 1) imports toy.up (layer 3), a higher layer",
                     "toy/low.py:1: [layer] toy.low (layer 1) imports toy.up (layer 3), a higher layer"]


def test_a_lazy_table_counts_as_an_import(tmp_path):
    found = toy(tmp_path, {"low.py": "from .pkg import thing\n", "pkg/top.py": "thing = 1\n",
                           "pkg/__init__.py": "_HOMES = {'thing': '.top'}\n\n\ndef __getattr__(name):\n    pass\n"})
    assert found == ["toy/low.py:1: [layer] toy.low (layer 1) imports toy.pkg.top (layer 2), a higher layer",
                     "toy/pkg/__init__.py:1: [layer] toy.pkg (layer 1) imports toy.pkg.top (layer 2), a higher layer"]


def test_a_cycle_through_a_function_local_import_is_reported_with_its_path(tmp_path):
    found = toy(tmp_path, {"a.py": "def f():\n    from .b import g\n", "b.py": "from . import c\n",
                           "c.py": "import toy.a\n"})
    assert found == ["toy/a.py:2: [cycle] import cycle: toy.a -> toy.b (toy/a.py:2) -> toy.c (toy/b.py:1) "
                     "-> toy.a (toy/c.py:1)"]


def test_a_type_checking_import_is_no_cycle(tmp_path):
    assert toy(tmp_path, {"a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
                          "b.py": "from .a import A\n"}) == []


def test_private_names_and_modules_taken_across_are_reported(tmp_path):
    found = toy(tmp_path, {
        "low.py": "_hidden = 1\n",
        "a.py": "from .low import _hidden\n",
        "b.py": "from .pkg._inner import public\n",
        "c.py": "from . import low\n\n\ndef f():\n    return low._hidden\n",
        "pkg/_inner.py": "public = 1\n",
        "pkg/sibling.py": "from ._inner import _secret\n",
    })
    assert found == [
        "toy/a.py:1: [private] toy.a takes the private name _hidden from toy.low",
        "toy/b.py:1: [private] toy.b imports the private module toy.pkg._inner from outside toy.pkg",
        "toy/c.py:5: [private] toy.c reads the private name _hidden of toy.low",
        "toy/pkg/sibling.py:1: [private] toy.pkg.sibling takes the private name _secret from toy.pkg._inner",
    ]


def test_long_modules_and_init_logic_are_reported(tmp_path):
    found = toy(tmp_path, {
        "long.py": "x = 1\n" * (MAX_LINES + 1),
        "pkg/__init__.py": '"""Doc."""\nfrom .inner import x\n__all__ = sorted(["x"])\n\n\ndef helper():\n    pass\n'
                           + "\n" * MAX_INIT_LINES,
        "pkg/inner.py": "x = 1\n",
    })
    assert found == [
        "toy/pkg/__init__.py:6: [init] toy.pkg's __init__.py holds logic (helper); only re-exports and lazy "
        "loading belong there",
        f"toy/long.py:{MAX_LINES + 1}: [length] toy.long is {MAX_LINES + 1} lines long; the limit is {MAX_LINES}",
        f"toy/pkg/__init__.py:{MAX_INIT_LINES + 1}: [length] toy.pkg is {MAX_INIT_LINES + 7} lines long; the "
        f"limit is {MAX_INIT_LINES}",
    ]


def test_a_module_outside_the_table_is_reported(tmp_path):
    assert toy(tmp_path, {"stray.py": ""}) == ["toy/stray.py:1: [layer] toy.stray is in no layer of the table in "
                                               "docs/architecture.md"]


def test_a_long_signature_is_reported_outside_the_kernels_only(tmp_path):
    eleven = "def run(a, b, c, d, e, f, g, h, i, j, k):\n    return a\n"
    ten_and_self = "class Plan:\n    def run(self, a, b, c, d, e, f, g, h, i, j):\n        return a\n"
    stars = "def call(a, b, c, d, e, f, g, h, i, *args, **kwargs):\n    return a\n"
    for name, text in {"__init__.py": "", "front.py": eleven, "plan.py": ten_and_self, "calls.py": stars,
                       "kern/__init__.py": "", "kern/solver.py": eleven}.items():
        path = tmp_path / "toy" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    found = [str(v) for v in long_signatures(tmp_path, "toy", {"kern/": "a solver"})]
    assert found == [f"{Path('toy/calls.py')}:1: [parameters] call takes 11 parameters; the limit outside the "
                     "numerical kernels is 10 (pass a RunContext, an options value)",
                     f"{Path('toy/front.py')}:1: [parameters] run takes 11 parameters; the limit outside the "
                     "numerical kernels is 10 (pass a RunContext, an options value)"]
    assert [str(v) for v in long_signatures(tmp_path, "toy", {"kern/": "", "front.py": "", "calls.py": ""})] == []


def test_no_lazily_loaded_name_shares_its_name_with_a_submodule():
    # Importing a submodule binds it on its package under its own name, so a public function of the same name
    # (``spherecodes.extend`` beside a module ``spherecodes/extend.py``) would turn into the module as soon as
    # anything imported that module.
    for init in (ROOT / PACKAGE).rglob("__init__.py"):
        folder = init.parent
        table = re.search(r"^_(?:HOMES|LAZY) = \{(.*?)^\}", init.read_text(), re.S | re.M)
        names = set(re.findall(r'"(\w+)":', table.group(1))) if table else set()
        clashes = sorted(n for n in names if (folder / f"{n}.py").exists() or (folder / n / "__init__.py").exists())
        assert not clashes, f"{init.relative_to(ROOT)}: public names that are also submodules: {clashes}"


def test_a_public_function_stays_a_function_once_its_module_is_imported():
    import subprocess
    import sys

    script = "import spherecodes.extension, spherecodes; print(callable(spherecodes.extend) and " \
             "not isinstance(spherecodes.extend, type(spherecodes)))"
    assert subprocess.run([sys.executable, "-c", script], capture_output=True, text=True).stdout.strip() == "True"
