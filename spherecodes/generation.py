"""Make a code for (d, K) by name: the library function behind ``spherecodes generate``."""

from __future__ import annotations

import time

from .bank import Code, default_code_name, make_code
from .bounds import check_sizes
from .constructions import CLOSED_FORMS, ROTATIONS, applicable_closed_forms, construct
from .errors import SpherecodesError

#: Optimisers, for any (d, K).  ``auto`` uses ``tammes`` where no closed form applies.
OPTIMISERS = ("tammes", "maxsep")

#: Every method ``generate`` accepts besides ``auto``.
METHODS = CLOSED_FORMS + OPTIMISERS


def resolve_method(d: int, k: int, method: str = "auto") -> str:
    """The method that ``generate`` will run for (d, K).

    ``auto`` takes the first closed form that applies (simplex ETF, then the
    cross-polytope, the polygon, and the exceptional 24-cell, 600-cell and E8),
    and the ``tammes`` optimiser everywhere else.

    Examples
    --------
    >>> resolve_method(11, 12), resolve_method(3, 5), resolve_method(8, 240)
    ('etf', 'cross-polytope', 'e8')
    >>> resolve_method(64, 1000)
    'tammes'
    """
    check_sizes(d, k)
    if method == "auto":
        applicable = applicable_closed_forms(d, k)
        return applicable[0] if applicable else "tammes"
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


def code_from_result(result, *, name: str, labels=None, seed: int | None = None) -> Code:
    """Package a :class:`spherecodes.solvers.SolverResult` as a :class:`Code`.

    The solver's settings are kept, with what the run actually did (steps,
    starts, the start returned, why it stopped) added, so the bank says how
    the code was made.
    """
    settings = {
        **result.settings,
        "steps_taken": int(result.steps),
        "restarts_run": int(result.restarts),
        "best_restart": int(result.best_restart),
        "stop_reason": result.stop_reason,
    }
    return make_code(
        result.prototypes, method=result.method, name=name, labels=labels, settings=settings,
        seed=seed, device=result.device, wall_time=result.wall_time,
    )


def generate(
    d: int,
    k: int,
    method: str = "auto",
    *,
    seed: int = 0,
    rotation: str = "canonical",
    name: str | None = None,
    labels=None,
    device: str = "auto",
    steps: int | None = None,
    restarts: int | None = None,
    time_limit: float | None = None,
    progress=None,
) -> Code:
    """Compute a K-prototype code in R^d and its float64 statistics.

    Parameters
    ----------
    d, k : int
        Dimension (>= 1) and number of prototypes (>= 2).
    method : str
        ``"auto"`` or one of :data:`METHODS`.
    seed : int
        Seed of the optimiser's random starts, or of a closed form's random rotation.
    rotation : {"canonical", "random"}
        Orientation of a closed-form code (optimised codes have no canonical one).
    name : str, optional
        Code name; defaults to :func:`planned_code_name`.
    labels : sequence of str, optional
        Class names, one per prototype.
    device : {"auto", "cpu", "cuda", "cuda:N"}
        Where an optimiser runs; ``auto`` takes CUDA when present.
    steps, restarts, time_limit : optional
        Optimiser budget (see :func:`spherecodes.solvers.tammes`); ``None``
        keeps the solver's defaults for (d, K).
    progress : callable, optional
        Receives :class:`spherecodes.solvers.Progress` updates from an optimiser.

    Returns
    -------
    Code
        Ready for :func:`spherecodes.bank.write_code`; the optimiser's
        diagnostics are in ``code.settings``.

    Examples
    --------
    >>> code = generate(d=11, k=12)
    >>> code.method, code.name, round(code.stats.max_cos, 12)
    ('etf', 'etf-d11-k12', -0.090909090909)
    """
    method = resolve_method(d, k, method)
    if rotation not in ROTATIONS:
        raise SpherecodesError(f"rotation must be one of {', '.join(ROTATIONS)}, got {rotation!r}")
    used_seed = seed if uses_seed(method, rotation) else None
    name = name or default_code_name(method, d, k, used_seed)
    if method in OPTIMISERS:
        from . import solvers  # torch is imported only when an optimiser runs

        solve = getattr(solvers, method)
        result = solve(
            d, k, seed=seed, steps=steps, restarts=restarts, time_limit=time_limit,
            device=device, progress=progress,
        )
        return code_from_result(result, name=name, labels=labels, seed=used_seed)
    start = time.perf_counter()
    prototypes = construct(method, d, k, rotation=rotation, seed=seed)
    return make_code(
        prototypes, method=method, name=name, labels=labels, settings={"rotation": rotation},
        seed=used_seed, device="cpu", wall_time=time.perf_counter() - start,
    )
