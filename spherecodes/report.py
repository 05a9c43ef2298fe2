"""Presentation: every number the library computes, as JSON-ready dictionaries and as text.

Reports of a code and of the bounds (:func:`code_report`, :func:`bounds_report`
and their text forms), the text of a semantic report, of an assignment and of
catalog entries, and the two human units (:func:`format_bytes`,
:func:`format_duration`).  Every number comes from the code's float64
statistics (computed from the stored prototypes) or from a theorem about
(d, K); nothing is estimated here.
"""

from __future__ import annotations

import math
import shlex

import numpy as np

from .bounds import THEOREM_3_9, known_optimal, max_cos_lower_bound, simplex_rho_cap, theorem_3_9
from .records import compare_with_record
from .code import Code
from .lines import line_report
from .memory import format_bytes, format_duration
from .stats import Span, spanned_dimensions

__all__ = ["bounds_report", "code_report", "format_assignment", "format_bounds_report", "format_bytes",
           "format_code_report", "format_duration", "format_offers", "format_entries", "format_line_report",
           "format_semantic_report", "printable"]


def printable(text) -> str:
    """``text`` with what a terminal would act on or hide written as an escape, so a name shows what it holds.

    Names, methods and labels come from files anyone may write: a newline
    would forge a row of a table, an escape sequence would clear the screen,
    and a zero-width character would make two names look alike.  Every
    character that is not printable (other than the ASCII space), and the
    backslash, is written as Python writes it in a string literal.

    Examples
    --------
    >>> print(printable("cat\\n\\x1b[2Jdog\\u00a0"))
    cat\\n\\x1b[2Jdog\\xa0
    >>> printable("aquarium fish")
    'aquarium fish'
    """
    text = str(text)
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(c if c.isprintable() and c != "\\" else repr(c)[1:-1] for c in text)


def code_report(code: Code, *, bank: str | None = None) -> dict:
    """The report of a code as a dictionary of JSON-serialisable values.

    docs/cli.md ("Report keys") lists the stable keys: the statistics, the
    bounds (``theorem_3_9``, ``max_cos_lower_bound``, ``known_optimal``),
    ``best_known`` (:func:`spherecodes.records.compare_with_record`) and, for
    a certified code, ``rho``, ``softmax_rattlers``, ``rattlers_undecided``
    and ``one_vs_rest`` (all ``None`` otherwise).

    Examples
    --------
    >>> from spherecodes.code import make_code
    >>> from spherecodes.constructions import simplex_etf
    >>> r = code_report(make_code(simplex_etf(12, 11), method="etf"))
    >>> round(r["max_cos"], 12), r["known_optimal"]["value"]
    (-0.090909090909, True)
    """
    s = code.stats
    bound = max_cos_lower_bound(code.d, code.k)
    optimal = known_optimal(code.d, code.k, s.max_cos)
    best_known = compare_with_record(code.d, code.k, s.max_cos)
    thm = theorem_3_9(code.d, code.k).to_dict()
    cert = code.certificate
    auto = code.settings.get("auto")
    if cert is not None:
        # Room left between this code's certified rho and the best any code can have.
        thm["gap"] = thm["best_upper"] - cert.rho_lower
    report = {
        "name": code.name,
        "bank": bank,
        "d": code.d,
        "k": code.k,
        "method": code.method,
        "seed": code.seed,
        "settings": code.settings,
        "device": code.device,
        "wall_time_s": code.wall_time,
        "created_utc": code.created_utc,
        "package_version": code.package_version,
        "sha256": code.sha256,
        "has_labels": code.labels is not None,
        "labels": None if code.labels is None else list(code.labels),
        "max_cos": s.max_cos,
        "min_angle_deg": s.min_angle_deg,
        "one_vs_one_distance": s.one_vs_one_distance,
        "separation": s.separation,
        "nearest_cos": s.nearest_cos.tolist(),
        "rattlers": [int(i) for i in s.rattlers],
        "rattler_tol": s.rattler_tol,
        "theorem_3_9": thm,
        "max_cos_lower_bound": {**bound.to_dict(), "gap": optimal.gap},
        "known_optimal": optimal.to_dict(),
        "best_known": None if best_known is None else best_known.to_dict(),
        "rho": None,
        "softmax_rattlers": None,
        "rattlers_undecided": None,
        "one_vs_rest": None,
        # A structured code's exact max-cos ("1/8"), or that of auto's winner when it is one.
        "exact_max_cos": (code.settings if auto is None else auto).get("exact_max_cos"),
        "auto": auto,
        "lines": line_report(code) if code.method == "lines" else None,
        # A structured code turned by a rotation spans at most its live columns.
        "dimensions": spanned_dimensions(code.prototypes,
                                         None if code.orbit is None else code.orbit.span_bound).to_dict(),
        "carried": None if code.orbit is None else code.orbit.carried,
        "cosine_error": None if code.orbit is None else code.orbit.cosine_error,
    }
    if cert is not None:
        report["rho"] = {"lower": cert.rho_lower, "upper": cert.rho_upper, "width": cert.width, "tol": cert.tol,
                         "certified": cert.rho_certified, "rho_width": cert.rho_upper - cert.rho_lower,
                         "every_class_certified": cert.certified, "classes_certified": cert.classes_certified}
        report["softmax_rattlers"] = cert.softmax_rattlers.tolist()
        report["rattlers_undecided"] = len(cert.rattlers_undecided)
        report["one_vs_rest"] = {"lo": cert.lo.tolist(), "hi": cert.hi.tolist(), "rattler_tol": cert.rattler_tol,
                                 "duplicates": [list(map(int, g)) for g in cert.duplicates], "device": cert.device,
                                 "wall_time_s": cert.wall_time}
    return report


