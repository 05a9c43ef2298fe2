"""The settings of the solvers: frozen dataclasses, resolved and checked once.

Each solver's keyword options are merged with the defaults for (d, K) and
checked by one ``resolve`` classmethod; the result is immutable and is
recorded in :attr:`SolverResult.settings` with :func:`dataclasses.asdict`
(the keys are the option names, as banks have always stored them).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import torch

from ..budget import annealing_budget, dense_bytes
from ..checks import check_fraction, check_int, check_options, check_positive, check_sizes
from ..devices import default_threads, resolve_device
from ..errors import SpherecodesError
from ..stats import validate_prototypes
from ._basin import PATIENCE
from ._core import batch_size, check_dtype, estimated_angle

__all__ = [
    "EFFORTS", "MaxsepSettings", "SoftmaxSettings", "TammesSettings", "dense_bytes", "option_names", "tammes_defaults",
]

#: Share of the starts of a cold run in R^3 that begin sharp (at ``t_end / 100``).
SHARP_SHARE = 0.5

#: Work per step (K^2 d) up to which the annealing runs in float64 on the CPU: in R^3 only
#: when the code is not polished (see :func:`tammes_defaults`).
FLOAT64_WORK = 2e4

#: Work (starts in a batch x K^2 d) of the dense annealing's steps between two
#: progress reports, at most (some 1.6 s of one CPU core), so that a large code's
#: first report does not wait for the 50 steps of ``log_every``.
LOG_WORK = 2.5e10

#: K·d up to which a code is "small": polished by default, more softmax steps.
SMALL_CODE = 20_000

#: What each ``effort`` of :func:`spherecodes.solvers.tammes` changes on the dense
#: path: a factor on the default random starts, the rounds of perturb-and-repolish
#: after the polish (small codes only), the shares of symmetric starts (R^3) and of
#: energy-continuation starts (Riesz s-energy, s from 2 to 512; above R^3), the
#: fewest starts in R^3 up to :data:`SPHERE_STARTS_MAX_K` points (``sphere_starts``)
#: and the most perturbation rounds there (``sphere_rounds``), cut to what is left
#: of two minutes of work where ``sphere_rounds_by_work`` (:data:`SPHERE_ROUNDS_WORK`).
#: Why each value: docs/optimisers.md, "Effort".
EFFORTS = {
    "low": {"restarts": 0.25, "perturb_rounds": 0, "symmetric": 0.0, "riesz": 0.0, "sphere_starts": 0,
            "sphere_rounds": 0, "sphere_rounds_by_work": True},
    "default": {"restarts": 1.0, "perturb_rounds": 0, "symmetric": 0.0, "riesz": 0.0, "sphere_starts": 0,
                "sphere_rounds": 0, "sphere_rounds_by_work": True},
    "high": {"restarts": 4.0, "perturb_rounds": 40, "symmetric": 0.5, "riesz": 0.5, "sphere_starts": 512,
             "sphere_rounds": 300, "sphere_rounds_by_work": True},
}
#: "record": one chain of the record search (:func:`spherecodes.solvers.record_search`),
#: which ``generate`` and ``catalog build`` run for method tammes: a "high" run whose
#: rounds in R^3 are not cut to two minutes of work but run up to 1000, ended sooner
#: by :data:`SPHERE_PATIENCE` rounds in a row without a gain or by the time limit.
EFFORTS["record"] = {**EFFORTS["high"], "sphere_rounds": 1000, "sphere_rounds_by_work": False}

#: Points in R^3 up to which an effort's ``sphere_starts`` and ``sphere_rounds``
#: apply: the sizes of the published tables, where nearly every start ends in a
#: local optimum of its own, so more starts and rounds find more records.
SPHERE_STARTS_MAX_K = 130

#: The perturbation rounds in R^3 up to :data:`SPHERE_STARTS_MAX_K` points at an
#: effort with ``sphere_rounds``: ``min(sphere_rounds, SPHERE_ROUNDS_WORK / (K^2 d)
#: - SPHERE_ROUNDS_SPENT)``, at least the effort's ``perturb_rounds``.  A round and
#: a start both cost about K^2 d, so this is what is left of two minutes of one core
#: once the 512 starts are done.  They stop after :data:`SPHERE_PATIENCE` rounds in
#: a row without a gain, and continue the streams of ``perturb_rounds`` keeping only
#: a better code, so they can only lower max-cos (docs/optimisers.md, "Effort").
SPHERE_ROUNDS_WORK = 9.19e6
SPHERE_ROUNDS_SPENT = 172
SPHERE_PATIENCE = 150


def option_names(options_class) -> tuple[str, ...]:
    """The keyword options a solver accepts: the fields of its options class."""
    return tuple(f.name for f in dataclasses.fields(options_class))


def check_polish(cfg: dict) -> None:
    """Validate, in place, the options of the LP polish that :func:`tammes` and :func:`softmax_code` share."""
    for name in ("polish_radius", "polish_min_radius"):
        cfg[name] = check_positive(name, cfg[name])
    # 0: no LP rounds (the default for codes larger than SMALL_LP).
    cfg["polish_work"] = 0.0 if cfg["polish_work"] == 0 else check_positive("polish_work", cfg["polish_work"])
    for name in ("polish_rounds", "polish_max_nonzeros"):
        cfg[name] = check_int(name, cfg[name], 1)
    if cfg["polish_time"] is not None:
        cfg["polish_time"] = check_positive("polish_time", cfg["polish_time"])
    cfg["polish_tol"] = float(cfg["polish_tol"])
    cfg["polish"] = bool(cfg["polish"])


@dataclass(frozen=True)
class TammesSettings:
    """Every setting of a :func:`spherecodes.solvers.tammes` run (see its ``**options``).

    Build it with :meth:`resolve`, which fills in the defaults for (d, K)
    (:func:`tammes_defaults`) and checks every value once.

    Examples
    --------
    >>> opts = TammesSettings.resolve(3, 12, device="cpu")
    >>> opts.restarts, opts.steps, opts.dtype, opts.polish
    (64, 2000, 'float32', True)
    """

    dtype: str = "auto"
    t_start: float | None = None
    t_end: float | None = None
    t_spread: float = 100.0
    sharp_share: float | None = None
    lr_start: float | None = None
    lr_end: float | None = None
    beta1: float = 0.9
    beta2: float = 0.99
    eps: float = 1e-12
    batch_size: int | None = None
    threads: int | None = None
    log_every: int = 50
    closed_form: bool = True
    polish: bool | None = None
    polish_top: int = 6
    polish_rounds: int = 200
    polish_radius: float = 1e-3
    polish_min_radius: float = 1e-11
    polish_tol: float = 1e-14
    polish_time: float | None = None
    polish_work: float | None = None
    polish_max_nonzeros: int = 50_000
    neighbours: int | None = None
    refresh: int | None = None
    max_memory: float | None = None
    effort: str = "default"
    perturb_rounds: int | None = None
    perturb_patience: int | None = None
    symmetric_starts: int | None = None
    riesz_starts: int | None = None
    init_noise: float | None = None
    steps: int | None = None
    restarts: int | None = None

    @classmethod
    def keywords(cls) -> tuple[str, ...]:
        """The ``**options`` names :func:`tammes` accepts (``steps`` and ``restarts`` are arguments)."""
        return option_names(cls)[:-2]

    @classmethod
    def resolve(cls, d: int, k: int, *, steps=None, restarts=None, device="auto", warm: bool = False,
                **options) -> TammesSettings:
        """The checked settings of a run: defaults for (d, K), the path and the effort, then the options given.

        ``warm``: the run starts from a given code (``init``), so the
        annealing begins sharp (``t_start = t_end / 25``) with a tenth of the
        step size, and starts r > 0 perturb the code by up to ``init_noise``
        (default a quarter of the estimated neighbour angle).
        """
        d, k = check_sizes(d, k)
        check_options("tammes", options, cls.keywords())
        dev = resolve_device(device)
        max_memory = options.get("max_memory")
        if max_memory is not None:
            max_memory = check_positive("max_memory", max_memory)
        cfg = tammes_defaults(d, k, dev, neighbours=options.get("neighbours"), max_memory=max_memory)
        effort = options.get("effort") or "default"
        if effort not in EFFORTS:
            raise SpherecodesError(f"effort must be one of {', '.join(EFFORTS)}, got {effort!r}")
        # The sizes of the published 3-D tables, where an effort's sphere_* settings apply.
        on_sphere = d == 3 and k <= SPHERE_STARTS_MAX_K
        if not cfg["neighbours"]:
            cfg["restarts"] = max(1, round(cfg["restarts"] * EFFORTS[effort]["restarts"]))
            if on_sphere:
                cfg["restarts"] = max(cfg["restarts"], EFFORTS[effort]["sphere_starts"])
            cfg["batch_size"] = batch_size(k, cfg["restarts"])
        sphere_search = on_sphere and bool(EFFORTS[effort]["sphere_rounds"])
        rounds = EFFORTS[effort]["perturb_rounds"]
        if sphere_search:
            sphere_rounds = EFFORTS[effort]["sphere_rounds"]
            if EFFORTS[effort]["sphere_rounds_by_work"]:
                sphere_rounds = min(sphere_rounds, int(SPHERE_ROUNDS_WORK / (k * k * d)) - SPHERE_ROUNDS_SPENT)
            rounds = max(rounds, sphere_rounds)
        cfg["perturb_rounds"] = rounds if cfg["polish"] else 0
        if warm:
            cfg.update(t_start=cfg["t_end"] / 25, lr_start=cfg["lr_start"] / 10, lr_end=cfg["lr_end"] / 10,
                       init_noise=estimated_angle(d, k) / 4)
        # None, and dtype "auto", mean "the default for (d, K)"; neighbours and
        # max_memory are already resolved in cfg.
        explicit = {key: value for key, value in options.items()
                    if value is not None and (key, value) != ("dtype", "auto") and key not in ("neighbours", "max_memory")}
        cfg.update(explicit)
        small = dev.type == "cpu" and float(k) ** 2 * d <= FLOAT64_WORK
        if "dtype" not in explicit and not cfg["polish"] and small:
            # Nothing will refine a small code annealed without the polish: anneal it in float64.
            cfg["dtype"] = "float64"
        cfg["max_memory"] = max_memory
        if steps is not None:
            cfg["steps"] = check_int("steps", steps, 1)
        if restarts is not None:
            cfg["restarts"] = check_int("restarts", restarts, 1)
            if "batch_size" not in explicit:
                cfg["batch_size"] = batch_size(k, cfg["restarts"])
        if "symmetric_starts" not in explicit:
            # Symmetric starts exist on the 2-sphere only; a warm start perturbs its code instead.
            symmetric = d == 3 and k >= 4 and not warm and not cfg["neighbours"]
            cfg["symmetric_starts"] = int(cfg["restarts"] * EFFORTS[effort]["symmetric"]) if symmetric else 0
        cfg["symmetric_starts"] = check_int("symmetric_starts", cfg["symmetric_starts"], 0)
        if "riesz_starts" not in explicit:
            # In R^3 the symmetric starts take that share of a high effort.
            energy = d > 3 and not warm and not cfg["neighbours"]
            cfg["riesz_starts"] = int(cfg["restarts"] * EFFORTS[effort]["riesz"]) if energy else 0
        cfg["riesz_starts"] = check_int("riesz_starts", cfg["riesz_starts"], 0)
        if cfg["riesz_starts"] and (warm or cfg["neighbours"]
                                    or cfg["riesz_starts"] + cfg["symmetric_starts"] > cfg["restarts"]):
            raise SpherecodesError(f"riesz_starts must be at most restarts - symmetric_starts "
                                   f"({cfg['restarts'] - cfg['symmetric_starts']}), on the dense path and without "
                                   f"init, got {cfg['riesz_starts']}")
        if cfg["symmetric_starts"] > cfg["restarts"] or (cfg["symmetric_starts"] and (d != 3 or warm)):
            raise SpherecodesError(f"symmetric_starts must be at most restarts ({cfg['restarts']}), in R^3 and "
                                   f"without init, got {cfg['symmetric_starts']}")
        cfg["perturb_rounds"] = check_int("perturb_rounds", cfg["perturb_rounds"], 0)
        if "perturb_patience" not in explicit:
            # The rounds an effort sets stop once they stop paying; rounds asked for by count all run.
            cfg["perturb_patience"] = (0 if "perturb_rounds" in explicit
                                       else SPHERE_PATIENCE if sphere_search else PATIENCE)
        cfg["perturb_patience"] = check_int("perturb_patience", cfg["perturb_patience"], 0)
        if cfg["init_noise"] is not None:
            if not warm:
                raise SpherecodesError("init_noise applies to a warm start; give init as well")
            cfg["init_noise"] = check_positive("init_noise", cfg["init_noise"])
        if cfg["neighbours"]:
            cfg["refresh"] = check_int("refresh", cfg["refresh"], 1)
            cfg["batch_size"] = 1  # the neighbour-list path runs one start at a time
        elif cfg["refresh"] is not None:
            raise SpherecodesError("refresh applies to the neighbour-list path; give neighbours >= 1 as well")
        if cfg["sharp_share"] is None:
            # Above R^3 the smooth starts find the universal optima; a warm start is already sharp (t_end / 25).
            cfg["sharp_share"] = SHARP_SHARE if d == 3 and not warm else 0.0
        share = cfg["sharp_share"]
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
            raise SpherecodesError(f"sharp_share must be a number in [0, 1], got {share!r}")
        cfg["sharp_share"] = float(share)
        cfg["dtype"] = check_dtype(cfg["dtype"], "float64")
        for name in ("t_start", "t_end", "t_spread", "lr_start", "lr_end", "eps"):
            cfg[name] = check_positive(name, cfg[name])
        if cfg["t_spread"] < 1:
            raise SpherecodesError(f"t_spread must be >= 1, got {cfg['t_spread']}")
        for name in ("beta1", "beta2"):
            cfg[name] = check_fraction(name, cfg[name])
        for name, minimum in (("batch_size", 1), ("log_every", 1), ("polish_top", 1)):
            cfg[name] = check_int(name, cfg[name], minimum)
        if "polish_work" not in explicit:
            cfg["polish_work"] = default_polish_work(cfg["restarts"], cfg["steps"], k, d)
        check_polish(cfg)
        cfg["closed_form"] = bool(cfg["closed_form"])
        if cfg["threads"] is None:
            cfg["threads"] = default_threads(cfg["batch_size"] * k * k * d, dev)
        else:
            cfg["threads"] = check_int("threads", cfg["threads"], 1)
        return cls(**cfg)

    def adam(self) -> dict:
        """Adam's constants, as :func:`spherecodes.solvers.descend_on_sphere` takes them."""
        return {"beta1": self.beta1, "beta2": self.beta2, "eps": self.eps}


