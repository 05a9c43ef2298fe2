"""Kobayashi's direct-sum approach: the Proto loss, the (spectral) direct-sum losses and N-way K-shot batches.

Every check is against an independent fact: the definitions computed by
loops or by NumPy's SVD, Eq. v (the Proto loss's gradient lies in the span of
the batch), Eq. vi-vii (the projector's spectrum and its limit), Eq. x-xi
(p = 0 picks W_perp W_perpᵀ) and Eq. ix (the overlap in closed form).
"""

import numpy as np
import pytest
import torch

from spherecodes.constructions import simplex_etf
from spherecodes.errors import SpherecodesError
from spherecodes.nn import (
    CosineCrossEntropyLoss,
    DirectSumLoss,
    HPNLoss,
    NWayKShotSampler,
    PrototypeClassifier,
    ProtoLoss,
    SpectralSumLoss,
    classifier_projector,
    proto_loss,
    spectral_overlap,
    spectral_projectors,
)

from conftest import random_code

DEVICES = ["cpu", pytest.param("cuda", marks=[
    pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")])]


def proto_by_definition(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Eq. i term by term: leave-one-out means by their definition, a softmax over the classes present."""
    classes = sorted(set(y.tolist()))
    terms = []
    for i in range(len(x)):
        if (y == y[i]).sum() < 2:
            continue
        scores = []
        for c in classes:
            others = [j for j in range(len(x)) if j != i and y[j] == c]
            scores.append(-np.sum((x[i] - x[others].mean(axis=0)) ** 2))
        scores = np.array(scores)
        own = scores[classes.index(y[i])]
        terms.append(np.log(np.exp(scores - scores.max()).sum()) + scores.max() - own)
    return np.array(terms)


@pytest.mark.parametrize("device", DEVICES)
def test_proto_loss_is_eq_i_and_its_gradient_lies_in_the_span_of_the_batch(device):
    rng = np.random.default_rng(0)
    # 4 classes x 3 shots = 12 features in R^20: their span is a proper subspace, so Eq. v can fail.
    x = torch.tensor(rng.standard_normal((12, 20)) * 0.5, dtype=torch.float64, device=device, requires_grad=True)
    y = torch.arange(12, device=device) % 4
    loss = proto_loss(x, y)
    expected = proto_by_definition(x.detach().cpu().numpy(), y.cpu().numpy())
    assert loss.item() == pytest.approx(expected.mean(), rel=1e-12)
    (grad,) = torch.autograd.grad(loss, x)
    basis, _ = np.linalg.qr(x.detach().cpu().numpy().T)  # orthonormal basis of span(X), d x n
    g = grad.cpu().numpy()
    outside = g - (g @ basis) @ basis.T
    assert np.abs(g).max() > 1e-3  # a real gradient
    assert np.abs(outside).max() < 1e-12 * np.abs(g).max()
    # The same test catches a gradient with a part outside the span.
    foreign = g + 1e-6 * rng.standard_normal(g.shape)
    assert np.abs(foreign - (foreign @ basis) @ basis.T).max() > 1e-8


def test_proto_loss_skips_samples_without_a_leave_one_out_mean():
    x = torch.tensor([[0.0, 1.0], [0.2, 0.9], [3.0, 0.0], [-2.0, 1.0]], dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 2])  # classes 1 and 2 have one sample: only negatives
    expected = proto_by_definition(x.numpy(), y.numpy())
    assert len(expected) == 2
    per_sample = proto_loss(x, y, reduction="none")
    assert per_sample[2:].tolist() == [0.0, 0.0]
    assert per_sample[:2].numpy() == pytest.approx(expected, rel=1e-12)
    assert proto_loss(x, y).item() == pytest.approx(expected.mean(), rel=1e-12)
    assert ProtoLoss(reduction="sum")(x, y).item() == pytest.approx(expected.sum(), rel=1e-12)
    lonely = proto_loss(x[2:], y[2:])
    assert lonely.item() == 0.0


def svd_projector(w: np.ndarray, eps: float) -> np.ndarray:
    """Eq. vi's right-hand side from NumPy's SVD of W (class vectors as columns): eigenvalues σ²/(σ² + ε)."""
    u, s, _ = np.linalg.svd(w.T, full_matrices=False)
    return (u * (s**2 / (s**2 + eps))) @ u.T


@pytest.mark.parametrize("w", [random_code(5, 12, seed=3), simplex_etf(6, 9), random_code(4, 4, seed=1)],
                         ids=["random (5, 12)", "simplex ETF, rank K-1", "square"])
def test_eq_vi_is_its_svd_form_and_tends_to_the_projector_of_eq_vii(w):
    for eps in (1e-1, 1e-3):
        P, P_perp = classifier_projector(torch.tensor(w), eps=eps)
        np.testing.assert_allclose(P.numpy(), svd_projector(w, eps), atol=1e-12)
        np.testing.assert_allclose((P + P_perp).numpy(), np.eye(w.shape[1]), atol=1e-12)
    # Eq. vii: the orthogonal projector onto span(W), from the pseudo-inverse.
    exact = w.T @ np.linalg.pinv(w.T)
    errors = [np.abs(classifier_projector(torch.tensor(w), eps=eps)[0].numpy() - exact).max()
              for eps in (1e-2, 1e-4, 1e-6, 1e-8)]
    assert errors == sorted(errors, reverse=True) and errors[-1] < 1e-7
    assert errors[0] > 1e-4  # with a large ε it is visibly not the projector yet


def test_p_zero_with_d_above_c_is_the_complement_of_the_span_eq_xi():
    for w in (random_code(6, 16, seed=2), simplex_etf(5, 12)):
        complement = np.eye(w.shape[1]) - w.T @ np.linalg.pinv(w.T)  # W_perp W_perpᵀ
        soft, q = spectral_projectors(torch.tensor(w), p=0.0)
        np.testing.assert_allclose(q.numpy(), complement, atol=1e-12)
        np.testing.assert_allclose(soft.numpy(), np.eye(w.shape[1]) - complement, atol=1e-12)
    # With d <= C and full rank, p = 0 leaves no complement at all (Sec. C).
    _, q = spectral_projectors(torch.tensor(random_code(10, 6, seed=0)), p=0.0)
    assert np.abs(q.numpy()).max() < 1e-12


@pytest.mark.parametrize("p", [0.0, 0.1, 0.3, 1.0, 2.0])
@pytest.mark.parametrize("shape", [(10, 6), (4, 8)])
def test_overlap_of_eq_viii_is_eq_ix(p, shape):
    rng = np.random.default_rng(7)
    w = rng.standard_normal(shape) * rng.uniform(0.2, 3.0, size=(shape[0], 1))  # a spread spectrum
    lam = np.linalg.svd(w, compute_uv=False)
    tilde = lam / lam.max()
    closed_form = lam.max() * np.max(tilde * (1 - tilde**p))
    assert spectral_overlap(torch.tensor(w), p) == pytest.approx(closed_form, abs=1e-12, rel=1e-10)
    if p > 0:  # Kobayashi's bound λ_max p/(1 + p)^(1 + 1/p), the maximum of λ̃(1 − λ̃^p) over [0, 1]
        assert closed_form <= lam.max() * p / (1 + p) ** (1 + 1 / p) + 1e-12


@pytest.mark.parametrize("device", DEVICES)
def test_direct_sum_feeds_p_z_to_the_classifier_and_the_complement_to_the_metric_loss(device):
    head = PrototypeClassifier(random_code(4, 10, seed=5), dtype=torch.float64).to(device)
    seen = {}

    def record(name, loss):
        def call(z, target):
            seen[name] = z.detach()
            return loss(z, target)
        return call

    criterion = DirectSumLoss(record("cls", CosineCrossEntropyLoss(head)), record("metric", ProtoLoss()),
                              classifier=head, eps=1e-9, metric_weight=0.5)
    z = torch.randn(8, 10, dtype=torch.float64, device=device, requires_grad=True)
    y = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3], device=device)
    loss = criterion(z, y)
    w = head.prototypes.cpu().numpy()
    exact = w.T @ np.linalg.pinv(w.T)
    np.testing.assert_allclose(seen["cls"].cpu().numpy(), z.detach().cpu().numpy() @ exact, atol=1e-8)
    np.testing.assert_allclose(seen["metric"].cpu().numpy(), z.detach().cpu().numpy() @ (np.eye(10) - exact),
                               atol=1e-8)
    expected = CosineCrossEntropyLoss(head)(seen["cls"], y) + 0.5 * proto_loss(seen["metric"], y)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-12)
    # The metric part's gradient never moves the features along the class vectors.
    metric_only = DirectSumLoss(CosineCrossEntropyLoss(head), ProtoLoss(), eps=1e-9, classifier_weight=0.0)
    (grad,) = torch.autograd.grad(metric_only(z, y), z)
    assert (grad @ head.prototypes.T).abs().max().item() < 1e-7 * grad.abs().max().item()


def test_spectral_sum_at_p_zero_is_the_direct_sum_and_the_parts_add_up_to_the_feature():
    head = PrototypeClassifier(random_code(5, 12, seed=9), dtype=torch.float64)
    z = torch.randn(10, 12, dtype=torch.float64)
    y = torch.arange(10) % 5
    direct = DirectSumLoss(HPNLoss(head), ProtoLoss(), eps=1e-12)
    spectral = SpectralSumLoss(HPNLoss(head), ProtoLoss(), p=0.0)
    assert spectral(z, y).item() == pytest.approx(direct(z, y).item(), rel=1e-9)
    inside, outside = SpectralSumLoss(HPNLoss(head), ProtoLoss(), p=0.3).projectors(z)
    torch.testing.assert_close(inside + outside, torch.eye(12, dtype=torch.float64))


def test_losses_follow_a_learned_classifier_and_refuse_bad_settings():
    layer = torch.nn.Linear(6, 3, bias=False).double()
    criterion = DirectSumLoss(lambda z, y: torch.nn.functional.cross_entropy(layer(z), y), ProtoLoss(),
                              classifier=layer)
    before = criterion.projectors(torch.zeros(1, dtype=torch.float64))[0].clone()
    with torch.no_grad():
        layer.weight.add_(torch.randn_like(layer.weight))  # an optimiser step changes the subspace
    after = criterion.projectors(torch.zeros(1, dtype=torch.float64))[0]
    w = layer.weight.detach().numpy()
    np.testing.assert_allclose(after.numpy(), svd_projector(w, criterion.eps), atol=1e-12)
    assert not torch.allclose(before, after)
    head = PrototypeClassifier(torch.eye(3))
    with pytest.raises(SpherecodesError, match="eps must be"):
        DirectSumLoss(HPNLoss(head), ProtoLoss(), eps=0.0)
    with pytest.raises(SpherecodesError, match="p must be"):
        SpectralSumLoss(HPNLoss(head), ProtoLoss(), p=-1.0)
    with pytest.raises(SpherecodesError, match="metric_weight"):
        DirectSumLoss(HPNLoss(head), ProtoLoss(), metric_weight=float("nan"))
    with pytest.raises(SpherecodesError, match="give classifier="):
        DirectSumLoss(lambda z, y: z.sum(), ProtoLoss())
    with pytest.raises(SpherecodesError, match="NaN or inf"):
        DirectSumLoss(HPNLoss(head), ProtoLoss())(torch.full((2, 3), float("nan")), torch.tensor([0, 1]))


@pytest.mark.parametrize("device", DEVICES)
def test_sampler_batches_hold_exactly_n_classes_and_k_samples_each(device):
    rng = np.random.default_rng(1)
    labels = torch.tensor(rng.integers(0, 12, size=600), device=device)  # unequal class sizes
    sampler = NWayKShotSampler(labels, n_way=5, k_shot=4, seed=3)
    assert len(sampler) == 600 // 20
    batches = list(sampler)
    assert len(batches) == len(sampler)
    y = labels.cpu().numpy()
    for batch in batches:
        assert len(batch) == 20 and len(set(batch)) == 20
        classes, counts = np.unique(y[batch], return_counts=True)
        assert len(classes) == 5 and counts.tolist() == [4] * 5
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.arange(600)), batch_sampler=sampler)
    assert all(len(indices) == 20 for (indices,) in loader)


def test_sampler_epochs_are_seeded_and_set_epoch_replays_them():
    labels = np.repeat(np.arange(6), 5)
    first = NWayKShotSampler(labels, n_way=3, k_shot=2, batches=4, seed=0)
    epoch0, epoch1 = list(first), list(first)
    assert epoch0 != epoch1  # the next pass draws the next epoch
    again = NWayKShotSampler(labels, n_way=3, k_shot=2, batches=4, seed=0)
    assert list(again) == epoch0
    again.set_epoch(1)
    assert list(again) == epoch1 and again.epoch == 2
    assert list(NWayKShotSampler(labels, n_way=3, k_shot=2, batches=4, seed=1)) != epoch0


@pytest.mark.parametrize("kwargs, message", [
    ({"n_way": 7, "k_shot": 2}, "hold 6 classes"),
    ({"n_way": 2, "k_shot": 6}, "fewer samples"),
    ({"n_way": 1, "k_shot": 2}, "n_way must be"),
    ({"n_way": 2, "k_shot": 0}, "k_shot must be"),
    ({"n_way": 2, "k_shot": 2, "batches": 0}, "batches must be"),
])
def test_sampler_refuses_what_it_cannot_draw(kwargs, message):
    with pytest.raises(SpherecodesError, match=message):
        NWayKShotSampler(np.repeat(np.arange(6), 5), **kwargs)
    with pytest.raises(SpherecodesError, match="integer class indices"):
        NWayKShotSampler([0.0, 1.0, 1.0, 0.0], n_way=2, k_shot=1)


def test_on_handwritten_digits_the_direct_sum_loss_trains_a_fixed_code(one_torch_thread):
    """One cell of docs/nn.md's table (python -m spherecodes.nn.digits): direct sum, ETF in R^32, seed 0."""
    pytest.importorskip("sklearn")
    from spherecodes import generate
    from spherecodes.nn.digits import load_split, run

    accuracy = run(generate(d=32, k=10), "direct", load_split(), seed=0, epochs=20, n_way=10, k_shot=6)
    assert accuracy >= 0.95
