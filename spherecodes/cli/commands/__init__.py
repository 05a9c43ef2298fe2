"""The commands of the ``spherecodes`` tool, one module per command or group, each imported on first use.

Importing a module registers its commands on :func:`spherecodes.cli.main.main`
(:data:`spherecodes.cli.main.COMMANDS` says which module holds which command).
"""
