"""``spherecodes cache dir | list | clear``: the per-user cache of downloaded banks and computed LP bounds."""

from __future__ import annotations

import sys
from collections import Counter

import click

from ...cache import CACHE_ENV, cache_dir, cached_files, clear_cache
from ...errors import SpherecodesError
from ...memory import format_bytes
from ...report import printable
from .._common import print_json
from ..main import main


#: Each kind of cached file (spherecodes.cache.CachedFile.kind), counted.
_PLURALS = {"bank": "banks", "registry": "registries", "LP bound": "LP bounds", "unfinished write": "unfinished writes",
            "other": "others"}


@main.group(name="cache")
def cache_cmd():
    """The per-user cache: downloaded banks and computed LP bounds.

    'spherecodes fetch' keeps the banks it downloads from a catalog there
    (verified by SHA-256; --offline reads them later), and every command
    keeps there the LP bound of each size it computes that the table shipped
    with spherecodes lacks (verified again whenever it is read).  The folder
    is the platform's cache directory (~/.cache/spherecodes on Linux);
    $SPHERECODES_CACHE overrides it.  Removing it loses nothing that cannot
    be downloaded or computed again.

    \b
    Examples:
      spherecodes cache list
      spherecodes cache clear --yes
    """


@cache_cmd.command(name="dir")
def cache_dir_cmd():
    """Print the cache's folder."""
    click.echo(cache_dir())


@cache_cmd.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print the files as JSON, with the folder and the total.")
def cache_list(as_json):
    """List the files in the cache, with their sizes and what each is."""
    root = cache_dir()
    files = cached_files(root)
    total = sum(f.size for f in files)
    if as_json:
        print_json({"cache": str(root), "files": [f.to_dict() for f in files], "total_bytes": total})
        return
    if not files:
        click.echo(f"{root}: empty (set {CACHE_ENV} to use another folder)")
        return
    click.echo(f"{root}:")
    for item in files:
        where = printable(item.path.relative_to(root))
        click.echo(f"  {format_bytes(item.size):>10}  {item.kind:<16}  {where}")
    kinds = Counter(item.kind for item in files)
    summary = ", ".join(f"{n} {kind if n == 1 else _PLURALS[kind]}" for kind, n in kinds.items())
    click.echo(f"  {format_bytes(total):>10}  in all ({summary})")


@cache_cmd.command(name="clear")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def cache_clear(yes):
    """Remove the banks, registries and LP bounds that spherecodes put in the cache.

    Files of other names are left where they are (and listed). Asks first,
    unless --yes is given; without a terminal to ask on, --yes is needed.
    """
    root = cache_dir()
    files = cached_files(root)
    removable = [f for f in files if f.removable]
    others = [f for f in files if not f.removable]
    if not removable:
        click.echo(f"{root}: nothing to remove" + (f" ({len(others)} files spherecodes did not write are left)"
                                                  if others else ""))
        return
    what = f"{len(removable)} file{'s' if len(removable) > 1 else ''} ({format_bytes(sum(f.size for f in removable))})"
    if not yes:
        if not sys.stdin.isatty():
            raise SpherecodesError(f"cache clear would remove {what} from {root}; pass --yes to remove them "
                                   "without a terminal to confirm on")
        if not click.confirm(f"Remove {what} from {root}?"):
            click.echo("nothing removed")
            return
    freed = clear_cache(removable)
    click.echo(f"removed {what} from {root}; {format_bytes(freed)} freed")
    if others:
        click.echo(f"left {len(others)} file{'s' if len(others) > 1 else ''} that spherecodes did not write: "
                   + ", ".join(printable(f.path.relative_to(root)) for f in others))
