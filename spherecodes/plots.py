"""Pictures of a code and of the bounds, with matplotlib, headless.

Figures are drawn on matplotlib's Agg canvas without pyplot, so no display is
needed and the caller's own matplotlib backend is left alone.  The file name
chooses the format: ``.png``, ``.pdf`` or ``.svg``.  Files are written through
a temporary file renamed into place.

* :func:`plot_code` — the histogram of pairwise cosines with max-cos and the
  lower bound on max-cos marked; the sorted one-vs-rest distances with ρ and
  the Theorem 3.9 band capped by K/(K−1); for d ≤ 3 the prototypes themselves.
* :func:`plot_bounds` — the Theorem 3.9 band on the best possible ρ, capped by
  K/(K−1), against d for a fixed K, with the certified ρ of catalog banks on
  top (the picture of Jiang et al. (2024), Fig. 3).
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np

from . import heavy
from .atomic import output_directory, replace_atomically
from .bounds import THEOREM_3_9, max_cos_lower_bound, simplex_rho_cap, theorem_3_9
from .checks import check_sizes
from .code import Code
from .constructions import closed_form_rho
from .errors import SpherecodesError
from .report import printable
from .sphere import gram_tiles

#: File name endings :func:`save_figure` accepts.
FORMATS = (".png", ".pdf", ".svg")

#: Catalog codes in the bounds plot: colour, marker, marker size and whether it is filled.  Codes
#: of two methods often have nearly the same ρ, so large hollow markers are drawn first and small
#: filled ones on top: both stay visible where they coincide.
_METHOD_STYLE = {
    "softmax": ("#d62728", "s", 11, False),
    "maxsep": ("#2ca02c", "^", 9, False),
    "tammes": ("#1f77b4", "o", 5, True),
}
_OTHER_STYLE = ("#9467bd", "D", 7, False)


def check_plot_path(path) -> Path:
    """Refuse a plot file whose format is unknown or whose directory is missing or read-only.

    Examples
    --------
    >>> check_plot_path("picture.gif")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: cannot tell the format of picture.gif: end the plot file name in .png, .pdf or .svg
    """
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise SpherecodesError(f"cannot tell the format of {path}: end the plot file name in .png, .pdf or .svg")
    directory = output_directory(path, "choose another plot file")
    if path.is_dir():
        raise SpherecodesError(f"{path} is a directory; give a file name for the plot")
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as err:
        raise SpherecodesError(f"directory {directory} is not writable ({err.strerror}); choose another plot file") from None
    return path


def _literal(text: str) -> str:
    """``text`` (a method from a catalog anyone may write) as a legend shows it literally: escaped as
    :func:`spherecodes.report.printable` does, and a dollar sign never opening mathematics.

    Examples
    --------
    >>> print(_literal("$x^2$ and\\n$y$"))
    \\$x^2\\$ and\\n\\$y\\$
    """
    return printable(text).replace("$", "\\$")


def save_figure(fig, path) -> Path:
    """Write a matplotlib figure to ``path`` (format from the suffix) atomically."""
    path = check_plot_path(path)
    FigureCanvasAgg = heavy.matplotlib("backends.backend_agg").FigureCanvasAgg

    FigureCanvasAgg(fig)
    with replace_atomically(path, suffix=path.suffix) as tmp:
        fig.savefig(tmp, format=path.suffix[1:].lower(), dpi=120, bbox_inches="tight")
    return path


def _figure(width: float, height: float):
    Figure = heavy.matplotlib("figure").Figure

    return Figure(figsize=(width, height), layout="constrained")


def _pair_tiles(prototypes: np.ndarray, orbit):
    """The cosines of all pairs i < j as (values, multiplicity) tiles: through the code's symmetry where it has
    one (:meth:`spherecodes.symmetry.Symmetry.pair_cosines`, one class's cosines with their counts), else the Gram
    tiles."""
    pairs = None if orbit is None else orbit.pair_cosines(prototypes)
    if pairs is not None:
        yield from pairs
        return
    for r, c, g in gram_tiles(prototypes):
        yield (g[np.triu_indices(g.shape[0], k=1)] if r == c else g), 1


def cosine_histogram(prototypes: np.ndarray, bins: np.ndarray, orbit=None) -> np.ndarray:
    """Counts of the pairwise cosines ``<w_i, w_j>``, i < j, in ``bins``, computed in tiles.

    ``orbit``: the code's symmetry, if it has one (then one or two rows of
    cosines give all the counts).

    Examples
    --------
    >>> w = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    >>> cosine_histogram(w, np.array([-1.5, -0.5, 0.5, 1.5])).tolist()
    [1, 2, 0]
    """
    counts = np.zeros(len(bins) - 1, dtype=np.int64)
    for g, times in _pair_tiles(prototypes, orbit):
        counts += times * np.histogram(g, bins=bins)[0]
    return counts


#: A code whose pairwise cosines take at most this many values gets a bar per value, not a histogram.
FEW_COSINE_VALUES = 8

#: Cosines (and relative distances) closer than this are drawn as one value.
SAME_VALUE_TOL = 1e-9


def distinct_cosines(prototypes: np.ndarray, limit: int = FEW_COSINE_VALUES, tol: float = SAME_VALUE_TOL,
                     orbit=None):
    """The values the pairwise cosines take and how many pairs take each, or ``None`` beyond ``limit``.

    Cosines within ``tol`` of each other count as one value (a closed form's
    equal cosines differ by rounding).  Computed in tiles; stops at the first
    tile that shows more than ``limit`` values, so a generic code costs little.
    ``orbit`` as for :func:`cosine_histogram`.

    Examples
    --------
    >>> square = np.array([[1.0, 0], [0, 1], [-1, 0], [0, -1]])
    >>> values, counts = distinct_cosines(square)
    >>> values.round(12).tolist(), counts.tolist()
    ([-1.0, 0.0], [2, 4])
    >>> distinct_cosines(np.random.default_rng(0).standard_normal((50, 3))) is None
    True
    """
    totals: dict[int, int] = {}
    for g, times in _pair_tiles(prototypes, orbit):
        cells, counts = np.unique(np.round(np.ravel(g) / tol).astype(np.int64), return_counts=True)
        for cell, count in zip(cells.tolist(), counts.tolist()):
            totals[cell] = totals.get(cell, 0) + times * count
        if len(totals) > 2 * limit:
            return None
    # Merge neighbouring cells: one value can straddle a cell boundary.
    values, counts = [], []
    for cell in sorted(totals):
        if values and cell - values[-1][-1] <= 1:
            values[-1].append(cell)
            counts[-1] += totals[cell]
        else:
            values.append([cell])
            counts.append(totals[cell])
    if len(values) > limit:
        return None
    weighted = [sum(c * totals[c] for c in group) / sum(totals[c] for c in group) * tol for group in values]
    return np.array(weighted), np.array(counts, dtype=np.int64)


def plot_code(code: Code, path, *, device: str = "auto"):
    """Draw a code: its pairwise cosines, its one-vs-rest distances and, for d ≤ 3, its points.

    * **Pairwise cosines**: a histogram with max-cos and the lower bound on
      it marked, or a bar per value where the cosines take only a few;
    * **ρ against what is possible**: this code's ρ inside the band of
      Theorem 3.9 of Jiang et al. (2024) capped by K/(K−1), and the optimum
      where a closed form attains it;
    * **One-vs-rest distances**: each class's certified distance, sorted, as
      its excess over ρ in percent of ρ (differences of a millionth show);
    * for d ≤ 3 the prototypes themselves.

    Parameters
    ----------
    code : Code
        The code; when it has no certificate, one is computed for the plot
        (:func:`spherecodes.certificate.one_vs_rest_distances`).
    path : str or Path
        ``.png``, ``.pdf`` or ``.svg`` file to write.
    device : str
        Where a missing certificate is computed.

    Returns
    -------
    Path
        The written file.

    Examples
    --------
    >>> import tempfile, os
    >>> from spherecodes import generate
    >>> out = os.path.join(tempfile.mkdtemp(), "hexagon.png")
    >>> _ = plot_code(generate(d=2, k=6), out, device="cpu")
    >>> os.path.getsize(out) > 10_000
    True
    """
    path = check_plot_path(path)
    cert = code.certificate
    if cert is None:
        from .certificate import one_vs_rest_distances

        cert = one_vs_rest_distances(code.prototypes, device=device, orbit=code.orbit)
    panels = 3 if code.d <= 3 else 2
    fig = _figure(5.6 * panels, 5.4)
    grid = fig.add_gridspec(1, panels)
    histogram = fig.add_subplot(grid[0, 0])
    strip, distances = grid[0, 1].subgridspec(2, 1, height_ratios=[1, 4]).subplots()
    # The name and method come from the bank: shown as they are, never read as mathematics ($...$).
    fig.suptitle(printable(f"{code.name}: K = {code.k:,} prototypes in d = {code.d} ({code.method})"), fontsize=12,
                 parse_math=False)
    _draw_histogram(histogram, code)
    _draw_rho_strip(strip, code, cert)
    _draw_distances(distances, code, cert)
    if panels == 3:
        _draw_points(fig.add_subplot(grid[0, 2], projection="3d" if code.d == 3 else None), code)
    return save_figure(fig, path)


def _legend_below(ax, columns: int = 1) -> None:
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.17), ncols=columns, frameon=False)


def _explain(ax, text: str) -> None:
    ax.text(0.5, 0.96, text, transform=ax.transAxes, ha="center", va="top", fontsize=8.5, wrap=True,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "0.7"}, zorder=6)


def _draw_histogram(ax, code: Code) -> None:
    s = code.stats
    pairs = code.k * (code.k - 1) // 2
    bound = max_cos_lower_bound(code.d, code.k)
    attained = s.max_cos - bound.value <= 1e-9
    few = distinct_cosines(code.prototypes, orbit=code.orbit)
    if few is not None:
        _draw_cosine_values(ax, code, *few)
    else:
        lo, hi = s.min_cos, s.max_cos
        pad = 0.02 * (hi - lo)
        bins = np.linspace(lo - pad, hi + pad, 61)
        counts = cosine_histogram(code.prototypes, bins, orbit=code.orbit)
        ax.stairs(counts, bins, fill=True, color="#9ecae1", edgecolor="#3182bd", label="pairs of prototypes")
        if counts.max() > 50 * max(1, counts[counts > 0].min()):
            ax.set_yscale("log")
            ax.set_ylabel("number of pairs (log scale)")
        else:
            ax.set_ylabel("number of pairs")
        ax.set_title(f"Pairwise cosines ({pairs:,} pairs)")
    source = bound.method.split(" (")[0]
    if attained:
        ax.axvline(s.max_cos, color="#d62728", lw=2, ls=(0, (4, 2)),
                   label=f"max-cos = {s.max_cos:.6f} = the lower bound: optimal\n({source})")
    else:
        ax.axvline(s.max_cos, color="#d62728", lw=2, label=f"max-cos = {s.max_cos:.6f}")
        ax.axvline(bound.value, color="black", ls="--", lw=1.5,
                   label=f"no code can do better: max-cos ≥ {bound.value:.6f}\n({source})")
    ax.set_xlabel("cosine between two prototypes")
    _legend_below(ax)


def _draw_cosine_values(ax, code: Code, values: np.ndarray, counts: np.ndarray) -> None:
    """A bar per cosine value, labelled with its number of pairs, and what the code is."""
    pairs = int(counts.sum())
    lo, hi = min(values.min(), -1.0 / max(code.k - 1, 1)), values.max()
    span = max(hi - lo, 0.2)
    width = 0.02 * span
    ax.bar(values, counts, width=width, color="#9ecae1", edgecolor="#3182bd", label="pairs of prototypes")
    # A label is some 12% of the axis wide: labels of neighbouring bars closer than that go up a row each.
    row, rows, previous = 0, 1, -math.inf
    for value, count in zip(values, counts):
        row = row + 1 if value - previous < 0.15 * (span * 1.3) else 0
        rows, previous = max(rows, row + 1), value
        ax.annotate(f"{count:,} at {value:.6g}", (value, counts.max() if row else count),
                    xytext=(0, 3 + 12 * row), textcoords="offset points", ha="center", va="bottom", fontsize=8,
                    zorder=6, bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none"},
                    arrowprops={"arrowstyle": "-", "color": "0.6", "lw": 0.6} if row else None)
    ax.set_xlim(lo - 0.15 * span, hi + 0.15 * span)
    ax.set_ylim(0, counts.max() * (1.6 + 0.15 * (rows - 1)))
    ax.set_ylabel("number of pairs")
    if len(values) == 1:
        ax.set_title(f"Pairwise cosines: all {pairs:,} pairs equal")
    else:
        ax.set_title(f"Pairwise cosines: {len(values)} values over {pairs:,} pairs")
    _explain(ax, _what_the_cosines_say(code, values))


def _what_the_cosines_say(code: Code, values: np.ndarray) -> str:
    k = code.k
    if len(values) == 1 and abs(values[0] + 1 / (k - 1)) < 1e-9:
        return (f"A simplex equiangular tight frame: every pair at cos = −1/(K−1) = {values[0]:.6f},\n"
                "the smallest max-cos any K unit vectors can have.\nEvery class is equally far from every other.")
    if set(np.round(values, 9).tolist()) <= {-1.0, 0.0}:
        return ("A cross-polytope: every pair orthogonal (cos 0) or opposite (cos −1);\n"
                "max-cos 0 is optimal for d + 2 ≤ K ≤ 2d (Rankin bound).")
    if code.d == 2 and len(values) == k // 2:
        return "A regular polygon: neighbours on the circle at cos(2π/K), the optimum in the plane."
    return (f"Only {len(values)} distinct cosines: a highly symmetric code\n"
            "(its pairs fall into a few equal-angle classes).")


def _draw_rho_strip(ax, code: Code, cert) -> None:
    """This code's ρ inside the range that Theorem 3.9, capped by K/(K−1), allows for the best possible ρ."""
    thm = theorem_3_9(code.d, code.k)
    optimum = closed_form_rho(code.d, code.k)
    ax.set_xlim(0, 2)
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    if thm.applicable:
        ax.axvspan(thm.lower, thm.best_upper, color="#ffbb78", alpha=0.5,
                   label=f"best possible ρ in [{thm.lower:.4f}, {thm.best_upper:.4f}]\n"
                         f"(Theorem 3.9; upper end {_upper_source(thm)})")
    else:
        ax.axvline(thm.best_upper, color="#ff7f0e", lw=1.5, ls="--",
                   label=f"best possible ρ ≤ K/(K−1) = {thm.best_upper:.4f} (Theorem 3.9 does not apply)")
    if optimum is not None:
        ax.axvline(optimum, color="black", lw=2, label=f"optimal ρ = {optimum:.6f} (closed form)")
    ax.plot([cert.rho_lower], [0.5], marker="D", ms=9, color="#d62728", ls="none",
            label=f"this code: ρ = {cert.rho_lower:.6f}")
    ax.set_title("ρ = the smallest one-vs-rest distance, and what is possible", fontsize=10)
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=2 if optimum else 1,
              frameon=False)


