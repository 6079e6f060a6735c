"""Op families. Importing this package registers every OpDef and its rules (one line per family)."""
from . import conv, conv_transpose  # noqa: F401  (registration)
from . import elementwise, unary  # noqa: F401
from . import linear  # noqa: F401
from . import norm  # noqa: F401
from . import reduce  # noqa: F401
from . import attention  # noqa: F401
from . import embedding  # noqa: F401
from . import pad, shape, shape_index  # noqa: F401
from . import adaptive_pool, pool, resize  # noqa: F401

__all__ = ["adaptive_pool", "attention", "conv", "conv_transpose", "elementwise", "embedding", "linear", "norm",
           "pad", "pool", "reduce", "resize", "shape", "shape_index"]
