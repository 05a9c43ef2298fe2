"""``spherecodes certify``: certify the one-vs-rest distances and rho of a bank's code or of any matrix file."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from ...bank import write_code
from ...certificate import DEFAULT_TOL, check_dask_device
from ...cluster import dask_client
from ...errors import SpherecodesError
from ...lines import line_report
from ...memory import ABSURD_SECONDS, format_duration
from ...loading import load_code
from ...report import format_line_report
from .._common import certify as certify_code
from .._common import (NOTABLE_READ_SECONDS, SCHEDULER_HELP, TRUST_SCHEDULER_HELP, ProgressBar, check_bank_rewritable,
                       check_cluster_flags, lock_notice, print_json, read_with_certificate_check, run_context,
                       show_report, tell)
from ..main import MAX_MEMORY_HELP, FiniteFloat, MemorySize, SchedulerAddress, main, threads_option

@main.command()
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--code", "name", default=None, help="Code inside a bank; may be omitted if the bank holds one.")
@click.option("--tol", type=FiniteFloat(min=0, min_open=True), default=DEFAULT_TOL, show_default=True,
              help="Largest allowed width of each class's certified interval.")
@click.option("--normalize", is_flag=True, help="Rescale rows to unit length instead of refusing them.")
@click.option("--device", default="auto", show_default=True, help="auto (CUDA when present), cpu, cuda or cuda:N.")
@click.option("--write", is_flag=True, help="Store the certificate in the bank (banks only).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (per-class distances included).")
@click.option("--max-memory", type=MemorySize(), default=None, help=MAX_MEMORY_HELP)
@click.option("--lines", "as_lines", is_flag=True,
              help="Treat the rows as lines (a vector up to its sign, as Equiangular Basis Vectors do): report the "
              "largest |cos| in float64 against the Welch and orthoplex bounds, which certify it optimal where it "
              "meets them and otherwise bound how far from optimal it can be; rho is not computed.")
@click.option("--quiet", "-q", is_flag=True, help="No estimate and no progress bar on stderr.")
@click.option("--scheduler", type=SchedulerAddress(), default=None,
              help="Solve the QP's blocks of classes as tasks on an existing Dask cluster (e.g. tls://10.0.0.5:8786), "
              "on its workers' CPUs; the certificate is the same as without it. " + SCHEDULER_HELP)
@click.option("--trust-scheduler", is_flag=True, help=TRUST_SCHEDULER_HELP)
@click.option("--workers", type=click.IntRange(min=1, max=256), default=None,
              help="Solve the QP's blocks of classes on a local Dask cluster of this many worker processes.")
@threads_option
def certify(**flags):
    """Certify the one-vs-rest distances and rho of a code.

    FILE is a spherecodes bank (.h5), or a (K, d) prototype matrix from any
    tool: .npy, a torch tensor (.pt/.pth), or .txt/.csv text.  Each class's
    distance to the convex hull of the other prototypes is bracketed by a
    primal point (upper end) and a dual direction (lower end), both checked in
    float64 against all K prototypes.

    The classes are processed in blocks sized to --max-memory, each checked
    against all K prototypes tile by tile, so memory stays O(K d) plus the
    blocks; on a CPU the blocks are shared among up to 4 of the --threads
    as workers, or with --scheduler/--workers among the workers of a Dask
    cluster. A code that is one orbit of sign changes (a binary linear code)
    is certified from one class.  The memory and time expected (the time from settling a
    sample of 128 classes by their nearest shells and, where the QP is
    needed, from certifying one block of classes spread over the code) are
    printed on stderr first (not with --quiet; with --json only to a
    terminal).

    \b
    Examples:
      spherecodes certify spherecodes_d64_k1000.h5 --write
      spherecodes certify my_prototypes.npy --json
      spherecodes certify big.h5 --write --max-memory 12GiB
      spherecodes certify big.h5 --json --scheduler tls://10.0.0.5:8786
      spherecodes certify ebv_prototypes.pt --lines
    """
    file, name, write, as_json, quiet = flags["file"], flags["name"], flags["write"], flags["as_json"], flags["quiet"]
    workers, scheduler = flags["workers"], flags["scheduler"]
    context = run_context(flags)
    is_bank = file.suffix.lower() in (".h5", ".hdf5")
    check_cluster_flags(workers, scheduler, flags["trust_scheduler"])
    distributed = scheduler is not None or workers is not None
    if flags["as_lines"] and distributed:
        raise SpherecodesError("--lines computes no certificate; drop --workers and --scheduler")
    if distributed:
        check_dask_device(context.device)  # before a cluster starts
    if write and not is_bank:
        raise SpherecodesError(f"--write stores the certificate in a bank; {file} is not a .h5 bank")
    if write:
        check_bank_rewritable(file)
    if flags["as_lines"]:
        if write:
            raise SpherecodesError("--lines computes the line statistics from the prototypes and stores nothing; drop --write")
        _certify_lines(file, name, flags["normalize"], context, as_json, quiet)
        return
    bad_certificate = claims = None
    if is_bank:
        code, bad_certificate, _, claims = read_with_certificate_check(file, name, max_memory=context.max_memory,
                                                                       estimate=tell(quiet, as_json),
                                                                       progress=tell(quiet, as_json))
    else:
        code = load_code(file, name, normalize=flags["normalize"], stats_device=context.device,
                         max_memory=context.max_memory)
    stored = code.certificate if bad_certificate is None else None
    with (dask_client(scheduler, workers, trust=flags["trust_scheduler"]) if distributed
          else contextlib.nullcontext((None, None))) as (client, _):
        if distributed and tell(quiet, as_json):
            where = f"the Dask cluster at {scheduler}" if scheduler else f"a local Dask cluster of {workers} workers"
            click.echo(f"certificate: the QP's blocks of classes as tasks on {where}", err=True)
        code.certificate = certify_code(code, context, quiet=not tell(quiet, as_json), tol=flags["tol"], client=client)
    new = code.certificate
    if write and stored is not None and stored.rho_certified and not new.rho_certified:
        # A certificate that checks is never replaced by one that does not (a --tol below what float64 meets).
        raise SpherecodesError(f"the new certificate is not certified to --tol {flags['tol']:g} (rho's width "
                               f"{new.rho_upper - new.rho_lower:.3g}); the stored one, certified to tol "
                               f"{stored.tol:g}, is kept and {file} is unchanged")
    if write:
        write_code(file, code, overwrite=True, waiting=lock_notice(not quiet))
    show_report(code, str(file) if is_bank else None, as_json)
    refused = claims.message(f"code {code.name!r} in {file}") if claims is not None and claims.refused else None
    if write:
        for replaced in (bad_certificate, refused):
            if replaced is not None:
                click.echo(f"replaced what {file} stored with what its prototypes give ({replaced})", err=True)
    elif bad_certificate is not None or refused is not None:
        problems = [str(p) for p in (bad_certificate, refused) if p is not None]
        raise SpherecodesError("; ".join(problems) + f"; the report above is recomputed from the prototypes "
                               f"('spherecodes certify {file} --write' stores it)")


def _certify_lines(file, name, normalize: bool, context, as_json: bool, quiet: bool) -> None:
    """certify --lines: the line statistics recomputed from the rows (all pairs; an estimate first), as text or
    JSON; a bank whose stored figures disagree with its rows is said so after the report."""
    speak = tell(quiet, as_json)
    if file.suffix.lower() in (".h5", ".hdf5"):
        code, _, _, claims = read_with_certificate_check(file, name, max_memory=context.max_memory, estimate=speak,
                                                         progress=speak)
        _show_lines(code, file, as_json)
        if claims.refused:
            raise SpherecodesError(claims.message(f"code {code.name!r} in {file}"))
        return

    def announce(k: int, d: int) -> None:
        from ...run_estimate import statistics_seconds

        seconds = statistics_seconds(d, k)
        what = f"the float64 cosines of all {k * (k - 1) // 2:,} pairs of {k:,} lines in R^{d}"
        if seconds > ABSURD_SECONDS:
            raise SpherecodesError(f"{what}: estimated at ~{format_duration(seconds)}; not started (over "
                                   f"{format_duration(ABSURD_SECONDS)})")
        if speak and seconds >= NOTABLE_READ_SECONDS:
            click.echo(f"estimate: {what} on cpu: ~{format_duration(seconds)}", err=True)

    with ProgressBar(enabled=speak) as bar:
        code = load_code(file, name, normalize=normalize, stats_device=context.device, max_memory=context.max_memory,
                         announce=announce, progress=bar)
    _show_lines(code, file, as_json)


def _show_lines(code, file, as_json: bool) -> None:
    """The line report of ``code`` read from ``file``, as text or JSON."""
    report = {"name": code.name, "source": str(file), "settings": code.settings, **line_report(code)}
    if as_json:
        print_json(report)
        return
    click.echo(f"lines {code.name}: K = {code.k} lines in d = {code.d} ({file})")
    for label, value in format_line_report(report):
        click.echo(f"  {label:<15}  {value}")
    if code.settings.get("normalized_from"):
        click.echo(f"  {'note':<15}  rows normalised in float64 from {code.settings['normalized_from']}")
