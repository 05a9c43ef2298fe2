"""The ``spherecodes`` command-line tool: :mod:`.main` (the group), :mod:`.commands` (one module each)."""

try:
    from . import commands  # noqa: F401  (registers the commands on the group)
    from .main import main
except KeyboardInterrupt:
    # Ctrl-C while the tool is still loading its libraries (about half a second): the one line the tool
    # prints for any Ctrl-C before it has written anything, not a traceback through the imports.
    import sys

    sys.stderr.write("Interrupted; nothing was written.\n")
    raise SystemExit(130) from None

__all__ = ["main"]