def _draw_distances(ax, code: Code, cert) -> None:
    order = np.argsort(cert.hi)
    ranks = np.arange(1, code.k + 1)
    hi, lo = cert.hi[order], cert.lo[order]
    rho = cert.rho_lower
    relative = rho > 0
    scale = 100.0 / rho if relative else 1.0
    excess_hi, excess_lo = (hi - rho) * scale, (lo - rho) * scale
    ax.set_title("One-vs-rest distances, sorted", fontsize=11)
    ax.set_xlabel("class, sorted by its distance")
    if relative and excess_hi.max() <= 100 * SAME_VALUE_TOL:
        ax.set_xticks([])
        ax.set_yticks([])
        ax.text(0.5, 0.5,
                f"All {code.k:,} classes are at the same distance\nρ = {rho:.9f} from the convex hull "
                f"of the others\n(spread below {SAME_VALUE_TOL:g} of ρ): no class is easier to confuse\n"
                "than another, and none is a Softmax-Code rattler.",
                transform=ax.transAxes, ha="center", va="center", fontsize=9)
        return
    bounded = code.k - cert.classes_certified
    what = ("distance of each class to the hull of the others" if not bounded else
            f"upper end of each class's distance to the hull of the others ({bounded:,} classes only bounded, "
            "within the shaded interval)")
    ax.plot(ranks, excess_hi, color="#1f77b4", lw=2, zorder=3, marker="." if code.k <= 200 else None, label=what)
    if np.max(hi - lo) > 1e-6 * max(rho, 1e-300):
        ax.fill_between(ranks, excess_lo, excess_hi, color="#1f77b4", alpha=0.25, zorder=2,
                        label="certified interval of each class")
    margin = cert.rattler_tol * scale
    rattlers = f"{len(cert.softmax_rattlers):,} classes have room to spare"
    if margin >= 0.01 * max(excess_hi.max(), 1e-300):
        ax.axhline(0, color="#d62728", lw=1.2, ls="--", zorder=4, label=f"ρ = {rho:.9f} (the smallest)")
        ax.axhline(margin, color="0.4", lw=1, ls=":", zorder=4, label=f"rattler margin: above it, {rattlers}")
    else:  # a line that close to ρ's would be hidden under it: say it in words instead
        ax.axhline(0, color="#d62728", lw=1.2, ls="--", zorder=4,
                   label=f"ρ = {rho:.9f} (the smallest); the rattler margin ({margin:.2g} above it) is too thin "
                         f"to draw: {rattlers}")
    ax.set_ylabel("distance above ρ, in % of ρ" if relative else "one-vs-rest distance (ρ = 0)")
    ax.set_xlim(0.5, code.k + 0.5)
    _legend_below(ax)


