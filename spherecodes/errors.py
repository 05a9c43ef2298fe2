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

    def __init__(self, message: str, *, flags: dict[str, str] | None = None):
        super().__init__(message)
        #: Python arguments quoted in the message (``"normalize=True"``) and the
        #: command-line flag that sets each (``"--normalize"``).
        self.flags = dict(flags or {})

    def for_cli(self) -> str:
        """The message with each Python argument replaced by its command-line flag.

        Examples
        --------
        >>> SpherecodesError("pass normalize=True", flags={"normalize=True": "--normalize"}).for_cli()
        'pass --normalize'
        """
        text = str(self)
        for argument, flag in self.flags.items():
            text = text.replace(argument, flag)
        return text
