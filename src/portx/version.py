"""portx's version, in a leaf module of its own so that utilities (outputs/staging.py's output marker) can read it
without importing the package's lazy API facade.

Example:
    >>> from portx.version import __version__
"""
__version__ = "0.1.0"

__all__ = ["__version__"]
