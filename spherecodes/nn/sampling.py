"""N-way K-shot mini-batches: N classes, K samples of each (Kobayashi, supplementary, Sec. D and Table A).

A metric loss such as the Proto loss learns from the samples of a class that
share a batch; with random batches their number varies (and may be one, which
gives the loss nothing).  Episodic sampling fixes it: every batch holds
exactly N classes and K samples of each, n = N·K in all.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch
from torch.utils.data import Sampler

from ..checks import check_seed
from ..errors import SpherecodesError
from ._checks import check_targets

__all__ = ["NWayKShotSampler"]


class NWayKShotSampler(Sampler[list[int]]):
    """Batches of N classes × K samples, as a ``batch_sampler`` for a :class:`torch.utils.data.DataLoader`.

    Each batch draws N distinct classes uniformly, then K distinct samples of
    each uniformly within the class, and lists their N·K dataset indices class
    by class.  Batches are independent, so an epoch need not visit every sample.

    Parameters
    ----------
    labels : sequence or Tensor of int, shape (len(dataset),)
        The class of every sample of the dataset.
    n_way : int
        N, classes per batch (2 <= N <= the number of classes).
    k_shot : int
        K, samples of each class per batch (>= 1; every class must have at
        least K samples).
    batches : int, optional
        Batches per epoch (``len`` of the sampler); default
        ``len(labels) // (N·K)``, so that an epoch draws about as many samples
        as the dataset holds (at least 1).
    seed : int
        The batches of epoch e come from the random stream (seed, e): the same
        seed gives the same batches on every machine.

    Notes
    -----
    Each ``iter(sampler)`` draws the batches of the current epoch and moves to
    the next.  ``set_epoch(e)`` sets the epoch the next ``iter`` draws, as for
    :class:`torch.utils.data.distributed.DistributedSampler`: call it at the
    start of each epoch to resume a run exactly, or to keep processes in step.

    Examples
    --------
    >>> labels = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    >>> sampler = NWayKShotSampler(labels, n_way=2, k_shot=2, batches=3, seed=0)
    >>> len(sampler), [sorted(labels[i] for i in batch) for batch in sampler][0]
    (3, [1, 1, 2, 2])
    >>> # loader = torch.utils.data.DataLoader(dataset, batch_sampler=sampler)
    """

    def __init__(self, labels, n_way: int, k_shot: int, *, batches: int | None = None, seed: int = 0) -> None:
        y = check_targets(labels if isinstance(labels, torch.Tensor) else np.asarray(labels), len(labels), None,
                          "labels").cpu().numpy()
        for name, value, low in (("n_way", n_way, 2), ("k_shot", k_shot, 1)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise SpherecodesError(f"{name} must be an integer >= {low}, got {value!r}")
        classes, counts = np.unique(y, return_counts=True)
        if n_way > len(classes):
            raise SpherecodesError(f"n_way is {n_way} but the labels hold {len(classes)} classes")
        short = classes[counts < k_shot]
        if len(short):
            listed = ", ".join(str(int(c)) for c in short[:10]) + (", ..." if len(short) > 10 else "")
            raise SpherecodesError(f"k_shot is {k_shot} but {len(short)} classes have fewer samples (classes "
                                   f"{listed}; the smallest has {int(counts.min())}); lower k_shot")
        if batches is None:
            batches = max(1, len(y) // (n_way * k_shot))
        if isinstance(batches, bool) or not isinstance(batches, (int, np.integer)) or batches < 1:
            raise SpherecodesError(f"batches must be an integer >= 1, got {batches!r}")
        order = np.argsort(y, kind="stable")
        self._members: list[np.ndarray] = np.split(order, np.cumsum(counts)[:-1])
        self.n_way, self.k_shot, self.batches = int(n_way), int(k_shot), int(batches)
        self.seed = check_seed(seed)
        self.epoch = 0

    def __len__(self) -> int:
        return self.batches

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose batches the next ``iter`` draws (an integer >= 0)."""
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
            raise SpherecodesError(f"epoch must be an integer >= 0, got {epoch!r}")
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[list[int]]:
        rng = np.random.default_rng([self.seed, self.epoch])
        self.epoch += 1
        for _ in range(self.batches):
            chosen = rng.choice(len(self._members), size=self.n_way, replace=False)
            yield [int(i) for c in chosen for i in rng.choice(self._members[c], size=self.k_shot, replace=False)]

    def __repr__(self) -> str:
        return (f"NWayKShotSampler(n_way={self.n_way}, k_shot={self.k_shot}, batches={self.batches}, "
                f"seed={self.seed}, epoch={self.epoch})")
