"""What the commands share besides option types: JSON output, progress on stderr, certifying, reports."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import threading
import time
from pathlib import Path

import click

from ..bank import check_writable_destination, read_code, read_estimate
from ..certificate import DEFAULT_TOL, certificate_estimate, one_vs_rest_distances, verify_witness
from ..cluster import check_cluster
from ..claims import check_claims
from ..context import RunContext
from ..errors import SpherecodesError
from ..memory import ABSURD_SECONDS
from ..report import code_report, format_code_report, format_duration, printable
from .main import THREADS_KEY


#: What --scheduler's help says of trust and deadlines (certify, catalog build).
SCHEDULER_HELP = ("A scheduler on another machine must be reached over tls:// with Dask's TLS configuration, or "
                  "trusted with --trust-scheduler: Dask unpickles what a scheduler sends, so it can run any code "
                  "here. Deadlines: 30 s to connect and complete the handshake, 60 s for a worker to appear, then "
                  "each task's result within 1 h.")

#: --trust-scheduler's help.
TRUST_SCHEDULER_HELP = ("Connect to a --scheduler on another machine over a plain tcp:// or ws:// connection: Dask's "
                        "protocol unpickles what the scheduler sends, so it (and anyone on the network between) can "
                        "run any code in this process. Give it only for a scheduler and a network you trust.")


def check_cluster_flags(workers: int | None, scheduler: str | None, trusted: bool) -> None:
    """Refuse as bad usage, before any work, what :func:`spherecodes.cluster.check_cluster` refuses."""
    try:
        check_cluster(workers, scheduler, trusted)
    except SpherecodesError as err:
        raise click.UsageError(err.for_cli()) from None


def print_json(data) -> None:
    """Print ``data`` as indented JSON, NaN and infinity (a run's energy, say) as strings (:func:`_finite`)."""
    click.echo(json.dumps(_finite(data), indent=2, allow_nan=False))


def _finite(value):
    """``value`` with every non-finite float as the string JSON's extensions write: NaN, Infinity, -Infinity."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def check_bank_rewritable(path: Path) -> None:
    """Refuse, before any work, a bank that rm or certify --write would rewrite in place but cannot."""
    check_writable_destination(path, fix="work on a copy in a writable directory")


def lock_notice(enabled: bool):
    """What a bank writer calls when it waits for another process's lock: one line on stderr (or nothing)."""
    return (lambda line: click.echo(printable(line), err=True)) if enabled else None


def run_context(flags: dict, started: float | None = None, progress=None, announce=None) -> RunContext:
    """The command's :class:`spherecodes.context.RunContext` from its flags (``--device``, ``--max-memory``,
    ``--time-limit``, those it has) and the thread count ``--threads`` set."""
    meta = click.get_current_context().meta
    return RunContext(device=flags.get("device", "auto"), max_memory=flags.get("max_memory"),
                      time_limit=flags.get("time_limit"),
                      started=time.perf_counter() if started is None else started, progress=progress,
                      announce=announce, threads=meta.get(THREADS_KEY))


def tell(quiet: bool, as_json: bool) -> bool:
    """Whether to print estimates on stderr: not with --quiet, and with --json only to a terminal."""
    return not quiet and (not as_json or sys.stderr.isatty())


def certify(code, context: RunContext, *, quiet: bool, tol: float = DEFAULT_TOL, client=None):
    """The certificate of a code on the ``context``'s device and within its memory limit, with its estimate and a
    progress bar on stderr unless ``quiet``; the QP's blocks as tasks on a Dask ``client``'s cluster if given.
    (A run with a time limit certifies within its deadline: :func:`spherecodes.run.certify_within`.)"""
    device, max_memory = context.device, context.max_memory
    if not quiet:  # the certificate checks its memory itself before allocating
        click.echo(certificate_estimate(code.prototypes, device=device, max_memory=max_memory,
                                        orbit=code.orbit).describe(), err=True)
    with ProgressBar(enabled=not quiet) as progress:
        return one_vs_rest_distances(code.prototypes, tol=tol, device=device, max_memory=max_memory,
                                     progress=progress, orbit=code.orbit, client=client)


#: A bank read expected to take this long (or one bounded by --max-memory) has its estimate line printed first.
NOTABLE_READ_SECONDS = 1.0


def read_with_certificate_check(bank, name: str | None, *, max_memory: float | None = None, estimate: bool = False,
                                progress: bool = False):
    """A code of ``bank`` with every stored figure checked against its rows: the code, the error saying why its
    stored certificate does not check (or None), what was verified, and the :class:`spherecodes.claims.Claims`.

    With ``estimate``, what reading and checking take (:func:`spherecodes.bank.read_estimate`) is printed on
    stderr first where it is worth a line (``--max-memory`` given, or :data:`NOTABLE_READ_SECONDS` or more); a
    code that cannot fit ``max_memory``, or would take more than a day, is refused before it is read.

    A certificate that does not check is dropped, so that what is shown treats rho as uncertified; the caller
    shows what it can, then reports the error.  The code carries the statistics recomputed from the rows
    (:func:`spherecodes.claims.check_claims`) and only the stored claims that agree with them; the Claims name
    those that do not.  The third value (``report["verified"]``) says what reading checked and how long it took.
    """
    expected = read_estimate(bank, name, max_memory=max_memory, statistics=True)
    if expected.seconds > ABSURD_SECONDS:
        raise SpherecodesError(f"{expected.what}: estimated at ~{format_duration(expected.seconds)}; not started "
                               f"(over {format_duration(ABSURD_SECONDS)})")
    if estimate and (max_memory is not None or expected.seconds >= NOTABLE_READ_SECONDS):
        click.echo(expected.describe(), err=True)
    began = time.perf_counter()
    code = read_code(bank, name, verify_certificate=False, max_memory=max_memory)
    verified = {"checksum_seconds": time.perf_counter() - began, "certificate": None, "certificate_seconds": 0.0,
                "orbit": code.orbit is not None, "certificate_by_orbit": code.certificate is not None
                and code.certificate.orbit is not None}
    verified.update(code.orbit.checked_on_read() if code.orbit is not None else {"orbit_prefix": False,
                                                                                "orbit_z4": False})
    bad_certificate = None
    if code.certificate is not None:
        began = time.perf_counter()
        try:
            verify_witness(code.prototypes, code.certificate, where=f"code {code.name!r} in {bank}", orbit=code.orbit)
            verified.update(certificate=True)
        except SpherecodesError as err:
            code.certificate = None
            verified.update(certificate=False)
            bad_certificate = err
        verified.update(certificate_seconds=time.perf_counter() - began)
    began = time.perf_counter()
    with ProgressBar(enabled=progress and expected.seconds >= NOTABLE_READ_SECONDS) as bar:
        claims = check_claims(code, max_memory=max_memory, progress=bar)
    verified.update(statistics_seconds=time.perf_counter() - began)
    return claims.code, bad_certificate, verified, claims


def show_report(code, bank: str | None, as_json: bool, **parts) -> None:
    """Print a code's report (:func:`spherecodes.report.code_report`) with the ``parts`` given (None: left out): its
    ``semantic`` part, what reading it ``verified`` (:func:`read_with_certificate_check`), where it was ``fetched``."""
    report = code_report(code, bank=bank)
    report.update({key: part for key, part in parts.items() if part is not None})
    if as_json:
        print_json(report)
    else:
        click.echo(format_code_report(report))


def _bar(fraction: float, width: int = 24) -> str:
    filled = int(round(fraction * width))
    return "#" * filled + "-" * (width - filled)


class ProgressBar:
    """Draws progress on stderr: stage bar, where it is, rate, elapsed time and time left.

    Takes the :class:`spherecodes.solvers.Progress` of an optimiser, the
    :class:`spherecodes.stats.StatisticsProgress` of the statistics and the
    :class:`spherecodes.certificate.CertificateProgress` of a certificate.  The
    rate over the current stage gives the time left in it.  Between updates (a
    certificate block can take minutes) a heartbeat redraws the elapsed time
    every second.  Drawn only on a terminal (a log would fill with carriage
    returns), at most ten times a second; a no-op when disabled.
    """

    #: Seconds without an update after which the heartbeat redraws the line.
    HEARTBEAT = 1.0

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self.last_draw = 0.0
        self.drawn = False
        self.stage = None
        self.stage_start = (0, 0.0)
        self.latest = None  # (update, time.monotonic() when it came)
        self.began = time.monotonic()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.ticker = None

    def __enter__(self):
        if self.enabled:
            self.ticker = threading.Thread(target=self._beat, daemon=True)
            self.ticker.start()
        return self

    def __call__(self, update) -> None:
        if not self.enabled:
            return
        with self.lock:
            self.latest = (update, time.monotonic())
            self._draw(update)

    def _draw(self, update, force: bool = False) -> None:
        stage = (type(update).__name__, getattr(update, "restart", 0), update.steps)
        if stage != self.stage or update.step < self.stage_start[0]:
            self.stage, self.stage_start = stage, (update.step, update.elapsed)
        now = time.monotonic()
        if now - self.last_draw < 0.1 and update.step < update.steps and not force:
            return
        self.last_draw = now
        fraction = min(1.0, update.step / max(1, update.steps))
        bar = _bar(fraction)
        done, seconds = update.step - self.stage_start[0], update.elapsed - self.stage_start[1]
        rate = done / seconds if done > 0 and seconds > 0 else None
        if hasattr(update, "max_cos"):
            where = (f"start {min(update.restart + 1, update.restarts)}/{update.restarts}"
                     + (f"  rho {update.rho:.6f}" if update.rho is not None else "")
                     + f"  max-cos {update.max_cos:.6f}")
            unit = "steps"
        elif type(update).__name__ == "StatisticsProgress":
            where, unit = f"statistics: rows {update.step}/{update.steps}", "rows"
        else:
            where, unit = f"classes {update.step}/{update.steps}", "classes"
        speed = f"  {rate:.3g} {unit}/s" if rate else ""
        left = f"  {format_duration((update.steps - update.step) / rate)} left" if rate else ""
        click.echo(f"\r\033[K[{bar}] {fraction:4.0%}  {where}{speed}  {update.elapsed:6.1f} s{left}", nl=False, err=True)
        self.drawn = True

    def _beat(self) -> None:
        """Redraw the elapsed time while no update comes (the thread started by ``with``)."""
        while not self.stop.wait(self.HEARTBEAT):
            with self.lock:
                now = time.monotonic()
                if now - self.last_draw < self.HEARTBEAT:
                    continue
                if self.latest is None:
                    self.last_draw = now
                    click.echo(f"\r\033[K  working: {now - self.began:6.0f} s (progress comes with the first "
                               "finished block)", nl=False, err=True)
                    self.drawn = True
                else:
                    update, seen = self.latest
                    self._draw(dataclasses.replace(update, elapsed=update.elapsed + now - seen), force=True)

    def _end_line(self) -> None:
        if self.drawn:
            click.echo(err=True)
            self.drawn = False

    def __exit__(self, *exc):
        self.stop.set()
        if self.ticker is not None:
            self.ticker.join()
        self._end_line()
        return False

    def announcer(self, enabled: bool):
        """A callable that prints a phase's first line on stderr (ending the bar drawn before it), or a no-op."""

        def announce(line: str) -> None:
            if not enabled:
                return
            with self.lock:
                self._end_line()
                self.latest, self.began, self.last_draw = None, time.monotonic(), time.monotonic()
                click.echo(line, err=True)

        return announce


class BuildProgress:
    """Progress of a catalog build on stderr: a bar on a terminal, one line per bank otherwise."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.drawn = False

    def __call__(self, done: int, total: int, summary: dict) -> None:
        if not self.enabled:
            return
        status = summary["status"]
        if status in ("built", "improved", "kept"):
            what = (f"{summary['name']} {status} in {summary['seconds']:.1f} s ({summary['cpu_seconds']:.1f} s CPU) "
                    f"(max-cos {summary['max_cos']:.6f}, rho {summary['rho_lower']:.6f})")
            if status == "kept":
                what += f"; the search's best was {summary['searched_max_cos'] - summary['max_cos']:.2g} above it"
        elif status == "skipped":
            what = f"{summary['name']} finished before, skipped"
        elif status == "on demand":
            what = (f"{summary['name']}: auto found an exact code (max-cos {summary['max_cos']:.6f}), "
                    "built on demand by fetch, not stored")
        else:
            what = f"{summary['name']} FAILED: {summary.get('error', '')}"
        if self.tty:
            click.echo(f"\r\033[K[{_bar(done / max(1, total))}] {done}/{total}  {what}", nl=False, err=True)
            self.drawn = True
        else:
            click.echo(f"[{done}/{total}] {what}", err=True)

    close = ProgressBar._end_line
