"""Torch adapter: fixed prototype heads, their losses, and collapse metrics.

>>> import torch
>>> from spherecodes.nn import PrototypeClassifier, HPNLoss
>>> head = PrototypeClassifier(torch.eye(3))  # or PrototypeClassifier.from_bank(path)
>>> criterion = HPNLoss(head)
>>> z = torch.randn(4, 3, requires_grad=True)  # a network's outputs
>>> criterion(z, torch.tensor([0, 1, 2, 0])).backward()
>>> head.predict(z).shape
torch.Size([4])

See ``docs/nn.md`` for a walk-through and ``examples/digits.py`` for a run on
real data.
"""

from .assignment import DynamicAssignment
from .direct_sum import (
    DirectSumLoss,
    ProtoLoss,
    SpectralSumLoss,
    proto_loss,
    spectral_overlap,
    spectral_projectors,
)
from .heads import (
    ClassMeanClassifier,
    PrototypeClassifier,
    PrototypeRegressor,
    joint_layout,
    match_prototypes,
)
from .sampling import NWayKShotSampler
from .losses import (
    CosineCrossEntropyLoss,
    DotRegressionLoss,
    HPNLoss,
    cosine_cross_entropy,
    dot_regression_loss,
    dr_class_lengths,
    hpn_loss,
    hyperspherical_regression_loss,
)
from .metrics import (
    class_means,
    classifier_projector,
    collapse_metrics,
    gnc2,
    gnc3,
    nc1,
    nc2_cosines,
    nc3_cosines,
)

__all__ = [
    "ClassMeanClassifier",
    "CosineCrossEntropyLoss",
    "DirectSumLoss",
    "DotRegressionLoss",
    "DynamicAssignment",
    "HPNLoss",
    "NWayKShotSampler",
    "PrototypeClassifier",
    "PrototypeRegressor",
    "ProtoLoss",
    "SpectralSumLoss",
    "class_means",
    "classifier_projector",
    "collapse_metrics",
    "cosine_cross_entropy",
    "dot_regression_loss",
    "dr_class_lengths",
    "gnc2",
    "gnc3",
    "hpn_loss",
    "hyperspherical_regression_loss",
    "joint_layout",
    "match_prototypes",
    "nc1",
    "nc2_cosines",
    "nc3_cosines",
    "proto_loss",
    "spectral_overlap",
    "spectral_projectors",
]
