"""``spherecodes catalog list | publish | build``: catalogs of precomputed banks."""

from __future__ import annotations

from pathlib import Path

import click

from ...catalog import BankOptions, build_catalog, catalog_entries, parse_grid, parse_methods, structured_offers
from ...catalog import publish as publish_catalog
from ...memory import parse_size
from ...registry import REGISTRY_FILE
from ...report import format_bytes, format_entries, format_offers
from .._common import SCHEDULER_HELP, TRUST_SCHEDULER_HELP, BuildProgress, check_cluster_flags, print_json, run_context
from ..main import EFFORT, MAX_THREADS, SECONDS, SEED, URL_HELP, CatalogLocation, SchedulerAddress, main

@main.group(name="catalog")
def catalog_cmd():
    """Catalogs of precomputed banks: list, publish, build.

    A catalog is a folder of banks with a registry.json that lists each code
    with its SHA-256, size, max-cos, certified rho interval and LP-bound gap.
    spherecodes ships one (the bundled catalog); any HTTP(S) server or
    directory can host another: point --url or $SPHERECODES_BANK_URL at it.

    \b
    Examples:
      spherecodes catalog list
      spherecodes catalog build --grid "d=16,32,64 k=100,1000" --methods tammes --out my-banks
      spherecodes catalog publish my-banks
    """


@catalog_cmd.command(name="list")
@click.option("--url", type=CatalogLocation(), default=None, help=URL_HELP)
@click.option("--offline", is_flag=True, help="Read a remote catalog's registry from the cache.")
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON (with a 'source' key each).")
def catalog_list(url, offline, as_json):
    """List the banks of the bundled catalog and of the configured one.

    Below them: the structured codes that beat those banks at their sizes,
    which 'spherecodes fetch' builds on demand (they are exact, and built in
    milliseconds, so they are not stored). With --json they follow the banks,
    with "source": "built on demand".
    """
    entries = catalog_entries(url, offline=offline)
    offers = structured_offers(entries)
    if as_json:
        print_json([{**e.to_dict(), "source": e.source} for e in entries] + [o.to_dict() for o in offers])
    else:
        click.echo(format_entries(entries))
        if offers:
            click.echo(format_offers(offers))


@catalog_cmd.command(name="publish")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--best", is_flag=True,
              help="List only, per (d, K), the code with the smallest max-cos and, where it is a different code "
              "with a larger certified rho, the one with the largest rho.")
@click.option("--into", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DEST",
              help="Copy the listed banks into DEST and write the registry there (banks DEST's old registry "
              "listed and the new one does not are removed). This is how banks/ is made from a build folder.")
@click.option("--max-size", default=None, metavar="SIZE",
              help="Most the listed bank files may take (e.g. 25MB, 24MiB): the second code of a (d, K), kept "
              "for its larger rho, is left out, largest file first, until they fit.")
@click.option("--compressed", is_flag=True,
              help="Count --max-size in deflate-compressed bytes, what the banks add to a wheel or zip, instead of "
              "bytes on disk (small banks compress about five-fold).")
@click.option("--json", "as_json", is_flag=True, help="Print the published entries as JSON.")
def catalog_publish(directory, best, into, max_size, compressed, as_json):
    """Write the registry.json of a folder of banks, making it a catalog.

    Every code of every DIRECTORY/*.h5 bank must be certified (spherecodes
    certify BANK --write).  Max-cos, the rho interval and the LP-bound gap are
    computed afresh in float64 from the stored prototypes, and the
    certificate is checked against its witness.  Serve the folder over HTTP(S)
    (any static file server) or share it as a directory.

    \b
    Examples:
      spherecodes catalog publish my-banks
      spherecodes catalog publish catalog-build --best --into banks --max-size 25MB --compressed
    """
    budget = parse_size(max_size, "--max-size") if max_size is not None else None
    cat = publish_catalog(directory, best=best, into=into, max_size=budget, compressed=compressed)
    if as_json:
        print_json([e.to_dict() for e in cat.entries])
        return
    target = into if into is not None else directory
    click.echo(format_entries(cat.entries))
    if cat.left_out:
        unit = " compressed" if compressed else ""
        click.echo(f"left out to fit {format_bytes(budget)}{unit}: " + ", ".join(e.name for e in cat.left_out))
    click.echo(f"wrote {target / REGISTRY_FILE}: {len(cat.entries)} codes in "
               f"{len({e.file for e in cat.entries})} files, {format_bytes(cat.total_size)}")


@catalog_cmd.command(name="build")
@click.option("--grid", required=True, metavar='"d=LIST k=LIST"',
              help='Sizes to build: every (d, K) of the two lists, e.g. "d=16,32,64 k=100,1000"; A..B is a range. '
              "Sizes where a closed form is optimal (K <= 2d, d = 2) are left out: fetch constructs them.")
