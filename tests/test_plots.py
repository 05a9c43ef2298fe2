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


@pytest.mark.slow
def test_plot_code_panels(tmp_path, monkeypatch):
    import spherecodes.plots as plots

    figures = []
    real_save = plots.save_figure
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figures.append(fig) or real_save(fig, path))
    code = make_code(regular_polygon(7), method="polygon")  # not certified: certified for the plot
    plot_code(code, tmp_path / "polygon.png", device="cpu")
    code3 = make_code(random_code(12, 3, 2), method="tammes")
    plot_code(code3, tmp_path / "d3.svg", device="cpu")
    code16 = make_code(random_code(30, 16, 3), method="tammes")
    plot_code(code16, tmp_path / "d16.png", device="cpu")
    two, three, sixteen = figures
    assert len(two.axes) == 3 and two.axes[2].name == "rectilinear"
    assert three.axes[2].name == "3d"
    assert len(sixteen.axes) == 2
    labels = _figure_text(sixteen)
    assert "Pairwise cosines (435 pairs)" in labels and "One-vs-rest distances (sorted)" in labels
    assert "cosine between two prototypes" in labels and "one-vs-rest distance" in labels
    legend = [t.get_text() for t in sixteen.axes[0].get_legend().get_texts()]
    assert any(t.startswith("max-cos = ") for t in legend) and any("max-cos ≥" in t for t in legend)
    legend = [t.get_text() for t in two.axes[1].get_legend().get_texts()]
    assert any(t.startswith("ρ = smallest distance") for t in legend)
    assert (tmp_path / "d3.svg").read_text().lstrip().startswith("<?xml")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d16.png", "d3.svg", "polygon.png"]


@pytest.mark.slow
def test_bounds_plot_overlays_catalog_banks(tmp_path, monkeypatch):
    folder = tmp_path / "cat"
    folder.mkdir()
    for d in (3, 4):
        code = make_code(random_code(30, d, d), method="tammes")
        code.certificate = one_vs_rest_distances(code.prototypes, device="cpu")
        write_code(folder / f"tammes-d{d}-k30.h5", code)
    publish(folder)
    monkeypatch.setenv("SPHERECODES_BANK_URL", str(folder))
    out = tmp_path / "band.png"
    result = CliRunner().invoke(main, ["bounds", "--k", "30", "--d", "2..64", "--plot", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 catalog banks overlaid" in result.output
    width, height = _png_size(out)
    assert width > 600 and out.stat().st_size > 20_000


def test_bounds_plot_content(tmp_path, monkeypatch):
    import spherecodes.plots as plots

    figures = []
    real_save = plots.save_figure
    monkeypatch.setattr(plots, "save_figure", lambda fig, path: figures.append(fig) or real_save(fig, path))
    plot_bounds(100, range(8, 513), tmp_path / "b.pdf")
    (ax,) = figures[0].axes
    assert ax.get_title() == "How far apart K = 100 classes can be in d dimensions"
    assert ax.get_xlabel().startswith("feature dimension d") and ax.get_ylabel() == "one-vs-rest distance ρ"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[0].startswith("Theorem 3.9") and any("closed form" in t for t in legend)
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
