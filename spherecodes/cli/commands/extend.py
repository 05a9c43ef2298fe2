"""``spherecodes extend``: add prototypes for classes that arrive later, keeping the code's rows."""

from __future__ import annotations

from pathlib import Path

import click

from ...bank import check_writable_destination, list_codes, read_code, write_code
from ...extension import EXTEND_METHODS, extend
from ...options import TammesOptions
from ...semantic import read_class_names
from .._common import ProgressBar, lock_notice, run_context, show_report
from .._common import certify as certify_code
from ..main import BANK, COUNT, EFFORT, FILE, MAX_MEMORY_HELP, SECONDS, SEED, MemorySize, main, threads_option

@main.command(name="extend")
@click.argument("bank", type=BANK)
@click.option("--code", "code_name", default=None, metavar="NAME",
              help="The code to extend; may be omitted if the bank holds one.")
@click.option("--k-new", "m", type=click.IntRange(min=1), default=None, metavar="M",
              help="How many prototypes to add (>= 1). May be omitted with --classes.")
@click.option("--classes", type=FILE, default=None,
              help="Names of the new classes, one per line: they label the new rows (their number is M unless "
              "--k-new asks for more, whose rows stay unlabelled). Without it the new rows are unlabelled.")
@click.option("--method", type=click.Choice(EXTEND_METHODS), default="auto", show_default=True,
              help="auto: a code that is the first K points of a construction (a structured code such as the "
              "extended BCH words, a closed form, the first K words of an orbit of sign changes) takes its next M "
              "points when they keep max-cos, which nothing can beat; otherwise the tammes optimiser places the "
              "new rows with the old ones frozen (started from those next points where there are any). "
              "next-points: the construction's next points only. tammes: the optimiser only.")
@click.option("--name", default=None, help="Name of the extended code. Default: <code>+<M>.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Bank to store the extended code in. Default: BANK itself, beside the code it extends.")
@click.option("--overwrite", is_flag=True, help="Replace a code of the same name.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed of the optimiser's starts.")
@click.option("--device", default="auto", show_default=True, help="Optimiser only: auto, cpu, cuda or cuda:N.")
@click.option("--steps", type=click.IntRange(min=1), default=None, help="Optimiser only: steps per start.")
@click.option("--restarts", type=click.IntRange(min=1), default=None, help="Optimiser only: number of starts.")
@click.option("--time-limit", type=SECONDS, default=None, metavar="SECONDS",
              help="Optimiser only: stop then and keep the best rows found.")
@click.option("--effort", type=EFFORT, default="default", show_default=True,
              help="Optimiser only: low, default or high (more starts; see 'spherecodes generate --help').")
@click.option("--max-memory", type=MemorySize(), default=None, help=MAX_MEMORY_HELP)
@click.option("--certify/--no-certify", default=True, show_default=True,
              help="Certify the one-vs-rest distances and rho of the extended code before storing it.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no text report (errors still print).")
@threads_option
def extend_cmd(**flags):
    """Add M prototypes to a code of BANK, for classes that come later.

    The K rows of the code stay exactly as they are, bit for bit, with their
    labels, so a network trained towards them keeps its logits for the old
    classes; the M new rows are placed as far as possible from the old
    ones and from each other.  The extended code (K + M rows) is stored as a
    new code, with its statistics and certificate, beside the old one (or in
    --out); the largest cosine between a new and an old row is printed and
    kept in its settings (new_old_max_cos).

    \b
    Examples:
      spherecodes extend bank.h5 --k-new 24
      spherecodes extend bank.h5 --code tammes-d16-k100-s0 --k-new 10
      spherecodes extend bank.h5 --classes new_classes.txt --name cifar110

    To keep room from the start instead, generate more rows than classes:
    'spherecodes generate --k 200 --classes names100.txt' labels the first
    100 rows and leaves the others unlabelled.
    """
    bank, classes, quiet, as_json = flags["bank"], flags["classes"], flags["quiet"], flags["as_json"]
    names = read_class_names(classes) if classes is not None else None
    m = flags["m"]
    if m is None:
        if names is None:
            raise click.UsageError("give --k-new, or --classes to take M from the new class names")
        m = len(names)
    elif names is not None and len(names) > m:
        raise click.UsageError(f"--k-new is {m} but {classes} holds {len(names)} class names; give at most one "
                               "name per new prototype")
    out = check_writable_destination(flags["out"] or bank)
    if out.suffix.lower() not in (".h5", ".hdf5"):
        raise click.UsageError(f"--out must be a bank (.h5); {out.name} is not")
    code = read_code(bank, flags["code_name"])
    planned = flags["name"] or f"{code.name}+{m}"
    if not flags["overwrite"] and out.exists() and planned in {c["name"] for c in list_codes(out)}:
        raise click.UsageError(f"code {planned!r} already exists in {out}; pass --overwrite or --name")
    labels = None if names is None else names + [""] * (m - len(names))
    options = TammesOptions(steps=flags["steps"], restarts=flags["restarts"], effort=flags["effort"])
    with ProgressBar(enabled=not quiet) as progress:
        context = run_context(flags, progress=progress)
        extended = extend(code, m, labels=labels, name=flags["name"], method=flags["method"], seed=flags["seed"],
                          options=options, context=context)
    if flags["certify"]:
        extended.certificate = certify_code(extended, context, quiet=quiet or as_json)
    write_code(out, extended, overwrite=flags["overwrite"], waiting=lock_notice(not quiet))
    if not quiet:
        settings = extended.settings
        click.echo(f"added {m} rows to {code.name} ({settings['placed_by']}): max-cos {code.max_cos:.10g} -> "
                   f"{extended.max_cos:.10g}; largest cosine between a new and an old row "
                   f"{settings['new_old_max_cos']:.10g}", err=True)
    if as_json or not quiet:
        show_report(extended, str(out), as_json)
