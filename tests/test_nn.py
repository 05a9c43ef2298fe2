"""The torch adapter against the papers' formulas, computed independently here."""

import importlib.util
import io
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from spherecodes.bank import write_code
from spherecodes.code import make_code
from spherecodes.constructions import cross_polytope, regular_polygon, simplex_etf
from spherecodes.errors import SpherecodesError
from spherecodes.nn import (
    ClassMeanClassifier,
    CosineCrossEntropyLoss,
    DotRegressionLoss,
    HPNLoss,
    PrototypeClassifier,
    PrototypeRegressor,
    class_means,
    classifier_projector,
    collapse_metrics,
    cosine_cross_entropy,
    dot_regression_loss,
    dr_class_lengths,
    gnc2,
    gnc3,
    hpn_loss,
    joint_layout,
    match_prototypes,
    nc1,
    nc2_cosines,
    nc3_cosines,
)

from conftest import random_code

ROOT = Path(__file__).resolve().parents[1]
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def hand_cosines(z: np.ndarray, p: np.ndarray) -> np.ndarray:
    return (z @ p.T) / np.outer(np.linalg.norm(z, axis=1), np.linalg.norm(p, axis=1))


# --- PrototypeClassifier ----------------------------------------------------


def test_logits_are_the_cosines_computed_by_hand():
    rng = np.random.default_rng(0)
    p, z = rng.standard_normal((7, 5)), rng.standard_normal((11, 5)) * 3.0
    head = PrototypeClassifier(p, dtype=torch.float64)
    logits = head(torch.tensor(z))
    assert logits.shape == (11, 7)
    np.testing.assert_allclose(logits.numpy(), hand_cosines(z, p), atol=1e-12)
    np.testing.assert_array_equal(head.predict(torch.tensor(z)).numpy(), hand_cosines(z, p).argmax(1))


def test_prototypes_are_a_buffer_that_gets_no_gradient():
    head = PrototypeClassifier(random_code(6, 4), labels=list("abcdef"), temperature=0.05)
    assert list(head.parameters()) == []
    assert not head.prototypes.requires_grad
    z = torch.randn(3, 4, requires_grad=True)
    HPNLoss(head)(z, torch.tensor([0, 1, 2])).backward()
    assert z.grad is not None and head.prototypes.grad is None

    head64 = head.to(torch.float64)
    assert head64.prototypes.dtype == torch.float64
    assert head.to("meta").prototypes.device.type == "meta"


def test_state_dict_holds_prototypes_labels_and_temperature():
    head = PrototypeClassifier(random_code(4, 3, seed=1), labels=["w", "x", "y", "z"], temperature=0.05)
    buffer = io.BytesIO()
    torch.save(head.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    assert "prototypes" in state
    restored = PrototypeClassifier(torch.ones(4, 3))
    restored.load_state_dict(state)
    torch.testing.assert_close(restored.prototypes, head.prototypes)
    assert restored.labels == ["w", "x", "y", "z"] and restored.temperature == 0.05


def test_built_from_a_result_object_and_from_a_bank(tmp_bank):
    w = simplex_etf(4, 6)
    result = SimpleNamespace(prototypes=w, labels=["ant", "bee", "cat", "dog"])
    assert PrototypeClassifier(result).labels == ["ant", "bee", "cat", "dog"]

    write_code(tmp_bank, make_code(w, method="etf", name="etf4", labels=result.labels))
    write_code(tmp_bank, make_code(cross_polytope(8, 6), method="cross-polytope", name="cp8"))
    head = PrototypeClassifier.from_bank(tmp_bank, "etf4", dtype=torch.float64)
    np.testing.assert_array_equal(head.prototypes.numpy(), w)
    assert head.decode(torch.tensor([3, 0])) == ["dog", "ant"]
    assert PrototypeClassifier.from_bank(tmp_bank, "cp8").labels is None
    with pytest.raises(SpherecodesError, match="choose one"):
        PrototypeClassifier.from_bank(tmp_bank)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"prototypes": [[1.0, 0.0], [0.0, 0.0]]}, "zero"),
        ({"prototypes": torch.eye(3), "labels": ["a", "b"]}, "2 labels for 3"),
        ({"prototypes": torch.eye(3), "temperature": 0.0}, "temperature"),
    ],
)
def test_bad_input_is_refused_with_a_message(kwargs, message):
    with pytest.raises(SpherecodesError, match=message):
        PrototypeClassifier(**kwargs)


