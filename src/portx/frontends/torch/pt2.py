"""Reading ``.pt2`` archives without running anything stored in them.

Note [pt2 threat model]: ``torch.export.load`` trusts its archive. It unpickles several members
with ``weights_only=False`` (a legacy ``data/weights/<model>.pt``, ``data/sample_inputs/*.pt`` when
the safe load fails, config entries with ``use_pickle``, ``custom_obj_``/``opaque_obj_``
constants), loads AOTInductor shared libraries, hands shape expressions to ``sympy.sympify``
(``eval``), and torch.fx writes node, input and submodule names from ``model.json`` into Python
source that it compiles (``def forward(self, <names>)``, ``getattr(self, "<fqn>")``, stack traces
as comments). So portx never gives torch the archive as it is. It reads the archive itself,
refuses every pickle and native-code member (unless ``--trust-pickle``), validates every string
that can reach code generation or ``sympify``, renames unsafe names to safe identifiers (the same
new name everywhere the old one occurs), drops node metadata except module scopes, re-saves the
sample inputs from a ``weights_only`` load, and only then calls ``torch.export.load`` on that
cleaned copy. ``guards_code`` (Python source that ``ep.module()`` compiles into an input check)
is dropped: portx checks input shapes itself.

Example:
    >>> ep, notes = load_pt2_safely(Path("model.pt2"), trust_pickle=False)
"""
from __future__ import annotations

import errno
import io
import json
import keyword
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

from ...errors import BadInput
from ..keras.archive import nested_deeper_than

__all__ = ["load_pt2_safely", "clean_model_json"]

#: the largest JSON member portx parses (model.json of a 1,000-layer model is a few MB)
MAX_JSON_BYTES = 256 << 20
#: and the deepest nesting (real archives: under 10), scanned for first (``nested_deeper_than`` says why)
MAX_JSON_DEPTH = 256
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_COMPONENT = re.compile(r"^[A-Za-z0-9_]+$")
_TARGET = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
# a shape expression: Symbol('s0', positive=True, integer=True) or arithmetic on symbols and ints
_SYMBOL_DECL = re.compile(r"Symbol\('([a-z]+[0-9]+)'(?:,\s*[a-z_]+=(?:True|False))*\)")
# a float constant (an interpolate scale, ``x.shape[1] / 3.0``): Float('1.5', precision=53), checked as its number
_FLOAT_DECL = re.compile(r"Float\('(-?\d+(?:\.\d*)?(?:e[-+]?\d+)?)'(?:,\s*precision=53)?\)")
_EXPR_TOKEN = re.compile(r"\s*(?:([A-Za-z_][A-Za-z0-9_]*)|(\d+(?:\.\d+)?(?:e[-+]?\d+)?)|(\*\*|//|[-+*/%(),<>=!&|~]))")
_SYMPY_NAMES = {"FloorDiv", "ModularIndexing", "Where", "PythonMod", "Mod", "CleanDiv", "CeilToInt", "FloorToInt",
                "CeilDiv", "LShift", "RShift", "PowByNatural", "FloatPow", "FloatTrueDiv", "IntTrueDiv",
                "IsNonOverlappingAndDenseIndicator", "TruncToFloat", "TruncToInt", "RoundToInt", "RoundDecimal",
                "ToFloat", "Identity", "Max", "Min", "Abs", "Eq", "Ne", "Ge", "Gt", "Le", "Lt", "And", "Or", "Not",
                "True", "False", "oo", "Integer", "floor", "ceiling", "Piecewise", "OpaqueUnaryFn_sqrt",
                "BitwiseFn_bitwise_and", "BitwiseFn_bitwise_or",
                # sympy's srepr forms (guards on unbacked symbols are saved as LessThan(Symbol(...), Integer(6)))
                "LessThan", "GreaterThan", "StrictLessThan", "StrictGreaterThan", "Equality", "Unequality", "Add",
                "Mul", "Pow", "Rational", "NegativeOne", "One", "Zero", "Half", "Infinity", "NegativeInfinity",
                "BooleanTrue", "BooleanFalse"}
