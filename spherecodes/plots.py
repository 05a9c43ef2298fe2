"""Pictures of a code and of the bounds, with matplotlib, headless.

Figures are drawn on matplotlib's Agg canvas without pyplot, so no display is
needed and the caller's own matplotlib backend is left alone.  The file name
chooses the format: ``.png``, ``.pdf`` or ``.svg``.  Files are written through
a temporary file renamed into place.

* :func:`plot_code` — the histogram of pairwise cosines with max-cos and the
  lower bound on max-cos marked; the sorted one-vs-rest distances with ρ and
  the Theorem 3.9 band; for d ≤ 3 the prototypes themselves.
* :func:`plot_bounds` — the Theorem 3.9 band on the best possible ρ against d
  for a fixed K, with the certified ρ of catalog banks on top (the picture of
  Jiang et al. (2024), Fig. 3).
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np

from .atomic import replace_atomically
from .bounds import max_cos_lower_bound, theorem_3_9
from .checks import check_sizes
from .code import Code
from .constructions import closed_form_rho
from .errors import SpherecodesError
from .sphere import gram_tiles

#: File name endings :func:`save_figure` accepts.
FORMATS = (".png", ".pdf", ".svg")

_COLORS = {"tammes": "#1f77b4", "softmax": "#d62728", "maxsep": "#2ca02c"}
_MARKERS = {"tammes": "o", "softmax": "s", "maxsep": "^"}


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
        raise SpherecodesError(
            f"cannot tell the format of {path}: end the plot file name in .png, .pdf or .svg"
        )
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise SpherecodesError(f"directory {directory} of the plot file does not exist; create it first")
    if path.is_dir():
        raise SpherecodesError(f"{path} is a directory; give a file name for the plot")
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as err:
        raise SpherecodesError(f"directory {directory} is not writable ({err.strerror}); choose another plot file") from None
    return path


def save_figure(fig, path) -> Path:
    """Write a matplotlib figure to ``path`` (format from the suffix) atomically."""
    path = check_plot_path(path)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    with replace_atomically(path, suffix=path.suffix) as tmp:
        fig.savefig(tmp, format=path.suffix[1:].lower(), dpi=120, bbox_inches="tight")
    return path


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def cosine_histogram(prototypes: np.ndarray, bins: np.ndarray) -> np.ndarray:
    """Counts of the pairwise cosines ``<w_i, w_j>``, i < j, in ``bins``, computed in tiles.

    Examples
    --------
    >>> w = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    >>> cosine_histogram(w, np.array([-1.5, -0.5, 0.5, 1.5])).tolist()
    [1, 2, 0]
    """
    counts = np.zeros(len(bins) - 1, dtype=np.int64)
    for r, c, g in gram_tiles(prototypes):
        if r == c:
            g = g[np.triu_indices(g.shape[0], k=1)]
        counts += np.histogram(g, bins=bins)[0]
    return counts


def plot_code(code: Code, path, *, device: str = "auto"):
    """Draw a code: cosine histogram, sorted one-vs-rest distances and, for d ≤ 3, its points.

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

        cert = one_vs_rest_distances(code.prototypes, device=device)
    panels = 3 if code.d <= 3 else 2
    fig = _figure(5.2 * panels, 4.4)
    axes = [fig.add_subplot(1, panels, 1), fig.add_subplot(1, panels, 2)]
    if panels == 3:
        axes.append(fig.add_subplot(1, panels, 3, projection="3d" if code.d == 3 else None))
    fig.suptitle(f"{code.name}: K = {code.k} prototypes in d = {code.d} ({code.method})", fontsize=12)
    _draw_histogram(axes[0], code)
    _draw_distances(axes[1], code, cert)
    if panels == 3:
        _draw_points(axes[2], code)
    return save_figure(fig, path)


