"""Options of the privileged method that the command line needs without loading torch."""

__all__ = ["ALL_TRIPLETS_UP_TO_K", "DEFAULT_MAX_COS_TOLERANCE", "DEFAULT_NEIGHBOURS", "DEFAULT_SEMANTIC_WEIGHT",
           "DEFAULT_TRIPLET_SAMPLES", "TRIPLET_STRATEGIES"]

#: Ways to choose the triplet set T of Eq. 6 (:class:`spherecodes.semantic.RankingTriplets`).
TRIPLET_STRATEGIES = ("auto", "all", "sampled", "neighbours")

#: Largest K for which ``auto`` uses every triplet (K = 200 gives 3.9 million per step).
ALL_TRIPLETS_UP_TO_K = 200

#: Triplets drawn per step by the ``sampled`` and ``neighbours`` strategies.
DEFAULT_TRIPLET_SAMPLES = 1 << 16

#: Nearest embedding neighbours per class for the ``neighbours`` strategy.
DEFAULT_NEIGHBOURS = 10

#: Weight of L_PI against the penalty on cosines above the cap in ``privileged``.
DEFAULT_SEMANTIC_WEIGHT = 1.0

#: Default of how far ``privileged`` may raise max-cos above the Tammes code it starts from.
DEFAULT_MAX_COS_TOLERANCE = 0.01
