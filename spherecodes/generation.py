"""Make a code for (d, K) by name: the library function behind ``spherecodes generate``."""

from __future__ import annotations

import time

from .bank import Code, default_code_name, make_code
from .bounds import check_sizes
from .constructions import CLOSED_FORMS, ROTATIONS, applicable_closed_forms, construct
from .errors import SpherecodesError

#: Optimisers, for any (d, K).  ``auto`` uses ``tammes`` where no closed form
#: applies; ``privileged`` also needs word embeddings of the class names.
OPTIMISERS = ("tammes", "softmax", "maxsep", "privileged")

#: The solver function of each optimiser, by its name in :mod:`spherecodes.solvers`.
_SOLVERS = {"tammes": "tammes", "softmax": "softmax_code", "maxsep": "maxsep"}

#: Every method ``generate`` accepts besides ``auto``.
METHODS = CLOSED_FORMS + OPTIMISERS


def resolve_method(d: int, k: int, method: str = "auto") -> str:
    """The method that ``generate`` will run for (d, K).

    ``auto`` takes the first closed form that applies (simplex ETF, then the
    cross-polytope, the polygon, and the exceptional 24-cell, 600-cell and E8),
    and the ``tammes`` optimiser everywhere else.  ``softmax`` maximises ρ
    instead of minimising max-cos; ``privileged`` also follows word embeddings.

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


def code_from_result(
    result, *, name: str, labels=None, seed: int | None = None, max_memory: float | None = None
) -> Code:
    """Package a :class:`spherecodes.solvers.SolverResult` as a :class:`Code`.

    The solver's settings are kept, with what the run actually did (steps,
    starts, the start returned, why it stopped) added, so the bank says how
    the code was made.  The statistics are computed on the device the solver
    ran on (a GPU makes them fast for large K), within ``max_memory`` bytes.
    """
    settings = {
        **result.settings,
        "steps_taken": int(result.steps),
        "restarts_run": int(result.restarts),
        "best_restart": int(result.best_restart),
        "stop_reason": result.stop_reason,
    }
    if result.stop_detail:
        settings["stop_detail"] = result.stop_detail
    if result.stages:
        settings["stages"] = result.stages
    if result.refreshes:
        settings["refreshes_run"] = int(result.refreshes)
    return make_code(
        result.prototypes, method=result.method, name=name, labels=labels, settings=settings,
        seed=seed, device=result.device, wall_time=result.wall_time, stats_device=result.device,
        max_memory=max_memory,
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
    embeddings=None,
    semantic_weight: float | None = None,
    triplets: str = "auto",
    max_memory: float | None = None,
    neighbours: int | None = None,
    refresh: int | None = None,
    effort: str = "default",
    init=None,
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
        Class names, one per prototype (``privileged``: the embeddings' names).
    device : {"auto", "cpu", "cuda", "cuda:N"}
        Where an optimiser runs; ``auto`` takes CUDA when present.
    steps, restarts, time_limit : optional
        Optimiser budget (see :func:`spherecodes.solvers.tammes`); ``None``
        keeps the solver's defaults for (d, K).
    progress : callable, optional
        Receives :class:`spherecodes.solvers.Progress` updates from an optimiser.
    embeddings : spherecodes.semantic.ClassEmbeddings, optional
        ``privileged`` only (and required there): one vector per class, see
        :func:`spherecodes.semantic.class_embeddings`.
    semantic_weight : float, optional
        ``privileged`` only: weight of the ranking loss (default
        :data:`spherecodes.semantic.DEFAULT_SEMANTIC_WEIGHT`).
    triplets : {"auto", "all", "sampled", "neighbours"}
        ``privileged`` only: the triplets of the ranking loss.
    max_memory : float, optional
        Bytes that the statistics, and the ``tammes`` optimiser, may use on
        the device (default: a safe fraction of what is available).
    neighbours, refresh : int, optional
        ``tammes`` only: neighbour lists of this many prototypes (0: all
        pairs, the dense path), refreshed every ``refresh`` steps; default
        chosen from (d, K) and the memory (see
        :func:`spherecodes.solvers.tammes_defaults`).
    effort : {"low", "default", "high"}
        ``tammes`` only: how much work to spend (see
        :func:`spherecodes.solvers.tammes`).
    init : array_like, optional
        An optimiser's start code, (K, d) (``tammes``, ``softmax``,
        ``maxsep``); the result records ``init`` in its settings.

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
    if init is not None and method not in _SOLVERS:
        raise SpherecodesError(f"init (a start code) applies to the optimisers {', '.join(_SOLVERS)}, "
                               f"not {method!r}")
    if method == "privileged":
        return _privileged(d, k, embeddings, name=name, labels=labels, seed=seed, device=device, steps=steps,
                           restarts=restarts, time_limit=time_limit, progress=progress,
                           semantic_weight=semantic_weight, triplets=triplets)
    if embeddings is not None or semantic_weight is not None or triplets != "auto":
        raise SpherecodesError(
            f"embeddings, semantic_weight and triplets apply to the privileged method, not {method!r}"
        )
    if method != "tammes" and (neighbours is not None or refresh is not None or effort != "default"):
        raise SpherecodesError(f"neighbours, refresh and effort apply to the tammes method, not {method!r}")
    large = {"max_memory": max_memory, "neighbours": neighbours, "refresh": refresh,
             "effort": effort} if method == "tammes" else {}
    if method in OPTIMISERS:
        from . import solvers  # torch is imported only when an optimiser runs

        solve = getattr(solvers, _SOLVERS[method])
        result = solve(
            d, k, seed=seed, steps=steps, restarts=restarts, time_limit=time_limit,
            device=device, progress=progress, init=init, **large,
        )
        return code_from_result(result, name=name, labels=labels, seed=used_seed, max_memory=max_memory)
    start = time.perf_counter()
    prototypes = construct(method, d, k, rotation=rotation, seed=seed)
    return make_code(
        prototypes, method=method, name=name, labels=labels, settings={"rotation": rotation},
        seed=used_seed, device="cpu", wall_time=time.perf_counter() - start, max_memory=max_memory,
    )


def _privileged(d, k, embeddings, *, name, labels, seed, device, steps, restarts, time_limit, progress,
                semantic_weight, triplets) -> Code:
    """The ``privileged`` branch of :func:`generate`: checks, then :func:`spherecodes.semantic.privileged`."""
    from .semantic import DEFAULT_SEMANTIC_WEIGHT, ClassEmbeddings, privileged

    if not isinstance(embeddings, ClassEmbeddings):
        raise SpherecodesError("the privileged method needs embeddings: the class names' word vectors "
                               "(spherecodes.semantic.class_embeddings)")
    if restarts is not None:
        raise SpherecodesError("the privileged method runs a single start; leave restarts unset")
    if labels is not None and list(labels) != list(embeddings.names):
        raise SpherecodesError("the labels of a privileged code are the embeddings' class names; leave labels unset")
    result = privileged(
        d, k, embeddings, seed=seed, steps=steps, device=device, time_limit=time_limit, progress=progress,
        semantic_weight=DEFAULT_SEMANTIC_WEIGHT if semantic_weight is None else semantic_weight,
        triplets=triplets,
    )
    return code_from_result(result, name=name, labels=embeddings.names, seed=seed)
