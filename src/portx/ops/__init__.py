"""Op families. Importing this package registers every OpDef and its rules (one line per family)."""
from . import conv  # noqa: F401  (registration)
from . import elementwise  # noqa: F401
from . import linear  # noqa: F401
from . import norm  # noqa: F401
from . import pad, shape, shape_index  # noqa: F401
from . import adaptive_pool, pool, resize  # noqa: F401

__all__ = ["conv", "elementwise", "linear", "norm"]
