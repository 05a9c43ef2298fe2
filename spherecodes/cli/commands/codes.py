"""``spherecodes codes``: the structured codes available in a dimension, with sizes and exact max-cos."""

from __future__ import annotations

import click

from ...checks import check_int
from ...structured import available_codes
from .._common import print_json
from ..main import DIM, main


def code_rows(d: int, k: int | None) -> list[dict]:
    """One JSON-ready row per structured code that fits R^d (with at least K points when K is given)."""
    rows = []
    for code in available_codes(d, k):
        row = {
            "name": code.name,
            "family": code.family,
            "d": code.d,
            "native_d": code.native_d,
            "size": code.size,
            "max_cos": str(code.max_cos),
            "max_cos_value": float(code.max_cos),
            "max_cos_exact": code.max_cos_exact,
            "min_distance": code.min_distance,
            "transitive": code.transitive,
            "citation": code.citation,
        }
        if k is not None:
            # An upper bound from the structure (the subcode or coset the K points come from).
            row["max_cos_k"] = str(code.max_cos_bound(k)) if k >= 2 else None
        rows.append(row)
    return rows


@main.command(name="codes")
@click.option("--d", "d", type=DIM, required=True, help="Dimension (>= 1): codes native to it or embedded from below.")
@click.option("--k", "k", type=click.IntRange(min=2), default=None,
              help="Only codes with at least K points; also shows the max-cos of the K points 'generate' takes.")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
def codes(d, k, as_json):
    """List the structured codes available in R^d, with sizes and exact max-cos.

    With --k, best first for K points; without, by max-cos, the largest code first.

    Binary codes on the sphere (extended BCH, Reed-Muller, extended Golay,
    Kerdock, and the BCH and Golay codes shortened and punctured to length d),
    lattice shells (D_n, E6, E7, E8, BW16, Leech), codes derived from them
    (down to the 276 equiangular lines and the McLaughlin configuration),
    two-distance sets of strongly regular graphs (Petersen, Clebsch,
    Schlafli, Gewirtz, Higman-Sims, McLaughlin, the isotropic-subspaces
    codes for every prime power q whose points this machine's memory could
    hold: 69,649 points in R^3856 for q = 16), and real equiangular tight frames (Paley, Steiner, Latin-square
    and their complements: one vector per line, or both signs); a code from a
    smaller dimension is embedded by zero padding.
    'generate --method structured' builds the first one listed for (d, K).

    \b
    Examples:
      spherecodes codes --d 24
      spherecodes codes --d 64 --k 1000 --json
    """
    d = check_int("--d", d, 1)
    rows = code_rows(d, k)
    if k is None:
        # Best first means something only for a given K: list by max-cos, the largest code first.
        rows.sort(key=lambda r: (r["max_cos_value"], -r["size"], r["name"]))
    if as_json:
        print_json({"d": d, "k": k, "codes": rows})
        return
    if not rows:
        click.echo(f"no structured code has {k} points in R^{d}" if k else f"no structured code fits R^{d}")
        return
    header = ["code", "R^", "points", "max-cos"] + ([f"max-cos of {k}"] if k else [])
    table = [[r["name"], str(r["native_d"]), f"{r['size']:,}",
              r["max_cos"] + ("" if r["max_cos_exact"] else " (bound)")]
             + ([f"<= {r['max_cos_k']}"] if k else []) for r in rows]
    widths = [max(len(row[i]) for row in [header] + table) for i in range(len(header))]
    click.echo(f"structured codes in R^{d}" + (f" with at least {k:,} points" if k else "")
               + " (R^: native dimension; smaller ones are zero-padded):")
    for row in [header] + table:
        click.echo("  " + "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                                    enumerate(zip(row, widths))))
