"""``spherecodes assign``: choose which class gets which prototype of a stored code."""

from __future__ import annotations

import click

from ...bank import read_code, write_code
from ...report import format_assignment
from ... import semantic
from ...semantic import class_embeddings, read_class_names
from .._common import lock_notice, print_json
from ..main import BANK, FILE, SECONDS, SEED, embedding_options, main, threads_option

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
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seed of the triplet sample of the agreement measure (K > 126 only).")
@click.option("--time-limit", type=SECONDS, default=None, metavar="SECONDS",
              help="With --embeddings: stop the search then and keep the best order found.")
@click.option("--dry-run", is_flag=True, help="Print the assignment without writing the bank.")
@click.option("--json", "as_json", is_flag=True, help="Print the assignment as JSON.")
@threads_option
def assign(**flags):
    """Choose which class gets which prototype of a code in BANK.

    The prototypes stay exactly as they are (same bytes, checksum, separation
    numbers and certificate); only the order of the labels is rewritten, so
    that labels[i] is the class given prototype row i.

    \b
    Examples:
      spherecodes assign bank.h5 --code tammes-d64-k1000-s0 --classes classes.txt --embeddings glove.txt
      spherecodes assign bank.h5 --class-means means.npy
    """
    bank, classes, embeddings, class_means = flags["bank"], flags["classes"], flags["embeddings"], flags["class_means"]
    dry_run = flags["dry_run"]
    # Bad usage (status 2) before the bank is read; assign_code refuses the same for a caller in Python.
    if (embeddings is None) == (class_means is None):
        raise click.UsageError("give --classes with --embeddings, or --class-means")
    if embeddings is not None and classes is None:
        raise click.UsageError("--embeddings needs --classes")
    code = read_code(bank, flags["name"])
    names = read_class_names(classes) if classes is not None else None
    if embeddings is not None:
        class_vectors = class_embeddings(names, embeddings, missing=flags["missing_words"],
                                         fmt=flags["embeddings_format"])
        new, result = semantic.assign_code(code, embeddings=class_vectors, seed=flags["seed"],
                                           time_limit=flags["time_limit"])
    else:
        new, result = semantic.assign_code(code, class_means=semantic.load_class_means(class_means), names=names,
                                           seed=flags["seed"])
    if not dry_run:
        write_code(bank, new, overwrite=True, waiting=lock_notice(True))
    if flags["as_json"]:
        print_json({"bank": str(bank), "code": new.name, "written": not dry_run, **result.report()})
    else:
        click.echo(f"code {new.name} in {bank}" + (" (dry run, not written)" if dry_run else ""))
        click.echo(format_assignment(result))
