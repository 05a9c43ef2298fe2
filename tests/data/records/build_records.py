"""Rebuild ``records.csv`` from the shipped coordinates and the quoted table values.

Run ``python tests/data/records/build_records.py`` from the repository root.
Every number below is either (a) computed in float64 from a coordinate file in
``coords/`` (rows re-normalised first), (b) a closed form, evaluated with mpmath
at 40 digits, or (c) a value copied digit for digit from a published table
(see README.md, "Sources").  Nothing is fitted or guessed.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import mpmath as mp
import numpy as np

HERE = Path(__file__).resolve().parent
mp.mp.dps = 40

#: (dimension, n, cosine as published, source key).  Copied verbatim.
QUOTED = [
    # Cohn, "Table of spherical codes" (cohn.mit.edu/?p=232), rows visible in the
    # stored copy of the page: 32 significant digits, rounded up.
    (3, 7, "0.21013831273060308486576530161854", "cohn_table"),
    (3, 8, "0.26120387496374144251476820691706", "cohn_table"),
    (3, 9, "0.33333333333333333333333333333334", "cohn_table"),
    (3, 10, "0.40439432521625075684622475072579", "cohn_table"),
    # Cohn's N = 15 row as quoted (with the row's quintic 13t^5-t^4+6t^3+2t^2-3t-1)
    # in github.com/mt0-svg/tammes-15 (table fetched there 2026-09-30 .. 10-02).
    (3, 15, "0.59260590292507377809642492233276", "cohn_table_quoted"),
    # spherical-codes.org rows as quoted in github.com/matevz-kovacic/active-model
    # (spherical_codes/n6_N86/README.md, n6_N98/README.md): 12 significant digits.
    (6, 86, "0.548918184883", "spherical_codes_org_quoted"),
    (6, 98, "0.571052839653", "spherical_codes_org_quoted"),
]


def closed_forms() -> list[tuple[int, int, mp.mpf, str]]:
    """Known exact optima / constructions, as (dimension, n, cosine, note)."""
    rows = []
    # N <= 2d: simplex (N = d + 1, cos = -1/d) and subsets of the cross-polytope
    # (d + 2 <= N <= 2d, cos = 0) are optimal (Rankin 1955).
    for d in range(3, 9):
        rows.append((d, d + 1, mp.mpf(-1) / d, "simplex"))
        for n in range(d + 2, 2 * d + 1):
            rows.append((d, n, mp.mpf(0), "cross-polytope subset"))
    rows = [r for r in rows if not (r[0] == 3 and r[1] < 5)]      # the 3-D table starts at N = 5
    tribonacci = mp.findroot(lambda x: x**3 - x**2 - x - 1, 1.8)
    rows += [
        (3, 11, 1 / mp.sqrt(5), "icosahedron less one point (Danzer)"),
        (3, 12, 1 / mp.sqrt(5), "icosahedron (Fejes Toth)"),
        (3, 8, (2 * mp.sqrt(2) - 1) / 7, "square antiprism, root of 7x^2+2x-1 (Schutte-van der Waerden)"),
        (3, 9, mp.mpf(1) / 3, "root of 3x-1 (Schutte-van der Waerden)"),
        (3, 24, (tribonacci - 1) / (3 - tribonacci), "snub cube (Robinson); t = tribonacci constant"),
        (4, 10, mp.mpf(1) / 6, "rectified 5-cell"),
        (4, 24, mp.mpf(1) / 2, "24-cell"),
    ]
    # N = 7: the root in (0, 1) of 3x^3 - 9x^2 - 3x + 1 (Schutte-van der Waerden).
    seven = [mp.re(x) for x in mp.polyroots([3, -9, -3, 1], maxsteps=200, extraprec=100) if 0 < mp.re(x) < 1]
    rows.append((3, 7, seven[0], "root of 3x^3-9x^2-3x+1 (Schutte-van der Waerden)"))
    return rows


def max_cos(points: np.ndarray) -> float:
    """float64 max-cos of the re-normalised rows."""
    w = points / np.linalg.norm(points, axis=1, keepdims=True)
    g = w @ w.T
    np.fill_diagonal(g, -np.inf)
    return float(g.max())


def coordinate_files() -> list[tuple[int, int, Path]]:
    out = []
    for path in sorted((HERE / "coords" / "sloane").glob("pack.*.txt")):
        d, n = map(int, re.fullmatch(r"pack\.(\d+)\.(\d+)\.txt", path.name).groups())
        out.append((d, n, path))
    return sorted(out)


def load_coordinates(path: Path, d: int) -> np.ndarray:
    return np.loadtxt(path).reshape(-1, d)


def fixed(x) -> str:
    """20 significant digits in fixed-point notation."""
    return mp.nstr(x, 20, min_fixed=-mp.inf, max_fixed=mp.inf)


def angle(c: float) -> float:
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))


def rows() -> list[dict]:
    out = []
    for d, n, cos, note in closed_forms():
        out.append(dict(dimension=d, n=n, max_cos=fixed(cos),
                        min_angle_deg=mp.nstr(mp.degrees(mp.acos(cos)), 17), source="closed_form", note=note))
    for d, n, text, source in QUOTED:
        c = mp.mpf(text)
        out.append(dict(dimension=d, n=n, max_cos=text, min_angle_deg=mp.nstr(mp.degrees(mp.acos(c)), 17),
                        source=source, note=""))
    # OEIS A383860: the N = 14 optimum's central angle in radians (Musin-Tarasov 2015).
    a14 = mp.mpf("0.971634742886224075941694947628")
    out.append(dict(dimension=3, n=14, max_cos=fixed(mp.cos(a14)), min_angle_deg=mp.nstr(mp.degrees(a14), 17),
                    source="oeis_a383860", note="central angle 0.971634742886224075941694947628 rad"))
    for d, n, path in coordinate_files():
        c = max_cos(load_coordinates(path, d))
        out.append(dict(dimension=d, n=n, max_cos=repr(c), min_angle_deg=repr(angle(c)), source="sloane_coords",
                        note=f"coords/sloane/{path.name}"))
    out.sort(key=lambda r: (r["dimension"], r["n"], r["source"]))
    return out


def main() -> None:
    with open(HERE / "records.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["dimension", "n", "max_cos", "min_angle_deg", "source", "note"],
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows())


if __name__ == "__main__":
    main()