_SYMBOL_NAME = re.compile(r"^[a-z]+[0-9]+$")
# keys whose string values are value names (placeholders, node outputs): become Python identifiers
_NAME_KEYS = {"as_name", "user_input_name", "user_output_name", "as_custom_obj_name"}
# keys whose string values are module paths (``layer1.0.conv``): written as attribute accesses
_FQN_KEYS = {"parameter_name", "buffer_name", "tensor_constant_name", "custom_obj_name", "fqn", "target_name"}
# metadata that portx reads (module scopes); everything else is dropped (stack traces become comments)
_KEPT_METADATA = {"nn_module_stack", "torch_fn"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class _Names:
    """Maps each unsafe name or module path to a safe one, the same way everywhere it occurs."""

    def __init__(self, path, taken=()):
        self.path, self.renamed, self.taken = path, {}, set(taken)

    def name(self, text, field):
        if not isinstance(text, str):
            raise BadInput(f"{self.path}: {field} is {type(text).__name__}, expected a name string",
                           hint="the archive's model.json is damaged or hand-edited; export it again")
        if _IDENT.match(text) and not keyword.iskeyword(text):
            return text
        return self._rename(text, lambda s: _safe_component(s, first=True))

    def fqn(self, text, field):
        if not isinstance(text, str):
            raise BadInput(f"{self.path}: {field} is {type(text).__name__}, expected a module path string",
                           hint="the archive's model.json is damaged or hand-edited; export it again")
        if text == "" or all(_COMPONENT.match(c) and not keyword.iskeyword(c) for c in text.split(".")):
            return text
        return self._rename(text, lambda s: ".".join(_safe_component(c, first=False) for c in s.split(".")))

    def _rename(self, text, make):
        if text not in self.renamed:
            base, n = make(text), 0
            new = base
            while new in self.taken:
                n += 1
                new = f"{base}_{n}"
            self.taken.add(new)
            self.renamed[text] = new
        return self.renamed[text]


def _safe_component(text, first):
    out = re.sub(r"[^A-Za-z0-9_]", "_", text) or "_"
    if (first and out[0].isdigit()) or keyword.iskeyword(out):
        out = f"_{out}"
    return out


def _check_expr(text, path, field):
    """Refuse any shape expression that is not symbols, numbers and sympy arithmetic (sympify evals it)."""
    if not isinstance(text, str):
        raise BadInput(f"{path}: {field} is not a string", hint="the archive is damaged; export it again")
    rest = _FLOAT_DECL.sub(r"\1", _SYMBOL_DECL.sub(r"\1", text)).rstrip()  # then every token holds a character
    pos = 0
    while pos < len(rest):
        m = _EXPR_TOKEN.match(rest, pos)
        if not m:
            raise BadInput(f"{path}: {field} {text[:80]!r} is not a shape expression",
                           hint="the archive's model.json was edited; portx refuses to evaluate it")
        ident = m.group(1)
        if ident and ident not in _SYMPY_NAMES and not _SYMBOL_NAME.match(ident):
            raise BadInput(f"{path}: {field} {text[:80]!r} uses {ident!r}, which is not a shape symbol",
                           hint="the archive's model.json was edited; portx refuses to evaluate it")
        pos = m.end()
    return text


def _check_spec(text, path, field):
    """A pytree spec (JSON in a string): its type names and dict keys must be plain identifiers."""
    try:
        if nested_deeper_than(text, 200):
            raise BadInput(f"{path}: {field} is nested more than 200 deep", hint="export the model again")
        spec = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        raise BadInput(f"{path}: {field} is not a valid pytree spec",
                       hint="the archive is damaged; export it again") from None

    def visit(node, depth=0):  # at most 200 deep: nested_deeper_than checked the text
        if isinstance(node, dict):
            kind = node.get("type")
            if kind is not None and (not isinstance(kind, str) or not _TARGET.match(kind)):
                raise BadInput(f"{path}: {field} has type {str(kind)[:60]!r}", hint="export the model again")
            context = node.get("context")
            if isinstance(context, str) and context not in ("null", ""):
                try:
                    keys = json.loads(context)
                except (ValueError, RecursionError):
                    keys = context
                for key in keys if isinstance(keys, list) else [keys]:
                    if isinstance(key, str) and not (_TARGET.match(key) and not keyword.iskeyword(key)):
                        raise BadInput(f"{path}: {field} has an input/output key {key[:60]!r} that is not a "
                                       "Python identifier", hint="rename the argument or dict key and export again")
            for child in node.get("children_spec", []) or []:
                visit(child, depth + 1)
        elif isinstance(node, list):
            for child in node:
                visit(child, depth + 1)

    visit(spec)
    return text


def _strings(doc) -> set:
    """Every string (value or key) in a JSON document, so renamed names never collide with one."""
    found, stack = set(), [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            found.update(k for k in node if isinstance(k, str))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            found.add(node)
    return found


def clean_model_json(doc, names: _Names, path):
    """Rewrite ``model.json`` in place: safe names everywhere, checked targets/expressions, lean metadata."""
    stack = [(doc, "")]
    while stack:  # iterative: a hostile file may nest arbitrarily deep
        node, where = stack.pop()
        if isinstance(node, list):
            stack.extend((item, where) for item in node)
            continue
        if not isinstance(node, dict):
            continue
        for key in list(node):
            value = node[key]
            field = f"model.json {where + '.' if where else ''}{key}"
            if key == "guards_code":  # trusted: emptied, never run (ep.module() would compile it); portx checks shapes
                node[key] = []
            elif key == "treespec_namedtuple_fields" and value:
                raise BadInput(f"{path}: the program's inputs or outputs are namedtuples ({str(list(value))[:60]})",
                               hint="return tuples or dicts of tensors and export again")
            elif key == "metadata" and isinstance(value, dict):
                node[key] = {k: _CONTROL.sub(" ", v) for k, v in value.items()
                             if k in _KEPT_METADATA and isinstance(v, str)}
            elif key in ("tensor_values", "sym_int_values", "sym_bool_values", "sym_float_values",
                         "custom_obj_values") and isinstance(value, dict):
                node[key] = {names.name(k, f"{field} key"): v for k, v in value.items()}
                stack.append((node[key], key))
            elif key == "name" and isinstance(value, str) and where == "inputs":
                if value and not _IDENT.match(value):  # a schema argument name ("": a higher-order op's)
                    raise BadInput(f"{path}: {field} {value[:60]!r} is not an operator argument name",
                                   hint="the archive's model.json was edited; export the model again")
            elif key in ("name", *_NAME_KEYS):
                node[key] = names.name(value, field)
            elif key in _FQN_KEYS and isinstance(value, str):
                node[key] = names.fqn(value, field)
            elif key == "forward_arg_names" and isinstance(value, list):
                node[key] = [names.name(v, field) for v in value]
            elif key == "target" and isinstance(value, str):
                if not _TARGET.match(value):
                    raise BadInput(f"{path}: {field} {value[:60]!r} is not an operator name",
                                   hint="the archive's model.json was edited; export the model again")
            elif key == "expr_str":
                _check_expr(value, path, field)
            elif key == "range_constraints" and isinstance(value, dict):
                for sym in value:
                    _check_expr(sym, path, f"{field} key")
                stack.append((value, key))
            elif key in ("in_spec", "out_spec") and isinstance(value, str):
                _check_spec(value, path, field)
            elif isinstance(value, (dict, list)):
                stack.append((value, key))
    return doc


def _read_json(zf, member, path, kind):
    info = zf.getinfo(member)
    if info.file_size > MAX_JSON_BYTES:
        raise BadInput(f"{path}: {kind} {member} declares {info.file_size / 1e6:.0f} MB",
                       hint=f"portx reads JSON members up to {MAX_JSON_BYTES >> 20} MB; the archive looks hostile")
    try:
        text = zf.read(member).decode("utf-8")
        if nested_deeper_than(text, MAX_JSON_DEPTH):
            raise RecursionError
        return json.loads(text)
    except RecursionError:
        raise BadInput(f"{path}: {kind} {member} is nested too deeply to be a torch.export archive",
                       hint="the file is damaged or hostile; export the model again") from None
    except (ValueError, UnicodeDecodeError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise BadInput(f"{path}: {kind} {member} is not readable JSON ({type(exc).__name__})",
                       hint="the file is truncated or damaged; export the model again") from None


def _refuse_pickle(path, what):
    raise BadInput(f"{path}: {what}; loading it would unpickle data, which can run code stored in the file",
                   hint="re-save it with torch.export.save from a current torch, or pass --trust-pickle only "
                        "if you trust its author")


def _clean_payload_config(config, names, path, member, trust_pickle):
    entries = config.get("config") if isinstance(config, dict) else None
    if not isinstance(entries, dict):
        raise BadInput(f"{path}: {member} has no 'config' table", hint="the archive is damaged; export it again")
    cleaned = {}
    for fqn, meta in entries.items():
        if not isinstance(meta, dict):
            raise BadInput(f"{path}: {member} entry {str(fqn)[:60]!r} is not a table", hint="export it again")
        stored = str(meta.get("path_name", ""))
        pickled = meta.get("use_pickle") is not False or stored.startswith(("custom_obj_", "opaque_obj_"))
        if pickled and not trust_pickle:
            _refuse_pickle(path, f"{member} stores {str(fqn)[:60]!r} as a pickle ({stored[:40]})")
        if not re.match(r"^[A-Za-z0-9_.\-]+$", stored) or ".." in stored:
            raise BadInput(f"{path}: {member} entry {str(fqn)[:60]!r} points at {stored[:60]!r}",
                           hint="the archive is damaged or hostile; export it again")
        cleaned[names.fqn(fqn, f"{member} key")] = meta
    return {**config, "config": cleaned}


def _sample_inputs(zf, member, path, trust_pickle):
    """The example inputs, re-serialized from a ``weights_only`` load (torch would fall back to pickle)."""
    import torch

    data = zf.read(member)
    if not data:
        return data
    try:
        obj = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception:  # noqa: BLE001 - any refusal by the safe unpickler means "not plain tensors"
        if trust_pickle:
            return data
        _refuse_pickle(path, f"{member} (the example inputs) is not a plain tensor archive")
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def _archive_root(zf, path):
    names = zf.namelist()
    roots = {n.split("/", 1)[0] for n in names}
    if len(roots) != 1 or not all("/" in n for n in names):
        raise BadInput(f"{path}: not a torch.export archive (expected one top folder, found {len(roots)})",
                       hint="save the model with torch.export.save")
    root = roots.pop()
    for n in names:
        if n.startswith("/") or ".." in n.split("/") or "\\" in n:
            raise BadInput(f"{path}: archive member {n[:80]!r} escapes the archive",
                           hint="the file is hostile or damaged; do not use it")
    return root


def _clean_archive(path, trust_pickle):
    """Validate ``path`` and write a cleaned copy; returns (cleaned path, renamed names)."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        raise BadInput(f"{path}: not a readable torch.export archive (not a zip file)",
                       hint="the file may be truncated; re-save it with torch.export.save") from None
    with zf:
        root = _archive_root(zf, path)
        members = {n[len(root) + 1:]: n for n in zf.namelist()}
        models = [m for m in members if m.startswith("models/") and m.endswith(".json")]
        if "archive_version" not in members or not models:
            raise BadInput(f"{path}: not a readable torch.export archive (no models/*.json or archive_version)",
                           hint="the file may be truncated or of another kind; re-save it with torch.export.save")
        if len(models) > 1:
            raise BadInput(f"{path}: holds {len(models)} programs ({', '.join(models[:4])})",
                           hint="save one program per .pt2 file")
        model = models[0][len("models/"):-len(".json")]
        for member in members:
            if member.startswith("data/aotinductor/"):
                raise BadInput(f"{path}: holds AOTInductor native code ({member}); portx never loads it",
                               hint="save the ExportedProgram alone with torch.export.save")
            if member in (f"data/weights/{model}.pt", f"data/constants/{model}.pt") and not trust_pickle:
                _refuse_pickle(path, f"{member} is a legacy pickled weight file")
        replaced = {}
        doc = _read_json(zf, members[models[0]], path, "program")
        if not isinstance(doc, dict):
            raise BadInput(f"{path}: {models[0]} is not a program table", hint="export the model again")
        names = _Names(path, _strings(doc))
        replaced[models[0]] = json.dumps(clean_model_json(doc, names, path)).encode()
        for kind in ("weights", "constants"):
            member = f"data/{kind}/{model}_{kind}_config.json"
            if member in members:
                config = _read_json(zf, members[member], path, f"{kind} config")
                replaced[member] = json.dumps(_clean_payload_config(config, names, path, member,
                                                                    trust_pickle)).encode()
        sample = f"data/sample_inputs/{model}.pt"
        if sample in members:
            replaced[sample] = _sample_inputs(zf, members[sample], path, trust_pickle)
        fd, tmp = tempfile.mkstemp(suffix=".pt2", prefix="portx-clean-")
        os.close(fd)
        try:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as out:
                for member, full in members.items():
                    if member in replaced:
                        out.writestr(full, replaced[member])
                    else:
                        with zf.open(full) as src, out.open(zf.getinfo(full), "w") as dst:
                            shutil.copyfileobj(src, dst, 1 << 20)
        except BaseException:
            os.unlink(tmp)
            raise
    return Path(tmp), names.renamed


def load_pt2_safely(path, trust_pickle=False):
    """``torch.export.load`` on a validated, cleaned copy of ``path``; returns (program, notes)."""
    import torch

    path = Path(path)
    if trust_pickle:  # the user vouched for the file: torch reads it as it is
        return torch.export.load(str(path)), []  # trusted: --trust-pickle
    try:
        clean, renamed = _clean_archive(path, trust_pickle)
    except (OSError, zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, KeyError, NotImplementedError) as exc:
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            raise  # the temp copy: the disk, not the file
        raise BadInput(f"{path}: not a readable torch.export archive ({type(exc).__name__})",
                       hint="the file may be truncated; re-save it with torch.export.save") from None
    try:
        program = torch.export.load(str(clean))  # trusted: the validated, cleaned copy
    finally:
        os.unlink(clean)
    _check_stored_tensors(program, path)
    notes = [f"renamed {old!r} to {new!r} (not a safe Python identifier)" for old, new in renamed.items()]
    return program, notes


def _check_stored_tensors(program, path):
    """Each stored parameter, buffer and constant must have the shape and dtype the program declares."""
    import torch

    stored = {**program.state_dict, **program.constants}
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    for spec in program.graph_signature.input_specs:
        if spec.target is None or spec.target not in stored or spec.arg.name not in placeholders:
            continue
        tensor, declared = stored[spec.target], placeholders[spec.arg.name].meta.get("val")
        if not isinstance(tensor, torch.Tensor) or declared is None:
            continue
        if tuple(tensor.shape) != tuple(declared.shape) or tensor.dtype != declared.dtype:
            raise BadInput(f"{path}: stored {spec.target} is {tensor.dtype}{list(tensor.shape)} but the program "
                           f"declares {declared.dtype}{list(declared.shape)}",
                           hint="the archive's weights config and program disagree; export the model again")
