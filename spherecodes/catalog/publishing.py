"""Publishing: make a folder of certified banks a catalog by writing its registry.

Every number in an entry is computed in float64 from the stored prototypes
when the catalog is published (:func:`entry_for_code`); none is typed in.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import zlib
from collections.abc import Callable
from pathlib import Path

from ..atomic import replace_atomically
from ..bank import list_codes, read_code
from ..bounds import max_cos_lower_bound
from ..certificate import verify_witness
from ..code import Code, default_code_name
from ..errors import SpherecodesError
from ..memory import format_bytes
from ..registry import (
    FILE_PATTERN,
    REGISTRY_FILE,
    Catalog,
    CatalogEntry,
    file_sha256,
    method_rank,
    parse_registry,
    registry_document,
)
from ..stats import separation_statistics


def entry_for_code(code: Code, *, file: str, file_sha256: str, size: int, source: str = "bundled") -> CatalogEntry:
    """The registry entry of a certified code stored in ``file``.

    Max-cos comes from :func:`spherecodes.stats.separation_statistics`, the ρ
    interval from the certificate's witness re-checked against all K prototypes
    (:func:`verify_witness`), the bound from :func:`spherecodes.bounds.max_cos_lower_bound`.
    """
    stats = separation_statistics(code.prototypes)
    lo, hi = verify_witness(code.prototypes, code.certificate, where=f"code {code.name!r}", orbit=code.orbit)
    bound = max_cos_lower_bound(code.d, code.k)
    rho_lower, rho_upper = float(lo.min()), float(hi.min())
    return CatalogEntry(
        name=default_code_name(code.method, code.d, code.k),
        d=code.d,
        k=code.k,
        method=code.method,
        seed=code.seed,
        file=file,
        code=code.name,
        sha256=file_sha256,
        size=int(size),
        max_cos=float(stats.max_cos),
        rho_lower=rho_lower,
        rho_upper=rho_upper,
        rho_certified=bool(hi.min() - lo.min() <= code.certificate.tol),  # rho's own interval
        lp_bound=float(bound.value),
        lp_bound_method=bound.method,
        lp_gap=float(stats.max_cos - bound.value),
        prototypes_sha256=code.sha256,
        source=source,
    )


def scan_directory(directory) -> list[CatalogEntry]:
    """Entries for every code of every bank (``*.h5``) directly inside ``directory``.

    Raises
    ------
    SpherecodesError
        A file that is not a valid bank, a code without a certificate or whose
        certificate does not check, or two codes with the same (method, d, K).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise SpherecodesError(f"{directory} is not a directory; publish a folder of banks")
    entries: dict[str, CatalogEntry] = {}
    for path in sorted(directory.glob("*.h5")):
        if path.name.startswith(".") or not path.is_file():
            continue
        if not FILE_PATTERN.match(path.name):
            raise SpherecodesError(
                f"{path}: a catalog file name may hold only letters, digits, '.', '_', '+' and '-'; rename it"
            )
        digest, size = file_sha256(path), path.stat().st_size
        for row in list_codes(path):
            code = read_code(path, row["name"])
            if code.certificate is None:
                raise SpherecodesError(
                    f"code {code.name!r} in {path} is not certified; a catalog lists certified codes only "
                    f"(run: spherecodes certify {path} --code {code.name} --write)"
                )
            entry = entry_for_code(code, file=path.name, file_sha256=digest, size=size, source=str(directory))
            if entry.name in entries:
                other = entries[entry.name]
                raise SpherecodesError(
                    f"{other.file} ({other.code}) and {path.name} ({code.name}) are both {entry.name}; a catalog "
                    "lists one code per (method, d, K): move one of them out of the folder"
                )
            entries[entry.name] = entry
    return list(entries.values())


def select_best(entries) -> list[CatalogEntry]:
    """Per (d, K): the code with the smallest max-cos, and the one with the largest ρ where it differs.

    The first answers the Tammes problem, the second the Softmax-Code problem; it is kept only when its
    certified lower end of ρ beats the upper end of the first's, so codes no better at either are dropped.

    Examples
    --------
    >>> e = lambda m, c, lo: CatalogEntry(m, 3, 9, m, 0, m + ".h5", m, "0" * 64, 1, c, lo, lo, True, 0, "", c, "0" * 64)
    >>> [x.name for x in select_best([e("tammes", 0.3, 0.9), e("softmax", 0.31, 0.95), e("maxsep", 0.4, 0.8)])]
    ['tammes', 'softmax']
    """
    groups: dict[tuple[int, int], list[CatalogEntry]] = {}
    for entry in entries:
        groups.setdefault((entry.d, entry.k), []).append(entry)
    chosen = []
    for group in groups.values():
        tammes = min(group, key=lambda e: (e.max_cos, method_rank(e.method), e.name))
        chosen.append(tammes)
        softmax = max(group, key=lambda e: (e.rho_lower, -method_rank(e.method), e.name))
        if softmax is not tammes and softmax.rho_lower > tammes.rho_upper:
            chosen.append(softmax)
    return chosen


def packed_size(path) -> int:
    """Bytes a file takes inside a wheel or zip archive: its deflate-compressed length.

    Wheels store each file deflated at zlib's default level, so this is what
    the file adds to a wheel, less the archive's per-file header (about 100
    bytes); ``docs/catalog.md`` says how much banks shrink.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "zeros")
    >>> _ = open(path, "wb").write(bytes(10_000))
    >>> packed_size(path) < 100
    True
    """
    return len(zlib.compress(Path(path).read_bytes()))


