"""The click application: a thin shell over the library.

Each command parses its options, calls one library function, and prints the
result as text or JSON.  Errors a user can cause become one line on stderr and
a non-zero exit status (1 for bad input, 2 for bad usage, 130 for Ctrl-C).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .. import __version__
from ..bank import check_writable_destination, delete_code, list_codes, read_code, write_code
from ..bounds import check_sizes
from ..errors import SpherecodesError
from ..generation import METHODS, generate, planned_code_name
from ..report import bounds_report, code_report, format_bounds_report, format_code_report


class _OneLineErrors(click.Group):
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


def _print_json(data) -> None:
    click.echo(json.dumps(data, indent=2, allow_nan=False))


def default_bank_path(d: int, k: int) -> Path:
    """Bank file used when ``--out`` is not given: ``spherecodes_d<d>_k<k>.h5``."""
    return Path(f"spherecodes_d{d}_k{k}.h5")


@click.group(cls=_OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
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


DIM = click.IntRange(min=1)
COUNT = click.IntRange(min=2)


@main.command()
@click.option("--d", "d", type=DIM, required=True, help="Dimension of the prototypes (>= 1).")
@click.option("--k", "k", type=COUNT, required=True, help="Number of prototypes, one per class (>= 2).")
@click.option(
    "--method",
    type=click.Choice(("auto",) + METHODS),
    default="auto",
    show_default=True,
    help="Construction; auto picks the closed form that applies to (d, K).",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Random seed.")
@click.option(
    "--rotation",
    type=click.Choice(("canonical", "random")),
    default="canonical",
    show_default=True,
    help="Orientation of a closed form: canonical coordinates or a seeded Haar-random rotation.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Bank file to write into (created if missing). Default: spherecodes_d<D>_k<K>.h5.",
)
@click.option("--name", default=None, help="Code name inside the bank. Default: <method>-d<D>-k<K>[-s<seed>].")
@click.option("--overwrite", is_flag=True, help="Replace a code of the same name in the bank.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def generate_cmd(d, k, method, seed, rotation, out, name, overwrite, as_json):
    """Compute a code for (d, K), store it in a bank, and print its report."""
    out = check_writable_destination(out or default_bank_path(d, k))
    name = name or planned_code_name(d, k, method, seed=seed, rotation=rotation)
    # Refuse an existing code before computing anything: generation can be long.
    if out.exists() and not overwrite and name in {c["name"] for c in list_codes(out)}:
        raise SpherecodesError(f"code {name!r} already exists in {out}; pass --overwrite to replace it")
    code = generate(d, k, method, seed=seed, rotation=rotation, name=name)
    write_code(out, code, overwrite=overwrite)
    _show_report(code, str(out), as_json)


main.add_command(generate_cmd, name="generate")


def _show_report(code, bank: str, as_json: bool) -> None:
    report = code_report(code, bank=bank)
    if as_json:
        _print_json(report)
    else:
        click.echo(format_code_report(report))


BANK = click.Path(path_type=Path, dir_okay=False)


@main.command()
@click.argument("bank", type=BANK)
@click.option("--code", "name", default=None, help="Code to report; may be omitted if the bank holds one.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def report(bank, name, as_json):
    """Report the separation statistics and bounds of a code in BANK."""
    _show_report(read_code(bank, name), str(bank), as_json)


@main.command(name="ls")
@click.argument("bank", type=BANK)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def ls_cmd(bank, as_json):
    """List the codes in BANK."""
    rows = list_codes(bank)
    if as_json:
        _print_json(rows)
        return
    if not rows:
        click.echo(f"{bank}: no codes")
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        click.echo(
            f"{r['name']:<{width}}  {r['method']:<14}  d={r['d']:<5} K={r['k']:<8} "
            f"max-cos {r['max_cos']:.10g}  {r['created_utc']}"
        )


@main.command(name="rm")
@click.argument("bank", type=BANK)
@click.option("--code", "name", required=True, help="Code to delete.")
def rm_cmd(bank, name):
    """Delete a code from BANK (the bank is rewritten atomically)."""
    delete_code(bank, name)
    click.echo(f"deleted {name} from {bank}")


@main.command()
@click.option("--d", "d", type=DIM, required=True, help="Dimension (>= 1).")
@click.option("--k", "k", type=COUNT, required=True, help="Number of prototypes (>= 2).")
@click.option("--json", "as_json", is_flag=True, help="Print the bounds as JSON.")
def bounds(d, k, as_json):
    """What is provably possible for K prototypes in R^d.

    Prints a lower bound on max-cos that no K-point code beats, and the
    Theorem 3.9 bounds (Jiang et al.) on the best one-vs-rest distance rho.
    """
    check_sizes(d, k)
    result = bounds_report(d, k)
    if as_json:
        _print_json(result)
    else:
        click.echo(format_bounds_report(result))