def bounds_report(d: int, k: int) -> dict:
    """What is provably possible for K prototypes in R^d, as a dictionary.

    Examples
    --------
    >>> r = bounds_report(512, 100000)
    >>> r["theorem_3_9"]["applicable"], r["max_cos_lower_bound"]["value"] >= 0
    (True, True)
    """
    return {"d": d, "k": k, "theorem_3_9": theorem_3_9(d, k).to_dict(),
            "max_cos_lower_bound": max_cos_lower_bound(d, k).to_dict()}


def _fmt(x: float | None, digits: int = 10) -> str:
    return "n/a" if x is None else f"{x:.{digits}g}"


def _format_stages(stages: list[dict]) -> str:
    """How an optimiser spent its time, e.g. "anneal 64 starts 5.2 s; polish 3 codes 1.1 s"."""
    units = {"anneal": "starts", "polish": "codes", "perturb": "rounds", "search": "chains"}
    return "; ".join(f"{st['stage']} {st['starts']} {units.get(st['stage'], 'items')} {st['seconds']:.3g} s"
                     for st in stages)


def format_code_report(report: dict) -> str:
    """Render :func:`code_report` as a short, aligned text block.

    Examples
    --------
    >>> from spherecodes.code import make_code
    >>> from spherecodes.constructions import cell_600
    >>> print(format_code_report(code_report(make_code(cell_600(), method="600-cell"))))
    ... # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    code 600-cell-d4-k120: K = 120 prototypes in d = 4
    ...
    """
    sep = report["separation"]
    nearest = np.asarray(report["nearest_cos"])
    bound = report["max_cos_lower_bound"]
    thm = report["theorem_3_9"]
    optimal = report["known_optimal"]
    made = f"method {report['method']}"
    if report["seed"] is not None:
        made += f", seed {report['seed']}"
    made += f", on {report['device']} in {report['wall_time_s']:.3g} s"
    certificate = _certificate_lines(report)
    dimensions = report.get("dimensions")
    lines = [
        # What a user of the prototypes needs first; the theory follows.
        f"code {report['name']}: K = {report['k']} prototypes in d = {report['d']}",
        ("max-cos", f"{_fmt(report['max_cos'])}   ("
         + (f"exactly {report['exact_max_cos']}; " if report.get("exact_max_cos") else "")
         + f"min angle {report['min_angle_deg']:.6f} deg)"),
        certificate[0],
        ("dimensions", Span(**dimensions).describe()) if dimensions else None,
        ("bank", report["bank"]) if report["bank"] else None,
        ("made with", made),
        _normalized_line(report["settings"] or {}),
        _rotation_line(report),
        ("time spent", _format_stages(report["settings"].get("stages"))) if report["settings"].get("stages") else None,
        ("stopped", report["settings"]["stop_detail"]) if report["settings"].get("stop_detail") else None,
        *_origin_lines(report),
        ("lower bound", f"{_fmt(bound['value'])}   ({bound['method']}; gap {bound['gap']:.3g})"),
        ("optimal", ("yes (proven): " if optimal["value"] else "not proven: ") + optimal["reason"]),
        ("best known", _best_known_line(report["best_known"])) if report.get("best_known") else None,
        ("1 - cos", f"min {_fmt(sep['min'], 6)}  mean {_fmt(sep['mean'], 6)}  max {_fmt(sep['max'], 6)}"),
        ("nearest cos", f"min {_fmt(nearest.min(), 6)}  median {_fmt(float(np.median(nearest)), 6)}  "
                        f"max {_fmt(nearest.max(), 6)}"),
        ("verified", _verified_line(report["verified"], report["k"])) if report.get("verified") else None,
        ("labels", _labels_line(report.get("labels"))),
        ("rattlers", _rattlers_line(len(report["rattlers"]), report["k"], report["rattler_tol"])),
        *certificate[1:],
        ("best rho", _best_rho_line(thm, report["k"], 6)
         + (f"; this code's rho is {thm['gap']:.3g} below the upper bound" if "gap" in thm else "")),
    ]
    if report.get("lines"):
        lines.extend(format_line_report(report["lines"]))
    text = _align(lines)
    if report.get("semantic"):
        text += "".join(f"\n  {label:<17}  {value}" for label, value in format_semantic_report(report["semantic"]))
    return text


