"""The tutorial's Python program: vecadd.ph and softmax.ph through the
phobos package, on CUDA torch tensors where there is a GPU, else on NumPy
arrays with the CPU interpreter (PHOBOS_TARGET=interp asks for it), each
result checked against NumPy."""

import sys

try:
    import numpy as np
except ImportError:   # the python3 first on PATH may not be the one `make deps` gave NumPy to
    sys.exit(f"tutorial.py: {sys.executable} has no NumPy; `make deps` installs it for Debian's "
             "/usr/bin/python3: run the commands with /usr/bin/python3, or `pip install numpy` for this one")

import phobos

target = phobos.init()    # $PHOBOS_TARGET, else "auto": the GPU if there is one
print("running on", phobos.device_name())
if target == "gpu":
    import torch

    def to_device(a):
        return torch.from_numpy(a).cuda()

    def to_host(t):
        return t.cpu().numpy()
else:
    def to_device(a):
        return a    # the interpreter works on host memory

    def to_host(a):
        return a

ok = True
rng = np.random.default_rng(0)

# vecadd: the grid is a function of the config's meta-parameters.
vecadd = phobos.load("vecadd.ph").vecadd
n = 100000
x = rng.standard_normal(n, dtype=np.float32)
y = rng.standard_normal(n, dtype=np.float32)
dx, dy, dz = to_device(x), to_device(y), to_device(np.zeros(n, dtype=np.float32))
vecadd[lambda meta: (phobos.cdiv(n, meta["BLOCK"]),)](dx, dy, dz)
wrong = np.count_nonzero(to_host(dz) != x + y)
print(f"vecadd: {n} elements, {wrong} wrong ({vecadd.last_config})")
ok &= wrong == 0

# softmax: rows and columns that are no multiple of BM or BN.
softmax = phobos.load("softmax.ph").softmax
rows, cols = 100, 1000
x = rng.uniform(-5, 5, (rows, cols)).astype(np.float32)
dx, dy = to_device(x), to_device(np.zeros((rows, cols), dtype=np.float32))
softmax[lambda meta: (phobos.cdiv(rows, meta["BM"]),)](dx, dy)
e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
want = e / e.sum(axis=1, keepdims=True)
wrong = np.count_nonzero(~(np.abs(to_host(dy) - want) <= 1e-4 * want))
print(f"softmax: {rows} x {cols}, {wrong} wrong ({softmax.last_config})")
ok &= wrong == 0

# The launch is checked before anything runs: a float64 array is refused.
try:
    vecadd[(1,)](to_device(x[0].astype(np.float64)), dy[0], dy[0])
    print("a float64 argument was accepted")
    ok = False
except TypeError as err:
    print("a float64 argument:", err)

print("every result matches NumPy" if ok else "WRONG RESULTS")
sys.exit(0 if ok else 1)
