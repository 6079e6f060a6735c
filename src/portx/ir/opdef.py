"""OpDef: each IR op is declared once, and every rule is attached to that object.

Example:
    >>> RELU = OpDef("relu", inputs=("x",), family="activation")
    >>> @RELU.infer
    ... def _relu_type(x): return x
"""
from __future__ import annotations

__all__ = ["OpDef", "REQUIRED", "REGISTRY", "IMPORT_RULES", "imports", "lookup"]


class _Required:
    def __repr__(self):
        return "REQUIRED"


REQUIRED = _Required()

#: op name -> OpDef, filled as the ``ops`` families are imported.
REGISTRY: dict = {}
#: frontend -> source op name (e.g. "aten::conv2d") -> (OpDef, rule)
IMPORT_RULES: dict = {}
#: trait -> what it says of an op; ``OpDef.traits`` holds these names (given in ``ops/traits.py``)
TRAITS = {
    "fresh_output": "its torch code makes a new tensor whose backward does not keep it, so a later op may "
                    "overwrite it in place (torch-xla's inplace=True)",
    "unsigned_as_is": "its torch code runs on uint16/uint32/uint64 values as they are (checked against torch's "
                      "CPU kernels), so they need no widening to int64",
    "unsigned_in_range": "its unsigned result stays in its operands' range, so narrowing it back needs no mask",
    "mask_reader": "it reads an attention mask, where -inf is the masking idiom (a hidden position), not a "
                   "broken weight",
    "broadcasting": "its operands broadcast against each other elementwise, so an operand stored in another axis "
                    "order than the others must be transposed first",
    "decomposed": "no target emits it: passes/legalize/decompose.py writes every node of it as other IR ops for "
                  "both targets (Note [decompositions])",
    "pointwise": "each output element comes from the same position of its inputs (an elementwise op, dropout), so "
                 "a feature axis split over devices stays split through it (Note [sharding roles])",
    "rearranging": "it moves, copies or selects elements without computing with them (reshape, permute, slice, "
                   "concat ...), so sharding's traces from a projection to its attention walk through it",
}


