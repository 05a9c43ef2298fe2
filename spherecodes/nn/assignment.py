"""Dynamic label-to-prototype assignment during training (Saadabadi et al. 2024, DL2PA).

With fixed prototypes, which class owns which prototype is arbitrary at the
start, yet it decides how far the network must move each class's features:
:class:`DynamicAssignment` lets the assignment follow running class means.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import SpherecodesError
from ._checks import CheckedLoad, check_extra_state, check_features, check_targets, require_keys, stored_tensor
from .heads import PrototypeClassifier

__all__ = ["DynamicAssignment"]


class DynamicAssignment(CheckedLoad, nn.Module):
    """Re-assign classes to a head's fixed prototypes from running class means (DL2PA).

    Call :meth:`step` with each mini-batch's features and labels after the
    optimiser step.  It updates each class's running mean of the features put
    on the sphere, ``m_k <- momentum m_k + (1 - momentum) mean_k(batch)`` (a
    class's first batch sets it), and every ``every`` calls, once every
    class has been seen, matches the means to the prototypes by maximising
    the summed cosine (:func:`~spherecodes.nn.match_prototypes`) and permutes
    the head's buffer in place (:meth:`PrototypeClassifier.reassign`), so its
    losses and ``predict`` follow at once.

    Parameters
    ----------
    head : PrototypeClassifier
        The head whose prototypes are re-assigned (its losses follow).
    momentum : float
        EMA momentum of the running means, in [0, 1).  0 uses the last batch only.
    every : int
        Steps between two re-assignments (e.g. the batches of an epoch, to
        re-assign once per epoch as DL2PA does).

    Attributes
    ----------
    moves : list of int
        For each re-assignment, how many classes changed prototype.

    ``load_state_dict`` checks a checkpoint (its own part and its head's)
    before copying anything: every key present, tensors of the right
    shapes, finite means, momentum in [0, 1), ``every`` >= 1.

    Examples
    --------
    >>> import torch
    >>> from spherecodes.nn import PrototypeClassifier
    >>> head = PrototypeClassifier(torch.eye(2))
    >>> assigner = DynamicAssignment(head, momentum=0.0)
    >>> features = torch.tensor([[0.1, 1.0], [1.0, 0.2]])   # class 0 points along e_2, class 1 along e_1
    >>> assigner.step(features, torch.tensor([0, 1]))
    tensor([1, 0])
    >>> head.prototypes, assigner.moves
    (tensor([[0., 1.],
            [1., 0.]]), [2])
    """

    running_means: torch.Tensor
    seen: torch.Tensor
    num_steps: torch.Tensor

    def __init__(self, head: PrototypeClassifier, momentum: float = 0.9, every: int = 1) -> None:
        super().__init__()
        if not isinstance(head, PrototypeClassifier):
            raise SpherecodesError(f"head must be a PrototypeClassifier, got {type(head).__name__}")
        if not 0.0 <= momentum < 1.0:
            raise SpherecodesError(f"momentum must be in [0, 1), got {momentum!r}")
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise SpherecodesError(f"every must be an integer >= 1, got {every!r}")
        self.head = head
        self.momentum = float(momentum)
        self.every = every
        self.moves: list[int] = []
        protos = head.prototypes
        self.register_buffer("running_means", torch.zeros_like(protos))
        self.register_buffer("seen", torch.zeros(head.num_classes, dtype=torch.bool, device=protos.device))
        self.register_buffer("num_steps", torch.zeros((), dtype=torch.int64))

    @torch.no_grad()
    def update(self, features: torch.Tensor, labels: torch.Tensor) -> None:
        """Fold one mini-batch into the running class means (no re-assignment)."""
        means = self.running_means
        check_features(features, dim=means.shape[1])
        if features.ndim != 2:
            raise SpherecodesError(f"features have shape {tuple(features.shape)}; expected (batch, {means.shape[1]})")
        h = F.normalize(features.detach().to(means.device, means.dtype), dim=-1)
        labels = check_targets(labels, len(h), len(means)).to(means.device)
        sums = torch.zeros_like(means).index_add_(0, labels, h)
        counts = torch.bincount(labels, minlength=len(means))
        present = counts > 0
        batch = sums[present] / counts[present, None].to(means.dtype)
        old = present & self.seen
        fresh = present & ~self.seen
        means[old] = self.momentum * means[old] + (1.0 - self.momentum) * batch[old[present]]
        means[fresh] = batch[fresh[present]]
        self.seen |= present

    @torch.no_grad()
    def reassign(self) -> torch.Tensor | None:
        """Match the running means to the prototypes now; the permutation applied, or None before every class is seen."""
        if not bool(self.seen.all()):
            return None
        perm = self.head.reassign(self.running_means)
        self.moves.append(int((perm != torch.arange(len(perm))).sum()))
        return perm

    def step(self, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor | None:
        """:meth:`update`, then :meth:`reassign` every ``every`` steps; the permutation applied, else None."""
        self.update(features, labels)
        self.num_steps += 1
        if int(self.num_steps) % self.every:
            return None
        return self.reassign()

    def get_extra_state(self) -> dict:
        return {"momentum": self.momentum, "every": self.every, "moves": list(self.moves)}

    def set_extra_state(self, state: dict) -> None:
        state = check_extra_state(state, type(self).__name__, self.EXTRA_STATE)
        self.momentum, self.every, self.moves = state["momentum"], state["every"], list(state["moves"])

    #: The keys of the extra state a checkpoint holds.
    EXTRA_STATE = ("momentum", "every", "moves")

    def check_state(self, state_dict, prefix: str, strict: bool = True) -> None:
        """Refuse a checkpoint that cannot be loaded whole, its head's part included (see the class)."""
        owner = type(self).__name__
        if strict:
            require_keys(state_dict, prefix, ("running_means", "seen", "num_steps", "_extra_state"), owner)
        shapes = {"running_means": tuple(self.running_means.shape), "seen": tuple(self.seen.shape), "num_steps": ()}
        for key, shape in shapes.items():
            if prefix + key in state_dict:
                value = stored_tensor(state_dict, prefix + key, shape, floating=key == "running_means")
                if key != "running_means" and value.dtype != getattr(self, key).dtype:
                    raise SpherecodesError(f"checkpoint entry {prefix}{key} holds {value.dtype} values; this "
                                           f"module holds {getattr(self, key).dtype}")
        if prefix + "_extra_state" in state_dict:
            check_extra_state(state_dict[prefix + "_extra_state"], owner, self.EXTRA_STATE)
        self.head.check_state(state_dict, prefix + "head.", strict)

    def extra_repr(self) -> str:
        return f"momentum={self.momentum}, every={self.every}"
