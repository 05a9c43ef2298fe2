"""The commands of the ``spherecodes`` tool, one module per command or group.

Importing this package registers every command on :func:`spherecodes.cli.main.main`.
"""

from . import assign, bank, bounds, catalog, certify, codes, export, extend, fetch, generate, report

__all__ = ["assign", "bank", "bounds", "catalog", "certify", "codes", "export", "extend", "fetch", "generate", "report"]
