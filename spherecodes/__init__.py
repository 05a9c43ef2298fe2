"""spherecodes: maximally separated class prototypes on the hypersphere.

Examples
--------
>>> import spherecodes
>>> code = spherecodes.generate(d=11, k=12)
>>> code.method, code.k, code.d
('etf', 12, 11)
"""

__version__ = "0.1.0"

from .bank import delete_code, list_codes, read_code, write_code  # noqa: E402
from .bounds import max_cos_lower_bound, theorem_3_9  # noqa: E402
from .catalog import catalog_entries, fetch  # noqa: E402
from .code import Code, check_labels, default_code_name, make_code  # noqa: E402
from .errors import SpherecodesError  # noqa: E402
from .generation import generate  # noqa: E402
from .stats import separation_statistics  # noqa: E402

__all__ = [
    "Code",
    "SpherecodesError",
    "__version__",
    "catalog_entries",
    "check_labels",
    "default_code_name",
    "delete_code",
    "fetch",
    "generate",
    "list_codes",
    "make_code",
    "max_cos_lower_bound",
    "read_code",
    "separation_statistics",
    "theorem_3_9",
    "write_code",
]
