"""Example data shipped inside the package, so that the documented commands run from any directory.

The CIFAR-100 class names, their 20 superclasses and stand-in word vectors
for them (GloVe's text format; written by ``examples/cifar100/make_embeddings.py``
in the repository) live in ``spherecodes/data`` (:data:`EXAMPLE_FILES`).
:func:`example_path` gives an installed file's path;
``python -m spherecodes.examples [DEST]`` copies them to
``DEST/examples/cifar100/`` (default: the current directory), where the
commands of ``docs/recipes.md`` and ``docs/semantic.md`` read them.
"""

from __future__ import annotations

import shutil
import sys
from importlib import resources
from pathlib import Path

from .errors import SpherecodesError

__all__ = ["EXAMPLE_FILES", "copy_examples", "example_path"]

#: The example files, by their name under ``spherecodes/data``.
EXAMPLE_FILES = ("cifar100/classes.txt", "cifar100/superclasses.txt", "cifar100/embeddings.txt")


def example_path(name: str) -> Path:
    """The installed path of an example file.

    Examples
    --------
    >>> from spherecodes.semantic import read_class_names
    >>> names = read_class_names(example_path("cifar100/classes.txt"))
    >>> len(names), names[:3]
    (100, ['apple', 'aquarium fish', 'baby'])
    """
    if name not in EXAMPLE_FILES:
        raise SpherecodesError(f"no example file {name!r}; choose one of {', '.join(EXAMPLE_FILES)}")
    return Path(str(resources.files("spherecodes").joinpath("data", name)))


def copy_examples(dest=".") -> list[Path]:
    """Copy every example file to ``dest/examples/<name>``; the paths written.

    Examples
    --------
    >>> import tempfile
    >>> [p.name for p in copy_examples(tempfile.mkdtemp())]
    ['classes.txt', 'superclasses.txt', 'embeddings.txt']
    """
    written = []
    for name in EXAMPLE_FILES:
        target = Path(dest) / "examples" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(example_path(name), target)
        written.append(target)
    return written


if __name__ == "__main__":
    for path in copy_examples(sys.argv[1] if len(sys.argv) > 1 else "."):
        print(f"wrote {path}")
