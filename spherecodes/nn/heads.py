"""Fixed prototype heads: classification, regression and the class-mean classifier.

Every head keeps its prototypes in a registered **buffer**: they follow
``.to(device)`` and ``.to(dtype)``, are saved in ``state_dict`` and never
receive a gradient (no optimizer sees them).  Class labels and the temperature
travel in the ``state_dict`` too, as the module's extra state.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment
from torch import nn

from ..bank import read_code
from ..code import check_labels, make_code
from ..errors import SpherecodesError
from ..memory import require_memory
from ..stats import validate_prototypes
from ._checks import (
    CheckedLoad, check_extra_state, check_features, check_targets, distinct_rows, require_keys, stored_rows,
    stored_tensor,
)
from .losses import hyperspherical_regression_loss

#: Default softmax temperature τ for cross-entropy on cosine logits (Jiang et al. 2024, App. B).
DEFAULT_TEMPERATURE = 0.1

#: Default EMA momentum β of the class-mean-feature classifier (Jiang et al. 2024, App. B).
DEFAULT_BETA = 0.9


def _as_unit_rows(prototypes: Any) -> np.ndarray:
    """Prototypes from a tensor, an array or nested lists, as float64 unit rows."""
    if isinstance(prototypes, torch.Tensor):
        if prototypes.ndim == 2 and prototypes.shape[0] > 1 and prototypes.stride(0) == 0:
            # torch.save keeps an expanded tensor's one row: a small file can stand for K identical rows.
            raise SpherecodesError(f"the {prototypes.shape[0]:,} prototypes are one row repeated (an expanded "
                                   "tensor): a head needs K different prototypes")
        require_memory(3 * 8.0 * prototypes.numel(), f"the prototypes (a tensor of shape {tuple(prototypes.shape)}) "
                       "in float64", hint="check the tensor")
        prototypes = prototypes.detach().to("cpu", torch.float64).numpy()
    return validate_prototypes(prototypes, normalize=True)


class PrototypeClassifier(CheckedLoad, nn.Module):
    """A classifier head whose class vectors are fixed prototypes on the sphere.

    ``forward(z)`` returns the cosine logits ``cos(z, p_c)`` for every class
    (Mettes et al. 2019, Eq. 3); the prediction is their argmax.

    Parameters
    ----------
    prototypes : Tensor, array_like or object with ``.prototypes``
        K rows in R^d, rescaled to unit length.  An object (a bank :class:`~spherecodes.code.Code`, a solver
        result) also lends its ``.labels`` when it has them and ``labels`` is not given.
    labels : sequence of str, optional
        Name of class k at position k, for :meth:`decode`.
    temperature : float
        Softmax temperature τ for cross-entropy on the cosine logits
        (:class:`~spherecodes.nn.CosineCrossEntropyLoss` reads it).
    dtype : torch.dtype, optional
        Dtype of the buffer (default: torch's default float dtype).  One in
        which two prototypes round to the same row is refused.

    ``load_state_dict`` checks a checkpoint before copying anything of it:
    every key present, prototypes of the head's shape, finite, unit and
    distinct, labels one per row, temperature positive.

    Examples
    --------
    >>> import torch
    >>> head = PrototypeClassifier(torch.eye(3), labels=["cat", "dog", "car"])
    >>> head(torch.tensor([[0.0, 2.0, 0.0]]))
    tensor([[0., 1., 0.]])
    >>> head.decode(head.predict(torch.tensor([[0.1, 0.0, 3.0]])))
    ['car']
    """

    prototypes: torch.Tensor

    #: The keys of the extra state a checkpoint holds.
    EXTRA_STATE = ("labels", "temperature")

    def __init__(
        self,
        prototypes: Any,
        labels: Sequence[str] | None = None,
        temperature: float = DEFAULT_TEMPERATURE,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if labels is None:
            labels = getattr(prototypes, "labels", None)
        if hasattr(prototypes, "prototypes") and not isinstance(prototypes, torch.Tensor):
            prototypes = prototypes.prototypes
        rows = _as_unit_rows(prototypes)
        if not temperature > 0:
            raise SpherecodesError(f"temperature must be positive, got {temperature!r}")
        dtype = torch.get_default_dtype() if dtype is None else dtype
        self.register_buffer("prototypes", torch.as_tensor(rows, dtype=dtype))
        distinct_rows(self.prototypes, f"rounded to {dtype}, the prototypes clash",
                      "keep a wider dtype, such as torch.float32", source=rows)
        self.labels = check_labels(labels, rows.shape[0])
        self.temperature = float(temperature)

    @classmethod
    def from_bank(cls, path, code: str | None = None, **kwargs) -> "PrototypeClassifier":
        """Build the head from a code stored in a bank file.

        Parameters
        ----------
        path : str or path-like
            The HDF5 bank.
        code : str, optional
            Name of the code; may be left out when the bank holds only one.
        **kwargs
            Passed on to the constructor (``temperature``, ``dtype``, ``labels``).

        Examples
        --------
        >>> import os, tempfile
        >>> from spherecodes import generate
        >>> from spherecodes.bank import write_code
        >>> path = os.path.join(tempfile.mkdtemp(), "bank.h5")
        >>> write_code(path, generate(d=11, k=12))
        >>> PrototypeClassifier.from_bank(path).prototypes.shape
        torch.Size([12, 11])
        """
        return cls(read_code(path, code), **kwargs)

    @property
    def num_classes(self) -> int:
        """Number of prototypes K."""
        return self.prototypes.shape[0]

    @property
    def dim(self) -> int:
        """Dimension d of the output space."""
        return self.prototypes.shape[1]

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """Cosine logits: ``out[i, c] = cos(z_i, p_c)``, shape (batch, K)."""
        check_features(z, dim=self.dim)
        return F.normalize(z, dim=-1) @ self.prototypes.to(z.dtype).T

    @torch.no_grad()
    def predict(self, z: torch.Tensor) -> torch.Tensor:
        """Class indices ``argmax_c cos(z, p_c)`` (Mettes et al. 2019, Eq. 3), shape (batch,)."""
        return self(z).argmax(dim=-1)

    def decode(self, indices: torch.Tensor | Sequence[int]) -> list[str]:
        """Class labels for class indices.

        Raises
        ------
        SpherecodesError
            When the head has no labels.
        """
        if self.labels is None:
            raise SpherecodesError("this head has no class labels; pass labels= or build it from a labelled code")
        return [self.labels[int(i)] for i in torch.as_tensor(indices).reshape(-1).tolist()]

    @torch.no_grad()
    def reassign(self, class_means: torch.Tensor) -> torch.Tensor:
        """Give each class the prototype nearest its class-mean feature, in place.

        Solves the linear assignment of :func:`match_prototypes` and permutes
        the rows of the buffer, so that class k now owns the prototype in row
        ``perm[k]`` of the old buffer.  Labels stay with their classes.

        Parameters
        ----------
        class_means : Tensor, shape (K, d)
            Mean feature of each class, e.g. from
            :func:`spherecodes.nn.class_means`.

        Returns
        -------
        Tensor of int64, shape (K,)
            The permutation ``perm`` that was applied.

        Examples
        --------
        >>> import torch
        >>> head = PrototypeClassifier(torch.eye(3))
        >>> head.reassign(torch.tensor([[0.0, 0, 1], [1, 0, 0], [0, 1, 0]]))
        tensor([2, 0, 1])
        >>> head.prototypes[0]
        tensor([0., 0., 1.])
        """
        perm = match_prototypes(class_means, self.prototypes)
        self.prototypes.copy_(self.prototypes[perm.to(self.prototypes.device)])
        return perm

    def get_extra_state(self) -> dict:
        return {"labels": self.labels, "temperature": self.temperature}

    def set_extra_state(self, state: dict) -> None:
        state = check_extra_state(state, type(self).__name__, self.EXTRA_STATE, num_classes=self.num_classes)
        self.labels = state["labels"]
        self.temperature = state["temperature"]

    def check_state(self, state_dict, prefix: str, strict: bool = True) -> None:
        """Refuse a checkpoint that this head cannot load whole (see :class:`PrototypeClassifier`)."""
        owner = type(self).__name__
        if strict:
            require_keys(state_dict, prefix, ("prototypes", "_extra_state"), owner)
        if prefix + "prototypes" in state_dict:
            stored_rows(state_dict, prefix + "prototypes", tuple(self.prototypes.shape))
        if prefix + "_extra_state" in state_dict:
            check_extra_state(state_dict[prefix + "_extra_state"], owner, self.EXTRA_STATE,
                              num_classes=self.num_classes)

    def extra_repr(self) -> str:
        return f"num_classes={self.num_classes}, dim={self.dim}, temperature={self.temperature}"


def match_prototypes(class_means: torch.Tensor, prototypes: torch.Tensor) -> torch.Tensor:
    """Linear assignment of classes to prototypes from class-mean features (Saadabadi et al. 2024, supplementary).

    Maximises ``Σ_k cos(h̄_k, p_perm[k])`` over permutations with the
    Hungarian method (:func:`scipy.optimize.linear_sum_assignment`).  Cosines,
    not dot products, because a class mean's length says how tightly its
    features cluster, not where they point.  With more prototypes than classes
    each class gets a distinct prototype and the rest stay unused.

    Parameters
    ----------
    class_means : Tensor, shape (K, d)
    prototypes : Tensor, shape (M, d), M >= K

    Returns
    -------
    Tensor of int64, shape (K,)
        ``perm[k]`` is the prototype row assigned to class k; apply it as
        ``prototypes[perm]``.

    Examples
    --------
    >>> import torch
    >>> match_prototypes(torch.tensor([[0.0, 1.0], [2.0, 0.1]]), torch.eye(2))
    tensor([1, 0])
    """
    means = check_features(torch.as_tensor(class_means).detach().to("cpu", torch.float64), "class means")
    protos = check_features(torch.as_tensor(prototypes).detach().to("cpu", torch.float64), "prototypes")
    if means.ndim != 2 or protos.ndim != 2 or means.shape[1] != protos.shape[1]:
        raise SpherecodesError(
            f"class means {tuple(means.shape)} and prototypes {tuple(protos.shape)} must be (K, d) and (M, d)"
        )
    if means.shape[0] > protos.shape[0]:
        raise SpherecodesError(f"{means.shape[0]} classes cannot share {protos.shape[0]} prototypes")
    cosines = F.normalize(means, dim=1) @ F.normalize(protos, dim=1).T
    rows, cols = linear_sum_assignment(cosines.numpy(), maximize=True)
    return torch.as_tensor(cols[np.argsort(rows)], dtype=torch.int64)


class ClassMeanClassifier(PrototypeClassifier):
    """Class-mean-feature (CMF) classifier of Jiang et al. 2024, App. B.

    The class vectors are not learned by gradient: after each step,
    :meth:`update` moves them towards the mini-batch class means of the
    features put on the unit sphere (Jiang et al. 2024, Eq. 2),
    ``W ← β W + (1 − β) H̄_batch``, and re-normalises the rows; a class absent
    from the batch keeps its row.  ``forward`` is :class:`PrototypeClassifier`'s.

    Parameters
    ----------
    num_classes, dim : int
        K and d.
    beta : float
        EMA momentum β in [0, 1).
    init : Tensor or array_like, optional
        Starting rows (K, d); default seeded random unit vectors.
    seed : int
        Seed of the random start.
    labels, temperature, dtype
        As for :class:`PrototypeClassifier`.

    Examples
    --------
    >>> import torch
    >>> cmf = ClassMeanClassifier(num_classes=2, dim=2, init=torch.eye(2))
    >>> cmf.update(torch.tensor([[0.0, 1.0], [1.0, 0.0]]), torch.tensor([0, 1]))
    >>> cmf.prototypes[0]  # 0.9·(1, 0) + 0.1·(0, 1), re-normalised
    tensor([0.9939, 0.1104])
    """

    num_updates: torch.Tensor

    EXTRA_STATE = ("labels", "temperature", "beta")

    def __init__(
        self,
        num_classes: int,
        dim: int,
        beta: float = DEFAULT_BETA,
        init: Any = None,
        seed: int = 0,
        labels: Sequence[str] | None = None,
        temperature: float = DEFAULT_TEMPERATURE,
        dtype: torch.dtype | None = None,
    ) -> None:
        if not 0.0 <= beta < 1.0:
            raise SpherecodesError(f"beta must be in [0, 1), got {beta!r}")
        if init is None:
            init = np.random.default_rng(seed).standard_normal((num_classes, dim))
        super().__init__(init, labels=labels, temperature=temperature, dtype=dtype)
        if self.prototypes.shape != (num_classes, dim):
            raise SpherecodesError(
                f"init has shape {tuple(self.prototypes.shape)}, expected ({num_classes}, {dim})"
            )
        self.beta = float(beta)
        self.register_buffer("num_updates", torch.zeros((), dtype=torch.int64))

    @torch.no_grad()
    def update(self, features: torch.Tensor, labels: torch.Tensor) -> None:
        """One EMA step towards the class means of a mini-batch.

        Parameters
        ----------
        features : Tensor, shape (batch, d)
            Backbone outputs; gradients are not tracked through the update.
        labels : Tensor of int, shape (batch,)
        """
        w = self.prototypes
        h = F.normalize(check_features(features, dim=self.dim).detach().to(w.dtype), dim=-1)
        labels = check_targets(labels, len(h), self.num_classes).to(w.device)
        sums = torch.zeros_like(w).index_add_(0, labels, h)
        counts = torch.bincount(labels, minlength=self.num_classes)
        present = counts > 0
        batch_means = sums[present] / counts[present, None].to(w.dtype)
        w[present] = F.normalize(self.beta * w[present] + (1.0 - self.beta) * batch_means, dim=-1)
        self.num_updates += 1

    def to_code(self, name: str | None = None, labels: Sequence[str] | None = None):
        """Export the current class vectors as a bank code (float64 rows and their statistics).

        Write it with :func:`spherecodes.bank.write_code`; certify its ρ with
        :func:`spherecodes.certificate.one_vs_rest_distances` (or :func:`spherecodes.nn.gnc2`).

        Examples
        --------
        >>> cmf = ClassMeanClassifier(num_classes=4, dim=3)
        >>> code = cmf.to_code(name="cmf-run")
        >>> code.method, code.settings, code.prototypes.shape
        ('class-mean-ema', {'beta': 0.9, 'num_updates': 0}, (4, 3))
        """
        return make_code(
            # Rows are unit in the buffer's precision; a bank wants them unit in float64.
            _as_unit_rows(self.prototypes),
            method="class-mean-ema",
            name=name,
            labels=list(labels) if labels is not None else self.labels,
            settings={"beta": self.beta, "num_updates": int(self.num_updates)},
            device=str(self.prototypes.device),
        )

    def get_extra_state(self) -> dict:
        return {**super().get_extra_state(), "beta": self.beta}

    def set_extra_state(self, state: dict) -> None:
        super().set_extra_state(state)
        self.beta = state["beta"]

    def check_state(self, state_dict, prefix: str, strict: bool = True) -> None:
        super().check_state(state_dict, prefix, strict)
        if strict:
            require_keys(state_dict, prefix, ("num_updates",), type(self).__name__)
        if prefix + "num_updates" in state_dict:
            updates = stored_tensor(state_dict, prefix + "num_updates", (), floating=False)
            if updates.is_floating_point() or int(updates) < 0:
                raise SpherecodesError(f"checkpoint entry {prefix}num_updates must be a count >= 0")

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, beta={self.beta}"


class PrototypeRegressor(CheckedLoad, nn.Module):
    """Hyperspherical regression with two antipodal prototypes (Mettes et al. 2019, Eq. 7).

    A target y in [v_l, v_u] is encoded as ``r = 2 (y − v_l)/(v_u − v_l) − 1`` in [−1, 1]; the output z is
    trained so that ``cos(z, p_u) = r`` (``p_l = −p_u``), and :meth:`predict` decodes the cosine back.

    Parameters
    ----------
    lower, upper : float
        The bounds v_l < v_u (typically the training targets' min and max).
    upper_prototype : Tensor or array_like, shape (d,), optional
        Direction of p_u; rescaled to unit length.  Default: the first axis of
        R^dim.
    dim : int, optional
        Output dimension when ``upper_prototype`` is not given.

    Examples
    --------
    >>> import torch
    >>> reg = PrototypeRegressor(lower=1900.0, upper=2000.0, dim=3)
    >>> reg.encode(torch.tensor([1900.0, 1950.0, 2000.0]))
    tensor([-1.,  0.,  1.])
    >>> reg.predict(torch.tensor([[0.0, 1.0, 0.0]]))  # orthogonal to p_u: the middle
    tensor([1950.])
    """

    upper_prototype: torch.Tensor

    def __init__(
        self,
        lower: float,
        upper: float,
        upper_prototype: Any = None,
        dim: int | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if not (np.isfinite(lower) and np.isfinite(upper) and lower < upper):
            raise SpherecodesError(f"need finite bounds lower < upper, got {lower!r} and {upper!r}")
        if upper_prototype is None:
            if dim is None or dim < 1:
                raise SpherecodesError("give upper_prototype or a positive dim")
            upper_prototype = np.eye(1, dim)[0]
        pole = np.asarray(
            upper_prototype.detach().cpu() if isinstance(upper_prototype, torch.Tensor) else upper_prototype,
            dtype=np.float64,
        )
        if pole.ndim != 1 or not np.all(np.isfinite(pole)) or not np.linalg.norm(pole) > 0:
            raise SpherecodesError("upper_prototype must be a finite non-zero vector of shape (d,)")
        dtype = torch.get_default_dtype() if dtype is None else dtype
        self.register_buffer("upper_prototype", torch.as_tensor(pole / np.linalg.norm(pole), dtype=dtype))
        self.lower = float(lower)
        self.upper = float(upper)

    def encode(self, y: torch.Tensor) -> torch.Tensor:
        """Target value → cosine target r in [−1, 1] (Mettes et al. 2019, Eq. 7)."""
        return 2.0 * (y - self.lower) / (self.upper - self.lower) - 1.0

    def decode(self, cosine: torch.Tensor) -> torch.Tensor:
        """Cosine with p_u → value in [v_l, v_u]; the inverse of :meth:`encode`."""
        return self.lower + (cosine + 1.0) / 2.0 * (self.upper - self.lower)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """``cos(z, p_u)`` for each row of z, shape (batch,)."""
        check_features(z, dim=self.upper_prototype.shape[0])
        return F.normalize(z, dim=-1) @ self.upper_prototype.to(z.dtype)

    def loss(self, z: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
        """Mettes et al. (2019) Eq. 7: ``(r − cos(z, p_u))²`` per sample, reduced."""
        return hyperspherical_regression_loss(
            z, y, self.upper_prototype, self.lower, self.upper, reduction=reduction
        )

    @torch.no_grad()
    def predict(self, z: torch.Tensor) -> torch.Tensor:
        """Decoded prediction ``v_l + (cos(z, p_u) + 1)/2 · (v_u − v_l)``."""
        return self.decode(self(z))

    def get_extra_state(self) -> dict:
        return {"lower": self.lower, "upper": self.upper}

    def set_extra_state(self, state: dict) -> None:
        state = check_extra_state(state, type(self).__name__, ("lower", "upper"))
        self.lower = state["lower"]
        self.upper = state["upper"]

    def check_state(self, state_dict, prefix: str, strict: bool = True) -> None:
        """Refuse a checkpoint that this head cannot load whole: missing keys, a bad pole, bounds out of order."""
        owner = type(self).__name__
        if strict:
            require_keys(state_dict, prefix, ("upper_prototype", "_extra_state"), owner)
        if prefix + "upper_prototype" in state_dict:
            stored_rows(state_dict, prefix + "upper_prototype", tuple(self.upper_prototype.shape))
        if prefix + "_extra_state" in state_dict:
            check_extra_state(state_dict[prefix + "_extra_state"], owner, ("lower", "upper"))

    def extra_repr(self) -> str:
        return f"dim={self.upper_prototype.shape[0]}, lower={self.lower}, upper={self.upper}"


def joint_layout(class_prototypes: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Joint regression + classification output space (Mettes et al. 2019, §2.3).

    Regression gets the first axis of R^(d+1) (p_u = e_0, p_l = −e_0); the K
    class prototypes of R^d are placed on the orthogonal complement, so their
    separation is unchanged.  Train with the sum of the HPN loss and the
    regression loss on the same output; no task weight is needed.

    Parameters
    ----------
    class_prototypes : Tensor, array_like or object with ``.prototypes``
        A (K, d) code for the classes.

    Returns
    -------
    classes : Tensor, float64, shape (K, d + 1)
        The class prototypes, with 0 in the regression coordinate.
    upper_prototype : Tensor, float64, shape (d + 1,)
        ``e_0``.

    Examples
    --------
    >>> import torch
    >>> classes, pole = joint_layout(torch.tensor([[1.0, 0], [-1, 0]]))
    >>> classes
    tensor([[ 0.,  1.,  0.],
            [ 0., -1.,  0.]], dtype=torch.float64)
    >>> head = PrototypeClassifier(classes)
    >>> reg = PrototypeRegressor(lower=0.0, upper=1.0, upper_prototype=pole)
    """
    if hasattr(class_prototypes, "prototypes") and not isinstance(class_prototypes, torch.Tensor):
        class_prototypes = class_prototypes.prototypes
    rows = torch.as_tensor(_as_unit_rows(class_prototypes))
    classes = F.pad(rows, (1, 0))
    pole = torch.zeros(classes.shape[1], dtype=torch.float64)
    pole[0] = 1.0
    return classes, pole
