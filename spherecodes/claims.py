"""What a stored code claims, checked against its rows before it is shown: nothing stored is believed over them.

Reading a bank checks its stored figures only where that costs one pass over
the rows, which a bank whose nearest neighbours point at farther rows passes
while claiming a max-cos below the truth.  So before a command shows a stored
code, :func:`check_claims` recomputes its statistics from the rows and
compares every stored claim with them; a claim that disagrees is dropped and
named, so the command can say so and refuse it (docs/security.md, "Verified
on every read").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction

import numpy as np

from .bank import list_codes, read_code
from .code import Code
from .rows import equal_rows
from .stats import separation_statistics

__all__ = ["CLAIM_TOL", "LISTING_PAIR_WORK", "Claims", "check_claims", "check_listing", "exact_number"]

#: How far a stored figure may be from the same figure recomputed from the rows (float64 rounding of a sum over
#: d coordinates), and an exact max-cos from the computed one.
CLAIM_TOL = 1e-9


@dataclass
class Claims:
    """What :func:`check_claims` found.

    Attributes
    ----------
    code : Code
        The code with the statistics recomputed from its rows, and only the
        stored claims that agree with them (a certificate whose groups of
        identical prototypes are not the rows' own is dropped).
    refused : list of str
        Each stored claim that disagrees with the rows, as a phrase
        (``"max-cos 0.2559 (the rows give 0.4044)"``); empty when all agree.
    """

    code: Code
    refused: list = field(default_factory=list)

    def message(self, where: str) -> str:
        """One line naming what was refused, for ``where`` (the code and its bank)."""
        return (f"{where} stores what its prototypes do not bear out: {'; '.join(self.refused)}; that is not "
                "shown: every figure above is recomputed from the prototypes")


def _figure(x: float) -> str:
    return f"{x:.10g}"


def exact_number(text) -> float | None:
    """The value of an exact max-cos as spherecodes writes it (``1/8``, ``-1/7``, ``1/√13``, ``√(3/5)``), or None.

    Examples
    --------
    >>> exact_number("1/8"), round(exact_number("1/√13"), 12), round(exact_number("-√(3/5)"), 12)
    (0.125, 0.277350098113, -0.774596669241)
    >>> exact_number("(1+sqrt(5))/8") is None
    True
    """
    if not isinstance(text, str):
        return None
    found = re.fullmatch(r"(-?)(?:(\d+(?:/\d+)?)|1/√(\d+)|√(\d+)|√\((\d+(?:/\d+)?)\))", text.strip())
    if found is None:
        return None
    sign, rational, over_root, root, root_of = found.groups()
    try:
        if rational is not None:
            value = float(Fraction(rational))
        elif over_root is not None:
            value = 1 / math.sqrt(int(over_root))
        else:
            value = math.sqrt(Fraction(root if root is not None else root_of))
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return -value if sign else value


def _exact_agrees(text, max_cos: float) -> bool:
    value = exact_number(text)
    return value is not None and abs(value - max_cos) <= CLAIM_TOL


def check_claims(code: Code, *, device=None, max_memory: float | None = None, progress=None) -> Claims:
    """Recompute a stored code's statistics from its rows and check every stored claim against them.

    Checked: max-cos, min-cos, the mean cosine, every class's nearest
    cosine and the rattlers (recomputed over all pairs, or through the
    code's symmetry in O(K·d)); the exact max-cos of a
    structured code (``settings["exact_max_cos"]``, with its ``label``) and
    of ``auto``'s winner (``settings["auto"]``: its exact max-cos and the
    max-cos its winner reached); and a certificate's groups of identical
    prototypes, against the rows' own (hashed, O(K·d)).

    Parameters
    ----------
    code : Code
        As read from a bank (:func:`spherecodes.bank.read_code`).
    device, max_memory, progress
        For :func:`spherecodes.stats.separation_statistics`.

    Returns
    -------
    Claims

    Examples
    --------
    >>> from spherecodes.code import make_code
    >>> from spherecodes.constructions import simplex_etf
    >>> code = make_code(simplex_etf(4), method="etf", settings={"exact_max_cos": "1/2"})
    >>> checked = check_claims(code)
    >>> checked.refused, "exact_max_cos" in checked.code.settings
    (["exact max-cos '1/2' (the rows give -0.3333333333)"], False)
    """
    stored = code.stats
    fresh = separation_statistics(code.prototypes, rattler_tol=stored.rattler_tol, device=device,
                                  max_memory=max_memory, progress=progress, orbit=code.orbit)
    refused = []
    for what, was, now in (("max-cos", stored.max_cos, fresh.max_cos), ("min-cos", stored.min_cos, fresh.min_cos),
                           ("mean cosine", stored.mean_cos, fresh.mean_cos)):
        if not abs(was - now) <= CLAIM_TOL:
            refused.append(f"{what} {_figure(was)} (the rows give {_figure(now)})")
    miss = np.abs(stored.nearest_cos - fresh.nearest_cos)
    if miss.max() > CLAIM_TOL:
        worst = int(np.argmax(miss))
        refused.append(f"nearest cosines ({int((miss > CLAIM_TOL).sum())} classes; class {worst}: "
                       f"{_figure(stored.nearest_cos[worst])}, the rows give {_figure(fresh.nearest_cos[worst])})")
    elif not np.array_equal(np.sort(stored.rattlers), np.sort(fresh.rattlers)):
        refused.append(f"rattlers ({len(stored.rattlers)} stored, the rows have {len(fresh.rattlers)})")
    settings, odd = _readable_settings(code.settings)
    refused += odd
    if "exact_max_cos" in settings and not _exact_agrees(settings["exact_max_cos"], fresh.max_cos):
        refused.append(f"exact max-cos {settings['exact_max_cos']!r} (the rows give {_figure(fresh.max_cos)})")
        settings.pop("exact_max_cos")
        settings.pop("label", None)  # the structured code it names is not these rows
    auto = settings.get("auto")
    if auto is not None and not _auto_agrees(auto, fresh.max_cos):
        refused.append(f"auto's choice {str(auto.get('winner'))[:80]!r} (its recorded max-cos is not the rows' "
                       f"{_figure(fresh.max_cos)})" if isinstance(auto, dict) else "auto's record (not an object)")
        settings.pop("auto")
    certificate = code.certificate
    if certificate is not None and not _same_groups(certificate.duplicates, code):
        refused.append(f"{len(certificate.duplicates)} groups of identical prototypes in the certificate (the rows "
                       f"have {len(equal_rows(code.prototypes)[0])})")
        certificate = None
    return Claims(replace(code, stats=fresh, settings=settings, certificate=certificate), refused)


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _text(x) -> bool:
    return isinstance(x, str)


def _optional(check):
    return lambda x: x is None or check(x)


def _list_of(**fields):
    return lambda x: isinstance(x, list) and all(isinstance(item, dict) and all(
        check(item.get(key)) for key, check in fields.items()) for item in x)


#: What a report reads of a code's settings, and the form spherecodes records it in.
_SETTINGS_READ = {
    "stages": _list_of(stage=_text, starts=lambda x: isinstance(x, int) and not isinstance(x, bool),
                       seconds=_number),
    "stop_detail": _text,
    "label": _text,
    "exact_max_cos": _text,
    "normalized": lambda x: isinstance(x, bool),
    "normalized_from": _text,
    "normalized_because": _text,
    "norm_deviation": _number,
    # "canonical", or the record of a random rotation: why it was made, or of which code.
    "rotation": lambda x: _text(x) or isinstance(x, dict) and isinstance(x.get("seed"), int) and (
        _text(x.get("why")) or _text(x.get("of"))),
    "auto": lambda x: isinstance(x, dict) and _text(x.get("winner")) and _optional(_text)(x.get("exact_max_cos"))
    and _list_of(label=_text, skipped=_optional(_text), max_cos=_optional(_number), exact=_optional(_text),
                 rho=_optional(_number), seconds=_number)(x.get("candidates")),
}


def _readable_settings(settings: dict) -> tuple[dict, list]:
    """``settings`` without the entries a report reads that are not in the form spherecodes records them (a
    list where a name is meant, NaN where seconds are), and a phrase for each left out."""
    kept, odd = dict(settings), []
    for key, check in _SETTINGS_READ.items():
        if key in kept and not check(kept[key]):
            odd.append(f"settings entry {key!r} (not in the form spherecodes records it)")
            kept.pop(key)
    return kept, odd


def _auto_agrees(auto, max_cos: float) -> bool:
    """Whether ``auto``'s record fits rows of this max-cos: its winner among its candidates, at this max-cos, and
    its exact max-cos (if any) this one."""
    if not isinstance(auto, dict) or not isinstance(auto.get("candidates"), list):
        return False
    if auto.get("exact_max_cos") is not None and not _exact_agrees(auto["exact_max_cos"], max_cos):
        return False
    winners = [c for c in auto["candidates"] if isinstance(c, dict) and c.get("label") == auto.get("winner")]
    return any(isinstance(c.get("max_cos"), (int, float)) and abs(c["max_cos"] - max_cos) <= CLAIM_TOL
               for c in winners)


def _same_groups(stored, code: Code) -> bool:
    """Whether the stored groups of identical prototypes are exactly the rows' own."""
    def canonical(groups):
        return sorted(sorted(int(i) for i in group) for group in groups)

    return canonical(stored) == canonical(equal_rows(code.prototypes)[0])


#: K²·d up to which ``ls`` recomputes a generic code's max-cos over all pairs (about a second on a laptop's core);
#: past it, the stored max-cos is shown as what it is once checked against the pairs it names: a lower bound.
LISTING_PAIR_WORK = 2e9


def check_listing(path) -> tuple[list[dict], list[str]]:
    """The codes of a bank as :func:`spherecodes.bank.list_codes` lists them, each max-cos checked against the rows.

    Each code is read (its checksum and the stored pairs checked) and its
    statistics recomputed where that is cheap: through its orbit of sign
    changes in O(K·d), or over all pairs up to :data:`LISTING_PAIR_WORK`.
    Each row's ``max_cos_is`` says which: ``"recomputed"``, or ``"at least"``
    for a larger generic code, whose stored max-cos is then only known to be
    attained by the pair it names (``spherecodes report`` checks all pairs).

    Returns
    -------
    rows : list of dict
        As :func:`spherecodes.bank.list_codes`, with ``max_cos`` recomputed
        where it was, and ``max_cos_is``.
    refused : list of str
        For each code whose stored figures disagree with its rows, what
        :class:`Claims` refused, naming the code.

    Examples
    --------
    >>> from importlib import resources
    >>> bank = resources.files("spherecodes.banks").joinpath("auto-d3-k10.h5")
    >>> rows, refused = check_listing(bank)
    >>> [(r["name"], r["max_cos_is"]) for r in rows], refused
    ([('auto-d3-k10-s0', 'recomputed')], [])
    """
    rows, refused = list_codes(path), []
    for row in rows:
        code = read_code(path, row["name"], verify_certificate=False)
        if code.orbit is None and float(code.k) ** 2 * code.d > LISTING_PAIR_WORK:
            row["max_cos_is"] = "at least"
            continue
        claims = check_claims(code)
        row.update(max_cos=claims.code.stats.max_cos, max_cos_is="recomputed")
        if claims.refused:
            refused.append(f"code {row['name']!r}: {'; '.join(claims.refused)}")
    return rows, refused