@dataclass(frozen=True)
class SoftmaxSettings:
    """Every setting of a :func:`spherecodes.solvers.softmax_code` run but its start (see its ``**options``).

    Examples
    --------
    >>> opts, start = SoftmaxSettings.resolve(3, 12, start="random")
    >>> opts.steps, opts.polish, start
    (300, True, 'random')
    """

    lr: float | None = None
    t_start: float = 20.0
    t_end: float = 2e5
    log_every: int = 10
    threads: int | None = None
    closed_form: bool = True
    polish: bool | None = None
    polish_rounds: int = 200
    polish_radius: float = 1e-3
    polish_min_radius: float = 1e-11
    polish_tol: float = 1e-14
    polish_time: float | None = None
    polish_work: float = 2e8
    polish_max_nonzeros: int = 200_000
    steps: int | None = None

    @classmethod
    def keywords(cls) -> tuple[str, ...]:
        """The ``**options`` names :func:`softmax_code` accepts."""
        return ("start", *option_names(cls)[:-1])

    @classmethod
    def resolve(cls, d: int, k: int, *, steps=None, **options) -> tuple[SoftmaxSettings, object]:
        """The checked settings and the start (``"tammes"``, ``"random"`` or a (K, d) float64 array)."""
        d, k = check_sizes(d, k)
        check_options("softmax", options, cls.keywords())
        given = {key: value for key, value in options.items() if value is not None}
        start = given.pop("start", "tammes")
        cfg = dataclasses.asdict(cls())
        cfg.update(given)
        small = k * d <= SMALL_CODE
        cfg["steps"] = (300 if small else 50) if steps is None else check_int("steps", steps, 1)
        if cfg["polish"] is None:
            cfg["polish"] = small
        for name in ("t_start", "t_end"):
            cfg[name] = check_positive(name, cfg[name])
        cfg["log_every"] = check_int("log_every", cfg["log_every"], 1)
        if cfg["threads"] is not None:
            cfg["threads"] = check_int("threads", cfg["threads"], 1)
        check_polish(cfg)
        if isinstance(start, str):
            if start not in ("tammes", "random"):
                raise SpherecodesError(f"start must be 'tammes', 'random' or a (K, d) array, got {start!r}")
        else:
            start = validate_prototypes(start)
            if start.shape != (k, d):
                raise SpherecodesError(f"the start has shape {start.shape}; expected (K, d) = ({k}, {d})")
        if cfg["lr"] is None:
            cfg["lr"] = estimated_angle(d, k) / (100 if isinstance(start, str) and start == "tammes" else 10)
        cfg["lr"] = check_positive("lr", cfg["lr"])
        return cls(**cfg), start


