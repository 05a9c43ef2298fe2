"""The click application: a thin shell over the library.

Each command parses its options, calls one library function, and prints the
result as text or JSON.  Errors a user can cause become one line on stderr and
a non-zero exit status (1 for bad input, 2 for bad usage, 130 for Ctrl-C).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from .. import __version__
from ..bank import check_writable_destination, delete_code, list_codes, read_code, write_code
from ..bounds import check_sizes
from ..errors import SpherecodesError
from ..memory import format_duration, parse_size
from ..generation import METHODS, generate, planned_code_name, resolve_method
from ..report import bounds_report, code_report, format_bounds_report, format_code_report
from ..semantic import (
    DEFAULT_SEMANTIC_WEIGHT,
    EMBEDDING_FORMATS,
    MISSING_POLICIES,
    TRIPLET_STRATEGIES,
    assign_code,
    class_embeddings,
    format_assignment,
    format_semantic_report,
    load_class_means,
    read_class_names,
    semantic_report,
)


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


@main.command()
@click.option("--d", "d", type=DIM, required=True, help="Dimension of the prototypes (>= 1).")
@click.option("--k", "k", type=COUNT, default=None,
              help="Number of prototypes, one per class (>= 2). May be omitted with --classes.")
@click.option(
    "--method",
    type=click.Choice(("auto",) + METHODS),
    default="auto",
    show_default=True,
    help="auto: the closed form that applies to (d, K), else tammes. tammes: minimise "
    "max-cos. softmax: maximise rho, each prototype's distance to the hull of the others (seed 003 "
    "Eq. 3), starting from tammes; slower, one certificate per step. "
    "maxsep: the HPN objective (seed 002 Eq. 5) as published. privileged: Eq. 5 "
    "plus the ranking loss of seed 002 Eq. 6 on word embeddings of the class names "
    "(needs --classes and --embeddings). The others are closed forms for the sizes where they apply.",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the optimiser's random starts or of the random rotation.")
@click.option(
    "--rotation",
    type=click.Choice(("canonical", "random")),
    default="canonical",
    show_default=True,
    help="Closed forms only: canonical coordinates or a seeded Haar-random rotation.",
)
@click.option("--device", default="auto", show_default=True,
              help="Optimisers only: auto (CUDA when present), cpu, cuda or cuda:N.")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="Optimisers only: steps per start. Default: chosen from (d, K).")
@click.option("--restarts", type=click.IntRange(min=1), default=None,
              help="Optimisers only: number of random starts. Default: chosen from (d, K).")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="SECONDS", help="Optimisers only: stop then and store the best code so far "
              "(Ctrl-C does the same).")
@click.option("--max-memory", type=MemorySize(), default=None, help=MAX_MEMORY_HELP)
@click.option("--effort", type=click.Choice(("low", "default", "high")), default="default", show_default=True,
              help="tammes only: how much work to spend. low: a quarter of the random starts; high: four times "
              "as many, then rounds of perturb-and-repolish of the best code (small codes).")
@click.option("--init", "init_path", type=FILE, default=None, metavar="BANK|FILE",
              help="Optimisers only: start from this code (a bank, or a (K, d) matrix in .npy, .pt, .txt or "
              ".csv; rows are rescaled to unit length). tammes refines it and never returns anything worse.")
@click.option("--init-code", default=None, metavar="NAME",
              help="With --init BANK: the code to start from; may be omitted if the bank holds one.")
@click.option("--neighbours", type=click.IntRange(min=0), default=None, metavar="M",
              help="tammes only: optimise on each prototype's M nearest prototypes (lists refreshed from all K), "
              "in memory O(K(d + M)); 0 uses all pairs (K x K matrices). Default: all pairs up to K = 10,000 "
              "when they fit, else M = d within [32, 128].")
@click.option("--refresh", type=click.IntRange(min=1), default=None, metavar="STEPS",
              help="tammes with neighbour lists: steps between refreshes of the lists (skipped while they are "
              "provably complete). Default: K/2000 within [10, 100].")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Bank file to write into (created if missing). Default: spherecodes_d<D>_k<K>.h5.",
)
@click.option("--name", default=None, help="Code name inside the bank. Default: <method>-d<D>-k<K>[-s<seed>].")
@click.option("--overwrite", is_flag=True, help="Replace a code of the same name in the bank.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--certify/--no-certify", default=True, show_default=True,
              help="Certify the one-vs-rest distances and rho before storing the code.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no text report (errors still print).")
@click.option("--classes", type=FILE, default=None,
              help="Class names, one per line: K is their number and they become the code's labels.")
@click.option("--embeddings", type=FILE, default=None,
              help="privileged only: word vectors for the class names (word2vec, GloVe or a gensim save); "
              "multi-word names use the mean of their words.")
@embedding_options
@click.option("--semantic-weight", type=click.FloatRange(min=0), default=None,
              help=f"privileged only: weight of the ranking loss against separation; higher follows the "
              f"embeddings more closely at a higher max-cos. Default: {DEFAULT_SEMANTIC_WEIGHT:g}.")
@click.option("--triplets", type=click.Choice(TRIPLET_STRATEGIES), default=None,
              help="privileged only: class triplets of the ranking loss per step: all, a fresh uniform "
              "sample, or each class's nearest embedding neighbours. Default (auto): all up to 200 "
              "classes, sampled beyond.")
def generate_cmd(d, k, method, seed, rotation, device, steps, restarts, time_limit, max_memory, effort, init_path,
                 init_code, neighbours, refresh, out, name, overwrite, as_json, certify, quiet, classes, embeddings, embeddings_format, missing_words,
                 semantic_weight, triplets):
    """Compute a code for (d, K), store it in a bank, and print its report.

    \b
    Examples:
      spherecodes generate --d 64 --k 1000
      spherecodes generate --d 11 --k 12 --rotation random --seed 3
      spherecodes generate --d 128 --k 10000 --time-limit 60 --out big.h5
      spherecodes generate --d 512 --k 1000000 --time-limit 480 --max-memory 60GiB
      spherecodes generate --d 64 --method privileged --classes classes.txt --embeddings glove.txt
      spherecodes generate --d 3 --k 120 --effort high
      spherecodes generate --d 64 --k 1000 --init start.npy

    Before the work starts, the memory and time it is expected to take are
    printed on stderr (not with --quiet; with --json only to a terminal), and
    a size that cannot fit is refused.  Ctrl-C during the optimisation stores the best code found so
    far, uncertified, and exits with status 130.
    """
    names = read_class_names(classes) if classes is not None else None
    if k is None:
        if names is None:
            raise click.UsageError("give --k, or --classes to take K from the class names")
        k = len(names)
    elif names is not None and len(names) != k:
        raise SpherecodesError(f"--k is {k} but {classes} holds {len(names)} class names; give one name per prototype")
    privileged = method == "privileged"
    if privileged:
        if names is None or embeddings is None:
            raise click.UsageError("--method privileged needs --classes and --embeddings")
        if restarts is not None:
            raise click.UsageError("--method privileged runs a single start; drop --restarts")
        check_sizes(d, k)
    elif embeddings is not None or semantic_weight is not None or triplets is not None:
        raise click.UsageError(
            "--embeddings, --semantic-weight and --triplets apply to --method privileged; "
            "to place the classes of another code on its prototypes use 'spherecodes assign'"
        )
    out = check_writable_destination(out or default_bank_path(d, k))
    name = name or planned_code_name(d, k, method, seed=seed, rotation=rotation)
    # Refuse an existing code before computing anything: generation can be long.
    if out.exists() and not overwrite and name in {c["name"] for c in list_codes(out)}:
        raise SpherecodesError(f"code {name!r} already exists in {out}; pass --overwrite to replace it")
    # Read the embeddings before the long computation, so that a missing name fails fast.
    class_vectors = (
        class_embeddings(names, embeddings, missing=missing_words, fmt=embeddings_format) if privileged else None
    )
    if init_code is not None and init_path is None:
        raise click.UsageError("--init-code names a code in the bank given with --init")
    init = None
    if init_path is not None:
        from ..loading import load_code

        init = load_code(init_path, init_code, normalize=True).prototypes
        if init.shape != (k, d):
            raise SpherecodesError(f"--init {init_path} holds {init.shape[0]} prototypes in d = {init.shape[1]}; "
                                   f"expected (K, d) = ({k}, {d})")
    if resolve_method(d, k, method) == "tammes":
        from ..solvers import tammes_estimate

        # Refuses an impossible size here, before any work.
        estimate = tammes_estimate(d, k, steps=steps, restarts=restarts, device=device, neighbours=neighbours,
                                   refresh=refresh, max_memory=max_memory, effort=effort)
        if _tell(quiet, as_json):
            click.echo(estimate.describe(), err=True)
    elif neighbours is not None or refresh is not None:
        raise click.UsageError("--neighbours and --refresh apply to the tammes method")
    with ProgressBar(enabled=not quiet) as progress:
        code = generate(d, k, method, seed=seed, rotation=rotation, name=name, labels=None if privileged else names,
                        device=device, steps=steps, restarts=restarts, time_limit=time_limit, progress=progress,
                        embeddings=class_vectors, semantic_weight=semantic_weight, triplets=triplets or "auto",
                        max_memory=max_memory, neighbours=neighbours, refresh=refresh, effort=effort, init=init)
    interrupted = code.settings.get("stop_reason") == "interrupted"
    if certify and not interrupted:
        try:
            code.certificate = _certify(code.prototypes, device=device, max_memory=max_memory,
                                        quiet=not _tell(quiet, as_json))
        except KeyboardInterrupt:
            interrupted = True
    write_code(out, code, overwrite=overwrite)
    if interrupted:
        click.echo(f"Interrupted; kept the best code so far as {code.name} in {out} (max-cos {code.stats.max_cos:.10g}"
                   f"{', uncertified' if code.certificate is None else ''}).", err=True)
        raise click.exceptions.Exit(130)
    if as_json or not quiet:
        semantic = semantic_report(code, class_vectors) if privileged else None
        _show_report(code, str(out), as_json, semantic)


def _tell(quiet: bool, as_json: bool) -> bool:
    """Whether to print estimates on stderr: not with --quiet, and with --json only to a terminal."""
    return not quiet and (not as_json or sys.stderr.isatty())


def _certify(prototypes, *, device, max_memory, quiet: bool, tol: float | None = None):
    """The certificate of a code, with its estimate and a progress bar on stderr unless ``quiet``."""
    from ..certificate import DEFAULT_TOL, certificate_estimate, one_vs_rest_distances

    if quiet:  # the memory check alone, without timing a sample
        certificate_estimate(k=prototypes.shape[0], d=prototypes.shape[1], device=device, max_memory=max_memory)
    else:
        click.echo(certificate_estimate(prototypes, device=device, max_memory=max_memory).describe(), err=True)
    with ProgressBar(enabled=not quiet) as progress:
        return one_vs_rest_distances(prototypes, tol=DEFAULT_TOL if tol is None else tol, device=device,
                                     max_memory=max_memory, progress=progress)


class ProgressBar:
    """Draws progress on stderr: stage bar, where it is, rate, elapsed time and time left.

    Takes the :class:`spherecodes.solvers.Progress` of an optimiser (start,
    max-cos, steps per second) and the
    :class:`spherecodes.certificate.CertificateProgress` of a certificate
    (classes per second).  The rate is measured over the current stage (a
    batch of starts, the polish, the certificate) and gives the time left in
    it.  Only drawn on a terminal (a log file would fill with carriage
    returns) and at most ten times a second; a no-op when disabled.
    """

    WIDTH = 24

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.last_draw = 0.0
        self.drawn = False
        self.stage = None
        self.stage_start = (0, 0.0)

    def __enter__(self):
        return self

    def __call__(self, update) -> None:
        if not self.enabled:
            return
        stage = (type(update).__name__, getattr(update, "restart", 0), update.steps)
        if stage != self.stage or update.step < self.stage_start[0]:
            self.stage, self.stage_start = stage, (update.step, update.elapsed)
        now = time.monotonic()
        if now - self.last_draw < 0.1 and update.step < update.steps:
            return
        self.last_draw = now
        fraction = min(1.0, update.step / max(1, update.steps))
        filled = int(round(fraction * self.WIDTH))
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        done, seconds = update.step - self.stage_start[0], update.elapsed - self.stage_start[1]
        rate = done / seconds if done > 0 and seconds > 0 else None
        if hasattr(update, "max_cos"):
            where = (f"start {min(update.restart + 1, update.restarts)}/{update.restarts}"
                     + (f"  rho {update.rho:.6f}" if update.rho is not None else "")
                     + f"  max-cos {update.max_cos:.6f}")
            unit = "steps"
        else:
            where, unit = f"classes {update.step}/{update.steps}", "classes"
        speed = f"  {rate:.3g} {unit}/s" if rate else ""
        left = f"  {format_duration((update.steps - update.step) / rate)} left" if rate else ""
        click.echo(f"\r\033[K[{bar}] {fraction:4.0%}  {where}{speed}  {update.elapsed:6.1f} s{left}", nl=False, err=True)
        self.drawn = True

    def __exit__(self, *exc):
        if self.drawn:
            click.echo(err=True)
            self.drawn = False
        return False


main.add_command(generate_cmd, name="generate")


def _show_report(code, bank: str, as_json: bool, semantic: dict | None = None) -> None:
    report = code_report(code, bank=bank)
    if semantic is not None:
        report["semantic"] = semantic
    if as_json:
        _print_json(report)
    else:
        click.echo(format_code_report(report))
        # (in report.py, format_code_report should render these rows itself)
        for label, value in format_semantic_report(semantic) if semantic else ():
            click.echo(f"  {label:<17}  {value}")


BANK = click.Path(path_type=Path, dir_okay=False)


@main.command()
@click.argument("bank", type=BANK)
@click.option("--code", "name", default=None, help="Code to report; may be omitted if the bank holds one.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--embeddings", type=FILE, default=None,
              help="Also report how well the code's class order agrees with these word vectors "
              "(JSON key semantic).")
@click.option("--classes", type=FILE, default=None,
              help="With --embeddings, for a code stored without labels: the class of each row, in row order.")
@embedding_options
@click.option("--plot", "plot", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="OUT",
              help="Also draw the code into OUT (.png, .pdf or .svg): the histogram of pairwise cosines with "
              "max-cos and its lower bound, the sorted one-vs-rest distances with rho and the Theorem 3.9 band, "
              "and for d <= 3 the prototypes themselves. A code without a certificate is certified for the plot.")
def report(bank, name, as_json, embeddings, classes, embeddings_format, missing_words, plot):
    """Report the separation statistics and bounds of a code in BANK.

    \b
    Examples:
      spherecodes report spherecodes_d64_k1000.h5
      spherecodes report spherecodes_d64_k1000.h5 --plot d64_k1000.png
    """
    if plot is not None:
        from ..plots import check_plot_path

        check_plot_path(plot)
    code = read_code(bank, name)
    semantic = None
    if embeddings is not None:
        if classes is not None and code.labels is not None:
            raise click.UsageError("the code has labels; --classes is only for a code stored without them")
        names = read_class_names(classes) if classes is not None else code.labels
        if names is None:
            raise SpherecodesError(
                f"code {code.name!r} has no labels; name its rows in order with --classes to report its semantic agreement"
            )
        class_vectors = class_embeddings(names, embeddings, missing=missing_words, fmt=embeddings_format)
        semantic = semantic_report(code, class_vectors, labels=names)
    elif classes is not None:
        raise click.UsageError("--classes is used with --embeddings")
    _show_report(code, str(bank), as_json, semantic)
    if plot is not None:
        from ..plots import plot_code

        plot_code(code, plot)
        click.echo(f"plot written to {plot}", err=as_json)


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
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--code", "name", default=None, help="Code inside a bank; may be omitted if the bank holds one.")
@click.option("--tol", type=click.FloatRange(min=0, min_open=True), default=1e-9, show_default=True,
              help="Largest allowed width of each class's certified interval.")
@click.option("--normalize", is_flag=True, help="Rescale rows to unit length instead of refusing them.")
@click.option("--device", default="auto", show_default=True, help="auto (CUDA when present), cpu, cuda or cuda:N.")
@click.option("--write", is_flag=True, help="Store the certificate in the bank (banks only).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (per-class distances included).")
@click.option("--max-memory", type=MemorySize(), default=None, help=MAX_MEMORY_HELP)
@click.option("--quiet", "-q", is_flag=True, help="No estimate and no progress bar on stderr.")
def certify(file, name, tol, normalize, device, write, as_json, max_memory, quiet):
    """Certify the one-vs-rest distances and rho of a code.

    FILE is a spherecodes bank (.h5), or a (K, d) prototype matrix from any
    tool: .npy, a torch tensor (.pt/.pth), or .txt/.csv text.  Each class's
    distance to the convex hull of the other prototypes is bracketed by a
    primal point (upper end) and a dual direction (lower end), both checked in
    float64 against all K prototypes.

    The classes are processed in blocks sized to --max-memory, each checked
    against all K prototypes tile by tile, so memory stays O(K d) plus the
    blocks.  The memory and time expected (the time from certifying a
    sample of 32 classes) are printed on stderr first (not with --quiet;
    with --json only to a terminal).

    \b
    Examples:
      spherecodes certify spherecodes_d64_k1000.h5 --write
      spherecodes certify my_prototypes.npy --json
      spherecodes certify big.h5 --write --max-memory 12GiB
    """
    from ..loading import load_code

    is_bank = file.suffix.lower() in (".h5", ".hdf5")
    if write and not is_bank:
        raise SpherecodesError(f"--write stores the certificate in a bank; {file} is not a .h5 bank")
    code = load_code(file, name, normalize=normalize, stats_device=device, max_memory=max_memory)
    code.certificate = _certify(code.prototypes, device=device, max_memory=max_memory,
                                quiet=not _tell(quiet, as_json), tol=tol)
    if write:
        write_code(file, code, overwrite=True)
    _show_report(code, str(file) if is_bank else None, as_json)


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


@main.command()
@click.option("--d", "d", type=DimensionRange(), required=True,
              help="Dimension (>= 1), or a range A..B of dimensions for --plot.")
@click.option("--k", "k", type=COUNT, required=True, help="Number of prototypes (>= 2).")
@click.option("--json", "as_json", is_flag=True, help="Print the bounds as JSON.")
@click.option("--plot", "plot", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="OUT",
              help="Draw the Theorem 3.9 band on the best possible rho against d (give --d A..B) into OUT "
              "(.png, .pdf or .svg), with the certified rho of the catalog's banks for this K on top.")
@click.option("--url", default=None, metavar="URL|DIR",
              help="With --plot: also overlay the banks of this catalog. Default: $SPHERECODES_BANK_URL.")
@click.option("--offline", is_flag=True, help="With --plot: read that catalog's registry from the cache.")
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
        from ..plots import check_plot_path, plot_bounds
        from ..registry import catalog

        check_plot_path(plot)
        check_sizes(d[0], k)
        entries = catalog(url, offline=offline)
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
        _print_json(result)
    else:
        click.echo(format_bounds_report(result))


@main.command()
@click.argument("bank", type=BANK)
@click.option("--code", "name", default=None, help="Code to relabel; may be omitted if the bank holds one.")
@click.option("--classes", type=FILE, default=None,
              help="Class names, one per line. With --embeddings: the classes to place. With --class-means: "
              "the class of each row of the means (default: the code's labels, else 0, 1, ...).")
@click.option("--embeddings", type=FILE, default=None,
              help="Word vectors for the class names: similar classes get near prototypes "
              "(approximate quadratic assignment).")
@click.option("--class-means", type=FILE, default=None, metavar="FILE.npy",
              help="(K, d) class-mean features of a model trained with this code: each class gets the "
              "prototype its mean points to (optimal linear assignment).")
@embedding_options
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the triplet sample of the agreement measure (K > 126 only).")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="With --embeddings: stop the search then and keep the best order found.")
@click.option("--dry-run", is_flag=True, help="Print the assignment without writing the bank.")
@click.option("--json", "as_json", is_flag=True, help="Print the assignment as JSON.")
def assign(bank, name, classes, embeddings, class_means, embeddings_format, missing_words, seed, time_limit,
           dry_run, as_json):
    """Choose which class gets which prototype of a code in BANK.

    The prototypes stay exactly as they are (same bytes, checksum, separation
    numbers and certificate); only the order of the labels is rewritten, so
    that labels[i] is the class given prototype row i.

    \b
    Examples:
      spherecodes assign bank.h5 --code tammes-d64-k1000-s0 --classes classes.txt --embeddings glove.txt
      spherecodes assign bank.h5 --class-means means.npy
    """
    if (embeddings is None) == (class_means is None):
        raise click.UsageError("give --classes with --embeddings, or --class-means")
    if embeddings is not None and classes is None:
        raise click.UsageError("--embeddings needs --classes")
    code = read_code(bank, name)
    names = read_class_names(classes) if classes is not None else None
    if embeddings is not None:
        class_vectors = class_embeddings(names, embeddings, missing=missing_words, fmt=embeddings_format)
        new, result = assign_code(code, embeddings=class_vectors, seed=seed, time_limit=time_limit)
    else:
        new, result = assign_code(code, class_means=load_class_means(class_means), names=names, seed=seed)
    if not dry_run:
        write_code(bank, new, overwrite=True)
    if as_json:
        _print_json({"bank": str(bank), "code": new.name, "written": not dry_run, **result.report()})
    else:
        click.echo(f"code {new.name} in {bank}" + (" (dry run, not written)" if dry_run else ""))
        click.echo(format_assignment(result))


# --------------------------------------------------------------------------- precomputed banks

URL_HELP = ("Catalog to use after the bundled one: an http(s):// URL or a directory holding registry.json. "
            "Default: $SPHERECODES_BANK_URL.")


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
    from ..registry import fetch_bank

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
        _print_json(report)
        return
    click.echo(origin)
    if not quiet:
        click.echo(format_code_report(code_report(code, bank=str(out or fetched.path) if (out or fetched.path) else None)))


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
@click.option("--url", default=None, metavar="URL|DIR", help=URL_HELP)
@click.option("--offline", is_flag=True, help="Read a remote catalog's registry from the cache.")
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON (with a 'source' key each).")
def catalog_list(url, offline, as_json):
    """List the banks of the bundled catalog and of the configured one."""
    from ..registry import catalog, format_entries

    entries = catalog(url, offline=offline)
    if as_json:
        _print_json([{**e.to_dict(), "source": e.source} for e in entries])
    else:
        click.echo(format_entries(entries))


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
@click.option("--json", "as_json", is_flag=True, help="Print the published entries as JSON.")
def catalog_publish(directory, best, into, max_size, as_json):
    """Write the registry.json of a folder of banks, making it a catalog.

    Every code of every DIRECTORY/*.h5 bank must be certified (spherecodes
    certify BANK --write).  Max-cos, the rho interval and the LP-bound gap are
    computed afresh in float64 from the stored prototypes, and the
    certificate is checked against its witness.  Serve the folder over HTTP(S)
    (any static file server) or share it as a directory.

    \b
    Examples:
      spherecodes catalog publish my-banks
      spherecodes catalog publish catalog-build --best --into banks
    """
    from ..registry import REGISTRY_FILE, format_entries, format_size, publish

    budget = parse_size(max_size, "--max-size") if max_size is not None else None
    cat = publish(directory, best=best, into=into, max_size=budget)
    if as_json:
        _print_json([e.to_dict() for e in cat.entries])
        return
    target = into if into is not None else directory
    click.echo(format_entries(cat.entries))
    if cat.left_out:
        click.echo(f"left out to fit {format_size(budget)}: " + ", ".join(e.name for e in cat.left_out))
    click.echo(f"wrote {target / REGISTRY_FILE}: {len(cat.entries)} codes in "
               f"{len({e.file for e in cat.entries})} files, {format_size(cat.total_size)}")


class BuildProgress:
    """Progress of a catalog build on stderr: a bar on a terminal, one line per bank otherwise."""

    WIDTH = 24

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.drawn = False

    def __call__(self, done: int, total: int, summary: dict) -> None:
        if not self.enabled:
            return
        status = summary["status"]
        if status == "built":
            what = (f"{summary['name']} built in {summary['seconds']:.1f} s "
                    f"(max-cos {summary['max_cos']:.6f}, rho {summary['rho_lower']:.6f})")
        elif status == "skipped":
            what = f"{summary['name']} finished before, skipped"
        else:
            what = f"{summary['name']} FAILED: {summary.get('error', '')}"
        if self.tty:
            filled = int(round(done / max(1, total) * self.WIDTH))
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            click.echo(f"\r\033[K[{bar}] {done}/{total}  {what}", nl=False, err=True)
            self.drawn = True
        else:
            click.echo(f"[{done}/{total}] {what}", err=True)

    def close(self) -> None:
        if self.drawn:
            click.echo(err=True)
            self.drawn = False


@catalog_cmd.command(name="build")
@click.option("--grid", required=True, metavar='"d=LIST k=LIST"',
              help='Sizes to build: every (d, K) of the two lists, e.g. "d=16,32,64 k=100,1000"; A..B is a range. '
              "Sizes where a closed form is optimal (K <= 2d, d = 2) are left out: fetch constructs them.")
@click.option("--methods", default="tammes", show_default=True,
              help="Comma-separated optimisers, one bank per (d, K, method).")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder of the banks (created if missing); banks finished there by an earlier run are skipped.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Workers of the local Dask cluster. Default: one per CPU core (at most one per bank).")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Run on an existing Dask cluster (e.g. tcp://10.0.0.5:8786) instead of a local one; "
              "--out must then be on a file system every worker sees under the same path.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of every optimiser run.")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="Steps per start. Default: chosen from (d, K).")
@click.option("--restarts", type=click.IntRange(min=1), default=None,
              help="Random starts. Default: chosen from (d, K).")
@click.option("--time-limit", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Stop each optimiser then and keep its best code.")
@click.option("--device", default="auto", show_default=True, help="auto (CUDA when present), cpu, cuda or cuda:N.")
@click.option("--publish/--no-publish", default=True, show_default=True,
              help="Write the folder's registry.json when the banks are done.")
@click.option("--quiet", "-q", is_flag=True, help="No progress and no table.")
def catalog_build(grid, methods, out, workers, scheduler, seed, steps, restarts, time_limit, device, publish,
                  quiet):
    """Build a catalog: one certified bank per (d, K, method), as tasks on Dask distributed.

    Each bank is generated, certified and written to OUT/<method>-d<D>-k<K>.h5
    (atomically) by one task on a local Dask cluster, or on an existing cluster
    given --scheduler.  Finished banks are skipped, so an interrupted build is
    resumed by running the same command again.  At the end the registry is
    published (see 'spherecodes catalog publish').

    \b
    Examples:
      spherecodes catalog build --grid "d=16,32,64 k=100,1000" --methods tammes,softmax --out my-banks
      spherecodes catalog build --grid "d=3 k=7..12" --out small --workers 2 --steps 500
      spherecodes catalog build --grid "d=128 k=1000" --out /shared/banks --scheduler tcp://10.0.0.5:8786
    """
    from ..catalog_build import build_catalog, parse_grid, parse_methods
    from ..registry import format_entries, format_size

    if workers is not None and scheduler is not None:
        raise click.UsageError("give either --workers (local cluster) or --scheduler (existing cluster), not both")
    pairs = parse_grid(grid)
    method_list = parse_methods(methods)
    progress = BuildProgress(enabled=not quiet)
    try:
        result = build_catalog(pairs, method_list, out, workers=workers, scheduler=scheduler, seed=seed,
                               steps=steps, restarts=restarts, time_limit=time_limit, device=device,
                               publish=publish, progress=progress)
    finally:
        progress.close()
    if quiet:
        return
    if result.closed_forms:
        sizes = ", ".join(f"d={d} K={k} ({form})" for d, k, form in result.closed_forms)
        click.echo(f"left out {len(result.closed_forms)} sizes where a closed form is optimal "
                   f"(fetch constructs them): {sizes}")
    click.echo(f"built {len(result.built)}, finished before {len(result.skipped)}")
    if result.catalog is not None:
        cat = result.catalog
        click.echo(format_entries(cat.entries))
        click.echo(f"wrote {Path(out) / 'registry.json'}: {len(cat.entries)} codes, {format_size(cat.total_size)}")
