"""``spherecodes report``: the statistics, bounds, semantic agreement and plots of a stored code."""

from __future__ import annotations

from pathlib import Path

import click

from ...atomic import check_not_input
from ...errors import SpherecodesError
from ...plots import check_plot_path, plot_code
from ... import semantic
from ...semantic import class_embeddings, read_class_names
from .._common import read_with_certificate_check, show_report, tell
from ..main import BANK, FILE, MemorySize, embedding_options, main, threads_option

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
              help="Also draw the code into OUT (.png, .pdf or .svg): the pairwise cosines with max-cos and its "
              "lower bound (a bar per value for codes with only a few), rho inside the Theorem 3.9 band, the "
              "sorted one-vs-rest distances relative to rho, and for d <= 3 the prototypes themselves. A code "
              "without a certificate is certified for the plot.")
@click.option("--max-memory", type=MemorySize(), default=None,
              help="Most memory reading and checking the code may use, e.g. 4GiB. Default: 80% of what is free. "
              "The estimate is printed on stderr first (with --json only to a terminal; without --max-memory only "
              "for a read of a second or more); a code that cannot fit is refused before it is read.")
@threads_option
def report(bank, name, as_json, embeddings, classes, embeddings_format, missing_words, plot, max_memory):
    """Report the separation statistics and bounds of a code in BANK.

    Reading checks the prototypes' checksum and unit norms and a stored
    certificate against the prototypes, and recomputes every statistic from
    them: a stored figure or claim (an exact max-cos, auto's choice) that the
    rows do not bear out is not shown, and the command says so and exits
    with status 1. A code that is one orbit of sign changes (a binary linear
    code) has its stored generators checked against its rows, its
    certificate re-evaluated for one class and its statistics recomputed, in
    O(K d); other codes' statistics take every pair (the estimate says how
    long; more than a day is refused).

    \b
    Examples:
      spherecodes report spherecodes_d64_k1000.h5
      spherecodes report spherecodes_d64_k1000.h5 --plot d64_k1000.png
    """
    if plot is not None:
        check_plot_path(plot)
        check_not_input(plot, bank, "choose another --plot")
    code, bad_certificate, verified, claims = read_with_certificate_check(bank, name, max_memory=max_memory,
                                                                          estimate=tell(False, as_json),
                                                                          progress=not as_json)
    semantic_part = None
    if embeddings is not None:
        if classes is not None and code.labels is not None:
            raise click.UsageError("the code has labels; --classes is only for a code stored without them")
        names = read_class_names(classes) if classes is not None else code.labels
        if names is None:
            raise SpherecodesError(
                f"code {code.name!r} has no labels; name its rows in order with --classes to report its semantic agreement"
            )
        class_vectors = class_embeddings(names, embeddings, missing=missing_words, fmt=embeddings_format)
        semantic_part = semantic.semantic_report(code, class_vectors, labels=names)
    elif classes is not None:
        raise click.UsageError("--classes is used with --embeddings")
    show_report(code, str(bank), as_json, semantic=semantic_part, verified=verified)
    if plot is not None:
        plot_code(code, plot)
        click.echo(f"plot written to {plot}", err=as_json)
    problems = []
    if bad_certificate is not None:
        problems.append(f"{bad_certificate}; rho is shown uncertified")
    if claims.refused:
        problems.append(claims.message(f"code {code.name!r} in {bank}"))
    if problems:  # shown as far as the rows allow, then said: exit status 1
        raise SpherecodesError("; ".join(problems) + f" ('spherecodes certify {bank} --write' recomputes and stores "
                               "them)")
