"""Banks: self-describing HDF5 files that hold one or more codes.

Layout (schema version 2; ``docs/bank-format.md`` is the full reference)::

    /                        attrs: format="spherecodes-bank", schema_version=1 or 2, created_by
    /codes/<name>/           attrs: method, k, d, seed, settings (JSON), package_version,
                                    device, wall_time_s, created_utc, sha256
    /codes/<name>/prototypes float64 (K, d), unit rows
    /codes/<name>/labels     UTF-8 strings (K,), optional
    /codes/<name>/stats/     attrs: the scalar statistics and bounds
                             datasets: nearest_cos (K,), nearest_index (K,), rattlers (n,)
    /codes/<name>/orbit/     optional: generators (⌈log2 K⌉, d) of the sign changes of which the code is one
                             orbit (K = 2^r) or the first K words of one; or, with attribute group="Z4
                             translations", quaternary generators (⌈log2 K⌉, N) and the column pairs (N, 2)
    /codes/<name>/certificate/  optional: lo, hi (K,), the witnesses (K, s), or class 0's (1, s) for an orbit

A bank is written as schema version 2 only when one of its certificates keeps
class 0's witness alone (which a version-1 reader would take for damage).

Every change goes to a temporary file in the bank's directory that is renamed
over the bank only once complete, so an interrupted write leaves the old bank
as it was.  Changes hold an advisory lock on the bank from reading it to the
rename, so that concurrent writers (two ``generate --out`` into one bank, an
``rm`` beside them) take turns and none undoes another's change.  Reading
checks the format, the schema version, shapes, finiteness, unit rows and the
SHA-256 of the prototype bytes, and refuses anything else.

The package's face; the work is done in its modules: :mod:`._schema` (the
format, its versions and the checked reading of every field),
:mod:`._reading` (listing, reading, what reading takes), :mod:`._writing`
(adding and removing codes) and :mod:`._structures` (a code's orbit and
certificate as stored).
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
