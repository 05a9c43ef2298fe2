"""Write ``spherecodes/data/cifar100/embeddings.txt``: stand-in word vectors for the CIFAR-100 classes, for the docs' examples.

Real word vectors (GloVe, word2vec) are hundreds of megabytes; the pages of
``docs/`` run without downloads, so they use these instead.  Each of the 100
classes is its CIFAR-100 superclass's random centre in R^50 plus Gaussian
noise of 0.35 per coordinate (cosine about 0.9 within a superclass, about 0
between): the planted clusters of ``benchmarks/bench_semantic.py``.  The file
is in GloVe's text format (``word x1 ... x50`` per line), one word per class,
spaces in class names written as underscores.

Run ``python examples/cifar100/make_embeddings.py`` to write it again (the
same bytes: the generator is seeded).
"""

from pathlib import Path

import numpy as np

# The files live in the package (spherecodes/data/cifar100), so that an installed package has them.
HERE = Path(__file__).resolve().parents[2] / "spherecodes" / "data" / "cifar100"
SUPERCLASSES = 20
DIM = 50


def main() -> None:
    names = [line.strip() for line in (HERE / "classes.txt").read_text(encoding="utf-8").splitlines() if line.strip()]
    superclass_of = {}
    for line in (HERE / "superclasses.txt").read_text(encoding="utf-8").splitlines():
        if line.strip():
            superclass, members = line.split(":")
            superclass_of.update({name: superclass for name in members.split(",")})
    assert len(set(superclass_of.values())) == SUPERCLASSES and set(superclass_of) == set(names)
    rng = np.random.default_rng(1)
    centres = {superclass: rng.standard_normal(DIM) for superclass in dict.fromkeys(superclass_of.values())}
    with open(HERE / "embeddings.txt", "w", encoding="utf-8") as out:
        for name in names:
            vector = centres[superclass_of[name]] + 0.35 * rng.standard_normal(DIM)
            out.write(name.replace(" ", "_") + " " + " ".join(f"{x:.5f}" for x in vector) + "\n")


if __name__ == "__main__":
    main()
