import numpy as np
import pytest
import torch


def random_code(k: int, d: int, seed: int = 0) -> np.ndarray:
    """K independent uniform unit vectors in R^d (a generic, unstructured code)."""
    w = np.random.default_rng(seed).standard_normal((k, d))
    return w / np.linalg.norm(w, axis=1, keepdims=True)


def dense_offdiagonal_cos(w: np.ndarray) -> np.ndarray:
    """The full Gram matrix with the diagonal removed: the direct, untiled reference."""
    g = w @ w.T
    return g[~np.eye(len(w), dtype=bool)].reshape(len(w), len(w) - 1)


@pytest.fixture
def tmp_bank(tmp_path):
    return tmp_path / "bank.h5"


@pytest.fixture
def one_torch_thread():
    """Run each test with one torch thread, restoring the setting afterwards.

    On a busy 2-core machine torch's thread pool makes these small problems
    several times slower (see docs/optimisers.md, Threads).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
