"""``spherecodes bounds``: what is provably possible for K prototypes in R^d, as text, JSON or a plot."""

from __future__ import annotations

from pathlib import Path

import click

from ...checks import check_sizes
from ...plots import check_plot_path, plot_bounds
from ...report import bounds_report, format_bounds_report
from .._common import print_json
from ..main import COUNT, CatalogLocation, DimensionRange, main, threads_option

@main.command()
@click.option("--d", "d", type=DimensionRange(), required=True,
              help="Dimension (>= 1), or a range A..B of dimensions for --plot.")
@click.option("--k", "k", type=COUNT, required=True, help="Number of prototypes (>= 2).")
@click.option("--json", "as_json", is_flag=True, help="Print the bounds as JSON.")
@click.option("--plot", "plot", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="OUT",
              help="Draw the Theorem 3.9 band on the best possible rho against d (give --d A..B) into OUT "
              "(.png, .pdf or .svg), with the certified rho of the catalog's banks for this K on top.")
@click.option("--url", type=CatalogLocation(), default=None,
              help="With --plot: also overlay the banks of this catalog. Default: $SPHERECODES_BANK_URL.")
@click.option("--offline", is_flag=True, help="With --plot: read that catalog's registry from the cache.")
@threads_option
def bounds(d, k, as_json, plot, url, offline):
    """What is provably possible for K prototypes in R^d.

    Prints a lower bound on max-cos that no K-point code beats, and the
    Theorem 3.9 bounds (Jiang et al.) on the best one-vs-rest distance rho.

    \b
    Examples:
      spherecodes bounds --d 512 --k 100000
      spherecodes bounds --k 1000 --d 8..512 --plot rho_vs_d.png
    """
    if plot is not None:
        if d[0] == d[1]:
            raise click.UsageError("--plot draws the bounds against d: give a range such as --d 8..512")
        check_plot_path(plot)
        check_sizes(d[0], k)
        from ...catalog import catalog_entries  # here: the catalogs (and generate, which they call) only for --plot

        entries = catalog_entries(url, offline=offline)
        plot_bounds(k, range(d[0], d[1] + 1), plot, entries=entries)
        shown = sum(1 for e in entries if e.k == k and d[0] <= e.d <= d[1])
        click.echo(f"plot written to {plot} (Theorem 3.9 for K = {k}, d = {d[0]}..{d[1]}; "
                   f"{shown} catalog bank{'s' if shown != 1 else ''} overlaid)")
        return
    if d[0] != d[1]:
        raise click.UsageError("a range of dimensions is for --plot; give one --d for the text or JSON report")
    if url is not None or offline:
        raise click.UsageError("--url and --offline choose the catalog banks drawn by --plot")
    d = d[0]
    check_sizes(d, k)
    result = bounds_report(d, k)
    if as_json:
        print_json(result)
    else:
        click.echo(format_bounds_report(result))
