"""portx: convert PyTorch models to Keras 3 (JAX) with verified weights and TPU-ready code.

Example:
    >>> import portx
    >>> result = portx.convert(module, example_inputs=(x,), to="keras-jax", out="out/")
    >>> result.report["verification"]["passed"]
    True
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

from .api import ConversionResult, convert, inspect, load, verify  # noqa: E402
from .errors import BadInput, NotTpuLegal, PortxError, UnsupportedOps, VerificationFailed  # noqa: E402

__version__ = "0.1.0"
__all__ = ["convert", "inspect", "load", "verify", "ConversionResult", "PortxError", "BadInput", "UnsupportedOps",
           "NotTpuLegal", "VerificationFailed", "__version__"]
