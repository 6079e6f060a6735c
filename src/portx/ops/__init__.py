"""Op families. Importing this package registers every OpDef and its rules (one line per family)."""
from . import adaptive_pool  # noqa: F401  (registration)
from . import attention  # noqa: F401
from . import conv  # noqa: F401
from . import conv_transpose  # noqa: F401
from . import elementwise  # noqa: F401
from . import embedding  # noqa: F401
from . import linear  # noqa: F401
from . import norm  # noqa: F401
from . import pad  # noqa: F401
from . import pool  # noqa: F401
from . import reduce  # noqa: F401
from . import resize  # noqa: F401
from . import shape  # noqa: F401
from . import shape_index  # noqa: F401
from . import unary  # noqa: F401

__all__ = ["adaptive_pool", "attention", "conv", "conv_transpose", "elementwise", "embedding", "linear", "norm",
           "pad", "pool", "reduce", "resize", "shape", "shape_index", "unary"]
