"""Reading a bank: its listing, a code with every field, statistic and certificate checked, and what reading takes."""

from __future__ import annotations

import time

import h5py
import numpy as np

from ..certificate import orbit_words_bytes, verify_witness
from ..checks import SEED_LIMIT
from ..code import Code, check_labels, prototype_checksum
from ..errors import SpherecodesError
from ..inputs import read_json
from ..memory import Estimate, memory_limit, process_peak, require_memory
from ..orbit import OrbitPrefix
from ..stats import SeparationStats, validate_prototypes
from ..z4orbit import Z4Orbit
from ._schema import (
    COMPRESS_UP_TO_BYTES, ORBIT_WITNESS, PREFIX_WITNESS, READ_ROWS, Z4_WITNESS, Fields, as_str, hdf5_errors, open_bank,
)
from ._structures import read_certificate, read_orbit

__all__ = ["CHOOSE_BY_NAME", "code_fields", "list_codes", "read_code", "read_estimate"]


def list_codes(path) -> list[dict]:
    """Summaries of the codes in a bank, without loading their prototypes.

    Returns
    -------
    list of dict
        One per code, sorted by name, with ``name``, ``method``, ``d``, ``k``,
        ``max_cos``, ``created_utc``.

    Examples
    --------
    >>> import tempfile, os
    >>> from spherecodes.constructions import simplex_etf
    >>> from spherecodes.bank import write_code
    >>> from spherecodes.code import make_code
    >>> path = os.path.join(tempfile.mkdtemp(), "bank.h5")
    >>> write_code(path, make_code(simplex_etf(3), method="etf"))
    >>> [c["name"] for c in list_codes(path)]
    ['etf-d2-k3']
    """
    with hdf5_errors(path), open_bank(path) as fh:
        rows = []
        for name in fh["codes"]:
            fields = code_fields(fh["codes"], name, path)
            rows.append(
                {
                    "name": name,
                    "method": fields.attr("method", "str"),
                    "d": fields.attr("d", "int"),
                    "k": fields.attr("k", "int"),
                    "max_cos": fields.subgroup("stats").attr("max_cos", "float"),
                    "created_utc": fields.attr("created_utc", "str", ""),
                }
            )
    return sorted(rows, key=lambda row: row["name"])


def code_fields(codes: h5py.Group, name: str, path) -> Fields:
    """The checked group of the code ``name``: stored in the bank, a group, each member under one name."""
    try:
        return _code_group(codes, name, path)
    except SpherecodesError as err:
        # The entry itself is damaged: say how to get the rest of the bank back.
        raise SpherecodesError(f"{err} ('spherecodes rm {path} --code {name}' removes that code and keeps the "
                               "others; repeat --code to remove several)") from None


def _code_group(codes: h5py.Group, name: str, path) -> Fields:
    fields = Fields(codes, f"code {name!r} in {path}")
    group = fields.member(name)
    if not isinstance(group, h5py.Group):
        raise fields.damaged("its entry in /codes", "is not a group")
    # HDF5 hard links: one stored group or dataset under many names, which a rewrite would copy once each.
    members = [("its group", group)]
    group.visititems(lambda member, obj: members.append((member, obj)) and None)
    for field, obj in members:
        names = h5py.h5o.get_info(obj.id).rc
        if names > 1:
            raise fields.damaged(field, f"is stored once under {names} names (hard links); each code has its own data")
    return Fields(group, fields.where)


def read_code(path, name: str | None = None, *, verify_certificate: bool = True,
              max_memory: float | None = None) -> Code:
    """Read and validate one code of a bank.

    Every dataset and attribute is checked before it is used, the prototypes against their SHA-256, the
    statistics against the prototypes, and a stored certificate against its witness
    (:func:`spherecodes.certificate.verify_witness`).

    Parameters
    ----------
    path : str or Path
        The bank file.
    name : str, optional
        The code; may be omitted when the bank holds exactly one.
    verify_certificate : bool
        Check a stored certificate against its witness (one pass over all
        pairs of prototypes; for a code that is one orbit of sign changes,
        one class against all).  Turn off only to replace the certificate.
    max_memory : float, optional
        Bytes that reading and checking may use (``--max-memory``);
        :func:`read_estimate` says how many it takes.

    Raises
    ------
    SpherecodesError
        The file is missing, not a bank, from a newer schema, the code is
        absent, a field is missing or damaged (the message names it), the
        prototypes fail validation or the checksum, or the certificate does
        not check.

    Examples
    --------
    >>> import tempfile, os
    >>> from spherecodes.constructions import cell_600
    >>> from spherecodes.bank import write_code
    >>> from spherecodes.code import make_code
    >>> path = os.path.join(tempfile.mkdtemp(), "bank.h5")
    >>> write_code(path, make_code(cell_600(), method="600-cell"))
    >>> code = read_code(path)
    >>> code.name, code.prototypes.shape
    ('600-cell-d4-k120', (120, 4))
    """
    with hdf5_errors(path), open_bank(path) as fh:
        fields = _select(fh["codes"], name, path)
        name = fields.group.name.rsplit("/", 1)[-1]
        code = _read_group(fields, name, max_memory)
    if verify_certificate and code.certificate is not None:
        verify_witness(code.prototypes, code.certificate, where=f"code {name!r} in {path}", orbit=code.orbit)
    return code


