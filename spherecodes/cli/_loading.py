"""Ctrl-C while the tool loads a command's libraries: one line, not a traceback through the imports."""

import contextlib
import os
import sys

#: What Ctrl-C while the tool is still loading its libraries prints: its line for any Ctrl-C before a write.
LOADING_INTERRUPTED = "Interrupted; nothing was written.\n"


def _interrupted_while_loading(hook_args, previous=sys.unraisablehook):
    """End as for any Ctrl-C while loading, where Ctrl-C lands in a callback Python cannot raise from (the import
    machinery's clean-up of its module locks), which would print a traceback and let the import go on."""
    if not issubclass(hook_args.exc_type, KeyboardInterrupt):
        previous(hook_args)
        return
    sys.stderr.write(LOADING_INTERRUPTED)
    sys.stderr.flush()
    os._exit(130)


@contextlib.contextmanager
def unraisable_interrupts():
    """Around imports: a Ctrl-C that Python cannot raise ends the process with :data:`LOADING_INTERRUPTED` and
    status 130 (one it can raise propagates as usual)."""
    previous, sys.unraisablehook = sys.unraisablehook, _interrupted_while_loading
    try:
        yield
    finally:
        sys.unraisablehook = previous


@contextlib.contextmanager
def loading():
    """Around the imports that start the tool, before its group can catch anything: any Ctrl-C ends the process
    with :data:`LOADING_INTERRUPTED` and status 130."""
    with unraisable_interrupts():
        try:
            yield
        except KeyboardInterrupt:
            sys.stderr.write(LOADING_INTERRUPTED)
            raise SystemExit(130) from None
