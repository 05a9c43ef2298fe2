"""Structured (algebraic) spherical codes, built exactly in float64 with exact parameters.

Families: binary codes on the sphere (extended BCH, Reed–Muller, the extended
Golay code, Kerdock codes, and the BCH and Golay codes shortened and punctured
to every length), lattice shells (D_n, E6, E7, E8, BW16, Leech), codes
derived from them by fixing inner products, and two-distance sets from
strongly regular graphs (Higman–Sims, Gewirtz, …, and the isotropic-subspaces
codes for every prime power q), and real equiangular tight frames (Paley,
Steiner, Latin-square). :func:`best_structured_code`
picks, for (d, K), the code whose K chosen points have the smallest max-cos;
see docs/structured.md.

Examples
--------
>>> from spherecodes.structured import best_structured_code
>>> code = best_structured_code(24, 4096)
>>> code.name, code.max_cos
('extended Golay [24,12,8]', Fraction(1, 3))
>>> code.points(4096).shape
(4096, 24)
"""

from spherecodes.structured.binary import (
    bch_chain,
    bch_code,
    golay_code,
    reed_muller_code,
)
from spherecodes.structured.selection import (
    available_codes,
    best_structured_code,
    describe,
    native_codes,
)
from spherecodes.structured.description import StructuredCode
from spherecodes.structured.derived import (
    classical_derived_code,
    classical_derived_keys,
    derived_code,
)
from spherecodes.structured.etf import etf_code, etf_codes
from spherecodes.structured.kerdock import kerdock_code
from spherecodes.structured.lattices import (
    barnes_wall_16,
    cross_polytope,
    e6_roots,
    e7_roots,
    e8_roots,
    leech_lattice,
    root_system_d,
)
from spherecodes.structured.punctured import (
    primitive_bch_code,
    shortened_punctured_code,
    shortened_punctured_codes,
)
from spherecodes.structured.srg import isotropic_code, srg_code, srg_codes


__all__ = [
    "StructuredCode",
    "available_codes",
    "barnes_wall_16",
    "bch_chain",
    "bch_code",
    "best_structured_code",
    "classical_derived_code",
    "classical_derived_keys",
    "cross_polytope",
    "derived_code",
    "describe",
    "e6_roots",
    "e7_roots",
    "e8_roots",
    "etf_code",
    "etf_codes",
    "golay_code",
    "isotropic_code",
    "kerdock_code",
    "leech_lattice",
    "native_codes",
    "primitive_bch_code",
    "reed_muller_code",
    "root_system_d",
    "shortened_punctured_code",
    "shortened_punctured_codes",
    "srg_code",
    "srg_codes",
]