def _best_known_line(best: dict) -> str:
    """The published value of the code's size, its source, and the code's gap to it."""
    where = {"better": f"better than the published value by {-best['gap']:.3g}",
             "reaches": f"reached (gap {best['gap']:+.3g}, within {best['tolerance']:.1g})",
             "above": f"gap {best['gap']:+.3g}"}[best["standing"]]
    return f"{best['value']!r} ({best['source']}); {where}"


def _verified_line(verified: dict, k: int) -> str:
    """What reading the bank checked, and how long each check took.

    Examples
    --------
    >>> print(_verified_line({"checksum_seconds": 0.41, "certificate": True, "certificate_seconds": 73.2}, 196560))
    on read: SHA-256 and unit norms of the 196560 prototypes (0.41 s); the certificate's witness re-evaluated against all 196560 prototypes (1.2 min)
    >>> print(_verified_line({"checksum_seconds": 9.1, "certificate": True, "certificate_seconds": 0.6,
    ...                       "orbit": True, "certificate_by_orbit": True}, 1048576))
    on read: SHA-256 and unit norms of the 1048576 prototypes, and that they are one orbit of the stored sign changes (9.1 s); class 0's certificate witness re-evaluated against all 1048576 prototypes, every other class's being its image (0.6 s)
    >>> print(_verified_line({"checksum_seconds": 2.5, "certificate": True, "certificate_seconds": 1.5, "orbit": True,
    ...                       "orbit_prefix": True, "certificate_by_orbit": True}, 1000000))
    on read: SHA-256 and unit norms of the 1000000 prototypes, and that they are the first K words, in order, of the orbit of the stored sign changes (2.5 s); the certificate's witness of the whole orbit's class 0 re-evaluated against all its words, and every class's bound from it or from its nearest row (1.5 s)
    >>> print(_verified_line({"checksum_seconds": 9.0, "certificate": True, "certificate_seconds": 0.2, "orbit": True,
    ...                       "orbit_z4": True, "certificate_by_orbit": True}, 100000))
    on read: SHA-256 and unit norms of the 100000 prototypes, and that they are the first K words, in order, of the orbit of the stored Z4 translations (signed permutations) (9 s); the certificate's witnesses of the whole orbit's class 0 re-evaluated against all its words, and every class's bound from them or from its nearest row (0.2 s)
    """

    def seconds(x: float) -> str:
        return f"{x:.2g} s" if x < 60 else format_duration(x)

    orbit, prefix, z4 = verified.get("orbit", False), verified.get("orbit_prefix", False), verified.get("orbit_z4")
    turned = verified.get("rotated")
    text = (f"on read: SHA-256 and unit norms of the {k} prototypes"
            + (f", and that turned back by the rotation of seed {turned['seed']} (rows within "
               f"{turned['row_error']:.1e}, rotation orthogonal within {turned['orthogonality_error']:.1e}) they are"
               if turned else ", and that they are" if orbit else "")
            + (" the first K words, in order, of the orbit of the stored Z4 translations (signed permutations)" if z4
               else " the first K words, in order, of the orbit of the stored sign changes" if prefix
               else " one orbit of the stored sign changes" if orbit else "")
            + f" ({seconds(verified['checksum_seconds'])})")
    # Every stored figure is checked against the statistics recomputed from the rows (spherecodes.claims).
    recomputed = "" if "statistics_seconds" not in verified else (
        "; the statistics recomputed from the rows" + (" through the orbit" if orbit else ", all pairs")
        + f" ({seconds(verified['statistics_seconds'])})")
    certificate = verified["certificate"]
    if certificate is None:
        return text + "; no certificate stored" + recomputed
    outcome = "re-evaluated" if certificate else "FAILED when re-evaluated"
    by_orbit = verified.get("certificate_by_orbit", False)
    carried = ", and carried through the rotation" if turned and by_orbit else ""
    if by_orbit and (prefix or z4):
        return (text + f"; the certificate's witness{'es' if z4 else ''} of the whole orbit's class 0 {outcome} "
                       f"against all its words, and every class's bound from {'them' if z4 else 'it'} or from its "
                       f"nearest row{carried} "
                       f"({seconds(verified['certificate_seconds'])})" + recomputed)
    whose = "class 0's certificate witness" if by_orbit else "the certificate's witness"
    images = ", every other class's being its image" if by_orbit else ""
    return (text + f"; {whose} {outcome} against all {k} prototypes{images}{carried} "
                   f"({seconds(verified['certificate_seconds'])})" + recomputed)


