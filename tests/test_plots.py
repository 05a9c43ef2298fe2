"""Plots: report --plot and bounds --plot write readable, non-empty pictures."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from spherecodes.bank import write_code
from spherecodes.code import make_code
from spherecodes.certificate import one_vs_rest_distances
from spherecodes.cli import main
from spherecodes.constructions import regular_polygon
from spherecodes.errors import SpherecodesError
from spherecodes.catalog import publish
from spherecodes.constructions import closed_form_rho
from spherecodes.plots import cosine_histogram, plot_bounds, plot_code

from conftest import dense_offdiagonal_cos, random_code

PNG = b"\x89PNG\r\n\x1a\n"


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == PNG
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.fixture()
def bank(tmp_path):
    path = tmp_path / "bank.h5"
    code = make_code(random_code(40, 16, 0), method="tammes", seed=0)
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu")
    write_code(path, code)
    return path


def _figure_text(fig):
    return [t.get_text() for ax in fig.axes for t in [ax.title, ax.xaxis.label, ax.yaxis.label]]


def test_cosine_histogram_counts_every_pair_once():
    w = random_code(300, 5, 1)
    bins = np.linspace(-1, 1, 41)
    counts = cosine_histogram(w, bins)
    upper = (w @ w.T)[np.triu_indices(300, k=1)]
    assert counts.sum() == 300 * 299 // 2
    np.testing.assert_array_equal(counts, np.histogram(upper, bins)[0])
    assert dense_offdiagonal_cos(w).size == 2 * counts.sum()


@pytest.mark.slow
def test_report_plot_png_and_pdf(bank, tmp_path):
    runner = CliRunner()
    out = tmp_path / "code.png"
    result = runner.invoke(main, ["report", str(bank), "--plot", str(out)])
    assert result.exit_code == 0, result.output
    assert f"plot written to {out}" in result.output and "max-cos" in result.output
    width, height = _png_size(out)
    assert width > 800 and height > 300 and out.stat().st_size > 20_000
    pdf = tmp_path / "code.pdf"
    result = runner.invoke(main, ["report", str(bank), "--plot", str(pdf), "--json"])
    assert result.exit_code == 0 and pdf.read_bytes()[:4] == b"%PDF"
    assert result.stdout.lstrip().startswith("{")  # the JSON stays clean; the note goes to stderr


def test_report_plot_bad_file_name_fails_before_any_work(bank, tmp_path):
    result = CliRunner().invoke(main, ["report", str(bank), "--plot", str(tmp_path / "code.gif")])
    assert result.exit_code == 1 and "end the plot file name in .png, .pdf or .svg" in result.output
    result = CliRunner().invoke(main, ["report", str(bank), "--plot", str(tmp_path / "no" / "code.png")])
    assert result.exit_code == 1 and "does not exist" in result.output
    assert list(tmp_path.glob("*.gif")) == []


def _capture_figures(monkeypatch):
    import spherecodes.plots as plots

    figures = []
    real_save = plots.save_figure
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figures.append(fig) or real_save(fig, path))
    return figures


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _texts(ax):
    return " ".join(t.get_text() for t in ax.texts)


@pytest.mark.slow
def test_plot_code_panels(tmp_path, monkeypatch):
    figures = _capture_figures(monkeypatch)
    code = make_code(regular_polygon(7), method="polygon")  # not certified: certified for the plot
    plot_code(code, tmp_path / "polygon.png", device="cpu")
    code3 = make_code(random_code(12, 3, 2), method="tammes")
    plot_code(code3, tmp_path / "d3.svg", device="cpu")
    code16 = make_code(random_code(30, 16, 3), method="tammes")
    plot_code(code16, tmp_path / "d16.png", device="cpu")
    two, three, sixteen = figures
    # histogram, the rho strip, the distances, and the points for d <= 3
    assert len(two.axes) == 4 and two.axes[3].name == "rectilinear"
    assert three.axes[3].name == "3d"
    assert len(sixteen.axes) == 3
    histogram, strip, distances = sixteen.axes
    assert histogram.get_title() == "Pairwise cosines (435 pairs)"
    assert histogram.get_xlabel() == "cosine between two prototypes"
    assert distances.get_ylabel() == "distance above ρ, in % of ρ"
    assert any(t.startswith("max-cos = ") for t in _legend(histogram))
    assert any("max-cos ≥" in t for t in _legend(histogram))
    assert any(t.startswith("this code: ρ = ") for t in _legend(strip))
    assert any(t.startswith("ρ = ") for t in _legend(distances))
    assert (tmp_path / "d3.svg").read_text().lstrip().startswith("<?xml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d16.png", "d3.svg", "polygon.png"]


def test_distances_are_drawn_relative_to_rho(tmp_path, monkeypatch):
    figures = _capture_figures(monkeypatch)
    code = make_code(random_code(30, 16, 3), method="tammes")
    code.certificate = one_vs_rest_distances(code.prototypes, device="cpu")
    plot_code(code, tmp_path / "d16.png")
    distances = figures[0].axes[2]
    curve = distances.get_lines()[0]
    rho, hi = code.certificate.rho_lower, np.sort(code.certificate.hi)
    np.testing.assert_allclose(curve.get_ydata(), 100 * (hi - rho) / rho, rtol=1e-12, atol=1e-12)
    low, high = distances.get_ylim()
    assert low <= 0 and high < 1.2 * curve.get_ydata().max()  # the axis spans the data, not 0..2


def test_legends_sit_outside_the_data(tmp_path, monkeypatch):
    figures = _capture_figures(monkeypatch)
    code = make_code(random_code(200, 8, 5), method="tammes")
    plot_code(code, tmp_path / "d8.png", device="cpu")
    fig = figures[0]
    fig.canvas.draw()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            assert not legend.get_window_extent().overlaps(ax.get_window_extent()), ax.get_title()


def test_simplex_and_cross_polytope_say_what_they_are(tmp_path, monkeypatch):
    from spherecodes.constructions import cross_polytope, simplex_etf

    figures = _capture_figures(monkeypatch)
    plot_code(make_code(simplex_etf(12, 11), method="etf"), tmp_path / "etf.png", device="cpu")
    plot_code(make_code(cross_polytope(100, 64), method="cross-polytope"), tmp_path / "xp.png", device="cpu")
    etf, xp = figures
    histogram, _, distances = etf.axes
    # One bar: all 66 pairs at -1/11, said in words; the distances are all equal and say so.
    (bar,) = histogram.patches
    assert bar.get_height() == 66 and abs(bar.get_x() + bar.get_width() / 2 + 1 / 11) < 1e-9
    assert histogram.get_title() == "Pairwise cosines: all 66 pairs equal"
    assert "simplex equiangular tight frame" in _texts(histogram)
    assert "All 12 classes are at the same distance" in _texts(distances)
    heights = sorted(p.get_height() for p in xp.axes[0].patches)
    # K - d = 36 rows are the negatives of others: 36 pairs at cos -1, every other pair orthogonal.
    assert heights == [100 - 64, 100 * 99 // 2 - (100 - 64)]
    assert "cross-polytope" in _texts(xp.axes[0])


@pytest.mark.slow
def test_bounds_plot_overlays_catalog_banks(tmp_path, monkeypatch):
    folder = tmp_path / "cat"
    folder.mkdir()
    for d in (3, 4):
        code = make_code(random_code(131, d, d), method="tammes")
        code.certificate = one_vs_rest_distances(code.prototypes, device="cpu")
        write_code(folder / f"tammes-d{d}-k131.h5", code)
    publish(folder)
    monkeypatch.setenv("SPHERECODES_BANK_URL", str(folder))
    out = tmp_path / "band.png"
    result = CliRunner().invoke(main, ["bounds", "--k", "131", "--d", "2..64", "--plot", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 catalog banks overlaid" in result.output
    width, height = _png_size(out)
    assert width > 600 and out.stat().st_size > 20_000


def test_bounds_plot_content(tmp_path, monkeypatch):
    figures = _capture_figures(monkeypatch)
    plot_bounds(100, range(8, 513), tmp_path / "b.pdf")
    (ax,) = figures[0].axes
    assert ax.get_title() == "How far apart K = 100 classes can be in d dimensions"
    assert ax.get_xlabel().startswith("feature dimension d") and ax.get_ylabel() == "one-vs-rest distance ρ"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "Theorem 3.9" in legend[0] and any("closed form" in t for t in legend)
    # The theorem's upper end (near 2 here) is capped by K/(K-1), the simplex's rho.
    assert any("K/(K−1) = 1.0101" in t for t in legend)
    assert closed_form_rho(64, 100) == 1.0 and closed_form_rho(2, 6) == pytest.approx(0.5)
    with pytest.raises(SpherecodesError, match="at least two"):
        plot_bounds(100, [8], tmp_path / "c.png")


def test_bounds_range_usage(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["bounds", "--k", "100", "--d", "64", "--plot", str(tmp_path / "x.png")])
    assert result.exit_code == 2 and "give a range" in result.output
    result = runner.invoke(main, ["bounds", "--k", "100", "--d", "8..64"])
    assert result.exit_code == 2 and "for --plot" in result.output
    result = runner.invoke(main, ["bounds", "--k", "100", "--d", "64..8", "--plot", str(tmp_path / "x.png")])
    assert result.exit_code == 2
    result = runner.invoke(main, ["bounds", "--k", "100", "--d", "64", "--json"])
    assert result.exit_code == 0 and '"theorem_3_9"' in result.output
    assert not (tmp_path / "x.png").exists()
