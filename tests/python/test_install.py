"""test_install.py: `pip install .` from the top of the source tree, offline
(no build isolation, no index), into a folder of its own: the installed
package must load the library the wheel carries, with no PHOBOS_LIBRARY
and away from the source tree, and run a kernel on the interpreter."""

import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

needs_build_tools = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("pip", "setuptools", "wheel")),
    reason="pip install --no-build-isolation needs pip, setuptools and wheel in this python")


@needs_build_tools
@pytest.mark.skipif(not os.path.exists(os.path.join(ROOT, "build", "libphobos.so.0")), reason="needs make's library")
def test_pip_install_from_the_top_carries_the_library(tmp_path):
    target = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                          "--quiet", "--target", str(target), ROOT], capture_output=True, text=True)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert (target / "phobos" / "libphobos.so.0").exists()
    script = ("import os, numpy as np, phobos\n"
              "assert phobos._lib._name == os.path.join(os.path.dirname(phobos.__file__), 'libphobos.so.0'), phobos._lib._name\n"
              "phobos.init('interp')\n"
              "k = phobos.compile('import phobos.lang as ph\\n@ph.kernel\\n'\n"
              "    'def twice(X: ph.tensor[ph.f32][64], Y: ph.tensor[ph.f32][64]):\\n    Y[0:+64] = 2.0 * X[0:+64]\\n').twice\n"
              "x = np.arange(64, dtype=np.float32); y = np.zeros_like(x)\n"
              "k[(1,)](x, y)\n"
              "assert (y == 2 * x).all()\n"
              "print(phobos.__file__)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PHOBOS_LIBRARY", "PYTHONPATH")}
    env["PYTHONPATH"] = str(target)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == str(target / "phobos" / "__init__.py")
