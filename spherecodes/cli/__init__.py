"""The ``spherecodes`` command-line tool: :mod:`.main` (the group), :mod:`.commands` (one module each)."""

from . import commands  # noqa: F401  (registers the commands on the group)
from .main import main

__all__ = ["main"]
