"""``spherecodes generate``: compute a code for (d, K), certify it, store it in a bank, report it."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import click

from ...bank import CHOOSE_BY_NAME
from ...errors import SpherecodesError
from ...export import EXPORT_DTYPES, EXPORT_FORMATS
from ...generation import METHODS, NEEDS_CLASS_DATA, ROTATION_CHOICES, method_options, resolve_method
from ...loading import load_code
from ...memory import format_duration
from ...run import destination, plan_run
from ... import semantic
from ...semantic import (
    DEFAULT_MAX_COS_TOLERANCE,
    DEFAULT_SEMANTIC_WEIGHT,
    TRIPLET_STRATEGIES,
    class_embeddings,
    read_class_names,
)
from .._common import ProgressBar, lock_notice, run_context, show_report, tell
from ..main import (
    COUNT, DIM, EFFORT, FILE, MAX_MEMORY_HELP, MAX_THREADS, SECONDS, SEED, FiniteFloat, MemorySize, SchedulerAddress,
    embedding_options, main, threads_option,
)

#: The flags that are options of some method (:mod:`spherecodes.options`), by the field they fill; a flag at its
#: default (None, ``--effort default``, ``--catalog``) is not given.
METHOD_FLAGS = {"steps": "steps", "restarts": "restarts", "init_path": "init", "neighbours": "neighbours",
                "refresh": "refresh", "effort": "effort", "workers": "workers", "scheduler": "scheduler",
                "use_catalog": "catalog", "embeddings": "embeddings", "semantic_weight": "semantic_weight",
                "max_cos_tolerance": "max_cos_tolerance", "triplets": "triplets"}
FLAG_DEFAULTS = {"effort": "default", "use_catalog": True}

@main.command(name="generate")
@click.option("--d", "d", type=DIM, required=True, help="Dimension of the prototypes (>= 1).")
@click.option("--k", "k", type=COUNT, default=None,
              help="Number of prototypes, one per class (>= 2). May be omitted with --classes.")
@click.option(
    "--method",
    type=click.Choice(("auto",) + METHODS),
    default="auto",
    show_default=True,
    help="auto: a provably optimal closed form where one applies, else the best (smallest max-cos) of the "
    "structured code for (d, K) (see 'spherecodes codes'), the other closed forms, the bundled catalog's code, "
    "and tammes from random starts and from the structured code where the measured table says they can win "
    "and they fit the budget (printed before any work; --time-limit sets it). structured: the best structured code "
    "alone, with its exact max-cos. tammes: minimise "
    "max-cos. softmax: maximise rho, each prototype's distance to the hull of the others (Jiang et al. 2024, "
    "Eq. 3), starting from tammes; slower, one certificate per step. "
    "maxsep: the HPN objective (Mettes et al. 2019, Eq. 5) as published. privileged: Eq. 5 "
    "plus the ranking loss of Mettes et al. 2019, Eq. 6 on word embeddings of the class names "
    "(needs --classes and --embeddings). lines: K lines instead of K points, minimising the largest |cos| "
    "(as Equiangular Basis Vectors do): an optimal closed form, else the lines of the best antipodal structured "
    "code when they meet the Welch or orthoplex bound, else an optimiser started from them. "
    "The others are closed forms for the sizes where they apply.",
)
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seed of the optimiser's random starts or of the random rotation.")
@click.option(
    "--rotation",
    type=click.Choice(ROTATION_CHOICES),
    default="auto",
    show_default=True,
    help="Every method. auto: a code that would leave a dimension unused (an all-zero column: a structured "
    "code of R^64 for --d 100, the simplex of 100 points in R^512) is turned by the seeded Haar-random rotation "
    "into all d dimensions, everything else is kept as made; none (or canonical): keep every code as made "
    "(sparse where embedded); random: turn every code. Cosines, max-cos and rho do not change, and a structured "
    "code's certificate is carried through the rotation; the bank records the rotation and its seed.",
)
@click.option("--device", default="auto", show_default=True,
              help="Optimisers only: auto (CUDA when present), cpu, cuda or cuda:N.")
@click.option("--steps", type=click.IntRange(min=1), default=None,
              help="Optimisers only: steps per start. Default: chosen from (d, K).")
@click.option("--restarts", type=click.IntRange(min=1), default=None,
              help="Optimisers only: number of random starts. Default: chosen from (d, K).")
@click.option("--time-limit", type=SECONDS, default=None,
              metavar="SECONDS", help="Bounds the whole run: the optimisers get what the estimated statistics "
              "and certificate leave of it, then stop and store the best code so far (Ctrl-C does the same); a "
              "run whose statistics and certificate alone do not fit is refused before any work; a certificate still "
              "running at the limit stops and the code is stored uncertified. For auto it is "
              "the budget the optimisers that could win share. Default for auto: 1.5 x the predicted winner's "
              "time + 2 s.")
@click.option("--catalog/--no-catalog", "use_catalog", default=True, show_default=True,
              help="auto only: count the bundled catalog's code of this size among the candidates.")
@click.option("--max-memory", type=MemorySize(), default=None, help=MAX_MEMORY_HELP)
@click.option("--effort", type=EFFORT, default="default", show_default=True,
              help="tammes and lines: how much work to spend. low: a quarter of the random starts; high: four times "
              "as many (for tammes at least 512 in R^3 up to 130 points, half of them symmetric there, "
              "energy-continuation starts above R^3), then rounds of perturb-and-repolish of the best code (codes "
              "small enough to polish: 40, and up to 300 in R^3 up to 130 points). record (tammes): the record "
              "search, chains of high-effort runs with seeds of their own until --time-limit is spent (or "
              "--restarts chains), the best kept; with --init BANK it resumes from that bank's code.")
@click.option("--workers", type=click.IntRange(min=1, max=MAX_THREADS), default=None,
              help="--effort record only: run the chains on a local Dask cluster of this many worker processes.")
@click.option("--scheduler", type=SchedulerAddress(), default=None,
              help="--effort record only: run the chains on an existing Dask cluster (e.g. tcp://10.0.0.5:8786).")
@click.option("--init", "init_path", type=FILE, default=None, metavar="BANK|FILE",
              help="tammes, softmax, maxsep and lines: start from this code (a bank, or a (K, d) matrix in .npy, .pt, "
              ".txt or .csv; rows are rescaled to unit length). tammes and lines refine it and never return anything "
              "worse.")
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
    help="Bank file to write into (.h5, created if missing), or a matrix file for a training script "
    "(.npy, .pt, .pth, .csv, .txt: the (K, d) prototypes, float32 unless --dtype float64). "
    "Default: spherecodes_d<D>_k<K>.h5.",
)
@click.option("--dtype", type=click.Choice(EXPORT_DTYPES), default=None,
              help="With --out FILE.npy/.pt/.csv/.txt: number type of the matrix. Default: float32.")
@click.option("--name", default=None, help="Code name inside the bank. Default: <method>-d<D>-k<K>[-s<seed>].")
@click.option("--overwrite", is_flag=True, help="Replace a code of the same name in the bank.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--certify/--no-certify", default=True, show_default=True,
              help="Certify the one-vs-rest distances and rho before storing the code.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no text report (errors still print).")
@click.option("--classes", type=FILE, default=None,
              help="Class names, one per line: they become the labels of the first rows; K is their number unless "
              "--k asks for more, whose rows stay unlabelled for classes that arrive later.")
@click.option("--embeddings", type=FILE, default=None,
              help="privileged only: word vectors for the class names (word2vec, GloVe or a gensim save); "
              "multi-word names use the mean of their words.")
@embedding_options
@click.option("--semantic-weight", type=FiniteFloat(min=0), default=None,
              help=f"privileged only: weight of the ranking loss against the penalty that keeps max-cos "
              f"under its cap (0: keep the assigned Tammes code). Default: {DEFAULT_SEMANTIC_WEIGHT:g}.")
@click.option("--max-cos-tolerance", type=FiniteFloat(min=0), default=None,
              help=f"privileged only: how far max-cos may rise above the Tammes code that privileged starts "
              f"from (with its classes placed as by 'spherecodes assign'); larger buys more agreement with the "
              f"embeddings. Default: {DEFAULT_MAX_COS_TOLERANCE:g}.")
@click.option("--triplets", type=click.Choice(TRIPLET_STRATEGIES), default=None,
              help="privileged only: class triplets of the ranking loss per step: all, a fresh uniform "
              "sample, or each class's nearest embedding neighbours. Default (auto): all up to 200 "
              "classes, sampled beyond.")
@threads_option
def generate_cmd(**flags):
    """Compute a code for (d, K), store it in a bank, and print its report.

    \b
    Examples:
      spherecodes generate --d 64 --k 1000
      spherecodes generate --d 24 --k 4096 --method structured
      spherecodes generate --d 11 --k 12 --rotation random --seed 3
      spherecodes generate --d 8 --k 3000 --time-limit 60
      spherecodes generate --d 128 --k 10000 --out faces.h5
      spherecodes generate --d 512 --k 100000 --no-certify --max-memory 8GiB
      spherecodes generate --d 64 --method privileged --classes classes.txt --embeddings glove.txt
      spherecodes generate --d 3 --k 120 --method tammes --effort high
      spherecodes generate --d 3 --k 110 --method tammes --effort record --time-limit 600 --workers 2
      spherecodes generate --d 64 --k 1000 --method tammes --init start.npy
      spherecodes generate --d 7 --k 28 --method lines
      spherecodes generate --d 512 --k 1000 --out prototypes.npy

    Before the work starts, one estimate for the whole run (candidates,
    float64 statistics, certificate; memory and time, each timed on a sample
    here) is printed on stderr (not with --quiet; with --json only to a
    terminal), with what --no-certify would save where the certificate
    dominates; a size that cannot fit, or statistics and certificate
    estimated over a day, are refused with the flags that fit (a long
    optimisation is not: --time-limit or Ctrl-C bounds it).  Each phase then
    announces itself and shows progress.
    Ctrl-C during the optimisation stores the best code found so far,
    uncertified (never over an existing code: with --overwrite that is kept),
    and exits with status 130; a certificate still running at
    --time-limit stops (within the QP's block of classes under way; after a
    nearest-shell pass) and the code is stored uncertified, with the command
    that certifies it later.
    """
    started = time.perf_counter()
    d, method, quiet, as_json = flags["d"], flags["method"], flags["quiet"], flags["as_json"]
    names, k = _class_names(flags["classes"], flags["k"], method)
    if method in NEEDS_CLASS_DATA and (names is None or flags["embeddings"] is None):
        raise click.UsageError(f"--method {method} needs --classes and --embeddings")
    options = _options(flags, method, resolve_method(d, k, method))
    if flags["name"] is not None and Path(flags["out"] or ".h5").suffix.lower() in EXPORT_FORMATS:
        raise click.UsageError(f"--name names a code in a bank; {flags['out'].name} is a matrix file, which holds "
                               "no name")
    speak = tell(quiet, as_json)
    with ProgressBar(enabled=not quiet) as bar:  # its heartbeat shows that a long timing is under way
        context = run_context(flags, started, bar, bar.announcer(speak))
        plan = plan_run(d, k, method, options, seed=flags["seed"], rotation=flags["rotation"], name=flags["name"],
                        labels=None if method in NEEDS_CLASS_DATA else names, context=context)
        where = destination(flags["out"] or Path(f"spherecodes_d{d}_k{k}.h5"), plan.name, overwrite=flags["overwrite"],
                            dtype=flags["dtype"])
        plan.options = _read_inputs(plan, flags, names)  # before the long computation: a missing name fails fast
        plan.estimate(certify=flags["certify"])  # each phase timed on a sample; refuses what cannot fit
        context.say(plan.describe())
        plan.check()
        result = plan.execute(certify=flags["certify"])
    code, out = result.code, where.path
    if not plan.store(result, where, waiting=lock_notice(not quiet)):
        # --overwrite asked to replace it with a finished run's code, not with a code cut short.
        what = str(out) if where.matrix else f"code {code.name!r} in {out}"
        click.echo(f"Interrupted; {what} is unchanged: a run cut short does not replace it (its best code so "
                   f"far, max-cos {code.stats.max_cos:.10g}, was not stored).", err=True)
        raise click.exceptions.Exit(130)
    later = f"spherecodes certify {out}" + ("" if where.matrix else " --write")
    if result.out_of_time is not None:
        click.echo(f"--time-limit {format_duration(flags['time_limit'])} reached {result.out_of_time}: the code is "
                   f"stored uncertified; certify it later with '{later}' (it prints its own estimate).", err=True)
    if result.interrupted:
        where_to = f"as {code.name} in {out}" if not where.matrix else f"in {out}"
        click.echo(f"Interrupted; kept the best code so far {where_to} (max-cos {code.stats.max_cos:.10g}"
                   + (", uncertified); certify it with '" + later + "'." if code.certificate is None else ")."),
                   err=True)
        raise click.exceptions.Exit(130)
    if speak and where.matrix:
        click.echo(f"wrote the {code.k} x {code.d} prototypes ({flags['dtype'] or 'float32'}) of {code.name} to "
                   f"{out}", err=True)
    if as_json or not quiet:
        privileged = plan.method in NEEDS_CLASS_DATA
        report = semantic.semantic_report(code, plan.options.embeddings) if privileged else None
        show_report(code, None if where.matrix else str(out), as_json, semantic=report)


def _class_names(classes, k, method: str):
    """The class names of --classes (padded with unlabelled rows up to --k) and K."""
    names = read_class_names(classes) if classes is not None else None
    if k is None:
        if names is None:
            raise click.UsageError("give --k, or --classes to take K from the class names")
        return names, len(names)
    if names is not None and (len(names) > k or (len(names) < k and method in NEEDS_CLASS_DATA)):
        raise SpherecodesError(f"--k is {k} but {classes} holds {len(names)} class names; give "
                               f"{'one name per' if method in NEEDS_CLASS_DATA else 'at most one name per'} prototype")
    if names is not None:
        names = names + [""] * (k - len(names))  # reserve-ahead: the rows beyond the names wait for later classes
    return names, k


def _options(flags: dict, method: str, resolved: str):
    """The options of the method that runs, from the flags given (files not read yet), as bad usage if one does not
    apply."""
    if flags["init_code"] is not None and flags["init_path"] is None:
        raise click.UsageError("--init-code names a code in the bank given with --init")
    given = {field: flags[flag] for flag, field in METHOD_FLAGS.items() if flags[flag] != FLAG_DEFAULTS.get(flag)}
    try:
        return method_options(method, resolved, given=given, spell=_flag)
    except SpherecodesError as err:
        raise click.UsageError(str(err)) from None


def _read_inputs(plan, flags: dict, names):
    """The plan's options with the files of --init and --embeddings read."""
    options = plan.options
    if getattr(options, "init", None) is not None:
        options = replace(options, init=_read_start(flags["init_path"], flags["init_code"], plan.d, plan.k))
    if getattr(options, "embeddings", None) is not None:
        options = replace(options, embeddings=class_embeddings(names, flags["embeddings"], fmt=flags[
            "embeddings_format"], missing=flags["missing_words"]))
    return options


def _read_start(path, code_name, d: int, k: int):
    """The start code of ``--init`` (with ``--init-code``), checked against (K, d)."""
    try:
        start = load_code(path, code_name, normalize=True).prototypes
    except SpherecodesError as err:
        err.flags[CHOOSE_BY_NAME] = "choose one with --init-code NAME"
        raise
    if start.shape != (k, d):
        raise SpherecodesError(f"--init {path} holds {start.shape[0]} prototypes in d = {start.shape[1]}; "
                               f"expected (K, d) = ({k}, {d})")
    return start


def _flag(name: str) -> str:
    """``"semantic_weight"`` -> ``"--semantic-weight"``; the fields that flags of another name fill."""
    return {"init": "--init", "catalog": "--no-catalog"}.get(name, "--" + name.replace("_", "-"))