@dataclass(frozen=True)
class MaxsepSettings:
    """Every setting of a :func:`spherecodes.solvers.maxsep` run (see its ``**options``).

    Examples
    --------
    >>> import torch
    >>> opts = MaxsepSettings.resolve(16, 40, device=torch.device("cpu"))
    >>> opts.steps, opts.lr, opts.dtype, opts.batch_size
    (1000, 0.1, 'float32', 1)
    """

    steps: int = 1000
    lr: float = 0.1
    restarts: int = 1
    momentum: float = 0.0
    dtype: str = "auto"
    batch_size: int | None = None
    threads: int | None = None
    log_every: int = 50

    @classmethod
    def keywords(cls) -> tuple[str, ...]:
        """The ``**options`` names :func:`maxsep` accepts (``steps``, ``lr``, ``restarts`` are arguments)."""
        return option_names(cls)[3:]

    @classmethod
    def resolve(cls, d: int, k: int, *, steps=1000, lr=0.1, restarts=1, device, **options) -> MaxsepSettings:
        """The checked settings of a run on ``device`` (a torch.device)."""
        d, k = check_sizes(d, k)
        check_options("maxsep", options, cls.keywords())
        steps = 1000 if steps is None else check_int("steps", steps, 1)
        restarts = 1 if restarts is None else check_int("restarts", restarts, 1)
        lr = check_positive("lr", lr)
        cfg = {name: value for name, value in dataclasses.asdict(cls()).items() if name in cls.keywords()}
        cfg.update({key: value for key, value in options.items() if value is not None})
        cfg["momentum"] = check_fraction("momentum", cfg["momentum"])
        # float32 is torch's default and what the published code ran in.
        cfg["dtype"] = check_dtype(cfg["dtype"], "float32")
        if cfg["batch_size"] is None:
            cfg["batch_size"] = batch_size(k, restarts)
        cfg["batch_size"] = check_int("batch_size", cfg["batch_size"], 1)
        cfg["log_every"] = check_int("log_every", cfg["log_every"], 1)
        if cfg["threads"] is None:
            cfg["threads"] = default_threads(cfg["batch_size"] * k * k * d, device)
        else:
            cfg["threads"] = check_int("threads", cfg["threads"], 1)
        return cls(steps=steps, lr=lr, restarts=restarts, **cfg)


