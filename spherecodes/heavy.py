"""The heavy dependencies, imported here on first use: torch, SciPy's optimisers, matplotlib, gensim, Dask.

Importing one of them can take longer than the work of the commands that
read, fetch or report a code.  So every module that may run without them
asks this module for them inside the function that needs them (``torch =
heavy.torch()``), and a command that does not reach such a function never
loads them (docs/performance.md, "What keeps them short";
``tests/test_startup.py`` checks it).

Only the modules built on one of them — listed in :data:`BUILT_ON` — import
it at their top: they are themselves loaded on first use (the solvers by
:mod:`spherecodes.generation`'s runners, :mod:`spherecodes.nn` by its user).
A package that is missing gives one line that says what needs it and how
to install it (Dask is an optional extra: ``pip install "spherecodes[dask]"``).
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from .errors import SpherecodesError

__all__ = ["BUILT_ON", "HEAVY", "distributed", "gensim", "load", "matplotlib", "scipy_optimize", "torch"]

#: Each heavy package: what needs it, and how to install it.
HEAVY = {
    "torch": ("the optimisers, CUDA devices, torch files and spherecodes.nn", "pip install torch"),
    "scipy.optimize": ("the LP bound, the certificate's nearest shells and the assignments", "pip install scipy"),
    "matplotlib": ("plots", "pip install matplotlib"),
    "gensim": ("embeddings saved by gensim", "pip install gensim"),
    "distributed": ("Dask clusters (certify --scheduler/--workers, catalog build)", 'pip install "spherecodes[dask]"'),
    "dask": ("Dask clusters (certify --scheduler/--workers, catalog build)", 'pip install "spherecodes[dask]"'),
}

#: The modules that import a heavy package at their top, because all they do needs it. Every other module
#: reaches these packages through this module, inside the functions that use them.
BUILT_ON = {
    "torch": ("spherecodes.solvers", "spherecodes.nn", "spherecodes.certificate._qp"),
    "scipy.optimize": ("spherecodes.solvers._polish", "spherecodes.nn.heads", "spherecodes.semantic.assignment"),
}


def load(name: str) -> ModuleType:
    """The module ``name`` of a heavy package (:data:`HEAVY`), imported now if it was not yet.

    Raises
    ------
    SpherecodesError
        The package is not installed (or cannot be loaded): one line naming
        what needs it and how to install it.

    Examples
    --------
    >>> load("scipy.optimize").__name__
    'scipy.optimize'
    >>> load("numpy")
    Traceback (most recent call last):
    ...
    ValueError: numpy is not one of the heavy packages: torch, scipy.optimize, matplotlib, gensim, distributed, dask
    """
    package = next((p for p in HEAVY if name == p or name.startswith(p + ".")), None)
    if package is None:
        raise ValueError(f"{name} is not one of the heavy packages: {', '.join(HEAVY)}")
    try:
        return import_module(name)
    except ImportError as err:
        what, install = HEAVY[package]
        raise SpherecodesError(f"{what} need {package.split('.')[0]}, which cannot be loaded here ({err}); "
                               f"install it: {install}") from None


def torch() -> ModuleType:
    """torch (:func:`load`)."""
    return load("torch")


def scipy_optimize() -> ModuleType:
    """``scipy.optimize`` (:func:`load`)."""
    return load("scipy.optimize")


def matplotlib(module: str) -> ModuleType:
    """``matplotlib.<module>``, e.g. ``matplotlib("figure")`` (:func:`load`)."""
    return load(f"matplotlib.{module}")


def gensim(module: str) -> ModuleType:
    """``gensim.<module>``, e.g. ``gensim("utils")`` (:func:`load`)."""
    return load(f"gensim.{module}")


def distributed() -> ModuleType:
    """Dask ``distributed`` (:func:`load`), an optional extra: ``pip install "spherecodes[dask]"``."""
    return load("distributed")
