"""What each method of :func:`spherecodes.generate` takes: one frozen dataclass per method.

Like ``scipy.optimize.minimize(method=..., options=...)``: the method names
the algorithm, its options object holds the settings only it takes, and an
option that does not apply to a method is one its options type lacks
(:func:`check_given`, the one place that says so, for the library and the
command line alike).  What every method shares is not here: the seed, the
rotation, the name and labels are arguments of the run, and the device,
the memory limit, the time limit and the progress callbacks are its
:class:`spherecodes.context.RunContext`.  The closed forms and the
structured codes take no options.

This module imports neither torch nor the solvers: choosing and checking
options costs nothing for a run whose code is exact.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .checks import check_int
from .errors import SpherecodesError

__all__ = [
    "AutoOptions", "LinesOptions", "MaxsepOptions", "PrivilegedOptions", "SoftmaxOptions", "TammesOptions",
    "check_given", "given_options",
]


#: The smallest value of each count an options type may hold (checked once, as the object is made).
COUNTS = {"steps": 1, "restarts": 1, "neighbours": 0, "refresh": 1, "workers": 1}


def _check_counts(options) -> None:
    """Check, once, the counts an options object holds (None: the method's default)."""
    for name, minimum in COUNTS.items():
        value = getattr(options, name, None)
        if value is not None:
            object.__setattr__(options, name, check_int(name, value, minimum))


@dataclass(frozen=True)
class _StartOptions:
    """The options every optimiser that runs from starts takes: steps, restarts, a start code."""

    steps: int | None = None
    restarts: int | None = None
    init: object = None

    __post_init__ = _check_counts


@dataclass(frozen=True)
class TammesOptions(_StartOptions):
    """``method="tammes"`` (:func:`spherecodes.solvers.tammes`; ``effort="record"``: :func:`spherecodes.solvers.record_search`).

    Attributes
    ----------
    steps, restarts : int, optional
        Steps per start and random starts (record search: chains); None: the defaults for (d, K).
    init : array_like, optional
        A (K, d) start code, refined and never returned worse.
    neighbours, refresh : int, optional
        Neighbour lists of M prototypes (0: all pairs) refreshed every ``refresh`` steps.
    effort : {"low", "default", "high", "record"}
    workers, scheduler : optional
        ``effort="record"`` only: the chains on a local Dask cluster of ``workers`` processes, or on the
        cluster of the scheduler at that address.
    adjacent : tuple of array_like
        ``effort="record"`` only: codes of K ± 1 or K ± 2 points that some chains start from
        (:func:`spherecodes.solvers.record_search`).

    Examples
    --------
    >>> TammesOptions(steps=50, restarts=2).steps
    50
    >>> TammesOptions(workers=2)
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: workers and scheduler spread the chains of a record search over Dask: ...
    """

    neighbours: int | None = None
    refresh: int | None = None
    effort: str = "default"
    workers: int | None = None
    scheduler: str | None = None
    adjacent: tuple = ()

    def __post_init__(self):
        _check_counts(self)
        if (self.workers is not None or self.scheduler is not None) and self.effort != "record":
            raise SpherecodesError("workers and scheduler spread the chains of a record search over Dask: they apply "
                                   f"to method 'tammes' with effort 'record', not to 'tammes' at effort {self.effort!r}")
        object.__setattr__(self, "adjacent", tuple(self.adjacent))
        if self.adjacent and self.effort != "record":
            raise SpherecodesError("adjacent codes start chains of a record search: they apply to method 'tammes' "
                                   f"with effort 'record', not to 'tammes' at effort {self.effort!r}")


@dataclass(frozen=True)
class SoftmaxOptions(_StartOptions):
    """``method="softmax"`` (:func:`spherecodes.solvers.softmax_code`): steps, restarts of its tammes start, a start code."""


@dataclass(frozen=True)
class MaxsepOptions(_StartOptions):
    """``method="maxsep"`` (:func:`spherecodes.solvers.maxsep`): steps, restarts, a start code."""


@dataclass(frozen=True)
class LinesOptions(_StartOptions):
    """``method="lines"`` (:mod:`spherecodes.lines`, :func:`spherecodes.solvers.line_packing`).

    Examples
    --------
    >>> LinesOptions(effort="record")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: effort 'record' runs the record search of method 'tammes', not 'lines'; ...
    """

    effort: str = "default"

    def __post_init__(self):
        _check_counts(self)
        if self.effort == "record":
            raise SpherecodesError("effort 'record' runs the record search of method 'tammes', not 'lines'; give "
                                   "method tammes (--method tammes)")


@dataclass(frozen=True)
class PrivilegedOptions:
    """``method="privileged"`` (:func:`spherecodes.semantic.privileged`): a single start that follows word embeddings.

    Attributes
    ----------
    embeddings : spherecodes.semantic.ClassEmbeddings
        The class names' word vectors (:func:`spherecodes.semantic.class_embeddings`); the code's labels.
    steps : int, optional
    semantic_weight, max_cos_tolerance : float, optional
        None: :data:`spherecodes.semantic.DEFAULT_SEMANTIC_WEIGHT`, :data:`~spherecodes.semantic.DEFAULT_MAX_COS_TOLERANCE`.
    triplets : str
        One of :data:`spherecodes.semantic.TRIPLET_STRATEGIES`.
    """

    embeddings: object = None
    steps: int | None = None
    semantic_weight: float | None = None
    max_cos_tolerance: float | None = None
    triplets: str = "auto"

    __post_init__ = _check_counts

    #: Said after an option of this method given to another one.
    elsewhere = "to place the classes of another code on its prototypes use 'spherecodes assign'"


@dataclass(frozen=True)
class AutoOptions:
    """``method="auto"`` (:mod:`spherecodes.best_of`): the settings of its tammes runs, and whether the bundled
    catalog's code is a candidate."""

    steps: int | None = None
    restarts: int | None = None
    neighbours: int | None = None
    refresh: int | None = None
    catalog: bool = True

    __post_init__ = _check_counts


def given_options(options) -> dict:
    """The fields of an options object that differ from their defaults (``None`` and the default: not given).

    Examples
    --------
    >>> given_options(TammesOptions(steps=10, effort="default"))
    {'steps': 10}
    >>> given_options(None)
    {}
    """
    if options is None:
        return {}
    return {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
            if not _default(getattr(options, f.name), f.default)}


def _default(value, default) -> bool:
    return value is None or value is default or (isinstance(value, (str, bool)) and value == default)


def check_given(method: str, kinds: dict, given: dict, spell=None, also=None) -> None:
    """Refuse the ``given`` options (not None) that the options type of ``method`` (or ``also``) lacks, naming who
    takes them.

    ``kinds`` maps every method to its options type (None: it takes none);
    ``spell`` writes an option's name as the caller knows it (``--init``
    on the command line).

    Examples
    --------
    >>> kinds = {"tammes": TammesOptions, "softmax": SoftmaxOptions, "etf": None}
    >>> check_given("softmax", kinds, {"neighbours": 16, "steps": None})
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: neighbours applies to the tammes method, not 'softmax'
    >>> check_given("tammes", kinds, {"neighbours": 16})
    """
    spell = spell or (lambda name: name)
    own = _fields(kinds.get(method)) + _fields(also)
    wrong = [name for name, value in given.items() if value is not None and name not in own]
    if not wrong:
        return
    takers = [m for m, kind in kinds.items() if wrong[0] in _fields(kind)]
    names = [spell(name) for name in wrong if [m for m, kind in kinds.items() if name in _fields(kind)] == takers]
    verb = "applies" if len(names) == 1 else "apply"
    hints = {getattr(kinds[m], "elsewhere", None) for m in takers} - {None}
    where = f"the {_listed(takers, 'or')} method" if takers else "no method"
    raise SpherecodesError(f"{_listed(names)} {verb} to {where}, not {method!r}"
                           + "".join(f"; {hint}" for hint in sorted(hints)))


def _fields(kind) -> tuple:
    return () if kind is None else tuple(f.name for f in dataclasses.fields(kind))


def _listed(names, conjunction: str = "and") -> str:
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {conjunction} {names[-1]}"
