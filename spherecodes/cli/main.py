"""The click application: the group, its one-line errors, and the option types the commands share.

Each command (one module per command or group in :mod:`spherecodes.cli.commands`)
parses its options, calls library functions, and prints the result as text or
JSON.  Errors a user can cause become one line on stderr and a non-zero exit
status (1 for bad input, 2 for bad usage, 130 for Ctrl-C).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import __version__
from ..devices import set_cpu_threads
from ..errors import SpherecodesError
from ..memory import parse_size
from ..semantic import EMBEDDING_FORMATS, MISSING_POLICIES

__all__ = ["BANK", "COUNT", "DIM", "FILE", "MAX_MEMORY_HELP", "URL_HELP", "DimensionRange", "MemorySize",
           "embedding_options", "main", "threads_option"]


class OneLineErrors(click.Group):
    """A group whose errors print as a single ``Error: ...`` line, without usage or traceback."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as err:
            click.echo(f"Error: {err.format_message()}", err=True)
            sys.exit(err.exit_code)
        except SpherecodesError as err:
            click.echo(f"Error: {err}", err=True)
            sys.exit(1)
        except (KeyboardInterrupt, click.Abort):
            click.echo("Interrupted; nothing was written.", err=True)
            sys.exit(130)
        sys.exit(result if isinstance(result, int) else 0)


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


def _apply_threads(ctx, param, value):
    """Set the process's CPU threads as soon as the option is parsed, before torch is loaded."""
    return set_cpu_threads(value)


def threads_option(command):
    """The ``--threads`` option of every command that computes."""
    return click.option(
        "--threads", type=click.IntRange(min=1), default=None, callback=_apply_threads, expose_value=False,
        help="CPU threads for the computation. Default: the cores this process may use (its CPU affinity "
        "and container quota).",
    )(command)


DIM = click.IntRange(min=1)
COUNT = click.IntRange(min=2)
FILE = click.Path(dir_okay=False, path_type=Path)


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
    command = click.option(
        "--missing-words", type=click.Choice(MISSING_POLICIES), default="error", show_default=True,
        help="A class name none of whose words has a vector: error (listing every such name) or "
        "random (a random vector seeded by the name: unrelated to every class).",
    )(command)
    return click.option(
        "--embeddings-format", type=click.Choice(EMBEDDING_FORMATS), default="auto", show_default=True,
        help="Format of --embeddings. auto recognises word2vec binary and text, GloVe text with or "
        "without its header line, and gensim saves (.save(); a pickle: load only files you trust).",
    )(command)


BANK = click.Path(path_type=Path, dir_okay=False)

URL_HELP = ("Catalog to use after the bundled one: an http(s):// URL or a directory holding registry.json. "
            "Default: $SPHERECODES_BANK_URL.")


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
        if bounds_[0] < 1 or bounds_[1] < bounds_[0]:
            self.fail(f"{value!r}: dimensions are >= 1 and a range A..B needs A <= B", param, ctx)
        return bounds_
