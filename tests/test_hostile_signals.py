"""Signals, locks and concurrent writers: what an interrupted or contested write leaves behind.

Ctrl-C, SIGTERM and SIGHUP, dead writers' temporary files, lock files that are not plain files,
and two writers of one bank at once.

The cases of the table run through :func:`hostile_support.run_case`; the
tests after it check what must still work, and what the table cannot.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hostile_support import (
    CATALOG_BANK, CATALOG_ENTRY, GOOD_CODE, Table, catalog_bank_bytes, catalog_of_good_bank, good_bank_bytes,
    make_bank, one_error_line, run_case,
)
from hostile_support import web  # noqa: F401 (the fixture)
from spherecodes.cli import main

CASES = Table()
case = CASES.case


# ---- the bank's lock file: a writer takes a lock beside the bank and writes its process id into it


def _lock_file(kind):
    def setup(f, web):
        bank = make_bank(f)
        (f / "victim.txt").write_text("precious")
        lock = f / ".bank.h5.lock"
        if kind == "symlink":
            lock.symlink_to(f / "victim.txt")
        elif kind == "hardlink":
            os.link(f / "victim.txt", lock)
        else:
            os.mkfifo(lock)
        return ["rm", bank, "--code", GOOD_CODE]

    return setup


case("lock-file-is-a-symlink-to-another-file", says=("cannot lock", "bank.h5.lock"))(_lock_file("symlink"))
case("lock-file-is-a-hard-link-to-another-file", says=("cannot lock", "hard link"))(_lock_file("hardlink"))
case("lock-file-is-a-fifo", says=("cannot lock", "fifo"))(_lock_file("fifo"))


# --------------------------------------------------------------------------- signals and dead writers


def hidden_temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp"))


_WRITER = """
import os, sys, time
from spherecodes.atomic import replace_atomically
with replace_atomically(sys.argv[1]) as tmp:
    tmp.write_bytes(b"half a bank" * 1000)
    print("written", flush=True)
    if sys.argv[2] == "die":
        os.kill(os.getpid(), 9)
    sys.stdin.readline()
"""


def test_a_dead_writers_temporary_file_is_removed_by_the_next_write(tmp_path):
    bank = tmp_path / "bank.h5"
    live = subprocess.Popen([sys.executable, "-c", _WRITER, str(bank), "wait"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert live.stdout.readline().strip() == "written"
        dead = subprocess.run([sys.executable, "-c", _WRITER, str(bank), "die"], capture_output=True, timeout=60)
        assert dead.returncode == -9
        assert len(hidden_temporaries(tmp_path)) == 2
        result = CliRunner().invoke(main, ["fetch", "--d", "11", "--k", "12", "--url", "", "--out", str(bank), "-q"])
        assert result.exit_code == 0, result.output
        # The dead writer's file is gone; the live writer's is its own business.
        assert len(hidden_temporaries(tmp_path)) == 1
    finally:
        live.communicate("\n", timeout=60)
    assert hidden_temporaries(tmp_path) == []
    assert bank.read_bytes() == b"half a bank" * 1000  # the live writer finished last


@pytest.fixture
def python_sigint_handler():
    """Ctrl-C raises KeyboardInterrupt here, as in an interactive shell.

    A process started in the background by a non-interactive shell inherits
    SIGINT as ignored, and Python then installs no handler of its own; these
    tests simulate a user's Ctrl-C, so they install Python's.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("python_sigint_handler")
def test_ctrl_c_during_the_rename_is_delivered_after_it(tmp_path, monkeypatch):
    from spherecodes.atomic import replace_atomically

    target = tmp_path / "data.txt"
    target.write_text("old")
    rename = os.replace
    renamed = []

    def interrupted_rename(src, dst):
        os.kill(os.getpid(), signal.SIGINT)
        rename(src, dst)
        renamed.append(dst)

    monkeypatch.setattr(os, "replace", interrupted_rename)
    with pytest.raises(KeyboardInterrupt):
        with replace_atomically(target) as tmp:
            tmp.write_text("new")
    assert renamed and target.read_text() == "new"
    assert hidden_temporaries(tmp_path) == []


