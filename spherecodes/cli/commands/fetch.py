"""``spherecodes fetch``: a precomputed certified code from the catalogs, SHA-256 verified."""

from __future__ import annotations

from pathlib import Path

import click

from ...bank import check_writable_destination, write_code
from ...catalog import fetch_bank
from ...report import code_report, format_code_report
from .._common import print_json
from ..main import COUNT, DIM, URL_HELP, main

@main.command(name="fetch")
@click.argument("catalog_name", metavar="[NAME]", required=False)
@click.option("--d", "d", type=DIM, default=None, help="Dimension of the prototypes.")
@click.option("--k", "k", type=COUNT, default=None, help="Number of prototypes.")
@click.option("--method", default=None,
              help="tammes (smallest max-cos), softmax (largest rho), ... Default: the closed form where one is "
              "optimal, else tammes, else what the catalog has.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also store the code in this bank file (created if missing).")
@click.option("--overwrite", is_flag=True, help="With --out: replace a code of the same name in the bank.")
@click.option("--url", default=None, metavar="URL|DIR", help=URL_HELP)
@click.option("--offline", is_flag=True, help="Make no network request: use banks already in the cache.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON, with a 'fetched' key.")
@click.option("--quiet", "-q", is_flag=True, help="Print only where the bank came from.")
def fetch_cmd(catalog_name, d, k, method, out, overwrite, url, offline, as_json, quiet):
    """Get a precomputed certified code, verified by SHA-256.

    Give a catalog NAME (see 'spherecodes catalog list') or --d and --k.

    Looks in the bundled catalog first; builds closed forms (simplex,
    cross-polytope, polygon) on the spot; then downloads from the configured
    catalog into the per-user cache ($SPHERECODES_CACHE overrides where), from
    which --offline reads later.  If no catalog has the code, the message gives
    the 'spherecodes generate' command that makes it.

    \b
    Examples:
      spherecodes fetch --d 64 --k 1000
      spherecodes fetch --d 64 --k 1000 --method softmax --out protos.h5
      spherecodes fetch tammes-d128-k1000 --url https://example.org/spherecodes-banks/
      spherecodes catalog list
    """
    if catalog_name is None and (d is None or k is None):
        raise click.UsageError("give a catalog NAME, or --d and --k")
    if catalog_name is not None and (d is not None or k is not None or method is not None):
        raise click.UsageError("give either a catalog NAME or --d/--k/--method, not both")
    if out is not None:
        check_writable_destination(out)
    fetched = fetch_bank(catalog_name, d=d, k=k, method=method, url=url, offline=offline)
    code = fetched.code
    if fetched.entry is None:
        origin = f"{code.name}: a closed form, constructed here (optimal; no download needed)"
    elif fetched.source == "bundled":
        origin = f"{fetched.entry.name}: from the bundled catalog, SHA-256 verified ({fetched.path})"
    elif fetched.downloaded:
        origin = f"{fetched.entry.name}: downloaded from {fetched.source}, SHA-256 verified, cached at {fetched.path}"
    else:
        origin = f"{fetched.entry.name}: from {fetched.source}, SHA-256 verified ({fetched.path})"
    if out is not None:
        write_code(out, code, overwrite=overwrite)
        origin += f"\nstored as {code.name} in {out}"
    if as_json:
        report = code_report(code, bank=str(out or fetched.path) if (out or fetched.path) else None)
        report["fetched"] = {
            "source": fetched.source,
            "path": None if fetched.path is None else str(fetched.path),
            "downloaded": fetched.downloaded,
            "out": None if out is None else str(out),
            "entry": None if fetched.entry is None else fetched.entry.to_dict(),
        }
        print_json(report)
        return
    click.echo(origin)
    if not quiet:
        click.echo(format_code_report(code_report(code, bank=str(out or fetched.path) if (out or fetched.path) else None)))
