"""Build a catalog: one bank per (d, K, method), computed as tasks on Dask distributed.

:func:`build_catalog` plans a grid of sizes, skips the sizes where a closed
form is optimal (the simplex ETF, cross-polytope vertices and the regular
polygon, see :func:`spherecodes.constructions.optimal_closed_form`; :func:`spherecodes.fetch` constructs those on the spot) and
the banks that a previous run finished, runs every remaining (d, K, method) as
one task — on a ``LocalCluster`` by default, or on an existing cluster given
its scheduler address — and publishes the folder's registry at the end.

Each task generates the code, certifies it, and writes
``<method>-d<d>-k<k>.h5`` through a temporary file renamed into place, so an
interrupted build leaves only finished banks behind and the same command
resumes it.  With a remote scheduler the output folder must be reachable
under the same path by every worker (a shared file system).
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..atomic import replace_atomically
from ..bank import check_writable_destination, list_codes, read_code, write_code
from ..certificate import one_vs_rest_distances
from ..checks import check_seed, check_sizes
from ..cluster import RESULT_TIMEOUT_S, check_cluster, dask_client, next_result
from ..code import default_code_name
from ..constructions import optimal_closed_form
from ..errors import SpherecodesError
from ..context import RunContext
from ..devices import set_cpu_threads
from ..generation import NEEDS_CLASS_DATA, OPTIMISERS, options_kinds
from ..records import compare_with_record
from ..run import generate
from .publishing import publish as publish_registry

#: Most (d, K) pairs one grid may hold: a build runs one task per pair and method.
MAX_GRID_PAIRS = 10_000


@dataclass(frozen=True)
class BuildTask:
    """One bank to build."""

    d: int
    k: int
    method: str

    @property
    def name(self) -> str:
        return default_code_name(self.method, self.d, self.k)

    @property
    def file(self) -> str:
        return f"{self.name}.h5"


@dataclass(frozen=True)
class BankOptions:
    """What every bank of a build is made with (its device, time limit and threads are its
    :class:`spherecodes.context.RunContext`).

    Attributes
    ----------
    seed : int
        Seed of every optimiser run.
    steps, restarts : int, optional
        Steps per start and random starts (record search: chains); None: the defaults for (d, K).
    effort : {"low", "default", "high", "record"}
        Passed to the methods whose options take it (``tammes``, see
        :mod:`spherecodes.options`) and ignored by the others, so one grid can
        mix them.
    improve : bool
        Search again the finished banks whose code is short of its size's
        published best-known value (:mod:`spherecodes.records`), the record
        search resuming from that code, and replace a bank only with a code of
        smaller max-cos; without it finished banks are skipped.

    Examples
    --------
    >>> BankOptions(steps=50).method_options("softmax")
    SoftmaxOptions(steps=50, restarts=None, init=None)
    """

    seed: int = 0
    steps: int | None = None
    restarts: int | None = None
    effort: str = "default"
    improve: bool = False

    def __post_init__(self):
        object.__setattr__(self, "seed", check_seed(self.seed))

    def method_options(self, method: str, init=None, adjacent=()):
        """The options object of ``method`` (:mod:`spherecodes.options`) that these settings give; ``auto`` leaves
        the bundled catalog out: the catalog is what a build makes.  ``init`` is the code a record search resumes
        from, ``adjacent`` the codes of K ± 1 and K ± 2 points some of its chains start from."""
        kind = options_kinds()[method]
        given = {"steps": self.steps, "restarts": self.restarts, "catalog": False, "effort": self.effort}
        if self.effort == "record":
            given.update(init=init, adjacent=tuple(adjacent))
        return kind(**{name: value for name, value in given.items() if name in kind.__dataclass_fields__})

    def searches_again(self, code) -> bool:
        """Whether a finished bank's ``code`` is searched again: with ``improve``, where it is above its size's
        published best-known max-cos (sizes no table lists are never searched again)."""
        comparison = compare_with_record(code.d, code.k, code.stats.max_cos) if self.improve else None
        return comparison is not None and comparison.standing == "above"


@dataclass
class BuildReport:
    """What :func:`build_catalog` did.

    Attributes
    ----------
    built, skipped : list of dict
        Per bank: ``name``, ``file``, ``d``, ``k``, ``method``, ``status``
        (``"built"``; ``"improved"``: a finished bank searched again and
        replaced; ``"skipped"``: finished by an earlier run; ``"kept"``: searched
        again, nothing better found; ``"on demand"``: ``auto`` found an exact
        code, not stored),
        ``seconds``, ``cpu_seconds`` (built banks: the CPU time of the
        worker process that built it), ``max_cos``, ``rho_lower``.
    closed_forms : list of tuple
        ``(d, K, closed form)`` for the sizes left out because a closed form is optimal.
    failed : list of tuple
        ``(name, message)`` for the tasks that raised.
    catalog : spherecodes.catalog.Catalog or None
        The published registry (``None`` when not published).
    """

    built: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    closed_forms: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    catalog: object = None


def parse_grid(text: str) -> list[tuple[int, int]]:
    """Read a grid of sizes: ``"d=16,32,64 k=100,1000"`` gives every (d, K) pair.

    Values are separated by commas; ``A..B`` is every integer from A to B.

    Examples
    --------
    >>> parse_grid("d=16,32 k=100,1000")
    [(16, 100), (32, 100), (16, 1000), (32, 1000)]
    >>> parse_grid("d=3 k=5..7")
    [(3, 5), (3, 6), (3, 7)]
    >>> parse_grid("d=3")
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: the grid needs both d=... and k=..., e.g. "d=16,32,64 k=100,1000"; got 'd=3'
    """
    values: dict[str, list[int]] = {}
    for token in text.replace(";", " ").split():
        match = re.fullmatch(r"([dDkK])=(.+)", token)
        if not match:
            raise SpherecodesError(
                f"cannot read {token!r} in the grid: write d=LIST k=LIST, e.g. \"d=16,32,64 k=100,1000\""
            )
        key = match.group(1).lower()
        if key in values:
            raise SpherecodesError(f"the grid gives {key}= twice; list all values in one {key}=A,B,C")
        values[key] = _parse_values(match.group(2), key)
    if set(values) != {"d", "k"}:
        raise SpherecodesError(f'the grid needs both d=... and k=..., e.g. "d=16,32,64 k=100,1000"; got {text!r}')
    count = len(values["d"]) * len(values["k"])
    if count > MAX_GRID_PAIRS:
        raise SpherecodesError(f"the grid has {count:,} (d, K) pairs; one build takes at most {MAX_GRID_PAIRS:,} "
                               "(split the grid into several builds into the same --out)")
    pairs = [(d, k) for k in values["k"] for d in values["d"]]
    for d, k in pairs:
        check_sizes(d, k)
    return pairs


def _parse_values(text: str, key: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        match = re.fullmatch(r"(\d+)(?:\.\.(\d+))?", part)
        if not match:
            raise SpherecodesError(f"cannot read {part!r} in {key}=...: give integers or ranges A..B")
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) else lo
        if hi < lo:
            raise SpherecodesError(f"the range {part!r} in {key}=... is empty (write the smaller end first)")
        if hi - lo >= MAX_GRID_PAIRS:
            raise SpherecodesError(f"the range {part!r} in {key}=... is too long: at most {MAX_GRID_PAIRS:,} values")
        out.extend(range(lo, hi + 1))
    # Repeated values are dropped, the first occurrence keeps its place.
    return list(dict.fromkeys(out))


def parse_methods(text: str) -> list[str]:
    """Read ``"auto,softmax"`` and check each name is ``auto`` or an optimiser of :mod:`spherecodes.generation`.

    Examples
    --------
    >>> parse_methods("tammes")
    ['tammes']
    >>> parse_methods("etf")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: a catalog is built with optimisers; 'etf' is not one (choose from auto, ...)
    """
    # A catalog code depends on (d, K) alone: methods that need class names or
    # word embeddings (privileged) belong to one data set, not to a catalog.
    optimisers = ["auto"] + [m for m in OPTIMISERS if m not in NEEDS_CLASS_DATA]
    methods = []
    for name in (m.strip() for m in text.split(",")):
        if not name:
            continue
        if name not in optimisers:
            raise SpherecodesError(
                f"a catalog is built with optimisers; {name!r} is not one (choose from {', '.join(optimisers)})"
            )
        if name not in methods:
            methods.append(name)
    if not methods:
        raise SpherecodesError("give at least one method, e.g. --methods tammes,softmax")
    return methods


def check_effort(effort: str, methods) -> None:
    """Refuse an ``effort`` that is unknown, or that no method of the build takes.

    Examples
    --------
    >>> check_effort("high", ["tammes", "softmax"])
    >>> check_effort("high", ["softmax"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: effort 'high' applies to the tammes method only; ...
    """
    # Imported here: the solvers bring torch, which the CLI loads only for the commands that compute.
    from ..solvers import EFFORTS

    if effort not in EFFORTS:
        raise SpherecodesError(f"effort must be one of {', '.join(EFFORTS)}, got {effort!r}")
    takers = [m for m in OPTIMISERS if "effort" in options_kinds()[m].__dataclass_fields__]
    if effort != "default" and not any(m in takers for m in methods):
        raise SpherecodesError(f"effort {effort!r} applies to the {' and '.join(takers)} method only; "
                               f"none of {', '.join(methods)} takes it (add tammes to --methods, or leave "
                               f"--effort out)")


def plan_build(pairs, methods) -> tuple[list[BuildTask], list[tuple[int, int, str]]]:
    """The tasks for a grid, and the sizes left out because a closed form is optimal there.

    Examples
    --------
    >>> tasks, closed = plan_build([(3, 5), (3, 7)], ["tammes"])
    >>> [t.name for t in tasks], closed
    (['tammes-d3-k7'], [(3, 5, 'cross-polytope')])
    """
    tasks, closed = [], []
    for d, k in pairs:
        optimal = optimal_closed_form(d, k)
        if optimal is not None:
            closed.append((d, k, optimal))
            continue
        tasks.extend(BuildTask(d, k, m) for m in methods)
    return tasks, closed


def finished_code(path, task: BuildTask):
    """The code of ``path`` if it is a valid bank holding one certified code of the task's size and method, else
    None."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        rows = list_codes(path)
        if len(rows) != 1:
            return None
        code = read_code(path, rows[0]["name"])
    except SpherecodesError:
        return None
    finished = code.method == task.method and (code.d, code.k) == (task.d, task.k) and code.certificate is not None
    return code if finished else None


def is_done(path, task: BuildTask, options: BankOptions) -> bool:
    """Whether the task has nothing to do: its bank is finished and not to be searched again."""
    code = finished_code(path, task)
    return code is not None and not options.searches_again(code)


def build_bank(d: int, k: int, method: str, out: str, options: BankOptions | None = None, *,
               context: RunContext | None = None) -> dict:
    """Generate, certify and store one catalog bank (the body of one Dask task).

    Writes ``<out>/<method>-d<d>-k<k>.h5`` atomically and returns a summary;
    a bank already finished there is left as it is (``status`` ``"skipped"``),
    unless ``options.improve`` searches it again (``"improved"`` where the new
    code has a smaller max-cos and replaces it, ``"kept"`` otherwise, with the
    search's best as ``searched_max_cos``).
    Where ``auto`` returns an exact code (a structured code or a closed
    form), which ``fetch`` builds on demand, nothing is written (``status``
    ``"on demand"``).

    Parameters
    ----------
    d, k : int
        The size.
    method : str
        ``auto`` or an optimiser (:func:`parse_methods`).
    out : str or Path
        Folder of the banks (created if missing).
    options : BankOptions, optional
        Seed, steps, restarts and effort.
    context : spherecodes.context.RunContext, optional
        The device (of the optimiser and the certificate), the memory limit,
        the bank's time limit, counted from when this call starts, and the
        torch threads of the process that runs it (None: as they are).

    Examples
    --------
    >>> import tempfile
    >>> from spherecodes.context import RunContext
    >>> out, options = tempfile.mkdtemp(), BankOptions(steps=50, restarts=1)
    >>> build_bank(3, 7, "tammes", out, options, context=RunContext(device="cpu"))["status"]
    'built'
    >>> build_bank(3, 7, "tammes", out, options, context=RunContext(device="cpu"))["status"]
    'skipped'
    """
    options = options if options is not None else BankOptions()
    context = context if context is not None else RunContext()
    task = BuildTask(d, k, method)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / task.file
    summary = {"name": task.name, "file": task.file, "d": d, "k": k, "method": method}
    previous = finished_code(path, task)
    if previous is not None and not options.searches_again(previous):
        return {**summary, "status": "skipped", "seconds": 0.0, "max_cos": previous.stats.max_cos,
                "rho_lower": previous.certificate.rho_lower}
    if context.threads is not None:
        set_cpu_threads(context.threads, torch_only=True)
    started, cpu_started = time.perf_counter(), time.process_time()
    # The time limit counts from here: a task's context was made in another process, whose clock is not this one's.
    context = replace(context, started=started)
    init = previous.prototypes if previous is not None else None
    code = generate(d, k, method, options.method_options(method, init, _adjacent_codes(folder, d, k, method, options)),
                    seed=options.seed, context=context)
    if code.settings.get("auto", {}).get("winner_kind") in ("structured", "closed-form"):
        # An exact code: fetch builds it on demand (spherecodes.catalog.on_demand), so nothing is stored.
        return {**summary, "status": "on demand", "seconds": time.perf_counter() - started,
                "max_cos": code.stats.max_cos, "rho_lower": None}
    if previous is not None and code.stats.max_cos >= previous.stats.max_cos:
        return {**summary, "status": "kept", "seconds": time.perf_counter() - started,
                "cpu_seconds": time.process_time() - cpu_started, "max_cos": previous.stats.max_cos,
                "rho_lower": previous.certificate.rho_lower, "searched_max_cos": code.stats.max_cos}
    code.certificate = one_vs_rest_distances(code.prototypes, device=context.device, max_memory=context.max_memory,
                                             orbit=code.orbit)
    with replace_atomically(path, suffix=".h5") as tmp:
        tmp.unlink()  # write_code makes a new bank, not one inside the empty placeholder
        write_code(tmp, code)
    # The CPU time of the worker process (one task at a time): what the bank cost, whatever the machine's load.
    return {**summary, "status": "built" if previous is None else "improved", "seconds": time.perf_counter() - started,
            "cpu_seconds": time.process_time() - cpu_started, "max_cos": code.stats.max_cos,
            "rho_lower": code.certificate.rho_lower}


def _adjacent_codes(folder: Path, d: int, k: int, method: str, options: BankOptions) -> tuple:
    """A record search's codes of K ± 1 and K ± 2 points: the finished banks of those sizes in ``folder`` (none
    for a method whose options take no adjacent codes)."""
    if options.effort != "record" or "adjacent" not in getattr(options_kinds()[method], "__dataclass_fields__", {}):
        return ()
    tasks = [BuildTask(d, n, method) for n in (k - 1, k + 1, k - 2, k + 2) if n >= 2]
    codes = [finished_code(folder / task.file, task) for task in tasks]
    return tuple(code.prototypes for code in codes if code is not None)


def _build_bank_or_error(d: int, k: int, method: str, out: str, options: BankOptions, context: RunContext) -> dict:
    """:func:`build_bank` for a worker: bad input comes back as the task's result, not as a failed task.

    Dask logs every failed task with its traceback on the worker's standard
    error; a :class:`SpherecodesError` (a size that cannot fit, say) is for
    the user to fix, and its one line is all they need.
    """
    try:
        return build_bank(d, k, method, out, options, context=context)
    except SpherecodesError as err:
        return {"status": "failed", "error": str(err)}


def build_catalog(pairs, methods, out, options: BankOptions | None = None, *, context: RunContext | None = None,
                  workers: int | None = None, scheduler: str | None = None, processes: bool = True,
                  trust_scheduler: bool = False, publish: bool = True) -> BuildReport:
    """Build one bank per (d, K, method) on Dask distributed, then publish the folder's registry.

    Parameters
    ----------
    pairs : list of (d, K)
        From :func:`parse_grid`.
    methods : list of str
        Optimisers (:func:`parse_methods`).
    out : str or Path
        Folder of the banks (created if missing).
    options : BankOptions, optional
        Seed, steps, restarts and effort of every bank (:func:`build_bank`).
        An ``effort`` other than ``"default"`` needs at least one method that
        takes it in ``methods``; ``"record"`` runs the record search for each
        bank (:func:`spherecodes.solvers.record_search`) for the context's
        ``time_limit`` or ``restarts`` chains, one of which is needed.
    context : spherecodes.context.RunContext, optional
        Every bank's device, memory limit and time limit (each bank's own,
        counted from its start); its ``progress``, if any, is called as
        ``progress(done, total, summary)`` after every bank.  Each task's
        threads are the workers' share of the cores (:func:`spherecodes.cluster.dask_client`).
    workers : int, optional
        Workers of the local cluster, at most one per task; default one per CPU core.
    scheduler : str, optional
        Address of an existing Dask scheduler (``tcp://host:8786``) to run on
        instead of a local cluster: on this machine, or reached over
        ``tls://`` (:func:`spherecodes.cluster.check_scheduler_trust`).
    processes : bool
        Local cluster only: workers in separate processes (the default) or as
        threads of this process.
    trust_scheduler : bool
        Run on a scheduler on another machine over a plain connection (it can
        run any code in this process: Dask unpickles what it sends).
    publish : bool
        Write ``registry.json`` for the folder when the tasks are done.

    Returns
    -------
    BuildReport

    Raises
    ------
    SpherecodesError
        Bad arguments, a scheduler that cannot be reached, or tasks that
        failed (after publishing the banks that were finished).

    Examples
    --------
    >>> import tempfile
    >>> report = build_catalog([(3, 5), (3, 7)], ["tammes"], tempfile.mkdtemp(), BankOptions(steps=50, restarts=1),
    ...                        context=RunContext(device="cpu"), workers=1, processes=False)
    >>> [b["name"] for b in report.built], report.closed_forms
    (['tammes-d3-k7'], [(3, 5, 'cross-polytope')])
    """
    options = options if options is not None else BankOptions()
    context = context if context is not None else RunContext()
    check_cluster(workers, scheduler, trust_scheduler)
    check_effort(options.effort, methods)
    if options.effort == "record" and context.time_limit is None and options.restarts is None:
        raise SpherecodesError("effort 'record' searches each size until its budget is spent: give --time-limit "
                               "SECONDS (per bank) or --restarts N (chains per bank)")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise SpherecodesError(f"{out} exists and is not a directory; --out names the catalog folder")
    if out.is_symlink() and not out.exists():  # exists() follows the link: a loop or a link to nowhere
        raise SpherecodesError(f"{out} is a symbolic link that leads to no directory (a loop, or a missing target); "
                               "--out names the catalog folder: choose another")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise SpherecodesError(f"cannot create the catalog folder {out} ({err.strerror or err}); choose another --out") \
            from None
    check_writable_destination(out / "registry.json")
    tasks, closed = plan_build(pairs, methods)
    report = BuildReport(closed_forms=closed)
    todo = []
    for task in tasks:
        if is_done(out / task.file, task, options):
            report.skipped.append({"name": task.name, "file": task.file, "d": task.d, "k": task.k,
                                   "method": task.method, "status": "skipped"})
        else:
            todo.append(task)
    total = len(tasks)
    done = len(report.skipped)
    progress, time_limit = context.progress, context.time_limit
    if progress is not None:
        for position, summary in enumerate(report.skipped, start=1):
            progress(position, total, summary)
    if todo:
        # Each bank within its deadline: its own time limit and ten minutes for the certificate and the write,
        # and at least the cluster's default wait for a result.
        wait = max(RESULT_TIMEOUT_S, 2 * time_limit + 600) if time_limit is not None else RESULT_TIMEOUT_S
        with dask_client(scheduler, workers, processes, len(todo), trust=trust_scheduler) as (client, threads):
            # What travels to the workers: no callbacks of this process.
            task_context = replace(context, progress=None, announce=None, threads=threads)
            futures = {
                client.submit(_build_bank_or_error, t.d, t.k, t.method, str(out.resolve()), options, task_context,
                              key=f"spherecodes-{t.name}-{uuid.uuid4().hex[:8]}", pure=False): t
                for t in todo
            }
            pending = set(futures)
            try:
                while pending:
                    # A bank that failed must not stop the others; no bank finishing within the wait does.
                    future, summary = next_result(pending, wait, scheduler, f"{len(pending)} unfinished banks",
                                                  failed="return")
                    if isinstance(summary, SpherecodesError):
                        summary = {"status": "failed", "error": str(summary)}
                    pending.discard(future)
                    task = futures[future]
                    done += 1
                    if summary["status"] == "failed":
                        message = summary["error"].splitlines()[0]
                        report.failed.append((task.name, message))
                        summary = {"name": task.name, "status": "failed", "error": message}
                    else:
                        written = summary["status"] in ("built", "improved")
                        (report.built if written else report.skipped).append(summary)
                    if progress is not None:
                        progress(done, total, summary)
            finally:
                client.cancel(list(pending))
    if publish:
        report.catalog = publish_registry(out)
    if report.failed:
        listed = "; ".join(f"{name}: {message}" for name, message in report.failed[:5])
        more = f" (and {len(report.failed) - 5} more)" if len(report.failed) > 5 else ""
        raise SpherecodesError(
            f"{len(report.failed)} of {total} banks failed: {listed}{more}; the finished banks are kept"
            + (" and published" if publish else "") + ", and running the same command again retries the rest"
        )
    return report