def _draw_histogram(ax, code: Code) -> None:
    s = code.stats
    lo, hi = s.min_cos, s.max_cos
    if hi - lo < 1e-9:
        lo, hi = lo - 0.05, hi + 0.05
    pad = 0.02 * (hi - lo)
    bins = np.linspace(lo - pad, hi + pad, 61)
    counts = cosine_histogram(code.prototypes, bins)
    pairs = code.k * (code.k - 1) // 2
    ax.stairs(counts, bins, fill=True, color="#9ecae1", edgecolor="#3182bd", label="pairs of prototypes")
    ax.axvline(s.max_cos, color="#d62728", lw=2, label=f"max-cos = {s.max_cos:.6f}")
    bound = max_cos_lower_bound(code.d, code.k)
    ax.axvline(bound.value, color="black", ls="--", lw=1.5,
               label=f"no code can do better: max-cos ≥ {bound.value:.6f}\n({bound.method.split(' (')[0]})")
    if counts.max() > 50 * max(1, counts[counts > 0].min()):
        ax.set_yscale("log")
        ax.set_ylabel("number of pairs (log scale)")
    else:
        ax.set_ylabel("number of pairs")
    ax.set_xlabel("cosine between two prototypes")
    ax.set_title(f"Pairwise cosines ({pairs:,} pairs)")
    ax.legend(fontsize=8, loc="upper left")


def _draw_distances(ax, code: Code, cert) -> None:
    order = np.argsort(cert.hi)
    ranks = np.arange(1, code.k + 1)
    hi, lo = cert.hi[order], cert.lo[order]

    def curve(axes, with_labels: bool):
        axes.plot(ranks, hi, color="#1f77b4", lw=2, zorder=3, marker="." if code.k <= 200 else None,
                  label="distance of each class to the hull of the others" if with_labels else None)
        if np.max(hi - lo) > 1e-6:
            axes.fill_between(ranks, lo, hi, color="#1f77b4", alpha=0.25, zorder=2,
                              label="certified interval of each class" if with_labels else None)
        axes.axhline(cert.rho_lower, color="#d62728", lw=1.2, ls="--", zorder=4,
                     label=f"ρ = smallest distance ∈ [{cert.rho_lower:.6f}, {cert.rho_upper:.6f}]"
                     if with_labels else None)

    curve(ax, True)
    thm = theorem_3_9(code.d, code.k)
    if thm.applicable:
        ax.axhspan(thm.lower, thm.upper, color="#ffbb78", alpha=0.35, zorder=1,
                   label=f"Theorem 3.9: best possible ρ in [{thm.lower:.4f}, {thm.upper:.4f}]")
        ax.axhline(thm.lower, color="#ff7f0e", lw=1, ls=":")
        ax.axhline(thm.upper, color="#ff7f0e", lw=1, ls=":")
        ax.set_ylim(0, max(thm.upper, hi.max()) * 1.05)
    else:
        ax.plot([], [], " ", label=f"Theorem 3.9 does not apply (needs {thm.condition.split(' and ')[0]})")
        ax.set_ylim(0, hi.max() * 1.15 if hi.max() > 0 else 1)
    spread = hi.max() - min(lo.min(), cert.rho_lower)
    view = ax.get_ylim()[1] - ax.get_ylim()[0]
    if 1e-6 * view < spread < 0.05 * view:
        # The distances are too close together to tell apart at this scale: zoom in on them.
        inset = ax.inset_axes([0.12, 0.58, 0.55, 0.34])
        curve(inset, False)
        margin = 0.15 * spread
        inset.set_ylim(min(lo.min(), cert.rho_lower) - margin, hi.max() + margin)
        inset.set_xlim(0.5, code.k + 0.5)
        inset.set_title("zoom on the distances", fontsize=8)
        inset.tick_params(labelsize=7)
        inset.set_facecolor("white")
    ax.set_xlabel("class, sorted by its distance")
    ax.set_ylabel("one-vs-rest distance")
    ax.set_xlim(0.5, code.k + 0.5)
    ax.set_title("One-vs-rest distances (sorted)")
    ax.legend(fontsize=8, loc="lower right")