def test_decode_without_labels_says_so():
    with pytest.raises(SpherecodesError, match="no class labels"):
        PrototypeClassifier(torch.eye(2)).decode([0])


@cuda
def test_cuda_head_losses_and_metrics_follow_the_device():
    head = PrototypeClassifier(random_code(5, 4)).to("cuda")
    assert head.prototypes.device.type == "cuda"
    z = torch.randn(8, 4, device="cuda", requires_grad=True)
    y = torch.randint(0, 5, (8,), device="cuda")
    loss = HPNLoss(head)(z, y) + CosineCrossEntropyLoss(head)(z, y) + DotRegressionLoss(head, [3, 1, 2, 2, 5])(z, y)
    loss.backward()
    assert z.grad.device.type == "cuda" and head(z).device.type == "cuda"
    cmf = ClassMeanClassifier(5, 4).to("cuda")
    cmf.update(z, y)
    assert head.reassign(cmf.prototypes).device.type == "cpu"
    P, P_perp = classifier_projector(head.prototypes)
    assert P.device.type == "cuda" and P_perp.device.type == "cuda"


# --- losses -----------------------------------------------------------------


def test_hpn_gradient_is_seed_002_eq_2():
    rng = np.random.default_rng(1)
    p = rng.standard_normal((5, 6)) * 2.0  # not unit: Eq. 2 carries ‖p‖
    z = torch.tensor(rng.standard_normal((9, 6)) * 4.0, requires_grad=True)
    y = torch.tensor(rng.integers(0, 5, 9))
    hpn_loss(z, y, torch.tensor(p), reduction="sum").backward()

    zn, py = z.detach().numpy(), p[y.numpy()]
    znorm, pnorm = np.linalg.norm(zn, axis=1, keepdims=True), np.linalg.norm(py, axis=1, keepdims=True)
    cos = (zn * py).sum(1, keepdims=True) / (znorm * pnorm)
    eq2 = 2 * (1 - cos) * (cos * zn / znorm**2 - py / (znorm * pnorm))
    np.testing.assert_allclose(z.grad.numpy(), eq2, atol=1e-12)
    # Eq. 1 itself, summed over the batch.
    assert hpn_loss(z, y, torch.tensor(p), reduction="sum").item() == pytest.approx(((1 - cos) ** 2).sum())


def test_dot_regression_value_is_eq_14_and_gradient_is_eq_15():
    rng = np.random.default_rng(2)
    k, d, feature_length = 4, 5, 1.7
    p = simplex_etf(k, d)
    counts = np.array([40, 20, 8, 4])
    s = counts.sum() / (k * counts)  # sqrt(E_{w_k}), Yang et al. 2022, App. C
    h_np = rng.standard_normal((10, d))
    h_np *= feature_length / np.linalg.norm(h_np, axis=1, keepdims=True)  # ‖h‖² = E_H
    y = rng.integers(0, k, 10)
    h = torch.tensor(h_np, requires_grad=True)
    lengths = dr_class_lengths(counts)
    loss = dot_regression_loss(h, torch.tensor(y), torch.tensor(p), lengths, feature_length, reduction="sum")
    loss.backward()

    w = s[y, None] * p[y]
    root_ew_eh = s[y] * feature_length
    eq14 = ((w * h_np).sum(1) - root_ew_eh) ** 2 / (2 * root_ew_eh)
    assert loss.item() == pytest.approx(eq14.sum(), rel=1e-12)
    cos = (w * h_np).sum(1, keepdims=True) / (np.linalg.norm(w, axis=1, keepdims=True) * feature_length)
    np.testing.assert_allclose(h.grad.numpy(), -(1 - cos) * w, atol=1e-12)


def test_dr_class_lengths_are_n_over_k_n_k():
    np.testing.assert_allclose(dr_class_lengths([50, 25, 10, 5]).numpy(), [0.45, 0.9, 2.25, 4.5])
    np.testing.assert_allclose(dr_class_lengths([7, 7, 7]).numpy(), 1.0)
    with pytest.raises(SpherecodesError):
        dr_class_lengths([3, 0])


def test_dot_regression_module_normalises_features_as_in_app_c():
    head = PrototypeClassifier(simplex_etf(3, 4), dtype=torch.float64)
    criterion = DotRegressionLoss(head, class_counts=[6, 3, 1], feature_length=2.0)
    z = torch.randn(5, 4, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 2, 0])
    expected = dot_regression_loss(2.0 * F.normalize(z, dim=1), y, head.prototypes, dr_class_lengths([6, 3, 1]), 2.0)
    torch.testing.assert_close(criterion(z, y), expected)
    torch.testing.assert_close(criterion(10 * z, y), expected)


