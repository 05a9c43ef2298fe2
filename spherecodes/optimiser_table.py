"""What the ``tammes`` optimiser reaches, measured over a grid of (d, K), and predictions from it.

``auto`` (:mod:`spherecodes.best_of`) must decide, before any work, whether
an optimiser can beat the codes it already holds exactly.  It decides from
``data/optimiser_table.csv``: for each measured (d, K), the max-cos that
``tammes`` reached from random starts (seed 0, default settings: what
``--method tammes`` returns) and warm-started from the structured code of
that size (``benchmarks/bench_auto_table.py``; docs/structured.md says how
and on which machine).  Between the measured sizes the prediction uses
monotonicity: more points in fewer dimensions are never separated better, so
the measured sizes bracket an unmeasured one with a *low* end (what the
optimiser may at best reach there) and a *high* end; the tests check that
every pair of rows of the table obeys this order.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from .errors import SpherecodesError
from .inputs import check_input_file

#: Relative spread of an optimiser's result around the measured value (other
#: seeds, other machines' rounding): a measured value v stands for
#: [v·(1 − NOISE), v·(1 + NOISE)].
NOISE = 0.02

#: The seed of every measured run (with the default settings).
MEASURED_SEED = 0

_TABLE = "optimiser_table.csv"

#: Most bytes the table may have (it holds some 15 KB): a damaged installation is refused, never read unbounded.
TABLE_LIMIT_BYTES = 2**20

#: The columns :func:`measurements` reads.
_COLUMNS = ("d", "k", "structured", "tammes_max_cos", "tammes_seconds", "warm_max_cos")


@dataclass(frozen=True)
class Measurement:
    """One row of the table: what the optimiser reached at (d, K).

    Attributes
    ----------
    d, k : int
    tammes : float
        Max-cos of ``tammes`` from random starts (seed 0, default settings).
    warm : float or None
        Max-cos of ``tammes`` warm-started from ``structured`` (None: no structured code fitted).
    structured : str
        Name of the structured code of that size when measured ("" for none).
    seconds : float
        Wall time of the ``tammes`` run.
    """

    d: int
    k: int
    tammes: float
    warm: float | None
    structured: str
    seconds: float


@dataclass(frozen=True)
class Prediction:
    """What an optimiser is expected to reach at (d, K): a bracket and where it comes from.

    Attributes
    ----------
    low : float or None
        The best (smallest) max-cos it may plausibly reach; None: nothing is known.
    high : float or None
        The worst it should plausibly end at; None: nothing is known.
    source : str
        For people: ``"measured at (16, 100)"``, ``"between (16, 200) and (12, 100)"``, ...
    value : float or None
        The point prediction: the measured value, else the geometric middle
        of the bracket, else its one known end.
    measured : bool
        Whether ``value`` was measured at this very size (with
        :data:`MEASURED_SEED` and the default settings).

    Examples
    --------
    >>> p = predict_tammes(16, 100)
    >>> p.source, p.low < p.value < p.high
    ('measured at (16, 100)', True)
    """

    low: float | None
    high: float | None
    source: str
    value: float | None = None
    measured: bool = False

    def __post_init__(self):
        if self.value is None and (self.low is not None or self.high is not None):
            if self.low is None or self.high is None:
                middle = self.high if self.low is None else self.low
            else:
                middle = math.sqrt(self.low * self.high) if self.low > 0 else (self.low + self.high) / 2
            object.__setattr__(self, "value", middle)

    @property
    def known(self) -> bool:
        """Whether anything at all is known."""
        return self.low is not None or self.high is not None


@lru_cache(maxsize=1)
def measurements() -> dict[tuple[int, int], Measurement]:
    """The measured table, keyed by (d, K).

    The installed file is still read as any file is: a regular UTF-8 CSV file
    of at most :data:`TABLE_LIMIT_BYTES`, every row's sizes and cosines in
    their ranges; anything else is a damaged installation, refused with a
    :class:`~spherecodes.errors.SpherecodesError` naming the file and the row.

    Examples
    --------
    >>> table = measurements()
    >>> round(table[(16, 100)].tammes, 4), table[(16, 100)].structured
    (0.2058, 'extended BCH [16,7,6]')
    """
    return parse_table(Path(str(resources.files("spherecodes").joinpath("data", _TABLE))))


def parse_table(path) -> dict[tuple[int, int], Measurement]:
    """The measured table in the CSV file ``path``, every row checked (see :func:`measurements`).

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "table.csv")
    >>> _ = open(path, "w").write("d,k,structured,tammes_max_cos,tammes_seconds,warm_max_cos\\n16,100,,nan,1.5,\\n")
    >>> parse_table(path)
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: .../table.csv is damaged: row 2 has tammes_max_cos 'nan', expected a cosine in [-1, 1]; reinstall spherecodes
    """
    fix = "reinstall spherecodes"
    try:
        path = check_input_file(path, "CSV file")
    except SpherecodesError as err:  # a link to /dev/zero would never end: not read at all
        raise SpherecodesError(f"the table of measurements installed with spherecodes is damaged: {err}; {fix}") \
            from None
    try:
        with open(path, "rb") as fh:
            data = fh.read(TABLE_LIMIT_BYTES + 1)
    except OSError as err:
        raise SpherecodesError(f"cannot read {path}: {err.strerror or err}; {fix}") from None
    if len(data) > TABLE_LIMIT_BYTES:
        raise SpherecodesError(f"{path} is damaged: it is longer than {TABLE_LIMIT_BYTES // 2**20} MiB (the table "
                               f"holds some 15 KB); {fix}")
    try:
        rows = list(csv.DictReader(data.decode("utf-8").splitlines()))
    except UnicodeDecodeError as err:
        raise SpherecodesError(f"{path} is damaged: not UTF-8 text (byte {err.start}); {fix}") from None
    except csv.Error as err:
        raise SpherecodesError(f"{path} is damaged: not CSV ({err}); {fix}") from None
    missing = [c for c in _COLUMNS if not rows or c not in rows[0]]
    if missing:
        raise SpherecodesError(f"{path} is damaged: " + ("it holds no rows" if not rows else
                               f"the column{'s' if len(missing) > 1 else ''} {', '.join(missing)} missing") + f"; {fix}")
    table = {}
    for number, row in enumerate(rows, start=2):  # row 1 is the header
        def value(column, read, ok, expected, optional=False):
            text = row.get(column)
            if optional and text == "":
                return None
            try:
                got = read(text)
            except (TypeError, ValueError, OverflowError):
                got = None
            if got is None or not ok(got):
                shown = repr(text) if text is None or len(text) <= 40 else repr(text[:37] + "...")
                raise SpherecodesError(f"{path} is damaged: row {number} has {column} {shown}, expected {expected}; "
                                       f"{fix}")
            return got

        def cosine(x):
            return math.isfinite(x) and -1 <= x <= 1

        d = value("d", int, lambda x: x >= 1, "a dimension >= 1")
        k = value("k", int, lambda x: x >= 2, "a number of points >= 2")
        table[(d, k)] = Measurement(
            d, k, value("tammes_max_cos", float, cosine, "a cosine in [-1, 1]"),
            value("warm_max_cos", float, cosine, "a cosine in [-1, 1] or nothing", optional=True),
            value("structured", str, lambda x: True, "a name"),
            value("tammes_seconds", float, lambda x: math.isfinite(x) and x >= 0, "a number of seconds >= 0"))
    return table


def predict_tammes(d: int, k: int, table: dict | None = None) -> Prediction:
    """What ``tammes`` from random starts reaches at (d, K), from the measured table.

    At a measured size: the measured value widened by :data:`NOISE`.
    Elsewhere: the monotone bracket of the module docstring, each end widened
    by :data:`NOISE`; an end with no measurement beyond it is None.

    Examples
    --------
    >>> predict_tammes(16, 100).source
    'measured at (16, 100)'
    >>> p = predict_tammes(16, 150)        # between (16, 100) and (16, 200)
    >>> p.source
    'between (16, 100) and (16, 200)'
    >>> round(p.low, 3), round(p.high, 3)    # 0.2058 and 0.2907 measured, widened by NOISE
    (0.202, 0.297)
    >>> predict_tammes(4096, 10**6).known
    False

    ``table`` replaces the measured table (:func:`measurements`), e.g. to
    check the prediction at a size left out of it.
    """
    table = measurements() if table is None else table
    here = table.get((d, k))
    if here is not None:
        return Prediction(here.tammes * (1 - NOISE), here.tammes * (1 + NOISE), f"measured at ({d}, {k})",
                          here.tammes, measured=True)
    # Easier sizes (more room, fewer points) bound the optimum from below, harder ones from above.
    easier = [m for m in table.values() if m.d >= d and m.k <= k]
    harder = [m for m in table.values() if m.d <= d and m.k >= k]
    low = max(easier, key=lambda m: m.tammes, default=None)
    high = min(harder, key=lambda m: m.tammes, default=None)
    if low is None and high is None:
        return Prediction(None, None, f"no measurement near ({d}, {k})")
    ends = [f"({m.d}, {m.k})" for m in (low, high) if m is not None]
    source = f"between {ends[0]} and {ends[1]}" if len(ends) == 2 else (
        f"above {ends[0]}" if low is not None else f"below {ends[0]}")
    return Prediction(None if low is None else low.tammes * (1 - NOISE),
                      None if high is None else high.tammes * (1 + NOISE), source)


def predict_warm(d: int, k: int, structured: str) -> Prediction:
    """What ``tammes`` warm-started from the structured code ``structured`` reaches at (d, K).

    Known only where it was measured from that same code; elsewhere unknown.

    Examples
    --------
    >>> predict_warm(16, 100, "extended BCH [16,7,6]").source
    'measured at (16, 100)'
    >>> predict_warm(16, 100, "some other code").known
    False
    """
    here = measurements().get((d, k))
    if here is None or here.warm is None or here.structured != structured:
        return Prediction(None, None, f"not measured from this code at ({d}, {k})")
    return Prediction(here.warm * (1 - NOISE), here.warm * (1 + NOISE), f"measured at ({d}, {k})", here.warm,
                      measured=True)
