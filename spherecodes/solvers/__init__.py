"""Optimisers that place K unit vectors in R^d as far apart as possible.

The solvers share one result type, modelled on :class:`scipy.optimize.OptimizeResult`:

* :func:`tammes` minimises the largest cosine between two prototypes (the
  Tammes problem; Mettes, van der Pol & Snoek 2019, Eq. 4) with an annealed
  log-sum-exp surrogate, Riemannian Adam steps on the sphere, batched random
  starts and a final sequential-linear-programming polish of the near-active pairs.
* :func:`softmax_code` maximises the certified ρ, the smallest one-vs-rest
  distance (Jiang et al. 2024, Eq. 3).
* :func:`line_packing` minimises the largest |cos| (K lines through the
  origin) with the same annealing and polish.
* :func:`record_search` runs chains of :func:`tammes` at high effort, each
  with a seed of its own, until a time budget is spent (on one process or on
  Dask workers), for the sizes whose best known code is rare among local optima.
* :func:`maxsep` is the reference procedure of Mettes, van der Pol & Snoek
  (2019, Eq. 5), exactly as published.
* :func:`descend_on_sphere` runs the same Riemannian Adam steps on any
  differentiable objective.

The heavy work runs in torch on the CPU or a CUDA GPU (:func:`spherecodes.devices.resolve_device`);
the polish runs in float64 on the CPU with SciPy's HiGHS.  Every number in a
:class:`SolverResult` is recomputed in float64 from the returned prototypes.
``docs/optimisers.md`` describes the algorithm, its defaults and measurements.

Examples
--------
>>> from spherecodes.solvers import tammes
>>> tammes(3, 4, device="cpu").stop_reason  # the simplex is provably optimal
'converged'
"""

from ._core import (
    ADAM_DEFAULTS, DTYPES, EXP_FLOOR, HISTORY_COLUMNS, Clock, Progress, SolverResult, descend_on_sphere,
    estimated_angle,
)
from ._options import EFFORTS, MaxsepSettings, SoftmaxSettings, TammesSettings, tammes_defaults
from .line_packing import line_packing
from .maxsep import maxsep
from .record_search import record_search
from .softmax import softmax_code
from .tammes import tammes, tammes_estimate, tammes_memory

__all__ = [
    "ADAM_DEFAULTS", "DTYPES", "EFFORTS", "EXP_FLOOR", "HISTORY_COLUMNS", "Clock", "MaxsepSettings", "Progress",
    "SoftmaxSettings", "SolverResult", "TammesSettings", "descend_on_sphere", "estimated_angle", "line_packing",
    "maxsep", "record_search", "softmax_code", "tammes", "tammes_defaults", "tammes_estimate", "tammes_memory",
]