@pytest.mark.usefixtures("python_sigint_handler")
def test_ctrl_c_swallowed_while_writing_still_abandons_the_write(tmp_path):
    """A library may catch the KeyboardInterrupt of a Ctrl-C (h5py's C callbacks do); the write is still abandoned."""
    from spherecodes.atomic import replace_atomically

    target = tmp_path / "data.txt"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with replace_atomically(target) as tmp:
            tmp.write_text("new")
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(1)
            except KeyboardInterrupt:
                pass  # swallowed
    assert target.read_text() == "old"
    assert hidden_temporaries(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.0, 0.5, 1.5])
def test_ctrl_c_at_any_moment_of_generate_keeps_a_valid_bank(tmp_path, delay):
    """Ctrl-C during the optimisation, the certificate, the LP bound or the write: never a broken bank."""
    bank = tmp_path / "bank.h5"
    bank.write_bytes(good_bank_bytes())
    before = hashlib.sha256(bank.read_bytes()).hexdigest()
    proc = subprocess.Popen(
        [sys.executable, "-m", "spherecodes", "generate", "--d", "5", "--k", "60", "--method", "tammes",
         "--restarts", "2", "--steps", "400", "--out", str(bank)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = proc.stderr.readline()  # the estimate: the program has started (Ctrl-C during imports is Python's)
    assert first.startswith("estimate"), first
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert "Traceback" not in stderr, stderr
    # -SIGINT: the signal arrived after the work, while the interpreter was
    # shutting down (Python restores the default handler then); the bank must
    # then hold the finished code and the report must have been printed.
    assert proc.returncode in (0, 130, -signal.SIGINT), (proc.returncode, stderr)
    if proc.returncode == -signal.SIGINT:
        assert "max-cos" in stdout, (stdout, stderr)
    assert hidden_temporaries(tmp_path) == []
    names = {row["name"] for row in __import__("spherecodes").list_codes(bank)}
    if proc.returncode == 130 and "kept" not in stderr:
        assert hashlib.sha256(bank.read_bytes()).hexdigest() == before  # interrupted before anything was kept
    else:
        assert names == {GOOD_CODE, "tammes-d5-k60-s0"}
        import spherecodes

        assert spherecodes.read_code(bank, "tammes-d5-k60-s0").k == 60


# --------------------------------------------------------------------------- concurrent writers and links


_SLOW_WRITER = """
import sys
from spherecodes.bank import _writing as bank
from spherecodes.cli import main
rewrite = bank._rewrite

def slow_rewrite(*args, **kwargs):
    print("read", flush=True)  # the bank has been read; another writer may now act
    sys.stdin.readline()  # until the test says the other writer is waiting
    rewrite(*args, **kwargs)

bank._rewrite = slow_rewrite
main(sys.argv[1:], prog_name="spherecodes")
"""


def codes_in(bank: Path) -> set[str]:
    import spherecodes

    return {row["name"] for row in spherecodes.list_codes(bank)}


@pytest.mark.slow
@pytest.mark.parametrize("second", ["generate", "rm"])
def test_concurrent_writers_of_one_bank_take_turns_and_lose_nothing(tmp_path, second):
    """A writer that has read the bank and is about to rewrite it, and a second writer meanwhile: both changes stay."""
    bank = make_bank(tmp_path)
    assert subprocess.run([sys.executable, "-m", "spherecodes", "generate", "--d", "3", "--k", "4", "--out", str(bank),
                           "-q"], capture_output=True).returncode == 0
    first = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, "generate", "--d", "4", "--k", "5", "--out",
                              str(bank), "-q"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    notice = f"{bank} is being written by another spherecodes process (process {first.pid}); waiting"
    try:
        assert first.stdout.readline().strip() == "read"
        args = (["generate", "--d", "5", "--k", "6", "--out", str(bank), "-q"] if second == "generate"
                else ["rm", str(bank), "--code", "etf-d3-k4"])
        other = subprocess.Popen([sys.executable, "-m", "spherecodes", *args], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        if second == "rm":
            # The notice comes after a second of waiting for the lock: only then may the first writer go on,
            # however long the second took to start (a loaded machine).
            waiting = other.stderr.readline()
            assert waiting.startswith(notice), waiting
        else:
            time.sleep(3)  # quiet as asked (-q): nothing to wait for but time
    finally:
        out, err = first.communicate("\n", timeout=60)
    _, rest = other.communicate(timeout=60)
    assert other.returncode == 0, rest
    assert notice not in rest
    assert first.returncode == 0, err
    assert first.returncode == 0, err
    expected = {GOOD_CODE, "etf-d4-k5"} | ({"etf-d3-k4", "etf-d5-k6"} if second == "generate" else set())
    assert codes_in(bank) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5"]  # no lock or temporary file left


_HOLDER = """
import sys, time
from spherecodes.atomic import exclusive_lock
with exclusive_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""


@pytest.mark.slow
def test_ctrl_c_while_waiting_for_the_lock_says_so_and_changes_nothing(tmp_path):
    bank = make_bank(tmp_path)
    before = bank.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(bank)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        waiter = subprocess.Popen([sys.executable, "-m", "spherecodes", "rm", str(bank), "--code", GOOD_CODE],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
        notice = waiter.stderr.readline()  # after a second of waiting
        assert notice.startswith(f"{bank} is being written by another spherecodes process (process {holder.pid})")
        waiter.send_signal(signal.SIGINT)
        _, rest = waiter.communicate(timeout=60)
    finally:
        holder.communicate("\n", timeout=60)
    assert waiter.returncode == 130 and rest.strip() == "Interrupted; nothing was written.", rest
    assert bank.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5"]


@pytest.mark.slow
def test_a_time_limit_bounds_the_wait_for_another_writer_of_the_bank(tmp_path):
    """--time-limit 1 while another process holds the bank's lock: it waited for as long as the other held it."""
    bank = make_bank(tmp_path)
    before = bank.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(bank)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        waiter = subprocess.run([sys.executable, "-m", "spherecodes", "generate", "--d", "3", "--k", "7", "--method",
                                 "tammes", "--time-limit", "1", "--no-certify", "--out", str(bank), "-q"],
                                capture_output=True, text=True, timeout=120)
    finally:
        holder.communicate("\n", timeout=60)
    assert waiter.returncode == 1, waiter.stderr
    line = one_error_line(waiter.stderr)
    assert f"gave up waiting for {bank}: another spherecodes process (process {holder.pid})" in line, line
    assert "what --time-limit left" in line and "is unchanged" in line, line
    assert bank.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5"]


def test_a_symlinked_out_is_written_through_to_its_target(tmp_path):
    (tmp_path / "store").mkdir()
    target = make_bank(tmp_path / "store")
    (tmp_path / "link.h5").symlink_to(target)
    result = CliRunner().invoke(main, ["generate", "--d", "3", "--k", "4", "--out", str(tmp_path / "link.h5"), "-q"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "link.h5").is_symlink()
    assert codes_in(target) == {GOOD_CODE, "etf-d3-k4"}
    result = CliRunner().invoke(main, ["rm", str(tmp_path / "link.h5"), "--code", GOOD_CODE])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "link.h5").is_symlink() and codes_in(target) == {"etf-d3-k4"}


# --------------------------------------------------------------------------- what Ctrl-C says


@pytest.mark.usefixtures("python_sigint_handler")
@pytest.mark.parametrize("moment", ["after-the-rename", "before-the-rename"])
def test_ctrl_c_says_whether_the_code_was_stored(tmp_path, monkeypatch, moment):
    """The message is checked against the bank, not assumed: Ctrl-C right after the rename stored the code."""
    bank = make_bank(tmp_path)
    before = bank.read_bytes()
    rename, fsync = os.replace, os.fsync

    def interrupted_rename(src, dst):
        rename(src, dst)
        os.kill(os.getpid(), signal.SIGINT)

    def interrupted_fsync(fd):  # the last step before the rename
        fsync(fd)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)

    if moment == "after-the-rename":
        monkeypatch.setattr(os, "replace", interrupted_rename)
    else:
        monkeypatch.setattr(os, "fsync", interrupted_fsync)
    result = CliRunner().invoke(main, ["generate", "--d", "3", "--k", "4", "--out", str(bank), "-q"])
    assert result.exit_code == 130, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr  # no empty line before it either
    if moment == "after-the-rename":
        assert codes_in(bank) == {GOOD_CODE, "etf-d3-k4"}
        assert "written in full" in lines[0] and "nothing" not in lines[0], lines
    else:
        assert bank.read_bytes() == before
        assert "unchanged" in lines[0] and "written in full" not in lines[0], lines
    assert hidden_temporaries(tmp_path) == []


def default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as from a terminal: Python then installs its own handler


_STARTED = """
import runpy, sys
sys.stderr.write("python is up\\n")  # Ctrl-C before this point is Python's own start, not spherecodes'
sys.stderr.flush()
sys.argv = ["spherecodes", *sys.argv[1:]]
runpy.run_module("spherecodes", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("delay", [0.05, 0.15, 0.3])
def test_ctrl_c_while_the_tool_is_loading_gives_no_traceback(tmp_path, delay):
    """Ctrl-C during the imports (about half a second): one line and exit 130, never a traceback."""
    proc = subprocess.Popen([sys.executable, "-c", _STARTED, "bounds", "--d", "3", "--k", "10"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    assert proc.stderr.readline() == "python is up\n"
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert "Traceback" not in stderr, stderr
    assert proc.returncode in (0, 130, -signal.SIGINT), (proc.returncode, stderr)
    if proc.returncode == 130:
        assert stderr.strip().splitlines() == ["Interrupted; nothing was written."], stderr


_INTERRUPT_IN_A_CALLBACK = """
import builtins, weakref
real_import = builtins.__import__
class Probe:
    pass
def callback(ref):
    raise KeyboardInterrupt  # as SIGINT does when it lands in the import machinery's weakref clean-up
def importing(name, globals=None, locals=None, fromlist=(), level=0):
    # An import made by a command's module, which the tool loads when the command is asked for.
    if (globals or {}).get("__name__", "").startswith("spherecodes.cli.commands."):
        builtins.__import__ = real_import
        probe = Probe(); ref = weakref.ref(probe, callback); del probe
    return real_import(name, globals, locals, fromlist, level)
builtins.__import__ = importing
from spherecodes.cli import main
main(["ls", "--help"])
print("the import went on")
"""


def test_ctrl_c_inside_an_import_callback_ends_with_the_one_line():
    """Python prints "Exception ignored" and a traceback for an interrupt in a weakref callback and goes on: seen
    once in 90 real Ctrl-Cs during the imports.  The tool ends as for any Ctrl-C while loading."""
    result = subprocess.run([sys.executable, "-c", _INTERRUPT_IN_A_CALLBACK], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (130, "", "Interrupted; nothing was written.\n")


@pytest.mark.parametrize("suffix", [".h5", ".npy"])
def test_ctrl_c_with_overwrite_keeps_the_finished_code_it_would_replace(tmp_path, monkeypatch, suffix):
    from spherecodes import list_codes, solvers

    out = tmp_path / f"codes{suffix}"
    args = ["generate", "--d", "3", "--k", "10", "--method", "tammes", "--steps", "200", "--restarts", "2",
            "--device", "cpu", "--out", str(out), "-q"]
    assert CliRunner().invoke(main, args).exit_code == 0
    before = out.read_bytes()

    def interrupt(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(solvers.Clock, "report", interrupt)
    result = CliRunner().invoke(main, args + ["--overwrite"])
    assert result.exit_code == 130
    assert "is unchanged: a run cut short does not replace it" in result.stderr and "Traceback" not in result.output
    assert out.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == [out.name]
    # A new name in the same bank still keeps the interrupted run's best code.
    if suffix == ".h5":
        result = CliRunner().invoke(main, args + ["--name", "cut-short"])
        assert result.exit_code == 130 and "kept the best code so far as cut-short" in result.stderr
        assert sorted(c["name"] for c in list_codes(out)) == ["cut-short", "tammes-d3-k10-s0"]


# --------------------------------------------------------------------------- the table, run


@pytest.mark.parametrize("name", CASES.names())
def test_hostile_input_gets_one_line_and_changes_nothing(name, tmp_path, web, monkeypatch):
    run_case(CASES[name], name, tmp_path, web, monkeypatch)


# --------------------------------------------------------------------------- SIGTERM and SIGHUP


_HALF_WRITTEN = """
import sys
from spherecodes.bank import _writing as bank
from spherecodes.cli import main
write_bank = bank._write_bank

def stopped_half_way(tmp, *args, **kwargs):
    write_bank(tmp, *args, **kwargs)  # the temporary bank is complete, not yet renamed over the bank
    print("written", flush=True)
    sys.stdin.readline()  # until the test has sent its signal

bank._write_bank = stopped_half_way
main(sys.argv[1:], prog_name="spherecodes")
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_during_a_write_removes_the_temporary_bank(tmp_path, signum):
    """``kill`` or a closed terminal while the new bank is written: the temporary file went with the process."""
    bank = make_bank(tmp_path)
    before = bank.read_bytes()
    proc = subprocess.Popen([sys.executable, "-c", _HALF_WRITTEN, "generate", "--d", "3", "--k", "4", "--out",
                             str(bank), "-q"], cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            # An ignored signal stays ignored across exec: start the child as a shell would.
                            preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL))
    try:
        assert proc.stdout.readline().strip() == "written"
        assert len(hidden_temporaries(tmp_path)) == 1  # the temporary bank, complete
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signum, (proc.returncode, stderr)
    name = signal.Signals(signum).name
    assert stderr.splitlines() == [f"Ended by {name} before {bank} was written; it is unchanged."], stderr
    assert bank.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bank.h5"]  # no temporary bank, no lock file


def test_sigterm_during_a_download_removes_the_partial_file_from_the_cache(tmp_path, web):
    """A bank streamed one byte at a time, the process ended half way: nothing of it stays in the cache."""
    body = catalog_bank_bytes(tmp_path)
    url = catalog_of_good_bank(tmp_path, web, bank_route=lambda h: h.trickle(body, every_s=0.05))
    cache = tmp_path / "cache"
    proc = subprocess.Popen([sys.executable, "-m", "spherecodes", "fetch", CATALOG_ENTRY, "--url", url],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "SPHERECODES_CACHE": str(cache), "SPHERECODES_BANK_URL": ""})
    try:
        for _ in range(1200):  # the partial bank appears in the cache once the transfer has begun
            if [p for p in cache.rglob(f".{CATALOG_BANK}.*.tmp")] and proc.poll() is None:
                break
            time.sleep(0.05)
        assert [p for p in cache.rglob(f".{CATALOG_BANK}.*.tmp")], "the download never started"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, (proc.returncode, stderr)
    # The registry was cached in full before the bank's download began: the line says so, and what was not.
    assert len(stderr.splitlines()) == 1 and stderr.startswith("Ended by SIGTERM; written in full: ") and \
        stderr.rstrip().endswith(f"not written (unchanged): {next(cache.iterdir()) / CATALOG_BANK}."), stderr
    assert [p.name for p in cache.rglob("*") if p.is_file()] == ["registry.json"]  # no partial bank