class OpDef:
    """Declaration of one IR op: inputs, attributes with defaults, and attached rules.

    ``inputs`` names the positional inputs; a name ending in ``?`` is optional and a name
    starting with ``*`` takes any number of values (only as the last input).
    ``attrs`` maps attribute names to defaults (``REQUIRED`` when there is none).
    ``layout`` tells the layout pass how the op runs on inputs stored in another axis order when
    ``passes/layout/rules.py`` has no rule for it: ``"axis"`` (one ``axis`` attribute is renumbered and
    the output keeps the input's order), ``"axes"`` (likewise for a tuple ``axes``), or None (its inputs are transposed back first).
    ``sign_free`` ({output index: axis}) declares outputs defined only up to one sign per slice along ``axis``
    (eigenvectors: the columns of eigh's output 1, ``{1: -2}``); verification compares them sign-aligned
    (``verification.compare.align_signs``). ``status_outputs`` (output indices) declares error statuses (LAPACK's
    ``info``): nonzero means the input lies outside the op's domain, and verification replaces such inputs
    (``verification.domain``; a rewritten node's stay marked in ``Graph.meta["status_values"]``).
    ``traits`` (names from ``TRAITS``) are the facts other stages ask of an op, declared in ``ops/traits.py``.
    ``domain`` ({input name: lower bound}) declares inputs the op is defined on only above a bound (igamma's
    ``a > 0``); verification draws the random inputs that feed them there (``verification.domain``).
    ``word`` names the op's output in emitted code (``attn_context``): its name unless ``ops/traits.py`` ``WORDS``
    gives a more readable one. ``layout_why`` says why a transpose the layout pass leaves before the op stays there
    (the layout report), where the general reason reads worse (``ops/traits.py`` ``LAYOUT_WHY``).
    Example: ``OpDef("softmax", inputs=("x",), attrs={"axis": REQUIRED}, layout="axis")``.
    """

    LAYOUTS = (None, "axis", "axes")

    def __init__(self, name, inputs, attrs=None, *, outputs=1, family="", doc="", layout=None):
        if name in REGISTRY:
            raise ValueError(f"op {name!r} is declared twice")
        if layout not in self.LAYOUTS:
            raise ValueError(f"op {name!r}: layout {layout!r} is not one of {self.LAYOUTS}")
        self.name = name
        self.layout = layout
        self.input_names = tuple(inputs)
        self.attr_defaults = dict(attrs or {})
        self.outputs = outputs  # an int, or "variadic" (count given by the node)
        self.family = family
        self.doc = doc
        self.infer_rule = None
        self.reference_rule = None
        self.emit_rules = {}
        self.import_names = {}
        self.sign_free = {}
        self.status_outputs = ()
        self.domain = {}
        self.traits = frozenset()
        self.word = name
        self.layout_why = ""
        REGISTRY[name] = self

    def __repr__(self):
        return f"OpDef({self.name!r})"

    def has(self, trait: str) -> bool:
        """True when the op declares ``trait`` (a key of ``TRAITS``)."""
        if trait not in TRAITS:
            raise KeyError(f"unknown op trait {trait!r}; known: {sorted(TRAITS)}")
        return trait in self.traits

    @property
    def variadic(self) -> bool:
        """True when the last input takes any number of values (``*xs``)."""
        return bool(self.input_names) and self.input_names[-1].startswith("*")

    def min_inputs(self) -> int:
        """Number of inputs that must be present."""
        return sum(1 for n in self.input_names if not n.endswith("?") and not n.startswith("*"))

    def normalize_attrs(self, attrs: dict, where: str = "") -> dict:
        """Fill defaults and reject unknown or missing attributes."""
        unknown = set(attrs) - set(self.attr_defaults)
        if unknown:
            raise ValueError(f"{where}: op {self.name} has no attribute(s) {sorted(unknown)}; "
                             f"known: {sorted(self.attr_defaults)}")
        full = {**self.attr_defaults, **attrs}
        missing = [k for k, v in full.items() if v is REQUIRED]
        if missing:
            raise ValueError(f"{where}: op {self.name} needs attribute(s) {missing}")
        return full

    # -- rule attachment (decorators) ---------------------------------------------------
    def infer(self, fn):
        """Attach the shape/dtype rule: ``fn(*input_types, **attrs) -> TensorType | list``."""
        self.infer_rule = fn
        return fn

    def reference(self, fn):
        """Attach the NumPy meaning: ``fn(*arrays, **attrs) -> ndarray | list``."""
        self.reference_rule = fn
        return fn

    def emits(self, target):
        """Attach an emit rule for a target such as ``"keras-jax"``."""
        def register(fn):
            self.emit_rules[target] = fn
            return fn
        return register

    def imports(self, frontend, *names):
        """Attach an import rule for source op names, e.g. ``imports("torch", "aten::relu")``."""
        def register(fn):
            _register_import(frontend, names, self, fn)
            self.import_names.setdefault(frontend, []).extend(names)
            return fn
        return register


def imports(frontend, *names):
    """Register an import rule that belongs to no single OpDef.

    For source ops that become several IR ops or none (``Dropout``, ``PReLU``, ``StochasticDepth``):
    hanging them on one of the OpDefs they emit would make ``portx ops`` list them there.
    Example: ``@imports("keras", "Dropout")`` over ``def _dropout_from_keras(call): ...``.
    """
    def register(fn):
        _register_import(frontend, names, None, fn)
        return fn
    return register


def _register_import(frontend, names, op, fn):
    table = IMPORT_RULES.setdefault(frontend, {})
    for name in names:
        if name in table:
            raise ValueError(f"{frontend} op {name!r} has two import rules")
        table[name] = (op, fn)


def lookup(name: str) -> OpDef:
    """The OpDef registered under ``name``; KeyError names the known ops when missing."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown IR op {name!r}; {len(REGISTRY)} ops are registered") from None
