"""Run code the way a user of the converted files does: a fresh interpreter that never imports portx."""
import os
import subprocess
import sys
import textwrap


def run_consumer(code, model_py=None, env_extra=None):
    """Run ``code`` in a fresh interpreter (KERAS_BACKEND=jax) and assert it passed without importing portx.

    With ``model_py``, the code starts with that file imported as ``converted``, as a user imports it.
    """
    env = {**os.environ, "KERAS_BACKEND": "jax", **(env_extra or {})}
    head = "" if model_py is None else (
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('converted', {str(model_py)!r})\n"
        "converted = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(converted)\n")
    script = head + textwrap.dedent(code) + "\nimport sys\nassert 'portx' not in sys.modules\nprint('OK')\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0 and done.stdout.strip().endswith("OK"), done.stderr[-3000:]
