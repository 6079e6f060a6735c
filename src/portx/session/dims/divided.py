"""The step of a free dim whose source has no symbols to say it (Note [steps found by lowering]): an ONNX file, a
model traced through JAX, a ``--dynamic`` axis torch.export pinned, each lowered again at a second size.

Example:
    >>> found, why = stepped_diff(graph, row, lambda n: lowered_at(n), other_size)
    >>> row["step"]  # 2 for a U-Net that pools by 2 and upsamples back
"""
from __future__ import annotations

from ...ir import SymDim
from ...passes.free_dims import NotFree, diff_free
from ...verification.dynamic import one_line

__all__ = ["LARGEST_STEP", "trial_steps", "stepped_diff", "largest_div"]

#: the largest step a lowered-again source is tried at (a U-Net of 5 levels pools by 32)
LARGEST_STEP = 32


# Note [steps found by lowering]: torch's symbolic shapes say what a free dim is divided by (Note [divided dims] in
# find.py); a source lowered again at a second size has no such word. Its second size is then the example's
# plus the largest power of two dividing it (at most LARGEST_STEP): every floor of the size by a power of two up to
# that rounds alike at both sizes, and a model that only runs at even sizes (a skip concatenated with an upsampled
# map) runs there. The diff's SymDims carry the divisors the model uses (``_affine`` in passes/free_dims.py reads a
# fraction of the step as ``div``), and the dim's step is the largest of them: 1 where the model divides nothing, so
# an MLP's free length is free at any size. Where the model does not lower or diff at that distance (a position
# table shorter than the second size), the example's size plus 1 is tried, as before: one lowering more only where
# the first fails (a dim the model fixes costs two lowerings, not one per power of two). A divisor larger than the
# step tried is not seen; the size checks (verification/dynamic.py) then fail at its size and pin the dim.
def trial_steps(size: int) -> list:
    """The steps to try for a dim of example ``size``, in turn: ``[8, 1]`` for 24, ``[1]`` for 7."""
    step = 1
    while size % (step * 2) == 0 and step * 2 <= LARGEST_STEP:
        step *= 2
    return [step, 1] if step > 1 else [1]


def largest_div(found) -> int:
    """The largest ``div`` of the SymDims in one diff (``diff_free``'s result): the step its dim keeps to."""
    divs = [1]

    def walk(value):
        if isinstance(value, SymDim):
            divs.append(value.div)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    walk(found)
    return max(divs)


def stepped_diff(graph, row, lowered_at, other_size) -> tuple:
    """(the diff of ``graph`` with its source lowered again at a second size of ``row``'s dim, '') or (None, why
    not), trying ``trial_steps`` in turn; ``row["step"]`` is set to the step the model keeps to (Note [steps found
    by lowering]). ``lowered_at(n)``: the graph at size ``n`` (raises where the source does not run there);
    ``other_size(row)``: the second size at ``row["step"]``, None when its range has none."""
    why = ""
    for step in trial_steps(row["size"]):
        row["step"] = step
        other = other_size(row)
        if other is None:
            why = why or f"its range [{row.get('min')}, {row.get('max')}] has no second size to check"
            continue
        try:
            g1 = lowered_at(other)
        except Exception as exc:  # noqa: BLE001 - any failure there (a guard, an op) means "not at this step"
            why = f"the model does not run at {row['symbol']}={other} ({one_line(exc)})"
            continue
        try:
            found = diff_free(graph, g1, row["symbol"], row["size"], other)
        except NotFree as exc:
            why = str(exc)
            continue
        row["step"] = largest_div(found)
        return found, ""
    row["step"] = 1
    return None, why

