"""Training losses for fixed prototypes, each as its paper states it.

Every function takes the network outputs, the integer targets and the
prototypes; every module wraps a head (anything with a ``prototypes`` buffer,
such as :class:`~spherecodes.nn.PrototypeClassifier`) and reads its current
prototypes at each call, so the loss follows the head across ``.to(device)``
and :meth:`~spherecodes.nn.PrototypeClassifier.reassign`.

The per-sample terms are the papers' exactly; ``reduction`` ("mean", "sum" or "none") says how they
are combined: "sum" is the literal Σ of Mettes et al. 2019, Eq. 1, "mean" (the default: the step
size does not depend on the batch size) the 1/N of Jiang et al. (2024) and Yang et al. (2022).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import SpherecodesError
from ._checks import check_features, check_targets

REDUCTIONS = ("mean", "sum", "none")


def reduce_per_sample(per_sample: torch.Tensor, reduction: str) -> torch.Tensor:
    """Per-sample loss terms combined as ``reduction`` asks: "mean", "sum" or "none" (unchanged)."""
    if reduction == "mean":
        return per_sample.mean()
    if reduction == "sum":
        return per_sample.sum()
    if reduction == "none":
        return per_sample
    raise SpherecodesError(f"reduction must be one of {', '.join(REDUCTIONS)}, got {reduction!r}")


def _target_prototypes(prototypes: torch.Tensor, target: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Unit prototype of each sample's class, in the dtype and device of ``like`` (both checked first)."""
    _checked(like, target, prototypes)
    return F.normalize(prototypes.to(like.device, like.dtype)[target.to(like.device)], dim=-1)


def _checked(z: torch.Tensor, target: torch.Tensor, prototypes: torch.Tensor) -> torch.Tensor:
    """``target`` as int64, once ``z`` is checked as a finite (batch, d) batch and ``target`` as classes in [0, K)."""
    check_features(z, dim=prototypes.shape[-1])
    if z.ndim != 2:
        raise SpherecodesError(f"outputs have shape {tuple(z.shape)}; expected (batch, {prototypes.shape[-1]})")
    return check_targets(target, len(z), prototypes.shape[0])


def hpn_loss(
    z: torch.Tensor, target: torch.Tensor, prototypes: torch.Tensor, reduction: str = "mean"
) -> torch.Tensor:
    """Hyperspherical prototype loss ``(1 − cos(z, p_y))²`` (Mettes et al. 2019, Eq. 1).

    Its gradient with respect to z is Mettes et al. 2019, Eq. 2,
    ``2 (1 − cos θ) (cos θ · z/‖z‖² − p_y/(‖z‖ ‖p_y‖))``.

    Parameters
    ----------
    z : Tensor, shape (batch, d)
        Network outputs (any length; only their direction matters).
    target : Tensor of int64, shape (batch,)
    prototypes : Tensor, shape (K, d)
    reduction : {"mean", "sum", "none"}

    Examples
    --------
    >>> import torch
    >>> hpn_loss(torch.tensor([[0.0, 3.0]]), torch.tensor([0]), torch.eye(2))
    tensor(1.)
    """
    cosine = (F.normalize(z, dim=-1) * _target_prototypes(prototypes, target, z)).sum(-1)
    return reduce_per_sample((1.0 - cosine) ** 2, reduction)


def cosine_cross_entropy(
    z: torch.Tensor,
    target: torch.Tensor,
    prototypes: torch.Tensor,
    temperature: float,
    reduction: str = "mean",
) -> torch.Tensor:
    """Cross-entropy on cosine logits with temperature, ``−log softmax(cos/τ)_y`` (Jiang et al. 2024, Eq. 1).

    Features and prototypes are both put on the unit sphere, the spherical
    constraint of Jiang et al. 2024, Eq. 2.

    Examples
    --------
    >>> import torch
    >>> loss = cosine_cross_entropy(torch.tensor([[1.0, 0.0]]), torch.tensor([0]), torch.eye(2), 0.5)
    >>> round(loss.item(), 6)  # −log(e² / (e² + e⁰))
    0.126928
    """
    if not temperature > 0:
        raise SpherecodesError(f"temperature must be positive, got {temperature!r}")
    target = _checked(z, target, prototypes).to(z.device)
    unit_prototypes = F.normalize(prototypes.to(z.device, z.dtype), dim=-1)
    logits = F.normalize(z, dim=-1) @ unit_prototypes.T
    return F.cross_entropy(logits / temperature, target, reduction=reduction)


