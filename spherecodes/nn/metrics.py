"""Neural-collapse metrics for monitoring a run, and the classifier-subspace projector.

Notation: features ``h_i`` with labels ``y_i``; class means ``h̄_k``; the global
mean ``h_G`` (over samples); class vectors ``w_k`` (the prototypes or a learned
classifier), one row per class.  All metrics are computed in float64; ``docs/nn.md``
tabulates them with their values at collapse.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..certificate import one_vs_rest_distances
from ..errors import SpherecodesError
from ._checks import check_features, check_targets


def _float64(x) -> torch.Tensor:
    return torch.as_tensor(x).detach().to("cpu", torch.float64)


def _check_features(features, labels, num_classes):
    h = check_features(_float64(features))
    if h.ndim != 2:
        raise SpherecodesError(f"features must be (N, d), got {tuple(h.shape)}")
    y = check_targets(labels, h.shape[0], num_classes).detach().to("cpu")
    k = int(y.max()) + 1 if num_classes is None else num_classes
    counts = torch.bincount(y, minlength=k)
    if bool(torch.any(counts == 0)):
        missing = torch.nonzero(counts == 0).flatten().tolist()
        raise SpherecodesError(f"every class needs at least one sample; classes without samples: {missing}")
    return h, y, counts


def class_means(features, labels, num_classes: int | None = None) -> torch.Tensor:
    """Mean feature of each class, float64, shape (K, d).

    Examples
    --------
    >>> class_means([[1.0, 0], [3.0, 0], [0, 2.0]], [0, 0, 1])
    tensor([[2., 0.],
            [0., 2.]], dtype=torch.float64)
    """
    return _class_means(*_check_features(features, labels, num_classes))


def _class_means(h: torch.Tensor, y: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    sums = torch.zeros(counts.numel(), h.shape[1], dtype=torch.float64).index_add_(0, y, h)
    return sums / counts[:, None]


def nc1(features, labels, num_classes: int | None = None, centered: bool = False) -> float:
    """Within-class variability collapse ``(1/K) tr(Σ_W Σ_B^†)``; 0 at collapse.

    ``Σ_W`` averages ``(h_i − h̄_{y_i})(h_i − h̄_{y_i})ᵀ`` over all samples.
    By default ``Σ_B = (1/K) Σ_k h̄_k h̄_kᵀ`` as Jiang et al. (2024, §2.2) defines GNC1 (features
    on the sphere, no centring); ``centered=True`` subtracts the global mean,
    ``Σ_B = (1/K) Σ_k (h̄_k − h_G)(h̄_k − h_G)ᵀ``, as in Papyan et al.'s NC1.

    Examples
    --------
    >>> nc1([[1.0, 0], [1.0, 0], [0, 1.0], [0, 1.0]], [0, 0, 1, 1])
    0.0
    """
    h, y, counts = _check_features(features, labels, num_classes)
    means = _class_means(h, y, counts)
    within = h - means[y]
    sigma_w = within.T @ within / h.shape[0]
    between = means - h.mean(0) if centered else means
    sigma_b = between.T @ between / means.shape[0]
    return float(torch.trace(sigma_w @ torch.linalg.pinv(sigma_b, hermitian=True)) / means.shape[0])


def gnc2(weights):
    """GNC2: the one-vs-rest distance ρ of the class vectors, certified (Jiang et al. 2024, §2.2).

    The rows are put on the unit sphere (ρ is defined there; class means are
    shorter than 1) and handed to
    :func:`spherecodes.certificate.one_vs_rest_distances`.

    Parameters
    ----------
    weights : Tensor or array_like, shape (K, d)
        A classifier, prototypes, or class means.

    Returns
    -------
    OneVsRestCertificate
        ``rho_lower <= ρ <= rho_upper``, and per class ``lo``/``hi``.

    Examples
    --------
    >>> import numpy as np
    >>> etf = np.array([[1.0, 0], [-0.5, 3**0.5 / 2], [-0.5, -(3**0.5) / 2]])
    >>> round(gnc2(2.0 * etf).rho_upper, 9)  # K/(K−1) for a simplex ETF
    1.5
    """
    return one_vs_rest_distances(F.normalize(_float64(weights), dim=1).numpy())


def gnc3(weights, means) -> float:
    """GNC3, self-duality ``(1/K) Σ_k (1 − cos∠(w_k, h̄_k))`` (Jiang et al. 2024, §2.2); 0 when they align.

    Examples
    --------
    >>> round(gnc3([[1.0, 0], [0, 1.0]], [[2.0, 0], [1.0, 1.0]]), 6)  # (1 − cos 45°)/2
    0.146447
    """
    cosines = (F.normalize(_float64(weights), dim=1) * F.normalize(_float64(means), dim=1)).sum(1)
    return float((1.0 - cosines).mean())


def nc2_cosines(means, global_mean) -> torch.Tensor:
    """``cos∠(h̄_c − h_G, h̄_k − h_G)`` for all c ≠ k (Yang et al. 2022, NC2, Fig. 3), shape (K(K−1),).

    At collapse onto a simplex ETF every value is −1/(K−1).

    Examples
    --------
    >>> nc2_cosines([[1.0, 0], [-1.0, 0]], [0.0, 0.0])
    tensor([-1., -1.], dtype=torch.float64)
    """
    centred = F.normalize(_float64(means) - _float64(global_mean), dim=1)
    gram = centred @ centred.T
    return gram[~torch.eye(gram.shape[0], dtype=torch.bool)]


def nc3_cosines(means, global_mean, weights) -> torch.Tensor:
    """``cos∠(h̄_c − h_G, w_c)`` per class (Yang et al. 2022, NC3, Fig. 4), shape (K,); 1 at self-duality.

    Examples
    --------
    >>> nc3_cosines([[2.0, 1.0], [0.0, 1.0]], [1.0, 1.0], [[1.0, 0], [-1.0, 0]])
    tensor([1., 1.], dtype=torch.float64)
    """
    centred = F.normalize(_float64(means) - _float64(global_mean), dim=1)
    return (centred * F.normalize(_float64(weights), dim=1)).sum(1)


def collapse_metrics(features, labels, weights=None, num_classes: int | None = None, normalize: bool = True) -> dict:
    """All collapse metrics of a run at once, as a dict of floats.

    Parameters
    ----------
    features : Tensor, shape (N, d)
        Last-layer outputs (e.g. on the whole training set).
    labels : Tensor of int, shape (N,)
    weights : Tensor, shape (K, d), optional
        The classifier or prototypes.  Without it GNC2 is measured on the class
        means and GNC3 / NC3 are left out.
    normalize : bool
        Put the features on the unit sphere first, as cosine heads see them.

    Returns
    -------
    dict
        ``gnc1``, ``nc1_centered``, ``gnc2_lower``, ``gnc2_upper``,
        ``nc2_cos_mean``, ``nc2_cos_std`` and, with weights, ``gnc3`` and
        ``nc3_cos_mean``.

    Examples
    --------
    >>> import torch
    >>> h = torch.tensor([[1.0, 0], [1.0, 0.1], [-1.0, 0], [-1.0, -0.1]])
    >>> m = collapse_metrics(h, torch.tensor([0, 0, 1, 1]), weights=torch.tensor([[1.0, 0], [-1.0, 0]]))
    >>> round(m["gnc2_upper"], 9), round(m["nc2_cos_mean"], 9)
    (2.0, -1.0)
    """
    h = _float64(features)
    if normalize:
        h = F.normalize(h, dim=1)
    means = class_means(h, labels, num_classes)
    global_mean = h.mean(0)
    rho = gnc2(means if weights is None else weights)
    nc2 = nc2_cosines(means, global_mean)
    metrics = {
        "gnc1": nc1(h, labels, num_classes),
        "nc1_centered": nc1(h, labels, num_classes, centered=True),
        "gnc2_lower": float(rho.rho_lower),
        "gnc2_upper": float(rho.rho_upper),
        "nc2_cos_mean": float(nc2.mean()),
        "nc2_cos_std": float(nc2.std()),
    }
    if weights is not None:
        metrics["gnc3"] = gnc3(weights, means)
        metrics["nc3_cos_mean"] = float(nc3_cosines(means, global_mean, weights).mean())
    return metrics


def classifier_projector(weights, eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """Projector onto the classifier subspace and its complement (Kobayashi, supplementary, Eq. vi).

    With the class vectors as the columns of ``W`` (d × K), ``P = W (WᵀW + εI)⁻¹ Wᵀ``, whose eigenvalues
    ``σ_j²/(σ_j² + ε)`` approximate the indicator of the span; ε keeps the inverse stable when W is
    rank-deficient (a simplex ETF spans K − 1 dimensions).  The complement is ``I − P``.

    Parameters
    ----------
    weights : Tensor, shape (K, d)
        Class vectors as rows (spherecodes' layout).
    eps : float
        ε > 0.

    Returns
    -------
    P, P_perp : Tensor, shape (d, d)
        In the dtype and device of ``weights`` when it is a floating tensor.

    Examples
    --------
    >>> import torch
    >>> P, P_perp = classifier_projector(torch.tensor([[1.0, 0.0, 0.0]]), eps=1e-6)
    >>> torch.round(torch.diagonal(P), decimals=4), torch.round(torch.diagonal(P_perp), decimals=4)
    (tensor([1., 0., 0.]), tensor([0., 1., 1.]))
    """
    if not eps > 0:
        raise SpherecodesError(f"eps must be positive, got {eps!r}")
    w = torch.as_tensor(weights)
    if not w.is_floating_point():
        w = w.to(torch.get_default_dtype())
    gram = w @ w.T
    reg = gram + eps * torch.eye(gram.shape[0], dtype=w.dtype, device=w.device)
    projector = w.T @ torch.linalg.solve(reg, w)
    return projector, torch.eye(w.shape[1], dtype=w.dtype, device=w.device) - projector
