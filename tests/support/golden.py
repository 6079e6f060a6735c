"""Golden files: compare emitted source with the reviewed copy, or rewrite it under ``--update-golden``.

Example: ``check_golden(code, GOLDEN / "resnet.py.txt", request)``.
"""
__all__ = ["check_golden"]


def check_golden(code: str, golden, request) -> None:
    """Fail unless ``code`` equals the file ``golden``; with ``--update-golden``, write it first."""
    if request.config.getoption("--update-golden"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(code)
    assert golden.exists(), f"no golden file {golden}; run with --update-golden"
    assert code == golden.read_text(), f"emitted source changed; review and refresh {golden} with --update-golden"
