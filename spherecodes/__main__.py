"""``python -m spherecodes`` runs the command-line tool."""

from .cli import main

main(prog_name="spherecodes")
