"""Threads from the cores this process may use, and a command line that starts without torch."""

import shutil
import subprocess
import sys

import pytest

from spherecodes import devices


def python(script: str, *, prefix: tuple = ()) -> str:
    out = subprocess.run([*prefix, sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.parametrize("files, quota", [
    ({"cpu.max": "150000 100000\n"}, 1.5),
    ({"cpu.max": "max 100000\n"}, None),
    ({"cpu/cpu.cfs_quota_us": "50000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 0.5),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({}, None),
])
def test_cgroup_quota_v1_and_v2(tmp_path, files, quota):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert devices._cgroup_quota(str(tmp_path)) == quota


def test_usable_cores_follow_a_quota_below_the_affinity(monkeypatch):
    monkeypatch.setattr(devices, "_cgroup_quota", lambda: 0.5)
    assert devices.usable_cores() == 1


@pytest.mark.skipif(shutil.which("taskset") is None, reason="needs taskset")
def test_pinned_generate_reports_one_thread(tmp_path):
    script = (
        "import sys\n"
        "from spherecodes.cli import main\n"
        "main(['generate', '--d', '3', '--k', '6', '--method', 'tammes', '--steps', '20', '--restarts', '1',\n"
        "      '--out', sys.argv[1], '-q', '--no-certify'], standalone_mode=False)\n"
        "import torch, os\n"
        "print(torch.get_num_threads(), os.environ['OMP_WAIT_POLICY'])\n"
    )
    out = python(script.replace("sys.argv[1]", repr(str(tmp_path / "b.h5"))), prefix=("taskset", "-c", "0"))
    assert out.splitlines()[-1] == "1 PASSIVE"


def test_threads_option_sets_torch_threads(tmp_path):
    script = (
        "from spherecodes.cli import main\n"
        f"main(['generate', '--d', '3', '--k', '6', '--method', 'tammes', '--steps', '20', '--restarts', '1',"
        f" '--out', {str(tmp_path / 'b.h5')!r}, '-q', '--no-certify', '--threads', '1'], standalone_mode=False)\n"
        "import torch\n"
        "print(torch.get_num_threads())\n"
    )
    assert python(script).splitlines()[-1] == "1"


def test_help_and_closed_forms_do_not_load_torch(tmp_path):
    script = (
        "import sys\n"
        "from spherecodes.cli import main\n"
        "print('loaded at start:', 'torch' in sys.modules, 'scipy.stats' in sys.modules)\n"
        f"main(['generate', '--d', '11', '--k', '12', '--out', {str(tmp_path / 'a.h5')!r}, '-q'], standalone_mode=False)\n"
        f"main(['generate', '--d', '64', '--k', '100', '--rotation', 'random', '--out', {str(tmp_path / 'a.h5')!r}, '-q'],"
        " standalone_mode=False)\n"
        f"main(['fetch', '--d', '20', '--k', '21', '--out', {str(tmp_path / 'f.h5')!r}, '-q'], standalone_mode=False)\n"
        "print('loaded at end:', 'torch' in sys.modules)\n"
    )
    lines = [line for line in python(script).splitlines() if line.startswith("loaded")]
    assert lines == ["loaded at start: False False", "loaded at end: False"]


def test_stored_closed_forms_are_certified_exactly(tmp_path):
    from spherecodes.bank import read_code
    from spherecodes.cli import main

    bank = tmp_path / "c.h5"
    main(["generate", "--d", "64", "--k", "100", "--out", str(bank), "-q"], standalone_mode=False)
    code = read_code(bank, "cross-polytope-d64-k100")
    # Jiang et al. (2024) Thm 3.3: K vertices of the cross-polytope, d + 2 <= K <= 2d, have rho = 1.
    assert code.certificate.certified and code.certificate.width <= 1e-12
    assert abs(code.certificate.rho_lower - 1) <= 1e-12


def test_a_thread_count_beyond_any_machine_is_one_error_line():
    from click.testing import CliRunner

    from spherecodes.cli import main

    result = CliRunner().invoke(main, ["generate", "--d", "3", "--k", "6", "--threads", str(10**20)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "'--threads'" in result.output and "1<=x<=4096" in result.output


@pytest.mark.parametrize("given", [(), ("--threads", "usable")])
def test_the_run_context_carries_the_thread_count_the_command_set(monkeypatch, tmp_path, given):
    """--threads N, or the cores this process may use without it (the count the process runs with either way)."""
    from click.testing import CliRunner

    from spherecodes.cli import main
    from spherecodes.cli.commands import generate as command
    from spherecodes.errors import SpherecodesError

    seen = {}

    def planned(*args, context, **kwargs):
        seen["threads"] = context.threads
        raise SpherecodesError("planned")

    monkeypatch.setattr(command, "plan_run", planned)
    cores = devices.usable_cores()
    flags = [str(cores) if flag == "usable" else flag for flag in given]
    result = CliRunner().invoke(main, ["generate", "--d", "3", "--k", "6", "--out", str(tmp_path / "b.h5"), *flags])
    assert result.exit_code == 1 and "planned" in result.output
    assert seen == {"threads": cores}


def test_a_catalog_task_sets_its_torch_pool_from_the_context(tmp_path):
    import torch

    from spherecodes.catalog import BankOptions, build_bank
    from spherecodes.context import RunContext

    before = torch.get_num_threads()
    try:
        # The default thread count of the process stays as it is; a task's context names its share.
        summary = build_bank(3, 7, "tammes", tmp_path, BankOptions(steps=20, restarts=1),
                             context=RunContext(device="cpu", threads=1))
        assert summary["status"] == "built" and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
