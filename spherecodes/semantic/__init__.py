"""Semantic prototypes: class names, word embeddings, agreement and assignment.

Behind ``spherecodes generate --method privileged``, ``spherecodes assign`` and
the ``semantic`` part of a report (``docs/semantic.md``): :mod:`.embeddings`
(class names and word vectors), :mod:`.agreement` (how well the prototypes'
similarity order matches the embeddings'), :mod:`.assignment` (which class
gets which prototype, no prototype moved) and :mod:`.ranking` (the privileged
optimiser of Mettes et al. 2019, Eq. 5 + Eq. 6).  A code's ``labels[i]`` is
the class of prototype row ``i``; text for these numbers is in
:mod:`spherecodes.report`.
"""

from ._options import (
    ALL_TRIPLETS_UP_TO_K,
    DEFAULT_MAX_COS_TOLERANCE,
    DEFAULT_NEIGHBOURS,
    DEFAULT_SEMANTIC_WEIGHT,
    DEFAULT_TRIPLET_SAMPLES,
    TRIPLET_STRATEGIES,
)
from .embeddings import (
    EMBEDDING_FORMATS,
    MISSING_POLICIES,
    ClassEmbeddings,
    class_embeddings,
    load_embeddings,
    read_class_names,
)

# The agreement and assignment (SciPy) and the privileged optimiser (torch)
# are loaded on first use, so that the command line and everything that only
# reads class names and embeddings start quickly.
_LAZY = {
    "DEFAULT_MAX_PAIRS": "agreement", "DEFAULT_MAX_TRIPLETS": "agreement", "TIE_TOL": "agreement",
    "semantic_agreement": "agreement", "semantic_report": "agreement",
    "DEFAULT_RELAXATION_ITERATIONS": "assignment", "Assignment": "assignment",
    "assign_by_class_means": "assignment", "assign_by_embeddings": "assignment", "assign_code": "assignment",
    "load_class_means": "assignment", "relabel_code": "assignment",
    "RankingTriplets": "ranking", "privileged": "ranking", "privileged_information_loss": "ranking",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ALL_TRIPLETS_UP_TO_K",
    "Assignment",
    "ClassEmbeddings",
    "DEFAULT_MAX_COS_TOLERANCE",
    "DEFAULT_MAX_PAIRS",
    "DEFAULT_MAX_TRIPLETS",
    "DEFAULT_NEIGHBOURS",
    "DEFAULT_RELAXATION_ITERATIONS",
    "DEFAULT_SEMANTIC_WEIGHT",
    "DEFAULT_TRIPLET_SAMPLES",
    "EMBEDDING_FORMATS",
    "MISSING_POLICIES",
    "RankingTriplets",
    "TIE_TOL",
    "TRIPLET_STRATEGIES",
    "assign_by_class_means",
    "assign_by_embeddings",
    "assign_code",
    "class_embeddings",
    "load_class_means",
    "load_embeddings",
    "privileged",
    "privileged_information_loss",
    "read_class_names",
    "relabel_code",
    "semantic_agreement",
    "semantic_report",
]
