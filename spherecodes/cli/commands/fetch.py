"""``spherecodes fetch``: a precomputed certified code from the catalogs, SHA-256 verified."""

from __future__ import annotations

from pathlib import Path

import click

from ...atomic import check_not_input
from ...bank import write_code
from ...catalog import fetch_bank
from ...errors import SpherecodesError
from ...export import export_code, rotate_code
from ...generation import METHODS, unused_dimensions
from ...run import destination
from .._common import lock_notice, show_report
from ..main import COUNT, DIM, URL_HELP, CatalogLocation, main
from .export import export_options, refuse_unused_seed


@main.command(name="fetch")
@click.argument("catalog_name", metavar="[NAME]", required=False)
@click.option("--d", "d", type=DIM, default=None, help="Dimension of the prototypes.")
@click.option("--k", "k", type=COUNT, default=None, help="Number of prototypes.")
@click.option("--method", type=click.Choice(METHODS), default=None,
              help="tammes (smallest max-cos), softmax (largest rho), structured, ... Default: the closed form where "
              "one is optimal, else the structured code where it beats the catalog, else tammes, else what the "
              "catalog has.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also store the code: in a bank (.h5, created if missing), or as a matrix for a training "
              "script (.npy, .pt, .pth, .csv, .txt; see 'spherecodes export').")
@export_options
@click.option("--overwrite", is_flag=True,
              help="With --out: replace a code of the same name in the bank, or an existing matrix file.")
@click.option("--url", type=CatalogLocation(), default=None, help=URL_HELP)
@click.option("--offline", is_flag=True, help="Make no network request: use banks already in the cache.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON, with a 'fetched' key.")
@click.option("--quiet", "-q", is_flag=True, help="Print only where the bank came from.")
def fetch_cmd(**flags):
    """Get a precomputed certified code, verified by SHA-256.

    Give a catalog NAME (see 'spherecodes catalog list') or --d and --k.

    Looks in the bundled catalog first; builds closed forms (simplex,
    cross-polytope, polygon) on the spot; then downloads from the configured
    catalog into the per-user cache ($SPHERECODES_CACHE overrides where), from
    which --offline reads later.  The structured code for (d, K) (see
    'spherecodes codes') is built on the spot where it beats the catalogs' bank
    (e.g. --d 64 --k 1000: extended BCH at max-cos 1/8) or where they have none;
    --method structured, or a NAME structured-d<D>-k<K>, asks for it.  If
    nothing fits, the message gives the 'spherecodes generate' command that
    makes the code.

    A closed form or a structured code built here comes certified (from its
    symmetry: seconds).  A code that leaves dimensions unused (all-zero
    columns: a structured code of R^22 for --d 48, the simplex of 100 points
    in R^512) is turned by the random rotation of --seed into all d
    dimensions, its certificate carried through the rotation, unless
    --rotation canonical is given explicitly.

    \b
    Examples:
      spherecodes fetch --d 64 --k 1000
      spherecodes fetch --d 64 --k 1000 --method softmax --out protos.h5
      spherecodes fetch --d 512 --k 100 --rotation random --seed 1 --out cifar100.npy
      spherecodes fetch tammes-d128-k1000 --url https://example.org/spherecodes-banks/
      spherecodes catalog list
    """
    catalog_name, out, rotation, dtype = flags["catalog_name"], flags["out"], flags["rotation"], flags["dtype"]
    overwrite, as_json, quiet = flags["overwrite"], flags["as_json"], flags["quiet"]
    if catalog_name is None and (flags["d"] is None or flags["k"] is None):
        raise click.UsageError("give a catalog NAME, or --d and --k")
    if catalog_name is not None and any(flags[key] is not None for key in ("d", "k", "method")):
        raise click.UsageError("give either a catalog NAME or --d/--k/--method, not both")
    chosen = click.get_current_context().get_parameter_source("rotation") != click.core.ParameterSource.DEFAULT
    if chosen:
        refuse_unused_seed(rotation)  # else a code with unused dimensions is turned by --seed's rotation
    # Before the fetch, which can take a while; the fetched code's name is not known yet.
    matrix_file = out is not None and destination(out, None, overwrite=overwrite).matrix
    if (dtype != "float64" or flags["with_labels"]) and not matrix_file:
        raise SpherecodesError("--dtype and --labels apply to a matrix file: give --out FILE.npy, .pt, .csv or .txt")
    fetched = fetch_bank(catalog_name, d=flags["d"], k=flags["k"], method=flags["method"], url=flags["url"],
                         offline=flags["offline"])
    code = fetched.code
    if out is not None and fetched.path is not None:
        check_not_input(out, fetched.path)  # a link to the cached or bundled bank: never written over
    if fetched.source == "structured code":
        origin = (f"{code.name}: {code.settings['label']}, built here (exact max-cos {code.settings['exact_max_cos']}; "
                  "no download needed)")
    elif fetched.entry is None:
        origin = f"{code.name}: a closed form, constructed here (optimal; no download needed)"
    elif fetched.source == "bundled":
        origin = f"{fetched.entry.name}: from the bundled catalog, SHA-256 verified ({fetched.path})"
    elif fetched.downloaded:
        origin = f"{fetched.entry.name}: downloaded from {fetched.source}, SHA-256 verified, cached at {fetched.path}"
    else:
        origin = f"{fetched.entry.name}: from {fetched.source}, SHA-256 verified ({fetched.path})"
    if not chosen and unused_dimensions(code.prototypes):
        rotation = "random"
        origin += (f"\n{unused_dimensions(code.prototypes)} of its {code.d} dimensions were unused (all-zero columns): "
                   "--rotation canonical keeps them so")
    if rotation == "random":
        code = rotate_code(code, flags["seed"])
        origin += (f"\nturned by the random rotation of seed {flags['seed']}: the same cosines, max-cos, rho and "
                   f"one-vs-rest distances, in other coordinates (now {code.name})")
    if matrix_file:
        export_code(code, out, dtype=dtype, labels=flags["with_labels"], overwrite=overwrite)
        origin += f"\nwrote its {code.k} x {code.d} prototypes ({dtype}) to {out}"
    elif out is not None:
        write_code(out, code, overwrite=overwrite, waiting=lock_notice(not quiet))
        origin += f"\nstored as {code.name} in {out}"
    if not as_json:
        click.echo(origin)
    if as_json or not quiet:
        show_report(code, _bank_of(out, matrix_file, fetched, rotation == "random"), as_json, fetched={
            "source": fetched.source,
            "path": None if fetched.path is None else str(fetched.path),
            "downloaded": fetched.downloaded,
            "out": None if out is None else str(out),
            "entry": None if fetched.entry is None else fetched.entry.to_dict(),
        })


def _bank_of(out, matrix_file: bool, fetched, rotated: bool):
    """The bank the reported code is in: --out when that is a bank, else the fetched bank (not for a rotation)."""
    if out is not None and not matrix_file:
        return str(out)
    return None if rotated or fetched.path is None else str(fetched.path)