def fit_budget(entries, max_size: int, size_of: Callable[[CatalogEntry], int] | None = None,
               ) -> tuple[list[CatalogEntry], list[CatalogEntry]]:
    """Leave out the largest second codes of a (d, K) until the files total at most ``max_size`` bytes.

    A (d, K)'s first code, the one with the smallest max-cos (its Tammes code),
    is never left out; the others (a Softmax Code kept for its larger ρ, say)
    are dropped largest file first.  ``size_of`` gives the bytes an entry's
    file counts for (default: its size on disk, ``entry.size``).

    Returns
    -------
    kept, left_out : list of CatalogEntry

    Raises
    ------
    SpherecodesError
        The first codes alone exceed the budget.

    Examples
    --------
    >>> e = lambda m, c, size: CatalogEntry(m, 3, 9, m, 0, m + ".h5", m, "0" * 64, size, c, .5, .5, True, 0, "", c, "0" * 64)
    >>> kept, out = fit_budget([e("tammes", 0.3, 600), e("softmax", 0.31, 500)], 1000)
    >>> [x.name for x in kept], [x.name for x in out]
    (['tammes'], ['softmax'])
    """
    entries = list(entries)
    size_of = size_of or (lambda e: e.size)
    first = {}
    for entry in sorted(entries, key=lambda e: (e.max_cos, method_rank(e.method), e.name)):
        first.setdefault((entry.d, entry.k), entry)
    firsts = set(id(e) for e in first.values())

    def total(selection):
        return sum({e.file: size_of(e) for e in selection}.values())

    kept = list(entries)
    left_out = []
    for entry in sorted((e for e in entries if id(e) not in firsts), key=lambda e: (-size_of(e), e.name)):
        if total(kept) <= max_size:
            break
        kept.remove(entry)
        left_out.append(entry)
    if total(kept) > max_size:
        raise SpherecodesError(
            f"the catalog's first codes alone take {format_bytes(total(kept))}, more than the "
            f"{format_bytes(max_size)} allowed; leave out some sizes or allow more"
        )
    return kept, left_out


def publish(directory, *, best: bool = False, into=None, max_size: int | None = None,
            compressed: bool = False) -> Catalog:
    """Write the registry of a folder of banks, making it a catalog.

    Parameters
    ----------
    directory : str or Path
        Folder whose ``*.h5`` banks are listed (each code certified).
    best : bool
        List only :func:`select_best` of each (d, K).
    into : str or Path, optional
        Copy the listed banks into this folder (created if missing) and write
        the registry there instead; banks that the folder's previous registry
        listed and the new one does not are removed.  This is how the bundled
        catalog (``banks/``) is made from a build folder.
    max_size : int, optional
        Bytes the listed files may take at most: second codes of a (d, K)
        are left out, largest first, to fit (:func:`fit_budget`).
    compressed : bool
        Count each file by its :func:`packed_size` (what it adds to a wheel)
        instead of its size on disk: the budget of a catalog shipped inside
        a Python package.

    Returns
    -------
    Catalog
        What the written registry lists; ``left_out`` holds the entries
        dropped to fit ``max_size``.

    Examples
    --------
    >>> import tempfile, os
    >>> from spherecodes import generate, write_code
    >>> from spherecodes.certificate import one_vs_rest_distances
    >>> folder = tempfile.mkdtemp()
    >>> code = generate(d=3, k=5)                 # the cross-polytope: a tiny certified bank
    >>> code.certificate = one_vs_rest_distances(code.prototypes, device="cpu")
    >>> write_code(os.path.join(folder, "octa.h5"), code)
    >>> cat = publish(folder)
    >>> [(e.name, e.max_cos, round(e.rho_lower, 9)) for e in cat.entries]
    [('cross-polytope-d3-k5', 0.0, 1.0)]
    >>> sorted(os.listdir(folder))
    ['octa.h5', 'registry.json']
    """
    if compressed and max_size is None:
        raise SpherecodesError("a compressed budget needs its size: give max_size (--max-size) too")
    directory = Path(directory)
    entries = scan_directory(directory)
    if best:
        entries = select_best(entries)
    left_out: list[CatalogEntry] = []
    if max_size is not None:
        size_of = None
        if compressed:
            packed = {e.file: packed_size(directory / e.file) for e in entries}
            size_of = lambda e: packed[e.file]  # noqa: E731
        entries, left_out = fit_budget(entries, max_size, size_of)
    target = directory if into is None else Path(into)
    if into is not None:
        if target.exists() and not target.is_dir():
            raise SpherecodesError(f"{target} exists and is not a directory")
        target.mkdir(parents=True, exist_ok=True)
    previous = _listed_files(target)
    if target.resolve() != directory.resolve():
        for name in sorted({e.file for e in entries}):
            with replace_atomically(target / name) as tmp:
                shutil.copyfile(directory / name, tmp)
    entries = [CatalogEntry(**{**e.__dict__, "source": str(target)}) for e in entries]
    document = registry_document(entries)
    with replace_atomically(target / REGISTRY_FILE) as tmp:
        tmp.write_bytes((json.dumps(document, indent=1, allow_nan=False) + "\n").encode())
    if into is not None and target.resolve() != directory.resolve():
        for name in previous - {e.file for e in entries}:
            with contextlib.suppress(FileNotFoundError):
                (target / name).unlink()
    written = parse_registry(json.dumps(document), str(target))
    return Catalog(written.location, written.entries, tuple(left_out))


def _listed_files(directory: Path) -> set[str]:
    path = directory / REGISTRY_FILE
    if not path.is_file():
        return set()
    try:
        return {e.file for e in parse_registry(path.read_bytes(), str(directory)).entries}
    except SpherecodesError:
        return set()