def _draw_points(ax, code: Code) -> None:
    w = code.prototypes
    size = 30 if code.k <= 100 else max(2.0, 3000 / code.k)
    if code.d == 1:
        ax.axhline(0, color="0.7", lw=1)
        ax.scatter(w[:, 0], np.zeros(code.k), s=size * 2, color="#1f77b4", zorder=3)
        ax.set_xlim(-1.3, 1.3)
        ax.set_yticks([])
    elif code.d == 2:
        t = np.linspace(0, 2 * math.pi, 400)
        ax.plot(np.cos(t), np.sin(t), color="0.7", lw=1)
        ax.scatter(w[:, 0], w[:, 1], s=size, color="#1f77b4", zorder=3)
        ax.set_aspect("equal")
        ax.set_xlim(-1.25, 1.25)
        ax.set_ylim(-1.25, 1.25)
    else:
        u, v = np.meshgrid(np.linspace(0, 2 * math.pi, 36), np.linspace(0, math.pi, 18))
        ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.5)
        ax.scatter(w[:, 0], w[:, 1], w[:, 2], s=size, color="#1f77b4", depthshade=True)
        ax.set_box_aspect((1, 1, 1))
        ax.set_zlabel("z")
    ax.set_xlabel("x")
    if code.d > 1:
        ax.set_ylabel("y")
    ax.set_title({1: "The prototypes on the line", 2: "The prototypes on the unit circle"}.get(
        code.d, "The prototypes on the unit sphere"))


