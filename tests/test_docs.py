"""Every documentation page runs as written.

Each page (README.md and every ``docs/*.md``) is run top to bottom in an empty
temporary directory, as a user who installed the package and has no copy of
the repository would run it (what the pages need ships inside the package:
``python -m spherecodes.examples``):

* ```` ```python ```` blocks are executed in order, in one namespace per page;
* ```` ```console ```` blocks: every ``$ command`` line runs as a real shell
  command (lines without ``$`` are shown output and are not checked);
  ``export NAME=VALUE`` lines set the variable for the rest of the page;
* ```` ```bash ```` blocks run as one shell script;
* other blocks (``json``, command synopses without a language) are not run.

A block preceded by ``<!-- skip-test: REASON -->`` is not run (it needs the
network, or takes many minutes); the reason is part of the page, so a reader
sees it in the source.  Commands run without network access to a catalog
(``SPHERECODES_BANK_URL`` unset) and with a private download cache.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
PAGES = [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]
RUNNABLE = {"python", "console", "bash"}
SKIP_MARK = re.compile(r"<!--\s*skip-test:\s*(?P<reason>.+?)\s*-->")
EXPORT = re.compile(r"export\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>\S*)$")
COMMAND_TIMEOUT_S = 900


@dataclass
class Block:
    language: str
    text: str
    line: int  # 1-based line of the opening fence
    skip_reason: str | None


def read_blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a markdown page, with their skip marks."""
    blocks = []
    lines = page.read_text(encoding="utf-8").splitlines()
    inside, language, start, body, skip = False, "", 0, [], None
    previous = ""
    for number, line in enumerate(lines, start=1):
        if line.startswith("```"):
            if not inside:
                inside, language, start, body = True, line[3:].strip(), number, []
                mark = SKIP_MARK.search(previous)
                skip = mark["reason"] if mark else None
            else:
                blocks.append(Block(language, "\n".join(body) + "\n", start, skip))
                inside, previous = False, line
            continue
        if inside:
            body.append(line)
        elif line.strip():
            previous = line
    assert not inside, f"{page.name}: unclosed code block at line {start}"
    return blocks


def console_commands(block: Block) -> list[tuple[int, str]]:
    """The ``$ command`` lines of a console block (joined across ``\\`` continuations)."""
    commands, pending, pending_line = [], None, 0
    for offset, line in enumerate(block.text.splitlines(), start=1):
        if pending is not None:
            pending += "\n" + line
        elif line.startswith("$ "):
            pending, pending_line = line[2:], block.line + offset
        else:
            continue
        if pending.endswith("\\"):
            continue
        commands.append((pending_line, pending))
        pending = None
    return commands


def page_environment(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SPHERECODES_BANK_URL", None)
    env["SPHERECODES_CACHE"] = str(work / ".cache")
    env["MPLBACKEND"] = "Agg"
    # The interpreter running the tests, so that `spherecodes` and `python` are this install.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def run_shell(script: str, work: Path, env: dict[str, str], where: str) -> None:
    done = subprocess.run(["bash", "-e", "-c", script], cwd=work, env=env, capture_output=True,
                          text=True, timeout=COMMAND_TIMEOUT_S)
    if done.returncode != 0:
        pytest.fail(f"{where}: `{script.strip()}` exited {done.returncode}\n"
                    f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}", pytrace=False)


def failing_line(exc: BaseException, filename: str) -> int:
    """The line, within the block compiled as ``filename``, where ``exc`` was raised."""
    lines = [frame.tb_lineno for frame in _frames(exc.__traceback__)
             if frame.tb_frame.f_code.co_filename == filename]
    return lines[-1] if lines else 0


def _frames(traceback):
    while traceback is not None:
        yield traceback
        traceback = traceback.tb_next


@contextlib.contextmanager
def page_process_state(work: Path, env: dict[str, str]):
    """cwd and environment of a page for its python blocks, restored afterwards."""
    saved_cwd, saved_env = os.getcwd(), dict(os.environ)
    os.chdir(work)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def run_page(page: Path, work: Path, root: Path = REPOSITORY) -> None:
    """Run every runnable block of ``page`` in ``work``, an empty directory."""
    env = page_environment(work)
    namespace: dict = {"__name__": "__docs__"}
    for block in read_blocks(page):
        if block.language not in RUNNABLE or block.skip_reason:
            continue
        where = f"{page.relative_to(root)}:{block.line}"
        if block.language == "python":
            with page_process_state(work, env):
                try:
                    exec(compile(block.text, where, "exec"), namespace)  # noqa: S102
                except Exception as exc:  # noqa: BLE001 - reported as the page's failure
                    line = block.line + failing_line(exc, where)
                    pytest.fail(f"{page.relative_to(root)}:{line}: {type(exc).__name__}: {exc}",
                                pytrace=False)
        elif block.language == "bash":
            run_shell(block.text, work, env, where)
        else:
            for line, command in console_commands(block):
                export = EXPORT.fullmatch(command.split("#")[0].strip())
                if export:
                    env[export["name"]] = export["value"]
                else:
                    run_shell(command, work, env, f"{page.relative_to(root)}:{line}")


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPOSITORY)) for p in PAGES])
def test_page_runs_as_written(page, tmp_path):
    run_page(page, tmp_path)


# The harness itself, on pages written for it.

def test_blocks_and_skip_marks_are_read(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n\n<!-- skip-test: needs network -->\n\n```console\n$ spherecodes fetch x\n```\n"
                    "```python\nx = 1\n```\n```json\n{}\n```\n", encoding="utf-8")
    blocks = read_blocks(page)
    assert [(b.language, b.line, b.skip_reason) for b in blocks] == [
        ("console", 5, "needs network"), ("python", 8, None), ("json", 11, None)]
    assert console_commands(blocks[0]) == [(6, "spherecodes fetch x")]


def test_a_failing_command_fails_the_page_and_names_its_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```console\n$ true\nshown output\n$ exit 3\n```\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(pytest.fail.Exception, match=r"page.md:4: `exit 3` exited 3"):
        run_page(page, work, root=tmp_path)


def test_python_blocks_share_one_namespace_and_run_in_the_page_directory(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nopen('made.txt', 'w').write('a')\nx = 2\n```\n"
                    "```console\n$ test -f made.txt\n```\n"
                    "```python\nassert x == 2\nraise ValueError('boom')\n```\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(pytest.fail.Exception, match=r"page.md:10: ValueError: boom"):
        run_page(page, work, root=tmp_path)
    assert (work / "made.txt").exists()


def test_pages_run_in_an_empty_directory_without_the_repository(tmp_path):
    """Nothing of the repository (its examples/ folder included) is copied in: a page sees what a user sees."""
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "data.txt").write_text("x")
    page = tmp_path / "page.md"
    page.write_text('```console\n$ test -z "$(ls -A)"\n$ python -m spherecodes.examples\n'
                    '$ test -s examples/cifar100/classes.txt\n```\n', encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    run_page(page, work, root=tmp_path)
