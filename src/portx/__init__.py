"""portx: convert PyTorch models to Keras 3 (JAX) with verified weights and TPU-ready code.

Importing portx is light: it registers the IR ops (NumPy only) and loads torch, Keras and JAX
on first use of the API, which also sets ``KERAS_BACKEND=jax`` unless it is already set. So the
pytest plugin (``portx.testing``) never changes the Keras backend of a suite that does not use it.

Example:
    >>> import portx
    >>> result = portx.convert(module, "keras-jax", example_inputs=(x,), output=portx.Output(out="out/"))
    >>> result.report["verification"]["passed"]
    True
"""
from . import ops  # noqa: F401  (registers every op; NumPy only)
from .errors import BadInput, NotTpuLegal, PortxError, UnsupportedOps, VerificationFailed
from .options import Checks, Output, Shapes, Trust
from .version import __version__

__all__ = ["convert", "inspect", "load", "verify", "ConversionResult", "PortxError", "BadInput", "UnsupportedOps",
           "NotTpuLegal", "VerificationFailed", "Trust", "Shapes", "Checks", "Output", "__version__"]

_API = {"convert", "inspect", "load", "verify", "ConversionResult"}


def __getattr__(name):
    """Load the API (and with it torch, Keras and JAX) on first use."""
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'portx' has no attribute {name!r}")