def format_line_report(lines: dict) -> list[tuple[str, str]]:
    """The ``(label, value)`` lines of a text report for :func:`spherecodes.lines.line_report`'s dict.

    Examples
    --------
    >>> from spherecodes.code import make_code
    >>> from spherecodes.lines import line_report
    >>> for label, value in format_line_report(line_report(make_code(np.eye(3)[:2], method="external"))):
    ...     print(f"{label}: {value}")
    max |cos|: 0   (smallest angle between two lines 90 deg)
    line bound: 0   (K <= d: an orthonormal basis; optimal: the bound is met)
    Welch bound: 0
    orthoplex bound: only for K > d(d+1)/2 = 6
    """
    bound = lines["lower_bound"]
    verdict = ("optimal: the bound is met" if lines["optimal"]
               else f"gap {bound['gap']:.3g}: not proven optimal")
    ortho = lines["orthoplex_bound"]
    d = lines["d"]
    return [
        ("max |cos|", f"{_fmt(lines['max_abs_cos'])}   (smallest angle between two lines "
                      f"{lines['min_line_angle_deg']:.6g} deg)"),
        ("line bound", f"{_fmt(bound['value'])}   ({bound['method']}; {verdict})"),
        ("Welch bound", _fmt(lines["welch_bound"])),
        ("orthoplex bound", _fmt(ortho) if ortho is not None else f"only for K > d(d+1)/2 = {d * (d + 1) // 2}"),
    ]


