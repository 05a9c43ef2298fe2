"""Banks: self-describing HDF5 files that hold one or more codes (``docs/bank-format.md`` is the reference).

Each code is a group ``/codes/<name>`` holding its float64 unit rows, optional
labels, its settings and statistics, and optionally its orbit and certificate.
A bank is written with the lowest schema version its codes need, so that
older readers keep reading it.

Every change goes to a temporary file renamed over the bank once complete,
under an advisory lock held from reading the bank to the rename, so an
interrupted write leaves the old bank as it was and concurrent writers take
turns.  Reading checks every field and the SHA-256 of the prototype bytes,
and refuses anything else.

The work is done in :mod:`._schema` (the format, its versions and the
checked reading of every field), :mod:`._reading` (listing, reading, what
reading takes), :mod:`._writing` (adding and removing codes) and
:mod:`._structures` (a code's orbit and certificate as stored).
"""

from ._reading import CHOOSE_BY_NAME, list_codes, read_code, read_estimate
from ._schema import (
    FORMAT_NAME, ORBIT_SCHEMA_VERSION, ORBIT_WITNESS, PLAIN_SCHEMA_VERSION, PREFIX_SCHEMA_VERSION, PREFIX_WITNESS,
    SCHEMA_VERSION, Z4_GROUP, Z4_SCHEMA_VERSION, Z4_WITNESS, prototype_storage,
)
from ._writing import check_writable_destination, delete_code, hdf5_left_unclosed, write_code

__all__ = [
    "CHOOSE_BY_NAME", "FORMAT_NAME", "ORBIT_SCHEMA_VERSION", "ORBIT_WITNESS", "PLAIN_SCHEMA_VERSION",
    "PREFIX_SCHEMA_VERSION", "PREFIX_WITNESS", "SCHEMA_VERSION", "Z4_GROUP", "Z4_SCHEMA_VERSION", "Z4_WITNESS",
    "check_writable_destination", "delete_code", "hdf5_left_unclosed", "list_codes", "prototype_storage",
    "read_code", "read_estimate", "write_code",
]