def dot_regression_loss(
    h: torch.Tensor,
    target: torch.Tensor,
    prototypes: torch.Tensor,
    class_lengths: torch.Tensor | None = None,
    feature_length: float = 1.0,
    reduction: str = "mean",
) -> torch.Tensor:
    """Dot-regression loss of Yang et al. 2022, Eq. 14, on the features exactly as given.

    ``1/(2 sqrt(E_W E_H)) · (w_yᵀ h − sqrt(E_W E_H))²`` with ``w_y = sqrt(E_W) · p_y``, the unit prototype
    scaled to the class's length.  On features of length ``sqrt(E_H)`` its gradient is Eq. 15,
    ``−(1 − cos∠(h, w_y)) w_y``: a pull towards w_y only.  :class:`DotRegressionLoss` normalises the features first.

    Parameters
    ----------
    h : Tensor, shape (batch, d)
        Features, used as they are (no normalisation here).
    target : Tensor of int64, shape (batch,)
    prototypes : Tensor, shape (K, d)
        Directions of the class vectors.
    class_lengths : Tensor, shape (K,), optional
        ``sqrt(E_{w_k})`` per class; see :func:`dr_class_lengths` for
        imbalanced data.  Default all ones.
    feature_length : float
        ``sqrt(E_H)``.
    reduction : {"mean", "sum", "none"}

    Examples
    --------
    >>> import torch
    >>> dot_regression_loss(torch.tensor([[0.0, 1.0]]), torch.tensor([0]), torch.eye(2))
    tensor(0.5000)
    """
    target = _checked(h, target, prototypes).to(h.device)
    w_length = (
        torch.ones(target.shape, dtype=h.dtype, device=h.device)
        if class_lengths is None
        else class_lengths.to(h.device, h.dtype)[target]
    )
    w = w_length[:, None] * _target_prototypes(prototypes, target, h)
    scale = w_length * feature_length  # sqrt(E_W E_H)
    per_sample = ((w * h).sum(-1) - scale) ** 2 / (2.0 * scale)
    return reduce_per_sample(per_sample, reduction)


def dr_class_lengths(class_counts) -> torch.Tensor:
    """Per-class lengths ``sqrt(E_{w_k}) = N / (K n_k)`` for imbalanced data (Yang et al. 2022, App. C).

    They equalise the bound on each class's gradient with respect to the
    backbone, which amounts to a class-weighted loss; all ones when balanced.

    Parameters
    ----------
    class_counts : array_like of int, shape (K,)
        Training samples per class, n_k (all positive).

    Examples
    --------
    >>> dr_class_lengths([30, 10])
    tensor([0.6667, 2.0000], dtype=torch.float64)
    """
    counts = torch.as_tensor(class_counts, dtype=torch.float64)
    if counts.ndim != 1 or counts.numel() < 2 or not bool(torch.all(counts > 0)):
        raise SpherecodesError("class_counts must list a positive sample count for each of K >= 2 classes")
    return counts.sum() / (counts.numel() * counts)


