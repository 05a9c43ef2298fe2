"""``spherecodes ls`` and ``spherecodes rm``: the codes in a bank."""

from __future__ import annotations

import click

from ...bank import delete_code
from ...claims import check_listing
from ...errors import SpherecodesError
from ...report import printable
from .._common import check_bank_rewritable, lock_notice, print_json
from ..main import BANK, main

@main.command(name="ls")
@click.argument("bank", type=BANK)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def ls_cmd(bank, as_json):
    """List the codes in BANK.

    Each code's max-cos is recomputed from its prototypes (through its orbit
    of sign changes, or over all pairs where that takes about a second);
    a larger code's stored max-cos is checked against the pair it names and
    shown as a lower bound (>=): 'spherecodes report' checks all pairs.
    """
    rows, refused = check_listing(bank)
    if as_json:
        print_json(rows)
    elif not rows:
        click.echo(f"{bank}: no codes")
    else:
        names = [printable(r["name"]) for r in rows]
        width = max(len(n) for n in names)
        for name, r in zip(names, rows):
            at_least = ">=" if r["max_cos_is"] == "at least" else ""
            click.echo(
                f"{name:<{width}}  {printable(r['method']):<14}  d={r['d']:<5} K={r['k']:<8} "
                f"max-cos {at_least}{r['max_cos']:.10g}  {printable(r['created_utc'])}"
            )
    if refused:
        raise SpherecodesError(f"{bank} stores what its prototypes do not bear out: {'; '.join(refused)}; the list "
                               f"shows what the prototypes give ('spherecodes report {bank} --code NAME' shows each)")


@main.command(name="rm")
@click.argument("bank", type=BANK)
@click.option("--code", "names", required=True, multiple=True,
              help="Code to delete; repeat it to delete several in one rewrite.")
def rm_cmd(bank, names):
    """Delete codes from BANK (the bank is rewritten atomically).

    A damaged code (one that ls or report refuses) can be deleted too; the
    codes kept are checked and copied.
    """
    names = list(dict.fromkeys(names))
    check_bank_rewritable(bank)
    delete_code(bank, names, waiting=lock_notice(True))
    click.echo(f"deleted {', '.join(printable(name) for name in names)} from {bank}")
