"""Structured codes in the catalog: listed from the library and built on demand, never stored as files.

A structured code is exact and takes milliseconds to build, so the catalog does not store it:
:func:`structured_offers` lists those that beat a catalog's banks, and ``fetch`` builds them on the spot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from ..best_of import TIE, structured_label
from ..code import default_code_name
from ..structured import StructuredCode, best_structured_code

#: The catalog name of a structured code built on demand.
STRUCTURED_NAME = re.compile(r"^structured-d([1-9][0-9]*)-k([1-9][0-9]*)$")


@dataclass(frozen=True)
class StructuredOffer:
    """A structured code that beats a catalog's banks at their size (d, K).

    Attributes
    ----------
    name : str
        ``structured-d<D>-k<K>``: what ``fetch`` takes.
    d, k : int
    label : str
        The code and the K points taken (``"extended BCH [64,10,28], 1000 of 1024 words"``).
    max_cos : Fraction
        Exact max-cos of those K points (an upper bound from the structure).
    beats : str
        The best bank of the catalog at (d, K), and ``beats_max_cos`` its max-cos.
    """

    name: str
    d: int
    k: int
    label: str
    max_cos: Fraction
    beats: str
    beats_max_cos: float

    def to_dict(self) -> dict:
        return {
            "name": self.name, "d": self.d, "k": self.k, "method": "structured", "code": self.label,
            "max_cos": float(self.max_cos), "exact_max_cos": str(self.max_cos), "beats": self.beats,
            "beats_max_cos": self.beats_max_cos, "source": "built on demand",
        }


def parse_structured_name(name: str) -> tuple[int, int] | None:
    """(d, K) of a name ``structured-d<D>-k<K>``, or None for any other name.

    Examples
    --------
    >>> parse_structured_name("structured-d64-k1000"), parse_structured_name("tammes-d64-k1000")
    ((64, 1000), None)
    """
    match = STRUCTURED_NAME.match(name)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def structured_for(d: int, k: int) -> StructuredCode | None:
    """The best structured code for (d, K), or None (K < 2 or nothing fits)."""
    return best_structured_code(d, k) if k >= 2 else None


def beats(code: StructuredCode | None, k: int, max_cos: float) -> bool:
    """Whether the K points of ``code`` have a smaller max-cos than ``max_cos`` (by more than a tie)."""
    return code is not None and float(code.max_cos_bound(k)) < max_cos - TIE


def structured_offers(entries) -> list[StructuredOffer]:
    """The structured codes that beat the best of ``entries`` at its (d, K), one per size, by size.

    Examples
    --------
    >>> from spherecodes.catalog import bundled_catalog
    >>> [(o.name, str(o.max_cos)) for o in structured_offers(bundled_catalog().entries) if o.d == 64]
    [('structured-d64-k1000', '1/8')]
    """
    best: dict = {}
    for entry in entries:
        key = (entry.d, entry.k)
        if key not in best or entry.max_cos < best[key].max_cos:
            best[key] = entry
    offers = []
    for (d, k), entry in sorted(best.items(), key=lambda item: (item[0][1], item[0][0])):
        code = structured_for(d, k)
        if beats(code, k, entry.max_cos):
            offers.append(StructuredOffer(default_code_name("structured", d, k), d, k, structured_label(code, k),
                                          code.max_cos_bound(k), entry.name, entry.max_cos))
    return offers
