"""``spherecodes export``: a code's prototypes as a .npy, .pt, .csv or .txt file for a training script."""

from __future__ import annotations

import click

from ...atomic import check_not_input
from ...bank import read_code
from ...constructions import ROTATIONS
from ...export import EXPORT_DTYPES, export_code
from ..main import BANK, FILE, SEED, main


def export_options(command):
    """The options that say how prototypes are written: shared by ``export`` and ``fetch``."""
    for option in reversed([
        click.option("--rotation", type=click.Choice(ROTATIONS), default="canonical", show_default=True,
                     help="random: turn the code by a seeded random rotation first. Every cosine, max-cos, rho "
                     "and one-vs-rest distance stays the same; the coordinates change, so a closed form no "
                     "longer leaves most of them at zero."),
        click.option("--seed", type=SEED, default=0, show_default=True,
                     help="Seed of the random rotation."),
        click.option("--dtype", type=click.Choice(EXPORT_DTYPES), default="float64", show_default=True,
                     help="Number type of an exported .npy/.pt/.csv/.txt file (float64: the stored numbers exactly)."),
        click.option("--labels", "with_labels", is_flag=True,
                     help="With a .pt file: write a dict {prototypes, labels, name, sha256} instead of a bare tensor."),
    ]):
        command = option(command)
    return command


def refuse_unused_seed(rotation: str) -> None:
    """--seed with a rotation that is not random would do nothing: say so instead of ignoring it."""
    given = click.get_current_context().get_parameter_source("seed") != click.core.ParameterSource.DEFAULT
    if given and rotation != "random":
        raise click.UsageError("--seed sets the random rotation: give --rotation random with it, or drop --seed")


@main.command(name="export")
@click.argument("bank", type=BANK)
@click.option("--code", "--name", "name", default=None, metavar="CODE",
              help="Code to export; may be omitted if the bank holds one.")
@click.option("--out", type=FILE, required=True,
              help="File to write: .npy (NumPy), .pt/.pth (torch), .csv or .txt (text, one row per line).")
@export_options
@click.option("--overwrite", is_flag=True, help="Replace an existing --out file.")
def export_cmd(bank, name, out, rotation, seed, dtype, with_labels, overwrite):
    """Write the prototypes of a code in BANK to a file a training script can load.

    Row i of the file is the prototype of class i: of the code's label i when
    it has labels ('spherecodes report BANK --json' lists them in row order).

    \b
    Examples:
      spherecodes export spherecodes_d64_k1000.h5 --out prototypes.npy
      spherecodes export bank.h5 --code etf-d511-k100 --out head.pt --labels --rotation random --seed 1
      spherecodes export bank.h5 --out prototypes.csv --dtype float32
    """
    refuse_unused_seed(rotation)
    check_not_input(out, bank)  # x.npy -> bank.h5 with --overwrite would replace the bank with its own matrix
    code = read_code(bank, name)
    export_code(code, out, dtype=dtype, labels=with_labels, rotation=rotation, seed=seed, overwrite=overwrite)
    turned = f", turned by the random rotation of seed {seed} (same cosines and rho)" if rotation == "random" else ""
    click.echo(f"wrote {code.k} x {code.d} prototypes of {code.name} ({dtype}{turned}) to {out}")