#: How a bank of several codes asks for a name; the command line names its own option for it.
CHOOSE_BY_NAME = "choose one with a name"


def _select(codes: h5py.Group, name: str | None, path) -> Fields:
    """The fields of the code ``name`` (or of the only code) in a bank's /codes group."""
    if name is None:
        if not len(codes):
            raise SpherecodesError(f"{path} holds no codes ('spherecodes generate --out {path}' adds one)")
        if len(codes) != 1:
            available = ", ".join(sorted(codes)) or "none"
            raise SpherecodesError(
                f"{path} holds {len(codes)} codes; choose one with a name (available: {available})",
                flags={CHOOSE_BY_NAME: "choose one with --code NAME"},
            )
        name = next(iter(codes))
    if name not in codes:
        available = ", ".join(sorted(codes)) or "none"
        raise SpherecodesError(f"no code {name!r} in {path} (available: {available})")
    return code_fields(codes, name, path)


def _read_group(fields: Fields, name: str, max_memory: float | None = None) -> Code:
    where = fields.where
    k, d = _shape(fields)
    require_memory(_read_bytes(fields, k, d), f"reading {where} (K={k}, d={d})", limit=max_memory)
    prototypes = fields.array("prototypes", "f", (k, d), copies=1, compressed_up_to=COMPRESS_UP_TO_BYTES)
    if prototypes.dtype != np.float64:
        raise fields.damaged("prototypes", f"must be float64, found {prototypes.dtype}")
    stored = fields.attr("sha256", "str")
    actual = prototype_checksum(prototypes)
    if stored != actual:
        raise SpherecodesError(
            f"{where} failed its checksum: the prototypes were modified after writing "
            f"(stored sha256 {str(stored)[:12]}..., computed {actual[:12]}...)"
        )
    try:
        validate_prototypes(prototypes, copy=False)
    except SpherecodesError as err:
        raise SpherecodesError(f"{where} is invalid: {err}") from None
    orbit = read_orbit(fields, prototypes)
    labels = None
    if fields.has("labels"):
        raw = fields.array("labels", "OSU", (k,))
        try:
            labels = [as_str(x) for x in raw]
        except UnicodeDecodeError:
            raise fields.damaged("labels", "must be UTF-8 text") from None
        try:
            check_labels(labels, k)
        except SpherecodesError as err:
            raise fields.damaged("labels", f"are invalid ({err})") from None
    seed = fields.attr("seed", "int", -1)
    if not -1 <= seed < SEED_LIMIT:
        raise fields.damaged("attribute seed", f"is {seed}; a seed lies in [0, 2**63) (-1: none)")
    try:  # settings may record NaN or infinity (a run's energy, say): JSON as Python writes it
        settings = read_json(fields.attr("settings", "str", "{}"), "its settings", finite=False)
    except SpherecodesError as err:
        raise fields.damaged("attribute settings", f"is not readable JSON ({err})") from None
    if not isinstance(settings, dict):
        raise fields.damaged("attribute settings", f"must be a JSON object, found {type(settings).__name__}")
    wall_time = fields.attr("wall_time_s", "float", 0.0)
    certificate = read_certificate(fields.subgroup("certificate"), prototypes, actual, orbit) \
        if fields.has("certificate") else None
    return Code(
        name=name,
        prototypes=prototypes,
        method=fields.attr("method", "str"),
        stats=_read_stats(fields.subgroup("stats"), prototypes),
        sha256=actual,
        labels=labels,
        settings=settings,
        seed=None if seed < 0 else seed,
        package_version=fields.attr("package_version", "str", ""),
        device=fields.attr("device", "str", ""),
        wall_time=wall_time,
        created_utc=fields.attr("created_utc", "str", ""),
        certificate=certificate,
        orbit=orbit,
    )


