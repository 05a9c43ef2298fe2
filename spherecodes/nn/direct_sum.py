"""Kobayashi's direct-sum approach: a classification loss and a metric loss on complementary subspaces.

A classifier reads a feature x only through ``Wᵀ x``, so Kobayashi (*Direct-Sum
Approach to Integrate Losses via Classifier Subspace*, supplementary) gives the
classification loss ``P x`` and a metric loss (one that shapes distances
between features, such as :func:`proto_loss`) the rest, ``(I − P) x``:
:class:`DirectSumLoss` (Eq. vi), and :class:`SpectralSumLoss` with the soft
complement of Sec. C for d ≤ C (:func:`spectral_projectors`,
:func:`spectral_overlap`).  ``docs/nn.md`` walks through them.

W holds the class vectors as columns; spherecodes stores them as rows, so
``weights`` below are (C, d), the layout of a head's ``prototypes`` and of
``nn.Linear(d, C).weight``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..errors import SpherecodesError
from ._checks import check_features, check_targets
from .losses import reduce_per_sample
from .metrics import classifier_projector

__all__ = ["DEFAULT_EPS", "DEFAULT_P", "DirectSumLoss", "ProtoLoss", "SpectralSumLoss", "proto_loss",
           "spectral_overlap", "spectral_projectors"]

#: ε of the projector ``W(WᵀW + εI)⁻¹Wᵀ`` (Kobayashi, Eq. vi): small against the squared singular values of a
#: code of unit rows (at least 1 for a tight frame), so the projector's eigenvalues are 1 to within 1e-6.
DEFAULT_EPS = 1e-6

#: The exponent p of the spectral-sum loss, Kobayashi's best trade-off (supplementary, Sec. C, Table 6).
DEFAULT_P = 0.3


def proto_loss(x: torch.Tensor, target: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
    """The Proto loss of a mini-batch (Kobayashi, supplementary, Eq. i).

    ``ℓ_i = −log softmax_c(−‖x_i − μ_{c\\i}‖²)_{y_i}`` over the classes c present
    in the batch, where ``μ_{c\\i}`` is the mean of the batch's features of
    class c other than x_i (for c ≠ y_i the class mean; for c = y_i
    ``(n_c μ_c − x_i)/(n_c − 1)``, whose distance to x_i is
    ``n_c/(n_c − 1) · ‖x_i − μ_c‖``).  The features are used as given.

    A sample alone in its class in the batch has no leave-one-out mean: it
    adds no term (0 with ``reduction="none"``; "mean" averages over the
    samples that have one, the E_i of Eq. i), its class still a negative for
    the others.  :class:`~spherecodes.nn.NWayKShotSampler` with K >= 2 avoids it.

    Parameters
    ----------
    x : Tensor, shape (batch, d)
    target : Tensor of int, shape (batch,)
        Any non-negative class indices.
    reduction : {"mean", "sum", "none"}

    Examples
    --------
    Two classes of two points each, on a line: each point is 1 from its own
    leave-one-out mean (the other point of its class) and 4.5 or 3.5 from
    the other class's mean.

    >>> import torch
    >>> x = torch.tensor([[0.0], [1.0], [4.0], [5.0]])
    >>> loss = proto_loss(x, torch.tensor([0, 0, 1, 1]))
    >>> expected = torch.log1p(torch.exp(1.0 - torch.tensor([4.5, 3.5, 3.5, 4.5]) ** 2)).mean()
    >>> bool(torch.isclose(loss, expected))
    True
    """
    check_features(x)
    if x.ndim != 2:
        raise SpherecodesError(f"features have shape {tuple(x.shape)}; expected (batch, d)")
    target = check_targets(target, len(x), None).to(x.device)
    classes, y = torch.unique(target, return_inverse=True)
    counts = torch.bincount(y, minlength=len(classes))
    means = torch.zeros(len(classes), x.shape[1], dtype=x.dtype, device=x.device).index_add(0, y, x)
    means = means / counts[:, None].to(x.dtype)
    # ‖x_i − μ_c‖² by the expansion (n × C numbers, not n × C × d); rounding can only take it a hair below 0.
    distances = ((x * x).sum(1, keepdim=True) - 2.0 * x @ means.T + (means * means).sum(1)).clamp_min(0.0)
    has_term = counts[y] >= 2
    own = counts[y].to(x.dtype)
    loo_scale = torch.where(has_term, (own / (own - 1.0).clamp_min(1.0)) ** 2, torch.ones_like(own))
    rows = torch.arange(len(x), device=x.device)
    scaled = torch.ones_like(distances).index_put((rows, y), loo_scale)
    logits = -(distances * scaled)
    per_sample = torch.where(has_term, torch.logsumexp(logits, dim=1) - logits[rows, y], torch.zeros_like(own))
    if reduction == "mean":
        terms = int(has_term.sum())
        return per_sample.sum() / terms if terms else per_sample.sum()
    return reduce_per_sample(per_sample, reduction)


class ProtoLoss(nn.Module):
    """Module form of :func:`proto_loss` (a metric loss: it needs no head).

    Examples
    --------
    >>> import torch
    >>> criterion = ProtoLoss()
    >>> criterion(torch.eye(4), torch.tensor([0, 0, 1, 1])).shape
    torch.Size([])
    """

    def __init__(self, reduction: str = "mean") -> None:
        super().__init__()
        self.reduction = reduction

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return proto_loss(x, target, self.reduction)


def spectral_projectors(weights, p: float = DEFAULT_P) -> tuple[torch.Tensor, torch.Tensor]:
    """The soft classifier subspace and its soft complement, ``W̃ diag(λ̃^p) W̃ᵀ`` and ``W̃ diag(1 − λ̃^p) W̃ᵀ``.

    ``W = W̃ diag(λ) Vᵀ`` is the singular value decomposition of the class
    vectors as columns (d × C), with W̃ a full orthonormal basis of R^d and λ
    padded with zeros to d values; ``λ̃ = λ / λ_max`` (Kobayashi, supplementary,
    Sec. C).  A zero singular value (below ``max(d, C)`` float64 epsilons of
    λ_max) has ``λ̃^p = 0`` for every p >= 0 (Eq. x), so at p = 0 and d > C the
    complement is ``W_⊥W_⊥ᵀ`` (Eq. xi).  The two matrices sum to I.

    Parameters
    ----------
    weights : Tensor, shape (C, d)
        Class vectors as rows.
    p : float
        The exponent, >= 0; smaller p shrinks the overlap with the classifier
        (:func:`spectral_overlap`), larger p keeps more of a complement.

    Returns
    -------
    P, Q : Tensor, shape (d, d)
        float64, on the device of ``weights``.

    Examples
    --------
    >>> import torch
    >>> P, Q = spectral_projectors(torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), p=1.0)
    >>> torch.diagonal(Q)   # 1 − λ̃ on the axes of the two class vectors, 1 off their span
    tensor([0.0000, 0.5000, 1.0000], dtype=torch.float64)
    """
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) or p < 0:
        raise SpherecodesError(f"p must be a finite number >= 0, got {p!r}")
    w = _float64_weights(weights)
    c, d = w.shape
    basis, singular, _ = torch.linalg.svd(w.T, full_matrices=True)
    lam = torch.zeros(d, dtype=torch.float64, device=w.device)
    lam[: len(singular)] = singular
    top = lam.max()
    if not top > 0:
        raise SpherecodesError("the class vectors are all zero: they span no subspace")
    nonzero = lam > max(c, d) * torch.finfo(torch.float64).eps * top
    power = torch.where(nonzero, (lam / top).clamp_min(torch.finfo(torch.float64).tiny) ** p, torch.zeros_like(lam))
    soft = basis @ torch.diag(power) @ basis.T
    return soft, basis @ torch.diag(1.0 - power) @ basis.T


def spectral_overlap(weights, p: float = DEFAULT_P) -> float:
    """``‖Wᵀ W̃ diag(1 − λ̃^p) W̃ᵀ‖₂``: how much of the classifier the soft complement still holds (Eq. viii).

    Computed as the spectral norm of the product itself; Kobayashi's Eq. ix
    gives it in closed form, ``λ_max · max_j λ̃_j (1 − λ̃_j^p)``: 0 for p = 0,
    at most ``λ_max · p/(1 + p)^(1 + 1/p)``.

    Examples
    --------
    >>> import torch
    >>> round(spectral_overlap(torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), p=1.0), 12)  # 2 · ½ · ½
    0.5
    """
    _, complement = spectral_projectors(weights, p)
    return float(torch.linalg.matrix_norm(_float64_weights(weights) @ complement, ord=2))


def _float64_weights(weights) -> torch.Tensor:
    w = torch.as_tensor(weights).detach()
    check_features(w if w.is_floating_point() else w.double(), "class vectors")
    if w.ndim != 2:
        raise SpherecodesError(f"class vectors must be a (C, d) matrix, got shape {tuple(w.shape)}")
    return w.to(torch.float64)


class _SubspaceSum(nn.Module):
    """``classifier_weight · ℓ_cls(x P) + metric_weight · ℓ_metric(x Q)`` for a pair (P, Q) of the class vectors.

    The class vectors come from ``classifier`` (a head's ``prototypes``, a layer's ``weight``, or a (C, d) tensor;
    by default the head of ``classifier_loss``) at every call, so the loss follows ``.to(device)`` and a learned
    classifier's updates; (P, Q) are computed in float64 without gradient and kept until the vectors change.
    """

    def __init__(self, classifier_loss, metric_loss, classifier=None, *, classifier_weight: float = 1.0,
                 metric_weight: float = 1.0) -> None:
        super().__init__()
        classifier = getattr(classifier_loss, "head", None) if classifier is None else classifier
        if classifier is None:
            raise SpherecodesError("give classifier= (a head, a layer or a (C, d) tensor of class vectors): "
                                   "the classifier loss has no head to take them from")
        for name, value in (("classifier_weight", classifier_weight), ("metric_weight", metric_weight)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise SpherecodesError(f"{name} must be a finite number >= 0, got {value!r}")
        self.classifier_loss = classifier_loss
        self.metric_loss = metric_loss
        self.classifier = classifier
        self.classifier_weight = float(classifier_weight)
        self.metric_weight = float(metric_weight)
        self._cache: tuple | None = None
        _float64_weights(self.class_vectors())  # refuse bad class vectors now, not at the first step

    def class_vectors(self) -> torch.Tensor:
        """The current (C, d) class vectors."""
        source = self.classifier
        for attribute in ("prototypes", "weight"):
            if not isinstance(source, torch.Tensor) and hasattr(source, attribute):
                return getattr(source, attribute)
        if isinstance(source, torch.Tensor):
            return source
        raise SpherecodesError(f"classifier must be a head, a layer with a weight, or a tensor; got "
                               f"{type(source).__name__}")

    def pair(self, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def projectors(self, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(P, Q) in the dtype and device of ``like``, recomputed when the class vectors have changed."""
        w = self.class_vectors()
        key = (w.data_ptr(), w._version, tuple(w.shape), like.device, like.dtype)
        if self._cache is None or self._cache[0] != key:
            with torch.no_grad():
                pair = self.pair(w.detach().to(like.device))
            self._cache = (key, tuple(m.to(like.dtype) for m in pair))
        return self._cache[1]

    def forward(self, z: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        check_features(z, dim=self.class_vectors().shape[1])
        inside, outside = self.projectors(z)
        return (self.classifier_weight * self.classifier_loss(z @ inside, target)
                + self.metric_weight * self.metric_loss(z @ outside, target))


class DirectSumLoss(_SubspaceSum):
    """Kobayashi's direct-sum loss: a classification loss on ``P x``, a metric loss on ``(I − P) x``.

    ``P = W(WᵀW + εI)⁻¹Wᵀ`` projects onto the span of the class vectors
    (Eq. vi, :func:`~spherecodes.nn.classifier_projector`); ``I − P`` onto its
    complement, empty unless d > C or the class vectors are dependent (a
    simplex ETF).  ``Wᵀ P x = Wᵀ x`` up to ε, so predictions use ``head(x)``.

    Parameters
    ----------
    classifier_loss, metric_loss : callable ``(z, target) -> loss``
        E.g. :class:`~spherecodes.nn.CosineCrossEntropyLoss` on a head, and :class:`ProtoLoss`.
    classifier : head, layer or Tensor (C, d), optional
        Where the class vectors come from; default the head of
        ``classifier_loss``.
    eps : float
        ε > 0 of Eq. vi.
    classifier_weight, metric_weight : float
        The weights (>= 0) of ``classifier_loss(P x, y)`` and ``metric_loss((I − P) x, y)`` in the sum.

    Examples
    --------
    >>> import torch
    >>> from spherecodes.nn import CosineCrossEntropyLoss, PrototypeClassifier
    >>> head = PrototypeClassifier(torch.eye(4)[:2])          # 2 classes in R^4: a 2-dimensional complement
    >>> criterion = DirectSumLoss(CosineCrossEntropyLoss(head), ProtoLoss())
    >>> P, Q = criterion.projectors(torch.zeros(1, 4))
    >>> torch.diagonal(P).round(decimals=4), torch.diagonal(Q).round(decimals=4)
    (tensor([1., 1., 0., 0.]), tensor([0., 0., 1., 1.]))
    >>> z = torch.randn(8, 4, requires_grad=True)
    >>> criterion(z, torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])).backward()
    """

    def __init__(self, classifier_loss, metric_loss, classifier=None, *, eps: float = DEFAULT_EPS,
                 classifier_weight: float = 1.0, metric_weight: float = 1.0) -> None:
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not math.isfinite(eps) or eps <= 0:
            raise SpherecodesError(f"eps must be a finite number > 0, got {eps!r}")
        self.eps = float(eps)
        super().__init__(classifier_loss, metric_loss, classifier, classifier_weight=classifier_weight,
                         metric_weight=metric_weight)

    def pair(self, weights):
        return classifier_projector(weights.to(torch.float64), self.eps)

    def extra_repr(self) -> str:
        return f"eps={self.eps}, classifier_weight={self.classifier_weight}, metric_weight={self.metric_weight}"


class SpectralSumLoss(_SubspaceSum):
    """Kobayashi's spectral-sum loss: the split of :class:`DirectSumLoss` made soft by the classifier's spectrum.

    The metric loss gets ``Q_p x`` with the soft complement
    ``Q_p = W̃ diag(1 − λ̃^p) W̃ᵀ`` (supplementary, Sec. C;
    :func:`spectral_projectors`), which is not empty when d <= C; the
    classification loss gets the rest, ``(I − Q_p) x = W̃ diag(λ̃^p) W̃ᵀ x``,
    so that the two parts still sum to x.  (The supplementary states the
    metric side; giving the classifier the rest is our reading, chosen so
    that at p = 0 and d > C the loss is the direct-sum loss with ε → 0,
    Eq. x–xi.)  How much the complement overlaps the classifier is
    :func:`spectral_overlap` (Eq. viii–ix), 0 at p = 0.  A code of fixed
    prototypes is close to a tight frame, so its soft complement is nearly
    the direct sum's (``docs/nn.md``).

    Parameters
    ----------
    classifier_loss, metric_loss, classifier, classifier_weight, metric_weight
        As for :class:`DirectSumLoss`.
    p : float
        The exponent, >= 0 (:data:`DEFAULT_P`).

    Examples
    --------
    >>> import torch
    >>> from spherecodes.nn import CosineCrossEntropyLoss, PrototypeClassifier
    >>> head = PrototypeClassifier(torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]]))   # 3 classes in R^2
    >>> criterion = SpectralSumLoss(CosineCrossEntropyLoss(head), ProtoLoss(), p=0.3)
    >>> P, Q = criterion.projectors(torch.zeros(1, 2))
    >>> bool(torch.allclose(P + Q, torch.eye(2)))
    True
    >>> # singular values √2 and 1: Q keeps 1 − (1/√2)^0.3 of the weaker direction
    >>> round(float(torch.linalg.matrix_norm(Q, ord=2)), 6), round(1 - 0.5 ** 0.15, 6)
    (0.09875, 0.09875)
    """

    def __init__(self, classifier_loss, metric_loss, classifier=None, *, p: float = DEFAULT_P,
                 classifier_weight: float = 1.0, metric_weight: float = 1.0) -> None:
        spectral_projectors(torch.eye(1), p)  # refuse a bad p before anything else
        self.p = float(p)
        super().__init__(classifier_loss, metric_loss, classifier, classifier_weight=classifier_weight,
                         metric_weight=metric_weight)

    def pair(self, weights):
        return spectral_projectors(weights, self.p)

    def extra_repr(self) -> str:
        return f"p={self.p}, classifier_weight={self.classifier_weight}, metric_weight={self.metric_weight}"