def _upper_source(thm) -> str:
    """Which bound gives the upper end of the band, in words for a legend."""
    if thm.best_upper_by == THEOREM_3_9:
        return "the theorem's, below K/(K−1)"
    return f"K/(K−1); theorem: {thm.upper:.4f}"


def plot_bounds(k: int, d_values, path, *, entries=()):
    """Draw the band on the best possible ρ against d, with measured codes on top.

    The band is Theorem 3.9's, its upper end capped by K/(K−1) (the simplex's
    ρ, which no code exceeds in any dimension).

    Parameters
    ----------
    k : int
        Number of classes.
    d_values : sequence of int
        Dimensions to draw (at least two).
    path : str or Path
        ``.png``, ``.pdf`` or ``.svg`` file to write.
    entries : iterable of CatalogEntry
        Catalog entries; those with this K and d in range are drawn with their
        certified ρ.  The optimal ρ of the closed forms (d ≥ K/2) is drawn too.

    Returns
    -------
    Path
        The written file.

    Examples
    --------
    >>> import tempfile, os
    >>> out = os.path.join(tempfile.mkdtemp(), "band.pdf")
    >>> _ = plot_bounds(1000, range(8, 513), out)
    >>> open(out, "rb").read(4)
    b'%PDF'
    """
    path = check_plot_path(path)
    ds = np.array(sorted({int(d) for d in d_values}))
    if len(ds) < 2:
        raise SpherecodesError("plot the bounds over at least two dimensions, e.g. --d 8..512")
    lower = np.full(len(ds), np.nan)
    upper = np.full(len(ds), np.nan)
    for i, d in enumerate(ds):
        thm = theorem_3_9(*check_sizes(int(d), k))
        if thm.applicable:
            lower[i], upper[i] = thm.lower, thm.upper
    cap = simplex_rho_cap(k)
    fig = _figure(8.0, 6.0)
    ax = fig.add_subplot(1, 1, 1)
    ax.fill_between(ds, lower, np.fmin(upper, cap), color="#ffbb78", alpha=0.45,
                    label="the best possible ρ lies in this band (Theorem 3.9, capped by K/(K−1))")
    # The theorem's own upper end is drawn only where it is the tighter bound.
    ax.plot(ds, np.where(upper < cap, upper, np.nan), color="#ff7f0e", lw=1.5,
            label="upper bound: Theorem 3.9 (where below K/(K−1))")
    ax.axhline(cap, color="#9467bd", lw=1.5,
               label=f"upper bound: K/(K−1) = {cap:.4f}, the simplex's ρ (no code has more, in any d)")
    ax.plot(ds, lower, color="#ff7f0e", lw=1.5, ls="--", label="lower bound: Theorem 3.9")
    applies_up_to = k * k / (2 * math.pi * math.sqrt(math.e))
    if ds[0] <= applies_up_to < ds[-1]:
        ax.axvline(applies_up_to, color="0.5", ls=":",
                   label=f"Theorem 3.9 needs K ≥ √(2π√e·d), so d ≤ {math.floor(applies_up_to)}")
    closed = np.array([np.nan if (r := closed_form_rho(int(d), k)) is None else r for d in ds])
    if np.isfinite(closed).any():
        ax.plot(ds, closed, color="black", lw=2,
                label="optimal closed form: ρ exactly (simplex, cross-polytope, polygon)")
        # Mark where each run of closed forms starts: a run at the edge of a log axis can be a few pixels.
        finite = np.isfinite(closed)
        starts = finite & ~np.r_[False, finite[:-1]]
        ax.scatter(ds[starts], closed[starts], color="black", s=24, zorder=3, clip_on=False)
    by_method: dict[str, list] = {}
    for e in entries:
        if e.k == k and ds[0] <= e.d <= ds[-1]:
            by_method.setdefault(e.method, []).append(e)
    for method, group in sorted(by_method.items(), key=lambda item: -_METHOD_STYLE.get(item[0], _OTHER_STYLE)[2]):
        color, marker, size, filled = _METHOD_STYLE.get(method, _OTHER_STYLE)
        group.sort(key=lambda e: e.d)
        # A single code is a dot, in the legend too, not a line.
        ax.plot([e.d for e in group], [e.rho_lower for e in group], ls="-" if len(group) > 1 else "none", lw=1,
                color=color, marker=marker, ms=size, mew=1.8, mfc=color if filled else "white",
                label=f"{_literal(method)} codes from the catalog (certified ρ)")
    ScalarFormatter = heavy.matplotlib("ticker").ScalarFormatter

    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.set_xlim(ds[0], ds[-1])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("feature dimension d (log scale)")
    ax.set_ylabel("one-vs-rest distance ρ")
    ax.set_title(f"How far apart K = {k:,} classes can be in d dimensions")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=2, frameon=False)
    return save_figure(fig, path)