def hyperspherical_regression_loss(
    z: torch.Tensor,
    y: torch.Tensor,
    upper_prototype: torch.Tensor,
    lower: float,
    upper: float,
    reduction: str = "mean",
) -> torch.Tensor:
    """Regression loss ``(r − cos(z, p_u))²``, ``r = 2 (y − v_l)/(v_u − v_l) − 1`` (Mettes et al. 2019, Eq. 7).

    Examples
    --------
    >>> import torch
    >>> z = torch.tensor([[1.0, 1.0]])  # cos(z, e_0) = 0.7071
    >>> hyperspherical_regression_loss(z, torch.tensor([10.0]), torch.tensor([1.0, 0.0]), 0.0, 10.0)
    tensor(0.0858)
    """
    check_features(z, "outputs", dim=upper_prototype.shape[-1])
    check_features(y, "targets")
    r = 2.0 * (y - lower) / (upper - lower) - 1.0
    cosine = F.normalize(z, dim=-1) @ F.normalize(upper_prototype.to(z.device, z.dtype), dim=0)
    return reduce_per_sample((r - cosine) ** 2, reduction)


class HPNLoss(nn.Module):
    """Module form of :func:`hpn_loss` for a head's prototypes.

    Examples
    --------
    >>> import torch
    >>> from spherecodes.nn import PrototypeClassifier
    >>> criterion = HPNLoss(PrototypeClassifier(torch.eye(2)))
    >>> criterion(torch.tensor([[2.0, 0.0]]), torch.tensor([0]))
    tensor(0.)
    """

    def __init__(self, head: nn.Module, reduction: str = "mean") -> None:
        super().__init__()
        self.head = head
        self.reduction = reduction

    def forward(self, z: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return hpn_loss(z, target, self.head.prototypes, self.reduction)


class CosineCrossEntropyLoss(nn.Module):
    """Module form of :func:`cosine_cross_entropy`; τ defaults to the head's ``temperature``.

    Examples
    --------
    >>> import torch
    >>> from spherecodes.nn import PrototypeClassifier
    >>> criterion = CosineCrossEntropyLoss(PrototypeClassifier(torch.eye(2), temperature=0.5))
    >>> round(criterion(torch.tensor([[1.0, 0.0]]), torch.tensor([0])).item(), 6)
    0.126928
    """

    def __init__(self, head: nn.Module, temperature: float | None = None, reduction: str = "mean") -> None:
        super().__init__()
        self.head = head
        self.temperature = temperature
        self.reduction = reduction

    def forward(self, z: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        temperature = self.head.temperature if self.temperature is None else self.temperature
        return cosine_cross_entropy(z, target, self.head.prototypes, temperature, self.reduction)


class DotRegressionLoss(nn.Module):
    """Dot-regression loss as Yang et al. (2022) trains with it (Eq. 14 and App. C).

    The outputs are ℓ2-normalised and scaled to ``feature_length`` (App. C), then :func:`dot_regression_loss`
    is applied with per-class lengths ``N/(K n_k)`` when ``class_counts`` is given.

    Parameters
    ----------
    head : nn.Module with a ``prototypes`` buffer
    class_counts : array_like of int, shape (K,), optional
        Training samples per class, for imbalanced data.
    feature_length : float
        ``sqrt(E_H)``.
    reduction : {"mean", "sum", "none"}

    Examples
    --------
    >>> import torch
    >>> from spherecodes.nn import PrototypeClassifier
    >>> criterion = DotRegressionLoss(PrototypeClassifier(torch.eye(2)), class_counts=[30, 10])
    >>> criterion(torch.tensor([[0.0, 5.0]]), torch.tensor([1]))
    tensor(0.)
    """

    class_lengths: torch.Tensor | None

    def __init__(
        self,
        head: nn.Module,
        class_counts=None,
        feature_length: float = 1.0,
        reduction: str = "mean",
    ) -> None:
        super().__init__()
        self.head = head
        lengths = None if class_counts is None else dr_class_lengths(class_counts).to(torch.get_default_dtype())
        if lengths is not None and lengths.numel() != head.prototypes.shape[0]:
            raise SpherecodesError(
                f"got {lengths.numel()} class counts for {head.prototypes.shape[0]} prototypes"
            )
        self.register_buffer("class_lengths", lengths)
        self.feature_length = float(feature_length)
        self.reduction = reduction

    def forward(self, z: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        h = self.feature_length * F.normalize(z, dim=-1)
        return dot_regression_loss(
            h, target, self.head.prototypes, self.class_lengths, self.feature_length, self.reduction
        )