def _best_rho_line(thm: dict, k: int, digits: int) -> str:
    """The band on the best possible rho: Theorem 3.9 capped by K/(K-1), saying which bound is the tighter.

    Examples
    --------
    >>> from spherecodes.bounds import theorem_3_9
    >>> print(_best_rho_line(theorem_3_9(64, 100).to_dict(), 100, 6))
    [0.416317, 1.0101]   (lower: Theorem 3.9; upper: K/(K-1), the simplex ETF's rho, tighter than Theorem 3.9's 1.94951)
    >>> print(_best_rho_line(theorem_3_9(3, 100).to_dict(), 100, 6))
    [0.00666667, 0.4]   (Theorem 3.9; its upper end is tighter than K/(K-1) = 1.0101)
    """
    cap = "K/(K-1), the simplex ETF's rho"
    if not thm["applicable"]:
        return (f"<= {_fmt(thm['best_upper'], digits)}   ({cap}; Theorem 3.9 not applicable: "
                f"needs {thm['condition']})")
    band = f"[{_fmt(thm['lower'], digits)}, {_fmt(thm['best_upper'], digits)}]"
    if thm["best_upper_by"] == THEOREM_3_9:
        return f"{band}   (Theorem 3.9; its upper end is tighter than K/(K-1) = {_fmt(simplex_rho_cap(k), digits)})"
    return f"{band}   (lower: Theorem 3.9; upper: {cap}, tighter than Theorem 3.9's {_fmt(thm['upper'], digits)})"


def _origin_lines(report: dict) -> list:
    """Which candidate ``auto`` chose and what the others reached; the structured code behind a code."""
    auto = report.get("auto")
    settings = report.get("settings") or {}
    if auto is None:
        label = settings.get("label")
        return [("structured code", f"{label}: max-cos {settings['exact_max_cos']}")] if label else []
    exact = f": max-cos {auto['exact_max_cos']}" if auto.get("exact_max_cos") else ""
    lines = [("auto chose", f"{auto['winner']}{exact}")]
    for candidate in auto["candidates"]:
        if candidate["skipped"]:
            outcome = candidate["skipped"]
        else:
            outcome = f"max-cos {_fmt(candidate['max_cos'])}"
            if candidate["exact"]:
                outcome += f" (= {candidate['exact']})"
            if candidate["rho"] is not None:
                outcome += f", rho >= {_fmt(candidate['rho'], 8)}"
            outcome += f", {format_duration(candidate['seconds'])}"
        lines.append(("  candidate", f"{candidate['label']}: {outcome}"))
    return lines


#: Labels a text report shows before "...".
LABELS_SHOWN = 5


def _labels_line(labels) -> str:
    """How many labels, the first few in row order.

    Examples
    --------
    >>> _labels_line(["apple", "aquarium fish", "baby", "bear", "beaver", "bed", "bee"])
    '7, in row order: apple, aquarium fish, baby, bear, beaver, ... (all in --json)'
    >>> _labels_line(["cat", "dog", ""])
    '3 (1 of them unlabelled, kept for later classes), in row order: cat, dog, '
    >>> _labels_line(None)
    'none: row i is class i (spherecodes assign, or generate --classes, names the rows)'
    """
    if labels is None:
        return "none: row i is class i (spherecodes assign, or generate --classes, names the rows)"
    shown = ", ".join(printable(label) for label in labels[:LABELS_SHOWN])
    more = ", ... (all in --json)" if len(labels) > LABELS_SHOWN else ""
    free = labels.count("")  # rows kept for classes that arrive later
    unlabelled = f" ({free} of them unlabelled, kept for later classes)" if free else ""
    return f"{len(labels)}{unlabelled}, in row order: {shown}{more}"


