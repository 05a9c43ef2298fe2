"""The ``spherecodes`` command-line tool: :mod:`.main` (the group), :mod:`.commands` (one module each).

Only the group is loaded here; each command's module, and the libraries it
needs, when that command runs (or its ``--help`` is asked for).
"""

from ._loading import loading

with loading():
    from .main import main

__all__ = ["main"]
