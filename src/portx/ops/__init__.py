"""Op families. Importing this package registers every OpDef and its rules (one line per family)."""
from . import adaptive_pool  # noqa: F401  (registration)
from . import attention  # noqa: F401
from . import conv  # noqa: F401
from . import conv_transpose  # noqa: F401
from . import conv_keras  # noqa: F401  (Keras import rules)
from . import elementwise  # noqa: F401
from . import embedding  # noqa: F401
from . import linear  # noqa: F401
from . import linear_keras  # noqa: F401  (Keras import rules)
from . import norm  # noqa: F401
from . import norm_keras  # noqa: F401  (Keras import rules)
from . import pad  # noqa: F401
from . import pool  # noqa: F401
from . import pool_keras  # noqa: F401  (Keras import rules)
from . import reduce  # noqa: F401
from . import resize  # noqa: F401
from . import shape  # noqa: F401
from . import shape_keras  # noqa: F401  (Keras import rules)
from . import shape_index  # noqa: F401
from . import unary  # noqa: F401
from . import unary_keras  # noqa: F401  (Keras import rules)
from . import elementwise_kops  # noqa: F401  (keras.ops and more Keras layers)
from . import elementwise_keras_layers  # noqa: F401
from . import reduce_kops  # noqa: F401
from . import shape_kops  # noqa: F401
from . import resize_keras  # noqa: F401
from . import embedding_keras  # noqa: F401
from . import attention_keras  # noqa: F401
from . import linear_kops  # noqa: F401
from . import conv_jax  # noqa: F401  (JAX import rules, after every family they use)
from . import elementwise_jax  # noqa: F401
from . import reduce_jax  # noqa: F401
from . import shape_jax  # noqa: F401
from . import attention_torch  # noqa: F401  (torch-xla emit rules)
from . import conv_torch  # noqa: F401
from . import elementwise_torch  # noqa: F401
from . import embedding_torch  # noqa: F401
from . import linear_torch  # noqa: F401
from . import norm_torch  # noqa: F401
from . import pad_torch  # noqa: F401
from . import pool_torch  # noqa: F401
from . import reduce_torch  # noqa: F401
from . import resize_torch  # noqa: F401
from . import shape_torch  # noqa: F401

__all__ = ["adaptive_pool", "attention", "conv", "conv_transpose", "elementwise", "embedding", "linear", "norm",
           "pad", "pool", "reduce", "resize", "shape", "shape_index", "unary"]
__all__ += ["conv_keras", "linear_keras", "norm_keras", "pool_keras", "shape_keras", "unary_keras"]
__all__ += ["elementwise_kops", "elementwise_keras_layers", "reduce_kops", "shape_kops", "resize_keras",
            "embedding_keras", "attention_keras", "linear_kops"]
__all__ += ["conv_jax", "elementwise_jax", "reduce_jax", "shape_jax"]
__all__ += ["attention_torch", "conv_torch", "elementwise_torch", "embedding_torch", "linear_torch", "norm_torch",
            "pad_torch", "pool_torch", "reduce_torch", "resize_torch", "shape_torch"]