def _rattlers_line(count: int, k: int, tol: float) -> str:
    """Tammes rattlers in words: what they are and that they need nothing done."""
    if count == 0:
        return "0: every prototype has a neighbour at max-cos"
    return (f"{count} of {k} (no neighbour within {tol:g} of max-cos: better separated than max-cos "
            "says; normal, harmless for training)")


def _softmax_rattlers_line(count: int, k: int, tol: float, undecided: int = 0) -> str:
    """Softmax-Code rattlers (Jiang et al. 2024) in words.

    Examples
    --------
    >>> _softmax_rattlers_line(0, 1000, 1e-6, undecided=216)
    '0 proved; 216 of 1,000 undecided (their intervals reach above rho by > 1e-06)'
    """
    if undecided:
        return (f"{count:,} proved; {undecided:,} of {k:,} undecided (their intervals reach above rho by > {tol:g})")
    if count == 0:
        return "0: every class is at distance rho from the hull of the others"
    return (f"{count} of {k} (dist_k above rho by > {tol:g}: more margin than rho says; normal, "
            "harmless for training)")


def _normalized_line(settings: dict):
    """What was done to rows that were not unit vectors as read, or None."""
    if not settings.get("normalized"):
        return None
    stored = f" from {settings['normalized_from']}" if settings.get("normalized_from") else ""
    if settings.get("normalized_because") == "asked":
        return ("note", f"rows rescaled to unit length in float64{stored}, as asked (--normalize): every figure is "
                        "of the rescaled rows")
    missed = settings.get("norm_deviation")
    within = f", at most {missed:.2g} from 1" if isinstance(missed, (int, float)) else ""
    return ("note", f"rows normalised in float64{stored} (their norms were within 1e-6 or the format's rounding "
                    f"of 1{within})")


def _rotation_line(report: dict):
    rotation = (report["settings"] or {}).get("rotation")
    if not isinstance(rotation, dict):
        return None
    if "why" in rotation:  # turned by generate before its statistics
        why = rotation["why"]
        if why.endswith("(all-zero columns)"):  # what the code as built left unused: the stored rows have none
            why = f"the code as built left {why.removesuffix(' (all-zero columns)')}"
        if report.get("carried"):
            how = (f"statistics and certificate computed on it and carried through the rotation ({report['carried']}; "
                   f"every cosine within {report['cosine_error']:.1e})")
        else:
            how = "every figure computed from the stored (turned) rows"
        return ("rotation", f"Haar-random, seed {rotation['seed']}: {why}; {how}")
    checked = "; certificate re-verified on the rotated rows" if report["rho"] is not None else ""
    return ("rotation", f"random, seed {rotation['seed']}, of {rotation['of']}: the same cosines, max-cos, rho "
                        f"and one-vs-rest distances{checked}")


