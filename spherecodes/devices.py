"""Where torch work runs: the device names every command and solver accepts."""

from __future__ import annotations

import torch

from .errors import SpherecodesError

__all__ = ["resolve_device", "timed_call"]


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """The torch device a solver runs on.

    Parameters
    ----------
    device : str or torch.device
        ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.

    Returns
    -------
    torch.device

    Raises
    ------
    SpherecodesError
        For any other string, or a CUDA device that this machine does not have.

    Examples
    --------
    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("auto").type in ("cpu", "cuda")
    True
    """
    text = str(device).strip().lower()
    if text == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if text == "cpu":
        return torch.device("cpu")
    if text == "cuda" or text.startswith("cuda:"):
        index = text[5:]
        if index and not index.isdigit():
            raise SpherecodesError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
        if not torch.cuda.is_available():
            raise SpherecodesError(f"device {device!r} was requested but no CUDA GPU is available; use 'cpu' or 'auto'")
        count = torch.cuda.device_count()
        if index and int(index) >= count:
            raise SpherecodesError(f"device {device!r} does not exist; this machine has cuda:0 to cuda:{count - 1}")
        return torch.device(text if index else "cuda:0")
    raise SpherecodesError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")


def timed_call(fn, device: torch.device) -> float:
    """Seconds that one call of ``fn()`` takes on ``device``, after one warm-up call.

    CUDA work is asynchronous, so the device is synchronised before the clock
    is read; the warm-up takes allocation and kernel selection out of the figure.

    Examples
    --------
    >>> import torch
    >>> timed_call(lambda: torch.ones(10).sum(), torch.device("cpu")) >= 0
    True
    """
    import time

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    fn()
    sync()
    start = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - start
