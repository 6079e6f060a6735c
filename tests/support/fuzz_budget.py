"""How many examples a fuzzer draws under the loaded hypothesis profile (tests/conftest.py).

Note [fuzz budget]: ``PORTX_FUZZ=1`` is the campaign of issue #31: every fuzzer draws the "fuzz" profile's 1,000
examples, the slow ones too. Under the "ci" and "random" profiles a slow fuzzer (one conversion through a target
with the gradient check per example) draws a share of the profile's count, so CI and its fuzz step take the time
they took before.
"""
import os

from hypothesis import settings

__all__ = ["examples"]


def examples(share: int = 1, floor: int = 1) -> int:
    """The fuzzer's ``max_examples``: the whole campaign under ``PORTX_FUZZ=1``, else ``1/share`` of the profile's.

    >>> examples(share=4, floor=2)  # "ci" profile (8 examples): 2; "random" (50): 12; "fuzz": 1000
    2
    """
    if os.environ.get("PORTX_FUZZ") == "1":
        return settings.default.max_examples
    return max(floor, settings.default.max_examples // share)
