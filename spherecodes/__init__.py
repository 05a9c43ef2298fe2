"""spherecodes: maximally separated class prototypes on the hypersphere."""

__version__ = "0.1.0"