def _draw_points(ax, code: Code) -> None:
    w = code.prototypes
    size = 30 if code.k <= 100 else max(2.0, 3000 / code.k)
    if code.d == 1:
        ax.axhline(0, color="0.7", lw=1)
        ax.scatter(w[:, 0], np.zeros(code.k), s=size * 2, color="#1f77b4", zorder=3, label="prototypes")
        ax.set_xlim(-1.3, 1.3)
        ax.set_yticks([])
        ax.set_xlabel("x")
    elif code.d == 2:
        t = np.linspace(0, 2 * math.pi, 400)
        ax.plot(np.cos(t), np.sin(t), color="0.7", lw=1, label="unit circle")
        ax.scatter(w[:, 0], w[:, 1], s=size, color="#1f77b4", zorder=3, label="prototypes")
        ax.set_aspect("equal")
        ax.set_xlim(-1.25, 1.25)
        ax.set_ylim(-1.25, 1.25)
        ax.set_xlabel("x")
        ax.set_ylabel("y")
    else:
        u, v = np.meshgrid(np.linspace(0, 2 * math.pi, 36), np.linspace(0, math.pi, 18))
        ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.5)
        ax.scatter(w[:, 0], w[:, 1], w[:, 2], s=size, color="#1f77b4", depthshade=True, label="prototypes")
        ax.set_box_aspect((1, 1, 1))
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_zlabel("z")
    ax.set_title("The prototypes on the unit sphere")
    ax.legend(fontsize=8, loc="upper right")


def plot_bounds(k: int, d_values, path, *, entries=()):
    """Draw the Theorem 3.9 band on the best possible ρ against d, with measured codes on top.

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
    for d in ds:
        check_sizes(int(d), k)
    lower = np.full(len(ds), np.nan)
    upper = np.full(len(ds), np.nan)
    for i, d in enumerate(ds):
        thm = theorem_3_9(int(d), k)
        if thm.applicable:
            lower[i], upper[i] = thm.lower, thm.upper
    fig = _figure(8.0, 6.0)
    ax = fig.add_subplot(1, 1, 1)
    ax.fill_between(ds, lower, upper, color="#ffbb78", alpha=0.45,
                    label="Theorem 3.9: the best possible ρ lies in this band")
    ax.plot(ds, upper, color="#ff7f0e", lw=1.5, label="upper bound")
    ax.plot(ds, lower, color="#ff7f0e", lw=1.5, ls="--", label="lower bound")
    applies_up_to = k * k / (2 * math.pi * math.sqrt(math.e))
    if ds[0] <= applies_up_to < ds[-1]:
        ax.axvline(applies_up_to, color="0.5", ls=":",
                   label=f"Theorem 3.9 needs K ≥ √(2π√e·d), so d ≤ {math.floor(applies_up_to)}")
    closed = np.array([np.nan if (r := closed_form_rho(int(d), k)) is None else r for d in ds])
    if np.isfinite(closed).any():
        ax.plot(ds, closed, color="black", lw=2,
                label="optimal closed form: ρ exactly (simplex, cross-polytope, polygon)")
        finite = np.isfinite(closed)
        alone = finite & ~np.r_[False, finite[:-1]] & ~np.r_[finite[1:], False]
        ax.scatter(ds[alone], closed[alone], color="black", s=18, zorder=3, clip_on=False)
    by_method: dict[str, list] = {}
    for e in entries:
        if e.k == k and ds[0] <= e.d <= ds[-1]:
            by_method.setdefault(e.method, []).append(e)
    for method, group in sorted(by_method.items()):
        group.sort(key=lambda e: e.d)
        ax.plot([e.d for e in group], [e.rho_lower for e in group], ls="-", lw=1,
                marker=_MARKERS.get(method, "D"), ms=6, color=_COLORS.get(method, "#9467bd"),
                label=f"{method} codes from the catalog (certified ρ)")
    from matplotlib.ticker import ScalarFormatter

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
