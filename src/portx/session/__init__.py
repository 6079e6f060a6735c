"""One conversion, stage by stage (conversion.py), its free-dim handling (dim_plan.py: the
candidates; free_dims.py: which stay free; free_emit.py: at emit time) and its report
(report.py). ``api`` drives it; verification never imports it.

Example:
    >>> from portx.session import Conversion
"""
from .conversion import Conversion, ConversionResult

__all__ = ["Conversion", "ConversionResult"]