def _certificate_lines(report: dict) -> list:
    rho = report["rho"]
    if rho is None:
        how = (f"spherecodes certify {shlex.quote(printable(str(report['bank'])))} "
               f"--code {shlex.quote(printable(report['name']))} --write adds it"
               if report["bank"] else
               "not stored in a bank: 'spherecodes generate' without --no-certify, or 'spherecodes certify FILE', "
               "certifies it")
        return [("rho", f"not certified ({how})")]
    hi = np.asarray(report["one_vs_rest"]["hi"])
    k, settled = report["k"], rho.get("classes_certified", report["k"])
    if rho.get("every_class_certified", rho["certified"]):
        status = f"certified, width {rho['width']:.2g} <= tol {rho['tol']:g}"
    elif rho["certified"]:
        # The first K words of an orbit: rho from the whole orbit, some classes only bounded.
        status = (f"rho certified, width {rho['rho_width']:.2g} <= tol {rho['tol']:g}; per-class distances "
                  f"certified for {settled:,} of {k:,} classes, the others bounded below by rho")
    else:
        status = f"NOT certified to tol {rho['tol']:g}: width {rho['width']:.3g}"
    spread = f"min {_fmt(hi.min(), 6)}  median {_fmt(float(np.median(hi)), 6)}  max {_fmt(hi.max(), 6)}"
    if settled < k:
        spread = f"upper ends {spread}   ({k - settled:,} classes: only bounded, between rho's lower end and these)"
    lines = [
        ("rho", f"[{_fmt(rho['lower'], 12)}, {_fmt(rho['upper'], 12)}]   ({status})"),
        ("dist_k", spread),
        ("softmax rattlers", _softmax_rattlers_line(len(report["softmax_rattlers"]), k,
                                                    report["one_vs_rest"]["rattler_tol"],
                                                    report.get("rattlers_undecided", 0))),
    ]
    duplicates = report["one_vs_rest"]["duplicates"]
    if duplicates:
        lines.append(("duplicates", f"{len(duplicates)} groups of identical prototypes: their dist_k = 0"))
    return lines


def format_bounds_report(report: dict) -> str:
    """Render :func:`bounds_report` as text.

    Examples
    --------
    >>> print(format_bounds_report(bounds_report(64, 10)))  # doctest: +NORMALIZE_WHITESPACE
    bounds for K = 10 prototypes in d = 64
      max-cos >=   -0.1111111111   (simplex bound -1/(K-1))
      best rho    <= 1.111111111   (K/(K-1), the simplex ETF's rho; Theorem 3.9 not applicable: needs K >= sqrt(2*pi*sqrt(e)*d) = 25.7486 and d >= 2)
    """
    thm = report["theorem_3_9"]
    bound = report["max_cos_lower_bound"]
    lines = [
        f"bounds for K = {report['k']} prototypes in d = {report['d']}",
        ("max-cos >=", f"{_fmt(bound['value'])}   ({bound['method']})"),
        ("best rho", _best_rho_line(thm, report["k"], 10)),
    ]
    return _align(lines)


def _align(lines) -> str:
    """First line as a title, then ``(label, value)`` pairs in two aligned columns."""
    rows = [row for row in lines[1:] if row is not None]
    width = max(len(label) for label, _ in rows)
    return "\n".join([printable(lines[0])] + [f"  {label:<{width}}  {printable(value)}" for label, value in rows])


def format_semantic_report(semantic: dict) -> list[tuple[str, str]]:
    """The ``(label, value)`` lines of a text report for :func:`semantic_report`'s dict.

    Examples
    --------
    >>> format_semantic_report({"triplet_agreement": 0.75, "spearman": 0.5, "triplets": 4,
    ...     "triplets_total": 4, "triplets_sampled": False, "pairs": 6, "pairs_total": 6,
    ...     "pairs_sampled": False, "seed": 0})
    [('triplet agreement', '0.75   (all 4 triplets; 0.5 = chance)'), ('Spearman', '0.5   (all 6 pairs)')]
    """
    def extent(used, total, sampled, what):
        if sampled:
            return f"sample of {used:,} of {total:,} {what}, seed {semantic['seed']}"
        return f"all {total:,} {what}"

    triplets = extent(semantic["triplets"], semantic["triplets_total"], semantic["triplets_sampled"], "triplets")
    pairs = extent(semantic["pairs"], semantic["pairs_total"], semantic["pairs_sampled"], "pairs")
    return [("triplet agreement", f"{semantic['triplet_agreement']:.6g}   ({triplets}; 0.5 = chance)"),
            ("Spearman", f"{_fmt(semantic['spearman'], 6)}   ({pairs})")]


