"""The click application: the group, its one-line errors, and the option types the commands share.

Each command (one module per command or group in :mod:`spherecodes.cli.commands`)
parses its options, calls library functions, and prints the result as text or
JSON.  Errors a user can cause become one line on stderr and a non-zero exit
status (1 for bad input, 2 for bad usage, 130 for Ctrl-C).
"""

from __future__ import annotations

import math
import os
import sys
from importlib import import_module
from pathlib import Path

import click

from .. import __version__
from ..atomic import Terminated, ending_signals_raise, written_files
from ..checks import SEED_LIMIT
from ..devices import set_cpu_threads
from ..errors import SpherecodesError
from ..memory import parse_size
from ._loading import unraisable_interrupts

__all__ = ["BANK", "COMMANDS", "COUNT", "DIM", "FILE", "MAX_MEMORY_HELP", "MAX_SIZE", "MAX_THREADS", "SECONDS", "SEED", "THREADS_KEY",
           "URL_HELP", "CatalogLocation", "DimensionRange", "FiniteFloat", "MemorySize", "SchedulerAddress",
           "embedding_options", "main", "threads_option"]

#: Each command: the module of :mod:`spherecodes.cli.commands` that defines it, and the first line of its help,
#: which ``spherecodes --help`` lists without loading the module (``tests/test_startup.py`` checks both).
COMMANDS = {
    "assign": ("assign", "Choose which class gets which prototype of a code in BANK."),
    "bounds": ("bounds", "What is provably possible for K prototypes in R^d."),
    "cache": ("cache", "The per-user cache: downloaded banks and computed LP bounds."),
    "catalog": ("catalog", "Catalogs of precomputed banks: list, publish, build."),
    "certify": ("certify", "Certify the one-vs-rest distances and rho of a code."),
    "codes": ("codes", "List the structured codes available in R^d, with sizes and exact max-cos."),
    "export": ("export", "Write the prototypes of a code in BANK to a file a training script can load."),
    "extend": ("extend", "Add M prototypes to a code of BANK, for classes that come later."),
    "fetch": ("fetch", "Get a precomputed certified code, verified by SHA-256."),
    "generate": ("generate", "Compute a code for (d, K), store it in a bank, and print its report."),
    "ls": ("bank", "List the codes in BANK."),
    "report": ("report", "Report the separation statistics and bounds of a code in BANK."),
    "rm": ("bank", "Delete codes from BANK (the bank is rewritten atomically)."),
}


class OneLineErrors(click.Group):
    """A group whose errors print as a single ``Error: ...`` line, without usage or traceback, and whose commands
    (:data:`COMMANDS`) are loaded on first use, so that starting the tool loads only what the command needs."""

    def list_commands(self, ctx):
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx, name):
        if name not in self.commands and name in COMMANDS:
            with unraisable_interrupts():  # the command module registers itself on this group
                import_module(f"{__package__}.commands.{COMMANDS[name][0]}")
        return self.commands.get(name)

    def format_commands(self, ctx, formatter):
        """The list of commands, from :data:`COMMANDS`: as click words it, without loading them."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        # A loaded command words its own line; the others are worded by click from the summary alone.
        rows = [(name, (self.commands[name] if name in self.commands else click.Command(name, help=COMMANDS[name][1]))
                 .get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        earlier_writes = len(written_files())  # several commands may run in one process (tests, notebooks)
        try:
            # SIGTERM and SIGHUP end the command as Ctrl-C does: every file being written is abandoned, never left.
            with ending_signals_raise():
                result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as err:
            click.echo(f"Error: {err.format_message()}", err=True)
            sys.exit(err.exit_code)
        except SpherecodesError as err:
            from ..report import printable

            click.echo(f"Error: {printable(err.for_cli())}", err=True)  # one line, whatever a file's names hold
            bank = sys.modules.get(f"{__package__.rpartition('.')[0]}.bank")  # no bank read: no file left open
            if bank is not None and bank.hdf5_left_unclosed():  # HDF5's clean-up at exit would crash on it
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(1)
            sys.exit(1)
        except (KeyboardInterrupt, click.Abort):
            # A terminal echoes "^C" without a newline: the message then starts a line of its own.
            start = "\n" if sys.stderr.isatty() else ""
            click.echo(start + interrupted_message(written_files()[earlier_writes:]), err=True)
            sys.exit(130)
        except Terminated as ended:
            # The shell's convention for a process ended by a signal: 128 + its number (143 for SIGTERM).
            click.echo(interrupted_message(written_files()[earlier_writes:], f"Ended by {ended}"), err=True)
            sys.exit(128 + ended.signum)
        sys.exit(result if isinstance(result, int) else 0)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            # Click would print an empty line first (in a log or a pipe too): the message above says it all.
            raise click.Abort() from None


def interrupted_message(writes, what: str = "Interrupted") -> str:
    """What Ctrl-C (or ``what``) left behind, from the files the command set out to write and whether each holds it.

    Examples
    --------
    >>> interrupted_message([])
    'Interrupted; nothing was written.'
    >>> interrupted_message([(Path("bank.h5"), True)])
    'Interrupted after bank.h5 was written in full (the change is stored).'
    >>> interrupted_message([(Path("bank.h5"), False)], "Ended by SIGTERM")
    'Ended by SIGTERM before bank.h5 was written; it is unchanged.'
    """
    if not writes:
        return f"{what}; nothing was written."
    done = ", ".join(str(path) for path, stored in writes if stored)
    not_done = ", ".join(str(path) for path, stored in writes if not stored)
    if not not_done:
        return f"{what} after {done} was written in full (the change is stored)."
    if not done:
        return f"{what} before {not_done} was written; it is unchanged."
    return f"{what}; written in full: {done}; not written (unchanged): {not_done}."


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="spherecodes")
def main():
    """Maximally separated class prototypes on the hypersphere.

    Compute a code of K unit vectors in R^d, store it in an HDF5 bank with
    exact float64 statistics, and report how close it is to what is provably
    possible.

    \b
    Examples:
      spherecodes generate --d 11 --k 12
      spherecodes report spherecodes_d11_k12.h5
      spherecodes bounds --d 512 --k 100000 --json
    """


#: Where ``--threads`` leaves the thread count it set, for the command's :class:`spherecodes.context.RunContext`.
THREADS_KEY = "spherecodes.threads"


def _apply_threads(ctx, param, value):
    """Set the process's CPU threads as soon as the option is parsed, before torch is loaded; keep the count."""
    ctx.meta[THREADS_KEY] = set_cpu_threads(value)
    return ctx.meta[THREADS_KEY]


