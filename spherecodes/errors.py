"""The one exception type that spherecodes raises for bad input.

The CLI turns a :class:`SpherecodesError` into a single line on stderr and a
non-zero exit status; anything else is a bug and keeps its traceback.
"""


class SpherecodesError(ValueError):
    """Invalid input, an unusable file, or a size that cannot fit.

    The message is one sentence that says what is wrong and what is allowed.

    Examples
    --------
    >>> from spherecodes.errors import SpherecodesError
    >>> try:
    ...     raise SpherecodesError("K must be at least 2, got 1")
    ... except SpherecodesError as err:
    ...     print(err)
    K must be at least 2, got 1
    """
