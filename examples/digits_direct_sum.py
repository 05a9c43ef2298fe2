"""Kobayashi's direct-sum approach with a bank's fixed prototypes on scikit-learn's digits.

The experiment ships inside the package (:mod:`spherecodes.nn.digits`), so
that ``python -m spherecodes.nn.digits`` runs it from any directory; this
script is the same entry point from the repository.  It prints the tables
recorded in ``docs/nn.md``; ``--help`` lists the options.
"""

from spherecodes.nn.digits import main

if __name__ == "__main__":
    main()
