"""The portx exception family. Each maps to one documented exit code.

Messages have three parts: where (file, or ``node SCOPE (OP)``), what happened against what was
expected, and what to do.

Example:
    >>> raise BadInput("model.pt: holds a state_dict, not a model", hint="pass the nn.Module ...")
"""
from __future__ import annotations

__all__ = ["PortxError", "BadInput", "BadValue", "Interrupted", "UnsupportedOps", "NotTpuLegal", "VerificationFailed",
           "Unsupported", "PortxWarning", "EXIT_CODES", "MAX_INPUT_ELEMENTS", "first_line"]


#: the largest tensor portx allocates from a user's shape (--input, a model file's input or layer
#: shape): 2**31 elements, 8 GB of float32. Checked before allocating, in every frontend.
MAX_INPUT_ELEMENTS = 1 << 31


def first_line(exc, limit: int = 200, default: str = "") -> str:
    """The first line of ``exc``'s message, cut to ``limit`` characters (``default`` when it has none).

    How a message quotes a library's exception, which may be long or span many lines.
    Example: ``first_line(ValueError("bad shape\\n  details"))`` -> ``"bad shape"``.
    """
    text = str(exc).strip()
    return text.splitlines()[0][:limit] if text else default


class PortxError(Exception):
    """Base of every expected failure; ``exit_code`` is what the CLI returns."""

    exit_code = 2

    def __init__(self, message: str, hint: str = ""):
        self.message, self.hint = message, hint
        super().__init__(f"{message}. {hint}" if hint else message)


class VerificationFailed(PortxError):
    """Emitted model does not match the source within tolerance (artifacts are still written)."""

    exit_code = 1


class BadInput(PortxError):
    """Unreadable, wrong-kind or unsafe input, or bad usage."""

    exit_code = 2


class BadValue(BadInput, ValueError):
    """A parameter value outside its domain (NaN tolerance, negative seed, ...); also a ValueError."""


class Interrupted(BaseException):
    """SIGINT/SIGTERM arrived; ``exit_code`` is 128 + the signal number. Nothing was written."""

    def __init__(self, signum: int):
        self.signum, self.exit_code = signum, 128 + signum
        super().__init__(f"interrupted by signal {signum}")


class UnsupportedOps(PortxError):
    """One or more source ops have no IR mapping; ``items`` lists (op, scopes, reason) for all of them."""

    exit_code = 3

    def __init__(self, items: list, where: str = ""):
        self.items = items
        parts = []
        for op, scopes, reason in items:
            shown = ", ".join(s or "<top>" for s in scopes[:3])
            count = f" (x{len(scopes)})" if len(scopes) > 1 else ""
            parts.append(f"{op} at {shown}{count}" + (f" [{reason}]" if reason else ""))
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}{len(items)} unsupported op{'s' if len(items) != 1 else ''}: "
                         + "; ".join(parts), "See 'portx ops' for what is supported")


class NotTpuLegal(PortxError):
    """The model cannot run well on a TPU and ``--strict-tpu`` was given."""

    exit_code = 4


class Unsupported(Exception):
    """Raised by an import or emit rule for an op variant it cannot express (the message says why).

    Never escapes: the frontend, or the emitter (Note [emit-time unsupported] in targets/codegen.py),
    collects every such node and raises one ``UnsupportedOps``.
    """


class PortxWarning(UserWarning):
    """A conversion changed something the user should know about (collected into report.json)."""


EXIT_CODES = {0: "converted and verified", 1: "verification failed (artifacts written)",
              2: "bad input or usage", 3: "unsupported ops", 4: "not TPU-legal under --strict-tpu",
              70: "internal error (a bug in portx; rerun with --debug and report it)",
              130: "interrupted (SIGINT); nothing written, the previous OUT untouched",
              143: "terminated (SIGTERM); nothing written, the previous OUT untouched"}
