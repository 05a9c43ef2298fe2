"""Checks of what a training loop hands the adapter: features, class labels and checkpoints.

Each refuses bad input with one :class:`~spherecodes.errors.SpherecodesError`
line before anything is computed or copied: a NaN feature would otherwise
spread silently through a loss, and a damaged checkpoint would half-load.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..code import check_labels
from ..errors import SpherecodesError
from ..rows import equal_rows

__all__ = ["CheckedLoad", "check_extra_state", "check_features", "check_targets", "distinct_rows", "require_keys",
           "stored_rows", "stored_tensor"]


def check_features(z, what: str = "features", dim: int | None = None) -> torch.Tensor:
    """``z`` if it is a floating tensor of shape (..., d) (d = ``dim`` when given) with finite values.

    Examples
    --------
    >>> check_features(torch.tensor([[1.0, float("nan")]]))
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: features hold NaN or inf (1 of 2 values), e.g. from a diverged step; only finite values can be trained on
    """
    if not isinstance(z, torch.Tensor) or not z.is_floating_point():
        kind = z.dtype if isinstance(z, torch.Tensor) else type(z).__name__
        raise SpherecodesError(f"{what} must be a floating-point torch tensor, got {kind}")
    if z.ndim < 1 or (dim is not None and z.shape[-1] != dim):
        wanted = f"(..., {dim})" if dim is not None else "(..., d)"
        raise SpherecodesError(f"{what} have shape {tuple(z.shape)}; expected {wanted}")
    bad = ~torch.isfinite(z.detach())
    if bool(bad.any()):
        raise SpherecodesError(f"{what} hold NaN or inf ({int(bad.sum())} of {z.numel()} values), e.g. from a "
                               "diverged step; only finite values can be trained on")
    return z


def check_targets(target, n: int, num_classes: int | None, what: str = "labels") -> torch.Tensor:
    """``target`` as an integer tensor of shape (n,) with values in [0, num_classes) (>= 0 when None).

    Bool labels (a mask, not classes) and float labels (which cross-entropy
    would read as class probabilities) are refused.

    Examples
    --------
    >>> check_targets(torch.tensor([0, 2]), 2, 3)
    tensor([0, 2])
    >>> check_targets(torch.tensor([0.0, 1.0]), 2, 3)
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: labels must be integer class indices, got torch.float32 values
    """
    if not isinstance(target, torch.Tensor):
        try:
            target = torch.as_tensor(np.asarray(target))
        except (TypeError, ValueError, RuntimeError):
            raise SpherecodesError(f"{what} must be integer class indices, got {type(target).__name__}") from None
    if target.dtype == torch.bool or target.is_floating_point() or target.is_complex():
        raise SpherecodesError(f"{what} must be integer class indices, got {target.dtype} values")
    if target.shape != (n,):
        raise SpherecodesError(f"{what} have shape {tuple(target.shape)}; expected ({n},), one per sample")
    if n:
        low, high = int(target.min()), int(target.max())
        top = math.inf if num_classes is None else num_classes
        if low < 0 or high >= top:
            allowed = "non-negative" if num_classes is None else f"in 0..{num_classes - 1}"
            raise SpherecodesError(f"{what} must be class indices {allowed}, got {low}..{high}")
    return target.long()


def distinct_rows(rows: torch.Tensor, what: str, hint: str = "", source=None) -> None:
    """Refuse rows of which two are identical (in their own dtype): they would be one class twice.

    With ``source`` (the rows before a cast, float64), only rows that the
    cast made identical are refused.

    Examples
    --------
    >>> distinct_rows(torch.tensor([[1.0, 0.0], [1.0, 0.0]]), "prototypes in torch.float32")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: prototypes in torch.float32: rows 0 and 1 are identical, so two classes could never be told apart
    """
    groups, _ = equal_rows(rows.detach().to("cpu", torch.float64).numpy())
    if source is not None:
        groups = [g for g in groups if not all(np.array_equal(source[g[0]], source[i]) for i in g[1:])]
    if groups:
        first, second = groups[0][:2]
        more = f" ({len(groups)} groups of identical rows)" if len(groups) > 1 else ""
        raise SpherecodesError(f"{what}: rows {first} and {second} are identical{more}, so two classes could "
                               "never be told apart" + (f"; {hint}" if hint else ""))


def require_keys(state_dict, prefix: str, keys, owner: str) -> None:
    """Refuse a checkpoint that lacks any of ``keys`` (under ``prefix``)."""
    missing = [prefix + key for key in keys if prefix + key not in state_dict]
    if missing:
        raise SpherecodesError(f"the checkpoint for this {owner} lacks {', '.join(missing)}: it was saved from "
                               "another module, or is damaged")


def stored_tensor(state_dict, key: str, shape: tuple, *, floating: bool = True) -> torch.Tensor:
    """The checkpoint's tensor under ``key``, refused unless it has ``shape`` and (floating) finite values."""
    value = state_dict[key]
    if not isinstance(value, torch.Tensor):
        raise SpherecodesError(f"checkpoint entry {key} holds a {type(value).__name__}, not a tensor")
    if tuple(value.shape) != tuple(shape):
        raise SpherecodesError(f"checkpoint entry {key} has shape {tuple(value.shape)}; this module holds "
                               f"{tuple(shape)}")
    if floating:
        check_features(value, f"checkpoint entry {key}")
    return value