@click.option("--methods", default="tammes", show_default=True,
              help="Comma-separated optimisers, one bank per (d, K, method).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder of the banks (created if missing); banks finished there by an earlier run are skipped.")
@click.option("--workers", type=click.IntRange(min=1, max=MAX_THREADS), default=None,
              help=f"Workers of the local Dask cluster, 1 to {MAX_THREADS} (never more than banks to build). "
              "Default: one per CPU core (at most one per bank).")
@click.option("--scheduler", type=SchedulerAddress(), default=None,
              help="Run on an existing Dask cluster (e.g. tls://10.0.0.5:8786) instead of a local one; "
              "--out must then be on a file system every worker sees under the same path. " + SCHEDULER_HELP
              + " (A bank given --time-limit T has 2T + 10 min, if that is longer.)")
@click.option("--trust-scheduler", is_flag=True, help=TRUST_SCHEDULER_HELP)
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of every optimiser run.")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="Steps per start. Default: chosen from (d, K).")
@click.option("--restarts", type=click.IntRange(min=1), default=None,
              help="Random starts. Default: chosen from (d, K).")
@click.option("--time-limit", type=SECONDS, default=None, metavar="SECONDS",
              help="Stop each optimiser then and keep its best code.")
@click.option("--device", default="auto", show_default=True, help="auto (CUDA when present), cpu, cuda or cuda:N.")
@click.option("--effort", type=EFFORT, default="default", show_default=True,
              help="tammes banks only: how much work each spends, as 'spherecodes generate --effort' (high: more "
              "starts, then rounds of perturb-and-repolish of the best code; record: the record search, some of "
              "whose chains start from the finished banks of K ± 1 and K ± 2 in --out).")
@click.option("--improve", is_flag=True,
              help="Search again the finished banks whose code is short of its size's published best-known value "
              "(spherecodes report shows it), with this command's settings (--effort record resumes from the "
              "bank's code), and replace a bank only with a code of smaller max-cos. Without it finished banks "
              "are skipped.")
@click.option("--publish/--no-publish", default=True, show_default=True,
              help="Write the folder's registry.json when the banks are done.")
@click.option("--quiet", "-q", is_flag=True, help="No progress and no table.")
def catalog_build(**flags):
    """Build a catalog: one certified bank per (d, K, method), as tasks on Dask distributed.

    Each bank is generated, certified and written to OUT/<method>-d<D>-k<K>.h5
    (atomically) by one task on a local Dask cluster, or on an existing cluster
    given --scheduler.  Finished banks are skipped, so an interrupted build is
    resumed by running the same command again; --improve searches again those
    short of their published best-known value.  At the end the registry is
    published (see 'spherecodes catalog publish').

    \b
    Examples:
      spherecodes catalog build --grid "d=16,32,64 k=100,1000" --methods tammes,softmax --out my-banks
      spherecodes catalog build --grid "d=3 k=7..12" --out small --workers 2 --steps 500
      spherecodes catalog build --grid "d=6 k=98" --methods tammes --effort high --out records
      spherecodes catalog build --grid "d=3 k=7..130" --effort record --time-limit 600 --improve --out records
      spherecodes catalog build --grid "d=128 k=1000" --out /shared/banks --scheduler tls://10.0.0.5:8786
    """
    check_cluster_flags(flags["workers"], flags["scheduler"], flags["trust_scheduler"])
    pairs = parse_grid(flags["grid"])
    method_list = parse_methods(flags["methods"])
    options = BankOptions(seed=flags["seed"], steps=flags["steps"], restarts=flags["restarts"], effort=flags["effort"],
                          improve=flags["improve"])
    progress = BuildProgress(enabled=not flags["quiet"])
    try:
        result = build_catalog(pairs, method_list, flags["out"], options,
                               context=run_context(flags, progress=progress),
                               workers=flags["workers"], scheduler=flags["scheduler"],
                               trust_scheduler=flags["trust_scheduler"], publish=flags["publish"])
    finally:
        progress.close()
    if flags["quiet"]:
        return
    if result.closed_forms:
        sizes = ", ".join(f"d={d} K={k} ({form})" for d, k, form in result.closed_forms)
        click.echo(f"left out {len(result.closed_forms)} sizes where a closed form is optimal "
                   f"(fetch constructs them): {sizes}")
    improved = sum(b["status"] == "improved" for b in result.built)
    kept = sum(b["status"] == "kept" for b in result.skipped)
    click.echo(f"built {len(result.built) - improved}, finished before {len(result.skipped) - kept}"
               + (f", searched again {improved + kept} (improved {improved})" if flags["improve"] else ""))
    if result.catalog is not None:
        cat = result.catalog
        click.echo(format_entries(cat.entries))
        click.echo(f"wrote {Path(flags['out']) / 'registry.json'}: {len(cat.entries)} codes, {format_bytes(cat.total_size)}")
