"""Bounded HTTP downloads: streamed to disk and refused at the first byte past a limit.

A catalog says how large each of its files is, so a download never needs to
read more (:func:`stream_download`).  A watchdog shuts the connection down at
the deadline, so that a server that drips bytes (which never trips the
per-read timeout) is cut off on time, in its headers as in its body.  Every
failure becomes one line that says what happened.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import socket
import threading
import time
from pathlib import Path

from ..errors import SpherecodesError
from ..registry import redact_text, redact_url

__all__ = ["CHUNK_BYTES", "stream_download"]

#: Most bytes read from the network at a time.
CHUNK_BYTES = 1 << 16


class _Watchdog:
    """Shuts down the sockets of one download when its time is up, so that a blocked read returns at once;
    ``fired`` then holds the message saying why."""

    def __init__(self):
        self.sockets: list[socket.socket] = []
        self.fired: str | None = None
        self.timer: threading.Timer | None = None

    def arm(self, seconds: float, message: str) -> None:
        self.cancel()
        self.timer = threading.Timer(max(0.0, seconds), self._fire, (message,))
        self.timer.daemon = True
        self.timer.start()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()

    def _fire(self, message: str) -> None:
        self.fired = message
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)  # also for TLS: the shared descriptor


def _watched_session(watchdog: _Watchdog):
    """A requests session whose connections tell ``watchdog`` their sockets (proxies included; not SOCKS)."""
    import requests
    import urllib3

    class Connection(urllib3.connection.HTTPConnection):
        def connect(self):
            super().connect()
            watchdog.sockets.append(self.sock)

    class TLSConnection(Connection, urllib3.connection.HTTPSConnection):  # Connection.connect, then TLS's
        pass

    pools = {"http": type("Pool", (urllib3.HTTPConnectionPool,), {"ConnectionCls": Connection}),
             "https": type("TLSPool", (urllib3.HTTPSConnectionPool,), {"ConnectionCls": TLSConnection})}

    class Adapter(requests.adapters.HTTPAdapter):
        def init_poolmanager(self, *args, **kwargs):
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = pools

        def proxy_manager_for(self, proxy, **kwargs):
            manager = super().proxy_manager_for(proxy, **kwargs)
            if isinstance(manager, urllib3.ProxyManager):
                manager.pool_classes_by_scheme = pools
            return manager

    session = requests.Session()
    for prefix in ("http://", "https://"):
        session.mount(prefix, Adapter())
    return session


def stream_download(url: str, destination: Path, *, limit: int, timeout: float, what: str,
                    deadline: float = float("inf"), deadline_name: str = "", min_rate: float = 0.0,
                    rate_grace: float = 60.0) -> tuple[int, str]:
    """Write the body at ``url`` into ``destination``, refusing more than ``limit`` bytes.

    Parameters
    ----------
    url : str
        An http(s) URL.
    destination : Path
        File to write (created or truncated); the caller removes it on failure.
    limit : int
        Most bytes the body may have.
    timeout : float
        Seconds to wait for the connection and for each read; the response
        headers must be complete within twice that.
    what : str
        Says where the limit comes from in messages, e.g. ``"the catalog lists for it"``.
    deadline : float
        Seconds the whole download may take, from the request on, response
        headers included: the connection is shut down when it passes.
    deadline_name : str
        What sets the deadline (an environment variable), for the message.
    min_rate : float
        Bytes per second the transfer must average, checked after each read: ``n`` bytes may take
        ``rate_grace + n / min_rate`` seconds (the deadline is the cap).
    rate_grace : float
        Seconds before the rate counts (the connection's start, a slow first byte).

    Returns
    -------
    size, sha256 : int, str
        Bytes written and their SHA-256.

    Raises
    ------
    SpherecodesError
        An HTTP error status, a timeout, an unreachable server, a transfer cut
        short, past its deadline or slower than ``min_rate``, or a body larger
        than ``limit``: a ``Content-Length`` above it is refused before the body
        is read, and the body at the first byte past it.
    """
    import requests

    shown = redact_url(url)  # what messages show: a password or token in the URL is sent, never printed
    by = f" ({deadline_name})" if deadline_name else ""
    watchdog = _Watchdog()
    began = time.monotonic()

    def left() -> float:
        return deadline - (time.monotonic() - began)

    size, declared = 0, ""
    # The response headers within twice the wait for a read (a server dripping them never trips that wait; one
    # silent throughout trips it first, and is reported as such), and within the deadline.
    headers = 2 * timeout
    if deadline <= headers:
        watchdog.arm(left(), f"downloading {shown} failed: no response within the deadline of {deadline:g} s{by}; "
                             "nothing was cached")
    else:
        watchdog.arm(headers, f"downloading {shown} failed: the response headers did not arrive within {headers:g} s "
                              "(the server sends them too slowly); nothing was cached")
    session = _watched_session(watchdog)
    try:
        try:
            response = session.get(url, stream=True, timeout=timeout, headers={"Accept-Encoding": "identity"})
        except requests.RequestException as err:
            raise SpherecodesError(watchdog.fired or _failure(url, err, timeout)) from None
        if watchdog.fired is not None:  # cut off in the headers, which the client then took as complete
            response.close()
            raise SpherecodesError(watchdog.fired)
        with response:
            watchdog.arm(left(), "")  # the message says how far it got: written when it fires, below
            if response.status_code >= 400:
                reason = response.reason or ""
                raise SpherecodesError(
                    f"downloading {shown} failed: HTTP {response.status_code} {reason}".rstrip() + "; nothing was cached"
                )
            declared = (response.headers.get("Content-Length") or "").strip()
            if declared and not declared.isdigit():  # a negative length would leave the reader waiting for the timeout
                raise SpherecodesError(f"{shown} announces the length {declared[:40]!r}, which is not a number of "
                                       "bytes; refused before reading it; nothing was cached")
            if declared.isdigit() and int(declared) > limit:
                raise SpherecodesError(
                    f"{shown} announces {int(declared)} bytes, more than the {limit} bytes {what}; refused before "
                    "reading it; nothing was cached"
                )
            of = f" of {declared}" if declared.isdigit() else ""
            digest = hashlib.sha256()
            with open(destination, "wb") as fh:
                while True:
                    try:
                        # read1: what has arrived, after one wait at most; read() would wait for the whole chunk.
                        chunk = response.raw.read1(min(CHUNK_BYTES, limit - size + 1), decode_content=True)
                    except Exception as err:  # urllib3's read errors: timeouts, connections cut short (or shut)
                        if watchdog.fired is not None:
                            chunk = b""
                        else:
                            raise SpherecodesError(_failure(url, err, timeout, size, declared)) from None
                    if watchdog.fired is not None or left() < 0:
                        raise SpherecodesError(
                            f"downloading {shown} failed: not finished within the deadline of {deadline:g} s{by}, "
                            f"after {size + len(chunk)}{of} bytes; nothing was cached"
                        )
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > limit:
                        raise SpherecodesError(
                            f"{shown} sent more than the {limit} bytes {what}; stopped at byte {limit + 1}; "
                            "nothing was cached"
                        )
                    elapsed = time.monotonic() - began
                    if min_rate > 0 and elapsed > rate_grace + size / min_rate:
                        raise SpherecodesError(
                            f"downloading {shown} failed: {size}{of} bytes in {elapsed:.0f} s, slower than the "
                            f"{min_rate:g} bytes/s a download must keep after its first {rate_grace:g} s; nothing "
                            "was cached"
                        )
                    fh.write(chunk)
                    digest.update(chunk)
    finally:
        watchdog.cancel()
        session.close()
    return size, digest.hexdigest()


def _failure(url: str, err: Exception, timeout: float, size: int = 0, declared: str = "") -> str:
    """One line saying why a request or a read failed, the secrets of ``url`` hidden (in the library's text too)."""
    import requests
    import urllib3

    text, url = _short(err, url), redact_url(url)

    if isinstance(err, (requests.Timeout, urllib3.exceptions.TimeoutError)):
        after = f" after {size} bytes" if size else ""
        return f"downloading {url} failed: no answer within {timeout:g} s{after}; nothing was cached"
    if isinstance(err, urllib3.exceptions.ProtocolError) or (isinstance(err, requests.ConnectionError) and size):
        of = f" of {declared}" if declared.isdigit() else ""
        incomplete = re.search(r"IncompleteRead\((\d+) bytes read", str(err))
        got = int(incomplete.group(1)) if incomplete else size
        return (f"downloading {url} failed: the transfer was cut short after {got}{of} bytes (the server closed "
                "the connection early); nothing was cached")
    if isinstance(err, requests.ConnectionError):
        return f"cannot reach {url} ({text}); nothing was cached (--offline uses what is already cached)"
    return f"downloading {url} failed ({text}); nothing was cached"


def _short(err: Exception, url: str) -> str:
    """The first line of a library's message, the secrets of ``url`` hidden before it is cut to length."""
    text = redact_text(str(err).splitlines()[0] if str(err) else type(err).__name__, url)
    return text if len(text) <= 160 else text[:157] + "..."
