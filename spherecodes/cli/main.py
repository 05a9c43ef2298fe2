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
from ..generation import METHODS, generate, planned_code_name
from ..report import bounds_report, code_report, format_bounds_report, format_code_report
from ..bank import default_code_name
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
    privileged_code,
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
    type=click.Choice(("auto",) + METHODS + ("privileged",)),
    default="auto",
    show_default=True,
    help="auto: the closed form that applies to (d, K), else tammes. tammes: minimise "
    "max-cos. maxsep: the HPN objective (seed 002 Eq. 5) as published. privileged: Eq. 5 "
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
              metavar="SECONDS", help="Optimisers only: stop then and store the best code so far.")
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
def generate_cmd(d, k, method, seed, rotation, device, steps, restarts, time_limit, out, name,
                 overwrite, as_json, certify, quiet, classes, embeddings, embeddings_format, missing_words,
                 semantic_weight, triplets):
    """Compute a code for (d, K), store it in a bank, and print its report.

    \b
    Examples:
      spherecodes generate --d 64 --k 1000
      spherecodes generate --d 11 --k 12 --rotation random --seed 3
      spherecodes generate --d 128 --k 10000 --time-limit 60 --out big.h5
      spherecodes generate --d 64 --method privileged --classes classes.txt --embeddings glove.txt
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
    if privileged:
        name = name or default_code_name("privileged", d, k, seed)
    else:
        name = name or planned_code_name(d, k, method, seed=seed, rotation=rotation)
    # Refuse an existing code before computing anything: generation can be long.
    if out.exists() and not overwrite and name in {c["name"] for c in list_codes(out)}:
        raise SpherecodesError(f"code {name!r} already exists in {out}; pass --overwrite to replace it")
    # Read the embeddings before the long computation, so that a missing name fails fast.
    class_vectors = (
        class_embeddings(names, embeddings, missing=missing_words, fmt=embeddings_format) if privileged else None
    )
    with ProgressBar(enabled=not quiet) as progress:
        if privileged:
            code = privileged_code(
                d, class_vectors, name=name, seed=seed, steps=steps, device=device, time_limit=time_limit,
                progress=progress,
                semantic_weight=DEFAULT_SEMANTIC_WEIGHT if semantic_weight is None else semantic_weight,
                triplets=triplets or "auto",
            )
        else:
            code = generate(d, k, method, seed=seed, rotation=rotation, name=name, labels=names, device=device,
                            steps=steps, restarts=restarts, time_limit=time_limit, progress=progress)
    if certify:
        from ..certificate import one_vs_rest_distances

        code.certificate = one_vs_rest_distances(code.prototypes, device=device)
    write_code(out, code, overwrite=overwrite)
    if as_json or not quiet:
        semantic = semantic_report(code, class_vectors) if privileged else None
        _show_report(code, str(out), as_json, semantic)


class ProgressBar:
    """Draws optimiser progress on stderr: stage bar, start, current max-cos, elapsed time.

    Only drawn on a terminal (a log file would fill with carriage returns) and
    at most ten times a second; a no-op when disabled.
    """

    WIDTH = 24

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.last_draw = 0.0
        self.drawn = False

    def __enter__(self):
        return self

    def __call__(self, update) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last_draw < 0.1 and update.step < update.steps:
            return
        self.last_draw = now
        fraction = min(1.0, update.step / max(1, update.steps))
        filled = int(round(fraction * self.WIDTH))
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        line = (
            f"\r[{bar}] {fraction:4.0%}  start {min(update.restart + 1, update.restarts)}/{update.restarts}"
            f"  max-cos {update.max_cos:.6f}  {update.elapsed:6.1f} s"
        )
        click.echo(line, nl=False, err=True)
        self.drawn = True

    def __exit__(self, *exc):
        if self.drawn:
            click.echo(err=True)
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
def report(bank, name, as_json, embeddings, classes, embeddings_format, missing_words):
    """Report the separation statistics and bounds of a code in BANK."""
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
def certify(file, name, tol, normalize, device, write, as_json):
    """Certify the one-vs-rest distances and rho of a code.

    FILE is a spherecodes bank (.h5), or a (K, d) prototype matrix from any
    tool: .npy, a torch tensor (.pt/.pth), or .txt/.csv text.  Each class's
    distance to the convex hull of the other prototypes is bracketed by a
    primal point (upper end) and a dual direction (lower end), both checked in
    float64 against all K prototypes.

    \b
    Examples:
      spherecodes certify spherecodes_d64_k1000.h5 --write
      spherecodes certify my_prototypes.npy --json
    """
    from ..certificate import one_vs_rest_distances
    from ..loading import load_code

    is_bank = file.suffix.lower() in (".h5", ".hdf5")
    if write and not is_bank:
        raise SpherecodesError(f"--write stores the certificate in a bank; {file} is not a .h5 bank")
    code = load_code(file, name, normalize=normalize)
    code.certificate = one_vs_rest_distances(code.prototypes, tol=tol, device=device)
    if write:
        write_code(file, code, overwrite=True)
    _show_report(code, str(file) if is_bank else None, as_json)


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
