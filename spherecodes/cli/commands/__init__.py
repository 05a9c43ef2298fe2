"""The commands of the ``spherecodes`` tool, one module per command or group.

Each module registers its commands on :func:`spherecodes.cli.main.main` when
it is imported, which the group does on first use
(:data:`spherecodes.cli.main.COMMANDS` says which module holds which command).
"""
