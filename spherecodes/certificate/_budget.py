"""What a certificate may spend: its tolerance, the memory of its NumPy passes and the threads of its QP."""

from __future__ import annotations

from ..devices import torch_threads
from ..memory import memory_limit
from ._blocks import host_memory
from ._gram import gram_applies, gram_block_bytes, gram_bytes
from ._shell import shell_block_bytes

__all__ = [
    "DEFAULT_TOL", "SHELL_BLOCK_BYTES", "SHELL_SUPPORT_BYTES", "as_array", "gram_fits", "linalg_threads",
    "max_support", "orbit_bytes", "shell_block_budget",
]

#: Default bound on every class's interval width ``hi_k − lo_k``.
DEFAULT_TOL = 1e-9

#: Working memory of one block of the nearest-shell pass (NumPy, float64).
SHELL_BLOCK_BYTES = 64 * 2**20

#: Bytes that the witnesses of the nearest-shell pass may take in all (a
#: uniform witness of the simplex ETF has K − 1 points per class).
SHELL_SUPPORT_BYTES = 512 * 2**20


def linalg_threads(dev):
    """One torch thread on the CPU for the batched small-matrix LAPACK calls.

    Batched Cholesky of many ~100×100 matrices gains nothing from threads
    inside each factorisation, and on a busy machine the spinning threads wait
    for cores at every call (docs/certificate.md, "2.1 The QP"); the products
    with all K prototypes run with the process's thread count instead.
    """
    return torch_threads(1 if dev.type == "cpu" else None)


def as_array(prototypes):
    """A torch tensor as a NumPy array (without importing torch for anything else)."""
    if hasattr(prototypes, "detach") and hasattr(prototypes, "cpu"):
        return prototypes.detach().cpu().numpy()
    return prototypes


def max_support(k: int, limit: float | None) -> int:
    """Widest witness the nearest-shell pass may store, from :data:`SHELL_SUPPORT_BYTES` and the limit."""
    budget = SHELL_SUPPORT_BYTES if limit is None else min(SHELL_SUPPORT_BYTES, 0.25 * limit)
    return int(max(2, budget // (16.0 * k)))


def orbit_bytes(k: int, d: int, max_memory: float | None) -> float:
    """Working memory of an orbit's certificate: class 0's scan in blocks, its witness, and the per-class bounds."""
    return shell_block_bytes(k, d, shell_block_budget(max_memory)) + 8.0 * 4 * k + 16.0 * min(k, 4 * (d + 1))


def gram_fits(k: int, d: int, max_memory: float | None) -> bool:
    """Whether the Gram pass applies to a (K, d) code, its Gram matrix and witnesses (up to K × K) fitting too."""
    if not gram_applies(k, d):
        return False
    working = gram_bytes(k) + gram_block_bytes(k, shell_block_budget(max_memory)) + 16.0 * k * k
    return host_memory(k, d) + working <= 0.5 * memory_limit("cpu", max_memory)


def shell_block_budget(max_memory: float | None) -> float:
    """Bytes one block of the nearest-shell pass may take: :data:`SHELL_BLOCK_BYTES`, at most a quarter of the limit."""
    return SHELL_BLOCK_BYTES if max_memory is None else max(1.0, min(SHELL_BLOCK_BYTES, 0.25 * max_memory))