_LIBRARY_WRITER = """
import sys
from spherecodes.atomic import replace_atomically
with replace_atomically(sys.argv[1]) as tmp:
    tmp.write_bytes(b"half a bank" * 1000)
    print("written", flush=True)
    sys.stdin.readline()
"""


def test_sigterm_in_a_program_that_writes_through_the_library_ends_it_by_the_signal_and_removes_the_file(tmp_path):
    """No handler of the program's own: the process still ends by SIGTERM, as it would have, but the temporary
    file it was writing is removed first."""
    target = tmp_path / "data.bin"
    proc = subprocess.Popen([sys.executable, "-c", _LIBRARY_WRITER, str(target)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "written"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM, (proc.returncode, stderr)
    assert list(tmp_path.iterdir()) == []


_SIGTERM_IN_A_CALLBACK = """
import os, signal, time, weakref
from spherecodes.atomic import Terminated, ending_signals_raise
class Probe:
    pass
def callback(ref):
    os.kill(os.getpid(), signal.SIGTERM)  # its handler runs inside the weak reference's clean-up
try:
    with ending_signals_raise():
        probe = Probe(); ref = weakref.ref(probe, callback); del probe
        for _ in range(300):
            time.sleep(0.01)
    print("went on")
except Terminated as ended:
    print("ended by", ended)
"""


def test_a_sigterm_that_lands_in_a_callback_still_ends_the_work():
    """Python cannot raise from a weak reference's callback ("Exception ignored"): the signal is delivered again
    and raises at the program's next step, instead of being lost (a download then ran to its end)."""
    result = subprocess.run([sys.executable, "-c", _SIGTERM_IN_A_CALLBACK], capture_output=True, text=True, timeout=60)
    assert result.stdout == "ended by SIGTERM\n", (result.stdout, result.stderr)
