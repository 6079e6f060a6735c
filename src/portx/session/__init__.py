"""One conversion, stage by stage (conversion.py), its free-dim handling (free_dims.py) and its report
(report.py). ``api`` drives it; verification never imports it.

Example:
    >>> from portx.session import Conversion
"""
from .conversion import Conversion, ConversionResult

__all__ = ["Conversion", "ConversionResult"]