def test_cosine_cross_entropy_is_minus_log_softmax_of_cosines_over_tau():
    rng = np.random.default_rng(3)
    p, z, y = rng.standard_normal((6, 4)), rng.standard_normal((8, 4)), rng.integers(0, 6, 8)
    tau = 0.07
    scaled = hand_cosines(z, p) / tau
    log_softmax = scaled - np.log(np.exp(scaled).sum(1, keepdims=True))
    expected = -log_softmax[np.arange(8), y].mean()
    got = cosine_cross_entropy(torch.tensor(z), torch.tensor(y), torch.tensor(p), tau)
    assert got.item() == pytest.approx(expected, rel=1e-12)
    head = PrototypeClassifier(p, temperature=tau, dtype=torch.float64)
    assert CosineCrossEntropyLoss(head)(torch.tensor(z), torch.tensor(y)).item() == pytest.approx(expected, rel=1e-12)


def test_loss_modules_follow_a_reassigned_head():
    head = PrototypeClassifier(torch.eye(2))
    criterion = HPNLoss(head)
    z, y = torch.tensor([[1.0, 0.0]]), torch.tensor([0])
    assert criterion(z, y).item() == 0.0
    head.reassign(torch.tensor([[0.0, 1.0], [1.0, 0.0]]))
    assert criterion(z, y).item() == 1.0


# --- regression -------------------------------------------------------------


