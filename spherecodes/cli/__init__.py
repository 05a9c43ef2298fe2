"""The ``spherecodes`` command-line tool: :mod:`.main` (the group), :mod:`.commands` (one module each)."""

import os
import sys

#: What Ctrl-C while the tool is still loading its libraries (about half a second) prints: the one line the
#: tool prints for any Ctrl-C before it has written anything, not a traceback through the imports.
_LOADING_INTERRUPTED = "Interrupted; nothing was written.\n"


def _interrupted_while_loading(hook_args, previous=sys.unraisablehook):
    """Ctrl-C that lands in a callback Python cannot raise from (the import machinery's clean-up of its module
    locks) would print "Exception ignored" and a traceback, and the import would go on: end as for any Ctrl-C
    while loading (nothing is written during the imports)."""
    if not issubclass(hook_args.exc_type, KeyboardInterrupt):
        previous(hook_args)
        return
    sys.stderr.write(_LOADING_INTERRUPTED)
    sys.stderr.flush()
    os._exit(130)


_previous_hook, sys.unraisablehook = sys.unraisablehook, _interrupted_while_loading
try:
    from . import commands  # noqa: F401  (registers the commands on the group)
    from .main import main
except KeyboardInterrupt:
    sys.stderr.write(_LOADING_INTERRUPTED)
    raise SystemExit(130) from None
finally:
    sys.unraisablehook = _previous_hook

__all__ = ["main"]