def format_assignment(assignment) -> str:
    """A short text summary of a :class:`spherecodes.semantic.Assignment`: objective and agreement before and after.

    Examples
    --------
    >>> from spherecodes.semantic import assign_by_class_means
    >>> p = np.array([[1.0, 0], [0.8, 0.6], [-1, 0], [0, -1]])
    >>> result = assign_by_class_means(p, p[[2, 0, 3, 1]])
    >>> print(format_assignment(result))  # doctest: +ELLIPSIS
    linear assignment (optimal), 4 of 4 labels moved, ... s
      mean cos(prototype, class mean)  -0.2 -> 1
      triplet agreement                0.166667 -> 1
      Spearman                         -0.794118 -> 1
    """
    objective = "Pearson(prototype cos, embedding cos)" if assignment.method == "quadratic" \
        else "mean cos(prototype, class mean)"

    def pair(before, after):
        return f"{_fmt(before, 6)} -> {_fmt(after, 6)}"

    rows = [
        (objective, pair(assignment.objective_before, assignment.objective_after)),
        ("triplet agreement", pair(assignment.agreement_before["triplet_agreement"],
                                   assignment.agreement_after["triplet_agreement"])),
        ("Spearman", pair(assignment.agreement_before["spearman"], assignment.agreement_after["spearman"])),
    ]
    moved = int((np.asarray(assignment.order) != np.asarray(assignment.initial_order)).sum())
    # The linear assignment solves for the whole order at once: it makes no swaps, it moves labels.
    swaps = f"{assignment.swaps} swaps, " if assignment.method == "quadratic" else ""
    head = (f"{assignment.method} assignment ({assignment.stop_reason}), {swaps}{moved} of {len(assignment.order)} "
            f"labels moved, {assignment.wall_time:.3g} s")
    return _align([head, *rows])


def format_offers(offers) -> str:
    """The structured codes that beat a catalog's banks, as text under ``catalog list``'s table.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from spherecodes.catalog import StructuredOffer
    >>> print(format_offers([StructuredOffer("structured-d64-k1000", 64, 1000,
    ...     "extended BCH [64,10,28], 1000 of 1024 words", Fraction(1, 8), "tammes-d64-k1000", 0.1455622911)]))
    ... # doctest: +NORMALIZE_WHITESPACE
    structured codes that beat these banks, built on demand by 'spherecodes fetch NAME':
      structured-d64-k1000  d=64  K=1000  max-cos 1/8 (tammes-d64-k1000: 0.145562)
          extended BCH [64,10,28], 1000 of 1024 words
    """
    lines = ["structured codes that beat these banks, built on demand by 'spherecodes fetch NAME':"]
    width = max(len(o.name) for o in offers)
    for o in offers:
        lines.append(f"  {o.name:<{width}}  d={o.d}  K={o.k}  max-cos {o.max_cos} ({o.beats}: {o.beats_max_cos:.6f})")
        lines.append(f"      {o.label}")
    return "\n".join(lines)


def format_entries(entries) -> str:
    """Catalog entries as an aligned table (text of ``spherecodes catalog list``).

    Examples
    --------
    >>> format_entries([])
    'no banks in the catalog'
    """
    entries = list(entries)
    if not entries:
        return "no banks in the catalog"
    rows = [("name", "d", "K", "method", "max-cos", "rho interval", "LP gap", "size", "source")]
    for e in entries:
        rows.append((printable(e.name), str(e.d), str(e.k), printable(e.method), f"{e.max_cos:.6f}",
                     f"[{e.rho_lower:.6f}, {e.rho_upper:.6f}]" + ("" if e.rho_certified else " (wide)"),
                     f"{e.lp_gap:.2e}" if math.isfinite(e.lp_gap) else "n/a", format_bytes(e.size),
                     printable(e.source)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {1, 2, 4, 6, 7}
    lines = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
