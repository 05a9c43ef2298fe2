"""The light commands load no heavy package; the heavy packages are reached through one gateway; the command
list is shown without loading the commands."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from spherecodes import heavy
from spherecodes.errors import SpherecodesError

PACKAGE = Path(__file__).resolve().parent.parent / "spherecodes"

#: The heavy packages, as the first part of a module name.
HEAVY_ROOTS = ("torch", "matplotlib", "gensim", "distributed", "dask", "scipy.optimize")


def loaded_heavy(stderr: str) -> list[str]:
    """The heavy modules that ``python -X importtime`` says the process imported."""
    found = set()
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        module = line.rsplit("|", 1)[-1].strip()
        for root in HEAVY_ROOTS:
            if module == root or module.startswith(root + "."):
                found.add(root)
    return sorted(found)


def run_tool(args, folder: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SPHERECODES_CACHE": str(folder / "cache")}
    env.pop("SPHERECODES_BANK_URL", None)
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "spherecodes", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_the_light_commands_load_no_heavy_package(tmp_path):
    # In this order: fetch writes the bank that the next commands read. (64, 1000) is the main job: its
    # winner is an exact code, and its LP bound is in the table shipped with spherecodes.
    commands = [
        ["--help"],
        ["generate", "--help"],
        ["bounds", "--d", "512", "--k", "100000"],
        ["fetch", "--d", "16", "--k", "100", "--out", "f.h5"],
        ["ls", "f.h5"],
        ["report", "f.h5"],
        ["export", "f.h5", "--out", "p.npy"],
        ["generate", "--d", "64", "--k", "1000", "--out", "g.h5"],
        # The extended BCH code again, at a size the optimiser table does not measure: auto predicts the
        # optimiser's cost from its default budget (spherecodes.budget), without the solvers.
        ["generate", "--d", "64", "--k", "999", "--out", "h.h5"],
        ["report", "g.h5", "--json"],
        ["cache", "list"],
    ]
    offenders = {}
    for args in commands:
        done = run_tool(args, tmp_path)
        assert done.returncode == 0, (args, done.stderr[-2000:])
        heavy_modules = loaded_heavy(done.stderr)
        if heavy_modules:
            offenders[" ".join(args)] = heavy_modules
    assert offenders == {}


def test_the_check_sees_a_heavy_import(tmp_path):
    # The check above would catch a command that loads one: an optimiser loads torch.
    done = run_tool(["generate", "--d", "3", "--k", "7", "--method", "tammes", "--steps", "5", "--restarts", "1",
                     "--out", "t.h5", "-q", "--no-certify"], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "torch" in loaded_heavy(done.stderr)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _heavy_root(name: str) -> str | None:
    return next((root for root in HEAVY_ROOTS if name == root or name.startswith(root + ".")), None)


def _imports(tree: ast.Module):
    """(node, imported module, at module level) for every import outside ``if TYPE_CHECKING:``."""
    def walk(node, top):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield child, alias.name, top
            elif isinstance(child, ast.ImportFrom) and child.level == 0:
                yield child, child.module, top
                for alias in child.names:  # from scipy import optimize
                    yield child, f"{child.module}.{alias.name}", top
            inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            yield from walk(child, inner)
    yield from walk(tree, True)


def test_heavy_packages_are_imported_only_through_the_gateway_or_by_the_modules_built_on_them():
    allowed = {root: tuple(modules) for root, modules in heavy.BUILT_ON.items()}
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        if module == "spherecodes.heavy":
            continue
        for node, name, top in _imports(ast.parse(path.read_text(), str(path))):
            root = _heavy_root(name)
            if root is None:
                continue
            built_on = any(module == m or module.startswith(m + ".") for m in allowed.get(root, ()))
            if not (top and built_on):
                wrong.append(f"{module}:{node.lineno} imports {name}")
    assert wrong == []


def test_the_gateway_says_in_one_line_what_is_missing_and_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if it were not installed
    with pytest.raises(SpherecodesError) as missing:
        heavy.distributed()
    message = str(missing.value)
    assert "\n" not in message and 'pip install "spherecodes[dask]"' in message and "certify" in message


def test_certify_on_dask_without_dask_installed_is_one_line(tmp_path):
    from spherecodes.bank import write_code
    from spherecodes.code import make_code
    from spherecodes.constructions import e8_roots

    write_code(tmp_path / "b.h5", make_code(e8_roots(), method="e8"))
    script = ("import sys\nsys.modules['distributed'] = None\nfrom spherecodes.cli import main\n"
              "main(['certify', 'b.h5', '--workers', '1'])\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("Error: ") and "spherecodes[dask]" in done.stderr


def test_the_command_list_is_what_click_shows_for_the_loaded_commands():
    from spherecodes.cli import main
    from spherecodes.cli.main import COMMANDS

    lazy = CliRunner().invoke(main, ["--help"]).output
    ctx = click.Context(main)
    for name in COMMANDS:  # load every command, then let click word the list itself
        assert main.get_command(ctx, name) is not None, name
    assert set(main.commands) == set(COMMANDS)
    for name, (_, summary) in COMMANDS.items():
        assert main.commands[name].help.strip().splitlines()[0] == summary, name
    formatter = ctx.make_formatter()
    click.Group.format_commands(main, ctx, formatter)
    assert formatter.getvalue() in lazy


def test_an_unknown_command_is_one_line():
    from spherecodes.cli import main

    result = CliRunner().invoke(main, ["genrate"])
    assert result.exit_code == 2 and "No such command 'genrate'" in result.output