def stored_rows(state_dict, key: str, shape: tuple) -> torch.Tensor:
    """The checkpoint's prototypes under ``key``: of ``shape``, finite, unit up to their dtype's rounding, distinct."""
    rows = stored_tensor(state_dict, key, shape)
    slack = max(1e-12, 2.0 * math.sqrt(rows.shape[-1]) * torch.finfo(rows.dtype).eps)
    norms = rows.detach().to(torch.float64).norm(dim=-1)
    if bool(((norms - 1.0).abs() > slack).any()):
        raise SpherecodesError(f"checkpoint entry {key} holds rows of norm {float(norms.min()):.6g} to "
                               f"{float(norms.max()):.6g}; prototypes are unit vectors")
    if rows.ndim == 2:
        distinct_rows(rows, f"checkpoint entry {key}")
    return rows


def check_extra_state(state, owner: str, required=(), *, num_classes: int | None = None) -> dict:
    """A module's extra state, checked: a dict with the keys ``required``, and each known entry in range.

    Examples
    --------
    >>> check_extra_state({"labels": None, "temperature": -1.0}, "head", ("labels", "temperature"))
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: the checkpoint's temperature is -1.0; it must be positive
    """
    if not isinstance(state, dict):
        raise SpherecodesError(f"the checkpoint's extra state for this {owner} is a {type(state).__name__}, "
                               "not a dict")
    require_keys(state, "", required, f"{owner}'s extra state")
    if "labels" in state and num_classes is not None:
        state = {**state, "labels": check_labels(state["labels"], num_classes)}
    number = {key: state[key] for key in ("temperature", "beta", "momentum", "lower", "upper") if key in state}
    for key, value in number.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise SpherecodesError(f"the checkpoint's {key} for this {owner} is {value!r}; expected a finite number")
    if "temperature" in number and not number["temperature"] > 0:
        raise SpherecodesError(f"the checkpoint's temperature is {number['temperature']!r}; it must be positive")
    for key in ("beta", "momentum"):
        if key in number and not 0.0 <= number[key] < 1.0:
            raise SpherecodesError(f"the checkpoint's {key} is {number[key]!r}; it must be in [0, 1)")
    if "lower" in number and "upper" in number and not number["lower"] < number["upper"]:
        raise SpherecodesError(f"the checkpoint's bounds are {number['lower']!r} and {number['upper']!r}; "
                               "lower must be below upper")
    every = state.get("every", 1)
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise SpherecodesError(f"the checkpoint's every is {every!r}; it must be an integer >= 1")
    moves = state.get("moves", [])
    if not isinstance(moves, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in moves):
        raise SpherecodesError("the checkpoint's moves must be a list of integers")
    return state


class CheckedLoad:
    """Mixin for a module: ``load_state_dict`` checks its part of a checkpoint before anything is copied.

    The module defines ``check_state(state_dict, prefix, strict)``, which raises :class:`SpherecodesError`
    on a missing key (when ``strict``), a bad tensor or extra state out of range; torch then loads as usual.
    """

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        self.check_state(state_dict, prefix, strict)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
