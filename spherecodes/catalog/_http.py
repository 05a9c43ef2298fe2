"""Bounded HTTP downloads: streamed to disk and refused at the first byte past a limit.

A catalog says how large each of its files is, so a download never needs to
read more: the body is streamed into a file in chunks no larger than what is
still allowed plus one byte, and the first byte past the limit ends it.  A
``Content-Length`` above the limit is refused before any of the body is read.
Besides the wait for each read, the whole download has a deadline, so a server
that sends one byte a second (which never trips the per-read timeout) is cut
off too.  Every failure becomes one line that says what happened (an HTTP status, a
timeout, an unreachable host, a transfer cut short, too many bytes).
"""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path

from ..errors import SpherecodesError
from ._schema import redact_text, redact_url

__all__ = ["CHUNK_BYTES", "stream_download"]

#: Most bytes read from the network at a time.
CHUNK_BYTES = 1 << 16


def stream_download(url: str, destination: Path, *, limit: int, timeout: float, what: str,
                    deadline: float = float("inf"), deadline_name: str = "") -> tuple[int, str]:
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
        Seconds to wait for the connection and for each read.
    what : str
        Says where the limit comes from in messages, e.g. ``"the catalog lists for it"``.
    deadline : float
        Seconds the whole download may take, from the request on; checked
        after each read, so it ends at most one read (``timeout``) late.
    deadline_name : str
        What sets the deadline (an environment variable), for the message.

    Returns
    -------
    size, sha256 : int, str
        Bytes written and their SHA-256.

    Raises
    ------
    SpherecodesError
        An HTTP error status, a timeout, an unreachable server, a transfer cut
        short, a download past its deadline, or a body larger than ``limit``
        (refused at the first byte past it).
    """
    import requests

    shown = redact_url(url)  # what messages show: a password or token in the URL is sent, never printed
    began = time.monotonic()
    try:
        response = requests.get(url, stream=True, timeout=timeout, headers={"Accept-Encoding": "identity"})
    except requests.RequestException as err:
        raise SpherecodesError(_failure(url, err, timeout)) from None
    with response:
        if response.status_code >= 400:
            reason = response.reason or ""
            raise SpherecodesError(
                f"downloading {shown} failed: HTTP {response.status_code} {reason}".rstrip() + "; nothing was cached"
            )
        declared = (response.headers.get("Content-Length") or "").strip()
        if declared and not declared.isdigit():  # a negative length would leave the reader waiting for the timeout
            raise SpherecodesError(f"{shown} announces the length {declared[:40]!r}, which is not a number of bytes; "
                                   "refused before reading it; nothing was cached")
        if declared.isdigit() and int(declared) > limit:
            raise SpherecodesError(
                f"{shown} announces {int(declared)} bytes, more than the {limit} bytes {what}; refused before "
                "reading it; nothing was cached"
            )
        digest = hashlib.sha256()
        size = 0
        with open(destination, "wb") as fh:
            while True:
                try:
                    # read1: what has arrived, after one wait at most; read() would wait for the whole chunk.
                    chunk = response.raw.read1(min(CHUNK_BYTES, limit - size + 1), decode_content=True)
                except Exception as err:  # urllib3's read errors: timeouts, connections cut short
                    raise SpherecodesError(_failure(url, err, timeout, size, declared)) from None
                if not chunk:
                    break
                if time.monotonic() - began > deadline:
                    of = f" of {declared}" if declared.isdigit() else ""
                    by = f" ({deadline_name})" if deadline_name else ""
                    raise SpherecodesError(
                        f"downloading {shown} failed: not finished within the deadline of {deadline:g} s{by}, after "
                        f"{size + len(chunk)}{of} bytes; nothing was cached"
                    )
                size += len(chunk)
                if size > limit:
                    raise SpherecodesError(
                        f"{shown} sent more than the {limit} bytes {what}; stopped at byte {limit + 1}; "
                        "nothing was cached"
                    )
                fh.write(chunk)
                digest.update(chunk)
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
