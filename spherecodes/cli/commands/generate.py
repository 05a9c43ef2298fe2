"""``spherecodes generate``: compute a code for (d, K), certify it, store it in a bank, report it."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ...atomic import LOCK_QUIET_S
from ...bank import CHOOSE_BY_NAME, check_writable_destination, list_codes, write_code
from ...bounds import max_cos_lower_bound
from ...checks import check_sizes
from ...code import check_code_name
from ...errors import SpherecodesError
from ...export import EXPORT_DTYPES, EXPORT_FORMATS, export_code
from ...generation import (
    METHOD_OPTIONS,
    METHODS,
    NEEDS_CLASS_DATA,
    ROTATION_CHOICES,
    SINGLE_START,
    generate,
    inapplicable_options,
    options_of,
    planned_code_name,
    resolve_method,
)
from ...run_estimate import estimate_run
from ... import semantic
from ...loading import load_code
from ...memory import format_duration, require_memory
from ...semantic import (
    DEFAULT_MAX_COS_TOLERANCE,
    DEFAULT_SEMANTIC_WEIGHT,
    TRIPLET_STRATEGIES,
    class_embeddings,
    read_class_names,
)
from .._common import OutOfTime, ProgressBar, default_bank_path, lock_notice, show_report, tell
from .._common import certify as certify_code
from ..main import (
    COUNT, DIM, EFFORT, FILE, MAX_MEMORY_HELP, MAX_THREADS, SECONDS, SEED, FiniteFloat, MemorySize, SchedulerAddress,
    embedding_options, main, threads_option,
)

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
def generate_cmd(d, k, method, seed, rotation, device, steps, restarts, time_limit, use_catalog, max_memory, effort,
                 workers, scheduler, init_path,
                 init_code, neighbours, refresh, out, dtype, name, overwrite, as_json, certify, quiet, classes,
                 embeddings, embeddings_format, missing_words, semantic_weight, max_cos_tolerance, triplets):
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
      spherecodes generate --d 3 --k 120 --effort high
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
    names = read_class_names(classes) if classes is not None else None
    if k is None:
        if names is None:
            raise click.UsageError("give --k, or --classes to take K from the class names")
        k = len(names)
    elif names is not None and (len(names) > k or (len(names) < k and method in NEEDS_CLASS_DATA)):
        raise SpherecodesError(f"--k is {k} but {classes} holds {len(names)} class names; give "
                               f"{'one name per' if method in NEEDS_CLASS_DATA else 'at most one name per'} prototype")
    elif names is not None:
        names = names + [""] * (k - len(names))  # reserve-ahead: the rows beyond the names wait for later classes
    # Whatever method makes it, the code ends as K x d float64 numbers in memory: refused first where they cannot fit.
    require_memory(8.0 * k * d, f"the code itself (K={k} x d={d} float64 prototypes)")
    privileged = method in NEEDS_CLASS_DATA
    if privileged:
        if names is None or embeddings is None:
            raise click.UsageError(f"--method {method} needs --classes and --embeddings")
    if restarts is not None and method in SINGLE_START:
        raise click.UsageError(f"--method {method} runs a single start; drop --restarts")
    if privileged:
        check_sizes(d, k)
    if inapplicable_options(method, embeddings=embeddings, semantic_weight=semantic_weight,
                            max_cos_tolerance=max_cos_tolerance, triplets=triplets):
        raise click.UsageError(
            f"{_flags(options_of(NEEDS_CLASS_DATA))} apply to --method {' or '.join(NEEDS_CLASS_DATA)}; "
            "to place the classes of another code on its prototypes use 'spherecodes assign'"
        )
    out = check_writable_destination(out or default_bank_path(d, k))
    matrix_file = out.suffix.lower() in EXPORT_FORMATS
    if not matrix_file and out.suffix.lower() not in (".h5", ".hdf5"):
        raise SpherecodesError(f"cannot store the code in {out}: end --out in .h5 (a bank) or in "
                               f"{', '.join(EXPORT_FORMATS)} (a matrix)")
    if dtype is not None and not matrix_file:
        raise SpherecodesError("--dtype applies to a matrix file: give --out FILE.npy, .pt, .csv or .txt")
    if name is not None and matrix_file:
        raise click.UsageError(f"--name names a code in a bank; {out.name} is a matrix file, which holds no name")
    name = check_code_name(name) if name is not None else planned_code_name(d, k, method, seed=seed,
                                                                          rotation=rotation)
    # Refuse an existing code or file before computing anything: generation can be long.
    if not overwrite and _replaces(out, name, matrix_file):
        raise SpherecodesError((f"{out} exists" if matrix_file else f"code {name!r} already exists in {out}")
                               + "; pass --overwrite to replace it")
    # Read the embeddings before the long computation, so that a missing name fails fast.
    class_vectors = (
        class_embeddings(names, embeddings, missing=missing_words, fmt=embeddings_format) if privileged else None
    )
    resolved = resolve_method(d, k, method)
    init = _read_start(init_path, init_code, d, k, resolved)
    wrong = inapplicable_options(resolved, neighbours=neighbours, refresh=refresh,
                                 effort=None if effort == "default" else effort)
    if wrong:
        raise click.UsageError(f"{_flags(wrong)} apply to the {' or '.join(METHOD_OPTIONS[wrong[0]])} method")
    speak = tell(quiet, as_json)
    # One estimate for the whole run, each phase timed on a sample; refuses what cannot fit, before any work.
    with ProgressBar(enabled=not quiet) as progress:  # its heartbeat shows that a long timing is under way
        estimate, _ = estimate_run(d, k, resolved, seed=seed, device=device, steps=steps, restarts=restarts,
                                   time_limit=time_limit, max_memory=max_memory, neighbours=neighbours,
                                   refresh=refresh, effort=effort, catalog=use_catalog, certify=certify,
                                   started=started, announce=progress.announcer(speak), rotation=rotation)
    if speak:
        click.echo(estimate.describe(), err=True)
    estimate.check()
    with ProgressBar(enabled=not quiet) as progress:
        code = generate(d, k, method, seed=seed, rotation=rotation, name=name, labels=None if privileged else names,
                        device=device, steps=steps, restarts=restarts,
                        time_limit=estimate.optimiser_time_limit if time_limit is not None else None,
                        progress=progress, announce=progress.announcer(speak),
                        embeddings=class_vectors, semantic_weight=semantic_weight,
                        max_cos_tolerance=max_cos_tolerance, triplets=triplets or "auto",
                        max_memory=max_memory, neighbours=neighbours, refresh=refresh, effort=effort, init=init,
                        catalog=use_catalog, built=estimate.built, workers=workers, scheduler=scheduler)
    interrupted = code.settings.get("stop_reason") == "interrupted"
    deadline = None if time_limit is None else started + time_limit
    out_of_time = None
    try:
        if certify and not interrupted and code.certificate is None:  # a bundled code's comes checked
            if deadline is not None and time.perf_counter() >= deadline:
                out_of_time = "before the certificate"
            else:
                if speak:  # an optimiser's code was not known to the estimate (timed on a random code): not described
                    click.echo(f"certificate: {estimate.phase('certificate').what}" if estimate.built is not None
                               else f"certificate: K = {code.k} classes in d = {code.d}", err=True)
                try:
                    code.certificate = certify_code(code, device=device, max_memory=max_memory, quiet=not speak,
                                                    estimate=False, deadline=deadline)
                except OutOfTime as stop:
                    update = stop.args[0]
                    out_of_time = f"during the certificate ({update.step:,} of {update.steps:,} classes settled)"
        # The LP bound the bank stores takes seconds at large sizes: computed here (and remembered), so that
        # Ctrl-C during it keeps the code instead of abandoning the write.
        max_cos_lower_bound(d, k)
    except KeyboardInterrupt:
        interrupted = True
    code.wall_time = time.perf_counter() - started  # the whole run, as the report's "made ... in" says
    if interrupted and _replaces(out, name, matrix_file):
        # --overwrite asked to replace it with a finished run's code, not with a code cut short.
        what = str(out) if matrix_file else f"code {name!r} in {out}"
        click.echo(f"Interrupted; {what} is unchanged: a run cut short does not replace it (its best code so "
                   f"far, max-cos {code.stats.max_cos:.10g}, was not stored).", err=True)
        raise click.exceptions.Exit(130)
    if matrix_file:
        export_code(code, out, dtype=dtype or "float32", overwrite=overwrite)
    else:
        # The time limit bounds the wait for another process writing the bank too (a second at least, past a run
        # that used all its time).
        patience = None if deadline is None else max(deadline - time.perf_counter(), LOCK_QUIET_S)
        write_code(out, code, overwrite=overwrite, waiting=lock_notice(not quiet), lock_timeout=patience)
    if out_of_time is not None:
        later = f"spherecodes certify {out}" + ("" if matrix_file else " --write")
        click.echo(f"--time-limit {format_duration(time_limit)} reached {out_of_time}: the code is stored "
                   f"uncertified; certify it later with '{later}' (it prints its own estimate).", err=True)
    if interrupted:
        where = f"as {code.name} in {out}" if not matrix_file else f"in {out}"
        later = "" if code.certificate is not None else \
            f"; certify it with 'spherecodes certify {out}{'' if matrix_file else ' --write'}'"
        click.echo(f"Interrupted; kept the best code so far {where} (max-cos {code.stats.max_cos:.10g}"
                   f"{', uncertified' if code.certificate is None else ''}){later}.", err=True)
        raise click.exceptions.Exit(130)
    if speak and matrix_file:
        click.echo(f"wrote the {code.k} x {code.d} prototypes ({dtype or 'float32'}) of {code.name} to {out}",
                   err=True)
    if as_json or not quiet:
        report = semantic.semantic_report(code, class_vectors) if privileged else None
        show_report(code, None if matrix_file else str(out), as_json, report)


def _replaces(out: Path, name: str, matrix_file: bool) -> bool:
    """Whether storing the code ``name`` at ``out`` would replace an existing file or code."""
    if not out.exists():
        return False
    return matrix_file or name in {c["name"] for c in list_codes(out)}


def _read_start(path, code_name, d: int, k: int, method: str):
    """The start code of ``--init`` (with ``--init-code``), checked against (K, d) and the method; or None."""
    if path is None:
        if code_name is not None:
            raise click.UsageError("--init-code names a code in the bank given with --init")
        return None
    if inapplicable_options(method, init=path):
        raise click.UsageError(f"--init applies to the optimisers tammes, softmax, maxsep and lines, not {method!r}")
    try:
        start = load_code(path, code_name, normalize=True).prototypes
    except SpherecodesError as err:
        err.flags[CHOOSE_BY_NAME] = "choose one with --init-code NAME"
        raise
    if start.shape != (k, d):
        raise SpherecodesError(f"--init {path} holds {start.shape[0]} prototypes in d = {start.shape[1]}; "
                               f"expected (K, d) = ({k}, {d})")
    return start


def _flags(options) -> str:
    """``["semantic_weight", "triplets"]`` -> ``"--semantic-weight and --triplets"``."""
    flags = ["--" + option.replace("_", "-") for option in options]
    return flags[0] if len(flags) == 1 else f"{', '.join(flags[:-1])} and {flags[-1]}"