def tammes_defaults(
    d: int, k: int, device: str | torch.device = "cpu", *, neighbours: int | None = None,
    max_memory: float | None = None,
) -> dict:
    """The settings :func:`tammes` uses for (d, K) when none are given.

    Parameters
    ----------
    d, k : int
        Dimension and number of prototypes.
    device : str or torch.device
        Where the solver will run (it changes the default precision).
    neighbours : int, optional
        0: the dense path (all pairs); m >= 1: neighbour lists of m prototypes;
        None: neighbour lists (:func:`spherecodes.budget.neighbour_defaults`)
        above :data:`spherecodes.budget.NEIGHBOUR_MIN_K` or where one dense
        start does not fit the memory limit, else dense.
    max_memory : float, optional
        Bytes the solver may use on ``device``; default a safe fraction of
        what is available.

    Returns
    -------
    dict
        ``steps``, ``restarts`` and every option of :func:`tammes`;
        ``neighbours`` is 0 for the dense path.

    Examples
    --------
    >>> cfg = tammes_defaults(3, 12)
    >>> cfg["restarts"], cfg["steps"], cfg["dtype"], cfg["polish"]
    (64, 2000, 'float32', True)
    >>> cfg = tammes_defaults(64, 1000)
    >>> cfg["restarts"], cfg["steps"], cfg["dtype"], cfg["polish"]
    (1, 1000, 'float32', False)
    >>> cfg = tammes_defaults(64, 100_000)
    >>> cfg["neighbours"], cfg["refresh"], cfg["steps"], cfg["dtype"]
    (64, 50, 1000, 'float32')
    """
    d, k = check_sizes(d, k)
    device = torch.device(device)
    budget = annealing_budget(d, k, str(device), neighbours, max_memory)
    m = budget["neighbours"]
    work = float(k) ** 2 * d
    angle = estimated_angle(d, k)
    # Sharpness is measured against the gap between neighbouring cosines, which
    # is ~ (1 - cos angle); the starting value also scales with the spread
    # 1/sqrt(d) of random cosines, so that the first steps see the whole code.
    gap = 1 - math.cos(angle)
    lr_start = min(0.15 / math.sqrt(d), angle / 10)
    cfg = {name: value for name, value in dataclasses.asdict(TammesSettings()).items()
           if name not in ("steps", "restarts")}
    # The neighbour-list path runs one start at a time, and its step costs K m d, not K^2 d: it keeps the default.
    batch = 1 if m else batch_size(k, budget["restarts"])
    log_every = cfg["log_every"] if m else max(1, min(cfg["log_every"], int(LOG_WORK // (batch * work))))
    cfg.update(
        steps=budget["steps"],
        restarts=budget["restarts"],
        # float32 is cheaper per step and the annealing only has to find the basin (the polished codes are
        # re-measured, sharpened and polished in float64); below 2e4 only in R^3 (docs/optimisers.md, step 3).
        dtype="float32" if device.type == "cuda" or work > FLOAT64_WORK or d == 3 else "float64",
        t_start=1.25 * math.sqrt(d) / gap,
        t_end=2500.0 / gap,
        lr_start=lr_start,
        lr_end=lr_start / 100,
        batch_size=batch,
        log_every=log_every,
        # The polish solves LPs with up to K*d variables: worth it, and
        # affordable, for small codes only.
        polish=k * d <= SMALL_CODE,
        neighbours=m,
    )
    if m:
        cfg.update(refresh=budget["refresh"], dtype="float32" if device.type == "cuda" or k * m * d > 2e6 else "float64")
    cfg["polish_work"] = default_polish_work(cfg["restarts"], cfg["steps"], k, d)
    return cfg


#: K·d up to which the LP rounds of the polish get at least 1e8 units of work.
SMALL_LP = 1000


def default_polish_work(restarts: int, steps: int, k: int, d: int) -> float:
    """Simplex work (see :class:`spherecodes.solvers._core.PolishBudget`) of the LP rounds of the polish.

    Codes with K·d <= :data:`SMALL_LP` (R^3 up to N = 333; (6, 98)) get
    ``max(1e8, 0.01 * restarts * steps * K^2 d)``, which lets their small LPs
    run to convergence.  Larger codes get none: near an optimum their LPs are
    large and highly degenerate, so they are sharpened and their contact graph
    solved, and the LP rounds run only when ``polish_work`` is given (figures:
    docs/optimisers.md, step 6 of "`tammes`: the algorithm").
    """
    if k * d > SMALL_LP:
        return 0.0
    return max(1e8, 0.01 * restarts * steps * float(k) ** 2 * d)
