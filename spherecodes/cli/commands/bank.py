"""``spherecodes ls`` and ``spherecodes rm``: the codes in a bank."""

from __future__ import annotations

import click

from ...bank import delete_code, list_codes
from .._common import print_json
from ..main import BANK, main

@main.command(name="ls")
@click.argument("bank", type=BANK)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def ls_cmd(bank, as_json):
    """List the codes in BANK."""
    rows = list_codes(bank)
    if as_json:
        print_json(rows)
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