#: More threads than any machine has cores: torch and OpenMP take a C int, and a larger count only oversubscribes.
MAX_THREADS = 4096


def threads_option(command):
    """The ``--threads`` option of every command that computes."""
    return click.option(
        "--threads", type=click.IntRange(min=1, max=MAX_THREADS), default=None, callback=_apply_threads,
        expose_value=False,
        help=f"CPU threads for the computation, 1 to {MAX_THREADS}. Default: the cores this process may use (its "
        "CPU affinity and container quota).",
    )(command)


#: Largest dimension or number of prototypes: a bank stores them as 64-bit integers.
MAX_SIZE = 2**63 - 1
DIM = click.IntRange(min=1, max=MAX_SIZE)
COUNT = click.IntRange(min=2, max=MAX_SIZE)
FILE = click.Path(dir_okay=False, path_type=Path)
#: Seeds fit in a signed 64-bit integer (NumPy's generators and the bank's seed attribute take them).
SEED = click.IntRange(min=0, max=SEED_LIMIT - 1)
#: The efforts of the tammes optimiser (spherecodes.solvers.EFFORTS, not imported here: it brings torch).
EFFORT = click.Choice(("low", "default", "high", "record"))


class FiniteFloat(click.FloatRange):
    """A float in a range that is also finite: ``nan`` and ``inf`` are refused as usage errors."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


#: Seconds, for --time-limit.
SECONDS = FiniteFloat(min=0, min_open=True)


class MemorySize(click.ParamType):
    """A memory size such as ``4GiB`` or ``512MB``, parsed to bytes."""

    name = "SIZE"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            return parse_size(value)
        except SpherecodesError as err:
            self.fail(str(err), param, ctx)


MAX_MEMORY_HELP = ("Most memory the work may use on the device, e.g. 4GiB or 512MB. Default: 80% of what is free "
                   "there. Blocks are sized to fit; a size that cannot fit is refused before any work.")


def embedding_options(command):
    """The options that say how to read --embeddings and what to do with names they lack."""
    from ..semantic import EMBEDDING_FORMATS, MISSING_POLICIES

    command = click.option(
        "--missing-words", type=click.Choice(MISSING_POLICIES), default="error", show_default=True,
        help="A class name none of whose words has a vector: error (listing every such name) or "
        "random (a random vector seeded by the name: unrelated to every class).",
    )(command)
    return click.option(
        "--embeddings-format", type=click.Choice(EMBEDDING_FORMATS), default="auto", show_default=True,
        help="Format of --embeddings. auto recognises word2vec binary and text and GloVe text with or "
        "without its header line, reading them as data; auto never unpickles. gensim loads a gensim .save(), "
        "which is a Python pickle: loading one can run any code it holds, so name this format only for files "
        "you trust.",
    )(command)


BANK = click.Path(path_type=Path, dir_okay=False)

URL_HELP = ("Catalog to use after the bundled one: an http(s):// URL or a directory holding registry.json. "
            "Default: $SPHERECODES_BANK_URL.")


class SchedulerAddress(click.ParamType):
    """A Dask scheduler's address, checked for its form (not yet reached)."""

    name = "ADDRESS"

    def convert(self, value, param, ctx):
        from ..cluster import check_scheduler_address

        try:
            return check_scheduler_address(value)
        except SpherecodesError as err:
            self.fail(str(err), param, ctx)


class DimensionRange(click.ParamType):
    """A dimension ``D`` or an inclusive range ``A..B`` of dimensions; parsed as ``(A, B)``."""

    name = "D|A..B"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        text = str(value).strip()
        lo, sep, hi = text.partition("..")
        try:
            bounds_ = (int(lo), int(hi) if sep else int(lo))
        except ValueError:
            self.fail(f"{value!r} is not a dimension or a range A..B of dimensions", param, ctx)
        if bounds_[0] < 1 or bounds_[1] < bounds_[0] or bounds_[1] > MAX_SIZE:
            self.fail(f"{value!r}: dimensions are 1 to {MAX_SIZE} and a range A..B needs A <= B", param, ctx)
        if bounds_[1] - bounds_[0] >= self.MAX_SPAN:
            self.fail(f"{value!r}: a range A..B may span at most {self.MAX_SPAN:,} dimensions", param, ctx)
        return bounds_

    #: Most dimensions a range may hold (each is one point of a plot).
    MAX_SPAN = 100_000


class CatalogLocation(click.ParamType):
    """A catalog: an http(s):// or file:// URL or a directory (checked for its form, not yet reached)."""

    name = "URL|DIR"

    def convert(self, value, param, ctx):
        from ..catalog import check_location

        try:
            return check_location(value)
        except SpherecodesError as err:
            self.fail(str(err), param, ctx)
