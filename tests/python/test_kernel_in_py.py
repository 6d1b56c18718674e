"""test_kernel_in_py.py: kernels written as Python functions in a .py file
(tests/python/kernels_in_py.py) with @ph.kernel or @phobos.kernel,
compiled at their first launch and run on the CPU interpreter against
NumPy; their diagnostics at the .py file's lines and columns."""

from __future__ import annotations   # phobos.lang asks it of every module that imports it (before 3.14)

import os
import subprocess
import sys

import numpy as np
import pytest

import phobos
import phobos.lang as ph

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernels_in_py   # noqa: E402  (after the path)


@pytest.fixture(scope="module", autouse=True)
def interpreter():
    phobos.shutdown()
    assert phobos.init("interp") == "interp"
    yield
    phobos.shutdown()


def test_a_kernel_function_compiles_at_its_first_launch_and_runs():
    axpy = kernels_in_py.axpy
    assert isinstance(axpy, ph.KernelFunction) and axpy.__name__ == "axpy"
    n = 1000   # the last block reaches past the end
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    z = np.full(n, np.nan, np.float32)
    axpy[lambda meta: (phobos.cdiv(n, meta["BLOCK"]),)](x, y, z, 2.0)
    np.testing.assert_allclose(z, 2 * x + y, rtol=1e-6)
    assert axpy.last_config == "axpy__BLOCK_128"
    assert "compiled" in repr(axpy) and "not compiled" not in repr(axpy)
    assert [repr(p) for p in axpy.params] == ["X: f32[N]", "Y: f32[N]", "Z: f32[N]", "a: f32"]
    z[:] = np.nan
    axpy(X=x, Y=y, Z=z, a=-1.0, grid=(8,))   # 8 blocks of 128; by name, as a phobos.Kernel
    np.testing.assert_allclose(z, y - x, rtol=1e-6)
    assert axpy.module.kernels == ("axpy",)


def test_phobos_kernel_and_a_meta_parameter_named_in_a_decorator():
    softmax = kernels_in_py.softmax
    assert "@ph.kernel\n" in softmax.source and "@ph.launch( T )" in softmax.source
    M, N = 40, 256   # M no multiple of BM
    x = np.random.default_rng(8).standard_normal((M, N)).astype(np.float16)
    y = np.zeros((M, N), np.float32)
    softmax[lambda meta: (phobos.cdiv(M, meta["BM"]),)](x, y)
    e = np.exp(x.astype(np.float64) - x.astype(np.float64).max(axis=1, keepdims=True))
    assert np.abs(y - e / e.sum(axis=1, keepdims=True)).max() < 1e-5
    assert softmax.last_config == "softmax__N_256__BM_16__T_64"
    x, y = np.zeros((M, 100), np.float16), np.zeros((M, 100), np.float32)
    with pytest.raises(phobos.LaunchError, match=r"^softmax: no config accepts these arguments: "
                                                  r"softmax__N_128__BM_16__T_64 needs N = 128, got 100; "
                                                  r"softmax__N_128__BM_16__T_128 needs N = 128, got 100; "
                                                  r"softmax__N_256__BM_16__T_64 needs N = 256, got 100; "
                                                  r"softmax__N_256__BM_16__T_128 needs N = 256, got 100$"):
        softmax[(3,)](x, y)


def test_a_kernel_functions_errors_are_at_the_py_files_line_and_column():
    path = kernels_in_py.__file__
    lines = open(path).read().splitlines()
    assert lines[29].find("/") + 1 == 22 and lines[35].find("/") + 1 == 23   # the places the messages must name
    with pytest.raises(phobos.CompileError, match=rf"^{path}:30:22: error: '/' on two i32 values"):
        kernels_in_py.broken[(1,)](4)
    inner = kernels_in_py.nested()   # defined inside a function: indented
    with pytest.raises(phobos.CompileError, match=rf"^{path}:36:23: error: '/' on two i32 values"):
        inner.compile()


def test_a_function_without_a_file_is_refused():
    with pytest.raises(phobos.CompileError, match=r"k: a kernel function needs its source in a \.py file"):
        exec("from __future__ import annotations\nimport phobos.lang as ph\n"
             "@ph.kernel\ndef k(n: ph.i32):\n    pass\n", {})


def test_a_meta_parameter_named_in_any_one_number_decorator_loses_its_quotes():
    for name in ("launch", "stages", "warp_specialize", "occupancy"):
        line = f'@ph.{name}("OCC")\n'
        assert ph._decorator_line(line, "ph") == f"@ph.{name}( OCC )\n"
    assert ph._decorator_line('@ph.autotune_key("causal")\n', "ph") == '@ph.autotune_key("causal")\n'


def test_the_other_decorators_give_the_function_back():
    def f():
        pass
    assert ph.autotune(BLOCK=[128])(f) is f and ph.tensorcore(f) is f and ph.launch(128)(f) is f
    with pytest.raises(TypeError, match=r"@kernel applies to a function"):
        ph.kernel(ph.tensorcore)


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="annotations are not evaluated at definition from 3.14 on")
def test_without_the_future_import_the_import_says_what_to_add(tmp_path):
    script = tmp_path / "no_future.py"
    script.write_text("import phobos.lang as ph\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=os.environ)
    assert run.returncode != 0
    assert f"ImportError: {script}: put 'from __future__ import annotations' at the top of the file" in run.stderr
    script.write_text("from __future__ import annotations\nimport phobos.lang as ph\n")
    assert subprocess.run([sys.executable, str(script)], capture_output=True, env=os.environ).returncode == 0
