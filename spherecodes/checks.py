"""Validation of user input, done once where it enters the library (NumPy only).

Every public entry point (solvers, generation, the CLI) checks its arguments
with these functions and then passes plain Python values on, so the layers
below need not check them again.  Python and NumPy integers are accepted
alike; ``bool`` is refused where a number is meant.
"""

from __future__ import annotations

import math

from .errors import SpherecodesError

__all__ = ["check_choice", "check_fraction", "check_int", "check_options", "check_positive", "check_seed",
           "check_sizes"]

#: Seeds must fit in a signed 64-bit integer (NumPy's generators and HDF5 attributes take them).
SEED_LIMIT = 2**63


# NumPy is imported where a value is checked, not with this module: the command-line tool's group reads
# SEED_LIMIT, and 'spherecodes --help' loads nothing else that needs NumPy.
def _is_integer(value) -> bool:
    import numpy as np

    return not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, np.integer))


def _is_number(value) -> bool:
    import numpy as np

    return not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, float, np.integer, np.floating))


def check_int(name: str, value, minimum: int) -> int:
    """``value`` as a Python int, refused unless it is an integer >= ``minimum``.

    Examples
    --------
    >>> import numpy as np
    >>> check_int("steps", np.int64(5), 1)
    5
    >>> check_int("steps", True, 1)
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: steps must be an integer >= 1, got True
    """
    if not _is_integer(value):
        raise SpherecodesError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise SpherecodesError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def check_positive(name: str, value) -> float:
    """``value`` as a float, refused unless it is a positive finite number.

    Examples
    --------
    >>> check_positive("lr", 0.1)
    0.1
    """
    if not _is_number(value):
        raise SpherecodesError(f"{name} must be a positive number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise SpherecodesError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def check_fraction(name: str, value) -> float:
    """``value`` as a float, refused unless it lies in [0, 1).

    Examples
    --------
    >>> check_fraction("beta1", 0.9)
    0.9
    """
    if not _is_number(value) or not 0 <= value < 1:
        raise SpherecodesError(f"{name} must be a number in [0, 1), got {value!r}")
    return float(value)


def check_sizes(d, k) -> tuple[int, int]:
    """Refuse dimensions and class counts that define no code; return them as ints.

    Parameters
    ----------
    d, k : int
        Dimension (at least 1) and number of prototypes (at least 2).

    Raises
    ------
    SpherecodesError
        If either is not an integer in range.

    Examples
    --------
    >>> import numpy as np
    >>> check_sizes(np.int64(3), 12)
    (3, 12)
    >>> check_sizes(3, 1)
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: K must be an integer >= 2 (one prototype per class, at least two classes), got 1
    """
    if not _is_integer(d) or d < 1:
        raise SpherecodesError(f"d must be a positive integer, got {d!r}")
    if not _is_integer(k) or k < 2:
        raise SpherecodesError(f"K must be an integer >= 2 (one prototype per class, at least two classes), got {k!r}")
    return int(d), int(k)


def check_seed(seed) -> int:
    """A seed as a Python int in [0, 2**63).

    Examples
    --------
    >>> import numpy as np
    >>> check_seed(np.uint32(7))
    7
    >>> check_seed(2**64)
    Traceback (most recent call last):
    ...
    spherecodes.errors.SpherecodesError: seed must be an integer in [0, 2**63), got 18446744073709551616
    """
    if not _is_integer(seed) or not 0 <= seed < SEED_LIMIT:
        raise SpherecodesError(f"seed must be an integer in [0, 2**63), got {seed!r}")
    return int(seed)


def check_choice(name: str, value, allowed) -> str:
    """``value`` if it is one of ``allowed`` (strings), else a one-line error listing them.

    Examples
    --------
    >>> check_choice("start", "random", ("tammes", "random"))
    'random'
    """
    if not isinstance(value, str) or value not in allowed:
        raise SpherecodesError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def check_options(method: str, options: dict, allowed) -> None:
    """Refuse keyword options that ``method`` does not know.

    Examples
    --------
    >>> check_options("maxsep", {"momentum": 0.5}, ("momentum", "dtype"))
    """
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise SpherecodesError(f"unknown {method} option(s) {', '.join(unknown)}; allowed: "
                               f"{', '.join(sorted(allowed))}")
