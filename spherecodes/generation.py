"""Make a code for (d, K) by name: the library function behind ``spherecodes generate``."""

from __future__ import annotations

import time

from .bank import Code, default_code_name, make_code
from .bounds import check_sizes
from .constructions import CLOSED_FORMS, ROTATIONS, applicable_closed_forms, construct
from .errors import SpherecodesError

#: Every method ``generate`` accepts besides ``auto``.
METHODS = CLOSED_FORMS


def resolve_method(d: int, k: int, method: str = "auto") -> str:
    """The method that ``generate`` will run for (d, K).

    ``auto`` takes the first closed form that applies (simplex ETF, then the
    cross-polytope, the polygon, and the exceptional 24-cell, 600-cell and E8).

    Examples
    --------
    >>> resolve_method(11, 12), resolve_method(3, 5), resolve_method(8, 240)
    ('etf', 'cross-polytope', 'e8')
    """
    check_sizes(d, k)
    if method == "auto":
        applicable = applicable_closed_forms(d, k)
        if applicable:
            return applicable[0]
        raise SpherecodesError(
            f"no closed form gives {k} prototypes in d={d} (closed forms cover K <= 2d, d = 2, "
            "and (4, 24), (4, 120), (8, 240)); these sizes need an optimiser"
        )
    if method not in METHODS:
        raise SpherecodesError(f"unknown method {method!r}; choose auto or one of {', '.join(METHODS)}")
    return method


def uses_seed(method: str, rotation: str) -> bool:
    """Whether the seed changes the code (so it belongs in the code's name)."""
    return rotation == "random" or method not in CLOSED_FORMS


def planned_code_name(d: int, k: int, method: str = "auto", *, seed: int = 0, rotation: str = "canonical") -> str:
    """The name :func:`generate` will give the code, known before any work is done.

    Examples
    --------
    >>> planned_code_name(11, 12), planned_code_name(11, 12, rotation="random", seed=4)
    ('etf-d11-k12', 'etf-d11-k12-s4')
    """
    method = resolve_method(d, k, method)
    return default_code_name(method, d, k, seed if uses_seed(method, rotation) else None)


def generate(
    d: int,
    k: int,
    method: str = "auto",
    *,
    seed: int = 0,
    rotation: str = "canonical",
    name: str | None = None,
    labels=None,
) -> Code:
    """Compute a K-prototype code in R^d and its float64 statistics.

    Parameters
    ----------
    d, k : int
        Dimension (>= 1) and number of prototypes (>= 2).
    method : str
        ``"auto"`` or one of :data:`METHODS`.
    seed : int
        Seed of the random rotation (and of any randomised method).
    rotation : {"canonical", "random"}
        Orientation of a closed-form code.
    name : str, optional
        Code name; defaults to :func:`planned_code_name`.
    labels : sequence of str, optional
        Class names, one per prototype.

    Returns
    -------
    Code
        Ready for :func:`spherecodes.bank.write_code`.

    Examples
    --------
    >>> code = generate(d=11, k=12)
    >>> code.method, code.name, round(code.stats.max_cos, 12)
    ('etf', 'etf-d11-k12', -0.090909090909)
    """
    method = resolve_method(d, k, method)
    if rotation not in ROTATIONS:
        raise SpherecodesError(f"rotation must be one of {', '.join(ROTATIONS)}, got {rotation!r}")
    start = time.perf_counter()
    prototypes = construct(method, d, k, rotation=rotation, seed=seed)
    wall_time = time.perf_counter() - start
    used_seed = seed if uses_seed(method, rotation) else None
    return make_code(
        prototypes,
        method=method,
        name=name or default_code_name(method, d, k, used_seed),
        labels=labels,
        settings={"rotation": rotation},
        seed=used_seed,
        device="cpu",
        wall_time=wall_time,
    )