def test_regression_decode_inverts_encode_and_the_loss_vanishes_at_the_target():
    reg = PrototypeRegressor(lower=-3.0, upper=5.0, upper_prototype=torch.tensor([0.0, 2.0, 0.0]), dtype=torch.float64)
    y = torch.linspace(-3.0, 5.0, 17, dtype=torch.float64)
    r = reg.encode(y)
    assert r.min().item() == -1.0 and r.max().item() == 1.0
    torch.testing.assert_close(reg.decode(r), y)
    # An output at angle arccos(r) from p_u: cos(z, p_u) = r, so the loss is 0 and the prediction is y.
    z = torch.stack([r, torch.zeros_like(r), torch.sqrt(1 - r**2)], dim=1) @ torch.tensor(
        [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64
    )
    torch.testing.assert_close(reg.predict(3.0 * z), y)
    assert reg.loss(z, y).item() == pytest.approx(0.0, abs=1e-20)
    assert reg.loss(-z, y, reduction="none")[0].item() == pytest.approx(4.0)  # (−1 − 1)²


def test_joint_layout_puts_classes_on_the_complement_of_the_regression_axis():
    code = regular_polygon(5)
    classes, pole = joint_layout(SimpleNamespace(prototypes=code))
    assert classes.shape == (5, 3)
    np.testing.assert_allclose((classes @ pole).numpy(), 0.0)
    np.testing.assert_allclose((classes @ classes.T).numpy(), code @ code.T, atol=1e-15)
    # The class prediction ignores the regression coordinate.
    head = PrototypeClassifier(classes, dtype=torch.float64)
    z = torch.tensor([[0.0, *code[3]]]) + torch.tensor([[5.0, 0.0, 0.0]])
    assert head.predict(z).item() == 3
    assert PrototypeRegressor(0.0, 1.0, upper_prototype=pole).predict(z.float()).item() > 0.9


# --- class-mean-feature classifier --------------------------------------------


def test_class_mean_classifier_converges_to_the_true_class_means():
    gen = torch.Generator().manual_seed(0)
    k, d = 5, 8
    centres = 2.0 * F.normalize(torch.randn(k, d, generator=gen), dim=1)
    # The true class means of the features put on the sphere, from a large independent sample.
    y = torch.arange(k).repeat_interleave(20000)
    h = F.normalize(centres[y] + 0.5 * torch.randn(len(y), d, generator=gen), dim=1)
    truth = F.normalize(class_means(h, y).float(), dim=1)

    cmf = ClassMeanClassifier(k, d, seed=3)
    assert (cmf.prototypes * truth).sum(1).min().item() < 0.5  # a random start, far from the truth
    for _ in range(300):
        y = torch.randint(0, k, (256,), generator=gen)
        cmf.update(centres[y] + 0.5 * torch.randn(256, d, generator=gen), y)
    assert (cmf.prototypes * truth).sum(1).min().item() > 0.999
    assert int(cmf.num_updates) == 300
    assert list(cmf.parameters()) == []
    restored = ClassMeanClassifier(k, d, beta=0.5)
    restored.load_state_dict(cmf.state_dict())
    assert restored.beta == 0.9 and int(restored.num_updates) == 300
    torch.testing.assert_close(restored.prototypes, cmf.prototypes)


def test_class_mean_update_is_the_ema_and_keeps_absent_classes():
    cmf = ClassMeanClassifier(3, 2, init=[[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)
    cmf.update(torch.tensor([[0.0, 4.0], [0.0, 1.0]], dtype=torch.float64), torch.tensor([0, 0]))
    expected = np.array([0.9, 0.1]) / np.hypot(0.9, 0.1)  # β·w + (1 − β)·mean, re-normalised
    np.testing.assert_allclose(cmf.prototypes[0].numpy(), expected)
    np.testing.assert_array_equal(cmf.prototypes[1:].numpy(), [[0.0, 1.0], [-1.0, 0.0]])


def test_class_mean_classifier_exports_a_bank_code(tmp_bank):
    cmf = ClassMeanClassifier(4, 3, labels=list("abcd"))
    cmf.update(torch.randn(16, 3), torch.arange(4).repeat(4))
    code = cmf.to_code(name="cmf-run")
    assert code.method == "class-mean-ema" and code.labels == list("abcd")
    assert code.settings == {"beta": 0.9, "num_updates": 1}
    np.testing.assert_allclose(code.prototypes, cmf.prototypes.double().numpy())
    write_code(tmp_bank, code)
    assert PrototypeClassifier.from_bank(tmp_bank).labels == list("abcd")


# --- assignment -------------------------------------------------------------


def test_match_prototypes_recovers_a_planted_permutation():
    rng = np.random.default_rng(4)
    p = random_code(12, 6, seed=5)
    planted = rng.permutation(12)
    means = 3.0 * p[planted] + 0.05 * rng.standard_normal((12, 6))
    np.testing.assert_array_equal(match_prototypes(torch.tensor(means), torch.tensor(p)).numpy(), planted)

    head = PrototypeClassifier(p, labels=[str(i) for i in range(12)], dtype=torch.float64)
    perm = head.reassign(torch.tensor(means))
    np.testing.assert_array_equal(perm.numpy(), planted)
    np.testing.assert_allclose(head.prototypes.numpy(), p[planted])
    assert head.labels == [str(i) for i in range(12)]  # labels name classes, which keep their index


def test_match_prototypes_with_spare_prototypes_uses_distinct_ones():
    p = random_code(10, 4, seed=6)
    perm = match_prototypes(torch.tensor(p[[7, 2, 9]] * 2.0), torch.tensor(p))
    assert perm.tolist() == [7, 2, 9]
    with pytest.raises(SpherecodesError, match="cannot share"):
        match_prototypes(torch.tensor(p), torch.tensor(p[:3]))


# --- metrics ----------------------------------------------------------------


@pytest.mark.parametrize(
    "w, rho",
    [
        (simplex_etf(3, 2), 1.5),
        (simplex_etf(10, 9), 10 / 9),
        (simplex_etf(12, 20), 12 / 11),
        (cross_polytope(7, 5), 1.0),
        (cross_polytope(10, 5), 1.0),
        (regular_polygon(5), 1 - np.cos(2 * np.pi / 5)),
        (regular_polygon(12), 1 - np.cos(2 * np.pi / 12)),
    ],
)
def test_gnc2_is_the_certified_rho_of_the_closed_forms(w, rho):
    # Class means are shorter than 1 and unequal: ρ is measured on their directions.
    lengths = np.linspace(0.2, 3.0, len(w))[:, None]
    result = gnc2(torch.tensor(lengths * w))
    assert result.rho_lower <= rho + 1e-12 and result.rho_upper >= rho - 1e-12
    assert result.rho_upper - result.rho_lower < 1e-9


def test_nc1_matches_its_definition():
    rng = np.random.default_rng(9)
    h, y = rng.standard_normal((60, 4)), np.repeat(np.arange(3), 20)
    means = np.stack([h[y == k].mean(0) for k in range(3)])
    within = h - means[y]
    sigma_w = within.T @ within / 60
    for centered, between in [(False, means), (True, means - h.mean(0))]:
        sigma_b = between.T @ between / 3
        expected = np.trace(sigma_w @ np.linalg.pinv(sigma_b)) / 3
        assert nc1(torch.tensor(h), torch.tensor(y), centered=centered) == pytest.approx(expected, rel=1e-10)
    with pytest.raises(SpherecodesError, match="without samples"):
        nc1(torch.tensor(h), torch.tensor(y), num_classes=4)
    with pytest.raises(SpherecodesError, match="indices in 0..1"):
        class_means(torch.tensor(h[:2]), torch.tensor([0, 3]), num_classes=2)


def test_collapsed_features_on_an_etf_score_perfectly():
    k = 5
    w = torch.tensor(simplex_etf(k, 7))
    y = torch.arange(k).repeat(6)
    m = collapse_metrics(3.0 * w[y], y, weights=w)
    assert m["gnc1"] == pytest.approx(0.0, abs=1e-20)
    assert m["gnc2_upper"] == pytest.approx(k / (k - 1), abs=1e-9)
    assert m["gnc3"] == pytest.approx(0.0, abs=1e-12)
    assert m["nc2_cos_mean"] == pytest.approx(-1 / (k - 1)) and m["nc2_cos_std"] < 1e-12
    assert m["nc3_cos_mean"] == pytest.approx(1.0)


def test_gnc3_and_nc_cosines_by_hand():
    w = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    means = np.array([[2.0, 2.0], [0.0, 3.0], [-1.0, -1.0]])
    cos = np.array([1, 1, 1]) / np.sqrt([2, 1, 2])
    assert gnc3(w, means) == pytest.approx(np.mean(1 - cos))
    g = np.array([0.5, 0.5])
    centred = (means - g) / np.linalg.norm(means - g, axis=1, keepdims=True)
    gram = centred @ centred.T
    np.testing.assert_allclose(nc2_cosines(means, g).numpy(), gram[~np.eye(3, dtype=bool)])
    np.testing.assert_allclose(nc3_cosines(means, g, w).numpy(), (centred * w).sum(1))


def test_classifier_projector_is_seed_001_eq_vi():
    w = torch.tensor(random_code(4, 7, seed=10) * np.array([[1.0], [2.0], [0.5], [3.0]]))
    eps = 0.3
    P, P_perp = classifier_projector(w, eps)
    u, s, _ = torch.linalg.svd(w.T, full_matrices=False)  # columns of W (d×K), as in the paper
    torch.testing.assert_close(P, u @ torch.diag(s**2 / (s**2 + eps)) @ u.T)
    torch.testing.assert_close(P + P_perp, torch.eye(7, dtype=torch.float64))

    # A simplex ETF spans K − 1 dimensions; with a small ε, P is that orthogonal projector.
    etf = torch.tensor(simplex_etf(5, 8))
    P, P_perp = classifier_projector(etf, 1e-10)
    torch.testing.assert_close(P @ P, P, atol=1e-8, rtol=0)
    assert torch.trace(P).item() == pytest.approx(4.0, abs=1e-8)
    assert (etf @ P_perp).abs().max().item() < 1e-8


# --- proof on real data (scikit-learn's bundled digits) -------------------------


@pytest.fixture
def digits():
    """The example module, run on one CPU thread (the model is tiny; other jobs share the cores)."""
    pytest.importorskip("sklearn")
    spec = importlib.util.spec_from_file_location("digits_example", ROOT / "examples" / "digits.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield module
    torch.set_num_threads(threads)


@pytest.mark.slow
def test_fixed_prototypes_reach_90_percent_on_digits_at_d_10(digits):
    accuracy = digits.fixed_prototype_accuracy(simplex_etf(10, 10), "hpn", digits.load_split(), epochs=60, seed=0)
    assert accuracy >= 0.90


def test_dot_regression_with_class_lengths_learns_the_imbalanced_digits(digits):
    x_train, x_test, y_train, y_test = digits.load_split()
    x_small, y_small = digits.make_imbalanced(x_train, y_train, ratio=0.1)
    counts = torch.bincount(y_small).tolist()
    assert counts[0] > 5 * counts[-1] and counts == sorted(counts, reverse=True)
    accuracy = digits.fixed_prototype_accuracy(
        simplex_etf(10, 10), "dr", (x_small, x_test, y_small, y_test), epochs=100, seed=0
    )
    assert accuracy >= 0.85


@pytest.mark.slow
def test_the_library_does_not_import_scikit_learn():
    code = "import sys, spherecodes.nn; sys.exit('sklearn' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