def _read_bytes(fields: Fields, k: int, d: int) -> float:
    """Peak bytes of reading one code and checking it, from the shapes stored (nothing is read).

    The prototypes, the statistics, the blocks of rows checked at a time, an orbit's packed sign patterns and
    coordinates, a certificate's witnesses and what its check takes, and the per-class numbers a report holds.
    """
    rows = min(k, READ_ROWS)
    nbytes = 8.0 * k * d + 8.0 * 6 * k + 4.0 * 8 * rows * d + 128.0 * k
    words = 8.0 * k * (-(-d // 64))
    nbytes += 3 * words + 8.0 * 3 * k  # the orbit's sign patterns, their combination, coordinates
    if fields.has("certificate"):
        certificate = fields.subgroup("certificate")
        support = certificate.member("support_indices")
        s = support.shape[-1] if isinstance(support, h5py.Dataset) and support.ndim == 2 else 0
        witness = certificate.attr("witness", "str", "")
        if witness == ORBIT_WITNESS:
            nbytes += 8.0 * 4 * k + 16.0 * s + 8.0 * 2 * d
        elif witness == PREFIX_WITNESS:
            # The tree of nearest rows over the 2^t words (< 2K), the per-class bounds, and their blocks.
            nbytes += orbit_words_bytes(k, d, 2 * k, OrbitPrefix.tree_numbers, None)
        elif witness == Z4_WITNESS:
            # The trees of nearest rows, the witnesses, and the rows' symbols.
            nbytes += orbit_words_bytes(k, d, 2 * k, Z4Orbit.tree_numbers, None) + 16.0 * k * s + 4.0 * k * d
        else:
            nbytes += 16.0 * k * s + 8.0 * 4 * k * d + 8.0 * 4 * k
    return nbytes


#: Rows that :func:`read_estimate` reads, hashes and checks to time the whole read: enough for a steady rate
#: (32 MiB at d = 1024), few enough that the estimate stays a small part of what it estimates.
ESTIMATE_ROWS = 4096


def read_estimate(path, name: str | None = None, *, max_memory: float | None = None,
                  statistics: bool = False) -> Estimate:
    """Memory and time that :func:`read_code` of a code (checks and certificate included) is expected to take.

    With ``statistics``, also recomputing its statistics from the rows
    (:func:`spherecodes.claims.check_claims`): through the stored orbit in
    O(K·d), else over all pairs.

    The memory follows from the stored shapes; the time from a block of rows read, hashed and checked, scaled
    to K, and for a generic certificate one tile of its product with all K prototypes, scaled to K².  A code
    that does not fit ``max_memory`` (or a safe fraction of the free memory) is refused before anything large
    is read.

    Examples
    --------
    The E8 root system (240 classes, no certificate stored), read within 1 GiB:

    >>> from pathlib import Path
    >>> from tempfile import mkdtemp
    >>> from spherecodes.bank import write_code
    >>> from spherecodes.code import make_code
    >>> from spherecodes.constructions import e8_roots
    >>> bank = Path(mkdtemp()) / "e8.h5"
    >>> write_code(bank, make_code(e8_roots(), method="e8"))
    >>> expected = read_estimate(bank, max_memory=2**30)
    >>> expected.what, expected.limit == 2**30
    ("reading code 'e8-d8-k240' (K = 240, d = 8): checksum, unit rows and statistics", True)
    """
    with hdf5_errors(path), open_bank(path) as fh:
        fields = _select(fh["codes"], name, path)
        k, d = _shape(fields)
        # Checked as the reader will check it: a damaged bank is refused before its size is estimated (or sampled).
        prototypes = fields.dataset("prototypes", "f", (k, d), compressed_up_to=COMPRESS_UP_TO_BYTES)
        needed = _read_bytes(fields, k, d)
        nbytes = process_peak(needed)
        limit = memory_limit("cpu", max_memory)
        what = (f"reading code {fields.group.name.rsplit('/', 1)[-1]!r} (K = {k}, d = {d}): checksum, unit rows "
                "and statistics")
        certified = fields.has("certificate")
        witness = fields.subgroup("certificate").attr("witness", "str", "") if certified else ""
        by_orbit = witness in (ORBIT_WITNESS, PREFIX_WITNESS, Z4_WITNESS)
        if certified:
            what += (", the orbit's generators and the certificate (class 0 against all K)" if witness == ORBIT_WITNESS
                     else ", the orbit's generators and the certificate (class 0 of the whole orbit against its "
                     "words, O(K·d))" if by_orbit else ", and the certificate (every class against all K)")
        require_memory(needed, what, limit=max_memory)
        rows = min(k, ESTIMATE_ROWS)
        started = time.perf_counter()
        sample = prototypes[:rows]
        prototype_checksum(sample)
        np.linalg.norm(sample, axis=1)
        # The rows are read, hashed and checked, then passed over again by the orbit's and statistics' checks.
        seconds = 3.0 * (time.perf_counter() - started) * k / rows
        columns = min(k, 4096)
        started = time.perf_counter()
        _ = sample[: min(rows, 512)] @ sample[:columns].T
        all_pairs = (time.perf_counter() - started) * (k / min(rows, 512)) * (k / columns)
        if certified and not by_orbit:
            seconds += all_pairs
        if statistics:
            orbit = fields.has("orbit")
            what += ("; the statistics recomputed through the orbit, O(K·d)" if orbit
                     else "; the statistics recomputed from all pairs")
            seconds += seconds / 3 if orbit else all_pairs / 2
    return Estimate(what, "cpu", nbytes, limit, seconds)


def _shape(fields: Fields) -> tuple[int, int]:
    """(K, d) of a code's prototypes, checked against its attributes, without reading them."""
    dataset = fields.member("prototypes")
    if not isinstance(dataset, h5py.Dataset) or dataset.ndim != 2:
        raise fields.damaged("prototypes", "must be a 2-D dataset")
    k, d = dataset.shape
    if (fields.attr("k", "int"), fields.attr("d", "int")) != (k, d):
        raise fields.damaged("prototypes", f"have shape {(k, d)} but the attributes say "
                             f"K={fields.attr('k', 'int')}, d={fields.attr('d', 'int')}")
    return k, d


#: How far a stored statistic may differ from the same quantity recomputed from the prototypes.
_STATS_SLACK = 1e-10


def _read_stats(fields: Fields, prototypes: np.ndarray) -> SeparationStats:
    """The stored statistics, after checking them against the prototypes where that is cheap.

    Each stored nearest cosine must be the cosine of the pair it names, max-cos the largest of them, the rattlers
    exactly the classes they define; the scan over all pairs is not repeated (it is what the statistics save).
    """
    k, d = prototypes.shape
    nearest_cos = fields.array("nearest_cos", "f", (k,)).astype(np.float64)
    nearest_index = fields.array("nearest_index", "iu", (k,)).astype(np.int64)
    rattlers = fields.array("rattlers", "iu", (None,)).astype(np.int64)
    max_cos, min_cos, mean_cos = (fields.attr(key, "float") for key in ("max_cos", "min_cos", "mean_cos"))
    rattler_tol = fields.attr("rattler_tol", "float")
    if rattler_tol < 0:  # a negative slack would make every class a rattler
        raise fields.damaged("attribute stats/rattler_tol", f"is {rattler_tol:g}; a tolerance is at least 0")
    if np.any((nearest_index < 0) | (nearest_index >= k) | (nearest_index == np.arange(k))):
        raise fields.damaged("stats/nearest_index", f"names a class outside [0, {k}) or the class itself")
    pair_cos = np.concatenate([np.einsum("ij,ij->i", prototypes[start : start + READ_ROWS],
                                         prototypes[nearest_index[start : start + READ_ROWS]])
                               for start in range(0, k, READ_ROWS)])
    if np.abs(pair_cos - nearest_cos).max() > _STATS_SLACK:
        worst = int(np.argmax(np.abs(pair_cos - nearest_cos)))
        raise fields.damaged("stats/nearest_cos", f"does not match the prototypes (class {worst} stores "
                             f"{nearest_cos[worst]:.12g}, its pair has cosine {pair_cos[worst]:.12g})")
    if abs(max_cos - nearest_cos.max()) > _STATS_SLACK:
        raise fields.damaged("attribute stats/max_cos", f"is {max_cos:.12g} but the largest nearest cosine is "
                             f"{nearest_cos.max():.12g}")
    if not -1 - _STATS_SLACK <= min_cos <= mean_cos + _STATS_SLACK <= max_cos + 2 * _STATS_SLACK:
        raise fields.damaged("attributes stats/min_cos, mean_cos", "are not ordered min <= mean <= max-cos")
    expected = np.flatnonzero(nearest_cos < max_cos - rattler_tol)
    if not np.array_equal(np.sort(rattlers), expected):
        raise fields.damaged("stats/rattlers", "are not the classes whose nearest cosine is below max-cos - rattler_tol")
    return SeparationStats(k=k, d=d, max_cos=max_cos, min_cos=min_cos, mean_cos=mean_cos, nearest_cos=nearest_cos,
                           nearest_index=nearest_index, rattlers=rattlers, rattler_tol=rattler_tol)
