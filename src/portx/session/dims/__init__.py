"""Free dims: every decision a conversion makes about which input axes stay free (Note [free dims] in ir/types.py),
in the order the conversion makes them.

1. plan.py: the candidates. ``plan_dims`` lists the batch (unless ``--static-batch``), the dims the source declares
   (torch.export Dims, Keras None dims, ONNX dim_params) and the ``--dynamic NAME:AXIS`` ones (``parse_dynamic``);
   ``pinned_batch`` is the source at ``--static-batch N``.
2. find.py: which stay free. ``find_free`` gets the graph at a second size of each and diffs the two (the diff
   itself is a pass, passes/free_dims.py; a static program's second graph comes from passes/static_batch.py); a
   dim the graph does not explain is pinned with a warning. ``repin``/``refree``: the graph with fewer free dims.
   Note [divided dims] (a U-Net's ``h // 2``) lives there.
3. divided.py: the step of a divided dim whose source has no symbols to say it (Note [steps found by lowering]).
4. emit.py: at emit time. ``emit_free`` pins a dim the target cannot write or that its size checks
   (``verify_sizes``, verification/dynamic.py, which picks the sizes: ``sample_sizes``) find wrong, and emits
   again; ``dynamic_report`` is report.json's ``dynamic`` section.
5. lower.py: ``lower_for``, the source lowered as convert emitted it, free dims included, for ``portx verify``
   and ``portx.testing`` (verification takes it as an argument: it never imports the session); ``requested_dims``,
   the free dims ``verify --dynamic`` checks at other sizes.
6. recorded.py: what OUT's report.json says convert pinned (the batch of ``--static-batch``, the io layout), read
   back by ``portx verify`` (Note [what OUT records]).

``session/conversion.py`` calls 1, 2 and 4 from its ``free_dims`` and ``emit`` stages.

Example:
    >>> rows = plan_dims(src, graph, dynamic=("x:1",))
    >>> src, graph, record = find_free(src, graph, prepare, rows, notes)
"""
from __future__ import annotations

from .divided import LARGEST_STEP, largest_div, stepped_diff, trial_steps
from .emit import dynamic_report, emit_free
from .find import ONE_TRACED_AT, find_free, refree, repin
from .lower import lower_for, requested_dims
from .plan import check_static_batch, parse_dynamic, pinned_batch, plan_dims
from .recorded import at_batch, with_recorded

__all__ = ["plan_dims", "parse_dynamic", "check_static_batch", "pinned_batch", "ONE_TRACED_AT", "find_free", "refree",
           "repin", "LARGEST_STEP", "trial_steps", "stepped_diff", "largest_div", "emit_free", "dynamic_report",
           "lower_for", "requested_dims", "at_batch", "with_recorded"]
