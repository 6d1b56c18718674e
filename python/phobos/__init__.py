"""phobos: the Phobos runtime (libphobos.so) from Python, through ctypes.

    import phobos
    m = phobos.load("examples/vecadd/vecadd.ph")
    m.vecadd[lambda meta: (cdiv(n, meta["BLOCK"]),)](x, y, z)

Arguments are NumPy arrays (or CPU torch tensors) when the kernels run on
the CPU interpreter, CUDA torch tensors when they run on the GPU, and
Python ints and floats for i32, i64 and f32 parameters. Each is checked against
the kernel's signature, as the runtime reports it, before anything runs.
On the GPU a launch goes on torch's current stream of the module's device.
See docs/python.md."""

import contextlib
import ctypes
import os
import subprocess
import sys

__all__ = ["load", "compile", "kernel", "init", "shutdown", "target", "device_name", "version",
           "PhobosError", "CompileError", "LaunchError", "Module", "Kernel"]

# ---- the library ----

_SONAME = "libphobos.so.0"


def _candidates():
    """Where libphobos.so.0 may be, in the order tried: $PHOBOS_LIBRARY, the
    copy a wheel carries (pip install . from a built tree: setup.py), the
    build folder of the source tree this package sits in, an installed
    prefix that pkg-config knows, then the loader's own search."""
    env = os.environ.get("PHOBOS_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, _SONAME)
    yield os.path.join(here, "..", "..", "build", _SONAME)
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "phobos"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        if libdir:
            yield os.path.join(libdir, _SONAME)
    except (OSError, subprocess.SubprocessError):
        pass
    yield os.path.join("/usr/local/lib", _SONAME)
    yield _SONAME


def _open_library():
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(path + " (no such file)")
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError("phobos: cannot load the runtime library; tried " + "; ".join(tried) +
                      ". Build it (make) or install it (make install), or set PHOBOS_LIBRARY to its path")


_lib = _open_library()

# ---- the C API's types (runtime/include/phobos.h) ----

_OK, _ERR_COMPILE, _ERR_NOT_FOUND, _ERR_ARGS, _ERR_NOT_ELIGIBLE, _ERR_GRID = 0, 4, 6, 7, 8, 9
_ARG_TENSOR, _ARG_I32, _ARG_F32, _ARG_I64 = 1, 2, 3, 4
_DTYPES = {"f16": 1, "bf16": 2, "f32": 3, "i32": 4, "i8": 5, "u8": 6, "f8e4m3": 7, "f8e5m2": 8, "i64": 9}   # ph_dtype
_INTERPRETER = -1


class _Arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("ptr", ctypes.c_uint64), ("dims", ctypes.c_int64 * 4),
                ("i32", ctypes.c_int32), ("f32", ctypes.c_float), ("dtype", ctypes.c_int),
                ("strides", ctypes.c_int64 * 4)]


class _Meta(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int), ("names", ctypes.POINTER(ctypes.c_char_p)),
                ("values", ctypes.POINTER(ctypes.c_int64))]


class _Param(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kind", ctypes.c_int), ("dtype", ctypes.c_char_p),
                ("rank", ctypes.c_int), ("dim_names", ctypes.c_char_p * 4), ("dim_values", ctypes.c_int64 * 4)]


_GridFn = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Meta), ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint * 3))
_vp, _cp, _int = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int


def _sig(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype, f.argtypes = restype, list(argtypes)
    return f


_version = _sig("ph_version", _cp)
_init = _sig("ph_init", _int, _int)
_shutdown = _sig("ph_shutdown", None)
_set_device = _sig("ph_set_device", _int, _int)
_last_error = _sig("ph_last_error", _cp)
_status_name = _sig("ph_status_name", _cp, _int)
_device_name = _sig("ph_device_name", _cp)
_device_multiprocessors = _sig("ph_device_multiprocessors", _int)
_module_load_file = _sig("ph_module_load_file", _int, _cp, ctypes.POINTER(_vp))
_module_load_string = _sig("ph_module_load_string", _int, _cp, _cp, ctypes.POINTER(_vp))
_module_free = _sig("ph_module_free", None, _vp)
_kernel_get = _sig("ph_kernel_get", _int, _vp, _cp, ctypes.POINTER(_vp))
_kernel_count = _sig("ph_module_kernel_count", _int, _vp)
_kernel_name = _sig("ph_module_kernel_name", _cp, _vp, _int)
_kernel_param_count = _sig("ph_kernel_param_count", _int, _vp)
_kernel_param = _sig("ph_kernel_param", _int, _vp, _int, ctypes.POINTER(_Param))
_launch = _sig("ph_launch_stream", _int, _vp, _GridFn, _vp, ctypes.POINTER(_Arg), _int, _vp)
_last_config = _sig("ph_kernel_last_config", _cp, _vp)

# ---- errors ----


class PhobosError(RuntimeError):
    """A call into the runtime failed; .status names its ph_status."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class CompileError(PhobosError):
    """The .ph source has errors; the message holds them as file:line:col: error: ..."""


class LaunchError(PhobosError, ValueError):
    """The runtime refused a launch: arguments, no eligible config, or the grid."""


def _error(status, what=None):
    msg = _last_error().decode(errors="replace").rstrip("\n")
    name = _status_name(status).decode()
    text = f"{what}: {msg}" if what else msg
    if status == _ERR_COMPILE:
        return CompileError(text or name, name)
    if status in (_ERR_ARGS, _ERR_NOT_ELIGIBLE, _ERR_GRID):
        return LaunchError(text or name, name)
    return PhobosError(f"{text} ({name})", name)


# ---- the target: the CPU interpreter or a GPU ----

_target = None   # "interp" or "gpu" once initialized


def version():
    return _version().decode()


__version__ = version()   # the library's: its one home is phobos.h


def init(target=None, device=0):
    """Starts the runtime on target "interp" (the CPU interpreter: NumPy
    arrays), "gpu" (device `device`: CUDA torch tensors) or "auto" (the GPU
    when there is one, else the interpreter). None means $PHOBOS_TARGET, else
    "auto". Returns the target. Changing it needs shutdown() first."""
    global _target
    target = target or os.environ.get("PHOBOS_TARGET") or "auto"
    if target not in ("interp", "gpu", "auto"):
        raise ValueError(f"phobos.init: target must be 'interp', 'gpu' or 'auto', not {target!r}")
    if target == "auto":
        s = _init(device)
        if s != _OK:
            s = _init(_INTERPRETER)
    else:
        s = _init(_INTERPRETER if target == "interp" else device)
    if s != _OK:
        raise _error(s, "phobos.init")
    _target = "interp" if _device_name().decode() == "the CPU interpreter" else "gpu"
    if target == "gpu" and _target != "gpu":
        raise PhobosError("phobos.init: a GPU was asked for, but PHOBOS_TARGET=interp selects the interpreter")
    return _target


def shutdown():
    global _target
    _shutdown()
    _target = None


def _torch_device():
    """The GPU torch works on in this thread (torch.cuda.current_device())."""
    torch = sys.modules.get("torch")
    return torch.cuda.current_device() if torch is not None and torch.cuda.is_available() else 0


def _use_device(device):
    """Makes GPU `device` this thread's in the runtime, starting it first."""
    s = _init(device)
    if s == _OK:
        s = _set_device(device)
    if s != _OK:
        raise _error(s, f"phobos: cuda:{device}")


def target():
    """"interp", "gpu", or None before the runtime is started."""
    return _target


def device_name():
    return _device_name().decode()


def device_multiprocessors():
    """The device's multiprocessors (SMs): the grid of a persistent kernel
    that keeps each busy; 1 on the interpreter, 0 before a device starts."""
    return _device_multiprocessors()


# ---- arguments ----

# A parameter's dtype as each kind of array spells it. NumPy has no
# bfloat16 and no fp8: a bf16 parameter takes uint16 arrays of the bit
# patterns, an fp8 one uint8 arrays of them.
_NUMPY_DTYPES = {"f16": "float16", "f32": "float32", "i32": "int32", "bf16": "uint16", "i8": "int8", "u8": "uint8",
                 "f8e4m3": "uint8", "f8e5m2": "uint8", "i64": "int64"}
_TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "i32": "int32", "i8": "int8", "u8": "uint8",
                 "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2", "i64": "int64"}
_I32_RANGE = (-2**31, 2**31 - 1)
_I64_RANGE = (-2**63, 2**63 - 1)


def _is_torch(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _is_numpy(x):
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


class _Parameter:
    def __init__(self, p):
        self.name = p.name.decode()
        self.kind = p.kind
        self.dtype = p.dtype.decode()
        self.rank = p.rank
        self.dims = [p.dim_names[a].decode() if p.dim_names[a] else int(p.dim_values[a]) for a in range(p.rank)]

    def __repr__(self):
        if self.kind != _ARG_TENSOR:
            return f"{self.name}: {self.dtype}"
        return f"{self.name}: {self.dtype}[{', '.join(map(str, self.dims))}]"


def _tuple(t):
    """(1, 64), or (2) for one element: as the runtime's messages write them."""
    return "(" + ", ".join(map(str, t)) + ")"


def _tensor_arg(kname, p, x):
    """A ph_arg for tensor parameter p from x, with its dtype and strides (in
    elements) for the runtime to check against the signature. What the
    runtime cannot see is checked here: the kind of array, where its memory
    is, a dtype the language does not have, the rank. The messages name the
    parameter."""
    where = f"{kname}: argument {p.name} ({p!r})"
    if _is_torch(x):
        names = _TORCH_DTYPES
        got = str(x.dtype).replace("torch.", "")
        on_gpu = x.is_cuda
        ptr, shape, strides = x.data_ptr(), tuple(x.shape), tuple(x.stride())
    elif _is_numpy(x):
        names = _NUMPY_DTYPES
        got = str(x.dtype)
        on_gpu = False
        ptr, shape = x.ctypes.data, x.shape
        if any(s % x.itemsize for s in x.strides):
            raise ValueError(f"{where} has strides of {_tuple(x.strides)} bytes, not whole elements; pass a contiguous copy")
        strides = tuple(s // x.itemsize for s in x.strides)
    elif isinstance(x, (bytes, memoryview)) and (isinstance(x, bytes) or x.readonly):
        raise ValueError(f"{where} is an immutable buffer ({type(x).__name__}), which a kernel must not write; "
                         f"pass a writable NumPy array")
    else:
        raise TypeError(f"{where} must be a NumPy array or a torch tensor, got {type(x).__name__}")
    if on_gpu != (_target == "gpu"):
        raise TypeError(f"{where} is {'a CUDA tensor' if on_gpu else 'in host memory'}, but the kernels run on "
                        f"{'the GPU: pass a CUDA torch tensor' if _target == 'gpu' else 'the CPU interpreter: pass a NumPy array or a CPU tensor'}")
    # the parameter's own first: NumPy's uint8 is u8's and fp8's
    dtype = p.dtype if names.get(p.dtype) == got else next((d for d, name in names.items() if name == got), None)
    if dtype is None:   # no dtype of the language: nothing to tell the runtime
        raise TypeError(f"{where} must have dtype {names[p.dtype]}, got {got}")
    if len(shape) != p.rank:
        raise ValueError(f"{where} must have rank {p.rank}, got rank {len(shape)} (shape {shape})")
    if not any(strides) and any(d != 1 for d in shape):
        # one element broadcast: the runtime would read strides all 0 as "not given"
        raise LaunchError(f"{kname}: parameter {p.name}: strides {_tuple(strides)} are not row-major contiguous "
                          f"for dims {_tuple(shape)}", "bad arguments")
    if _is_numpy(x) and not x.flags.writeable:
        # a kernel may store into any tensor it is given, and the interpreter would write through
        raise ValueError(f"{where} is read-only (an immutable buffer, or a NumPy array with writeable=False); "
                         f"pass a writable array, e.g. its copy")
    # a rank-3/4 view (a transpose, a permute, a slice of heads) goes as it is: the kernel reads it
    # through its strides; rank 1 and 2 must be row-major, which the runtime checks
    a = _Arg(_ARG_TENSOR, ptr)
    for i in range(4):
        a.dims[i] = shape[i] if i < p.rank else 1
    a.dtype = _DTYPES[dtype]
    for i, stride in enumerate(strides):
        a.strides[i] = stride
    return a


def _scalar_arg(kname, p, x):
    where = f"{kname}: argument {p.name} ({p!r})"
    if hasattr(x, "item") and getattr(x, "ndim", 0) == 0:
        x = x.item()   # a NumPy or torch scalar
    if p.kind == _ARG_I32:
        if isinstance(x, bool) or not isinstance(x, int):
            raise TypeError(f"{where} must be an int, got {type(x).__name__}")
        if not _I32_RANGE[0] <= x <= _I32_RANGE[1]:
            raise ValueError(f"{where} = {x} does not fit in an i32")
        return _Arg(_ARG_I32, 0, (ctypes.c_int64 * 4)(), x, 0.0)
    if p.kind == _ARG_I64:
        if isinstance(x, bool) or not isinstance(x, int):
            raise TypeError(f"{where} must be an int, got {type(x).__name__}")
        if not _I64_RANGE[0] <= x <= _I64_RANGE[1]:
            raise ValueError(f"{where} = {x} does not fit in an i64")
        return _Arg(_ARG_I64, 0, (ctypes.c_int64 * 4)(x, 0, 0, 0), 0, 0.0)   # phobos.h: an i64 in dims[0]
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{where} must be a float, got {type(x).__name__}")
    return _Arg(_ARG_F32, 0, (ctypes.c_int64 * 4)(), 0, float(x))


# ---- modules and kernels ----


def _grid_tuple(g):
    if isinstance(g, int):
        g = (g,)
    g = tuple(g)
    if not 1 <= len(g) <= 3 or not all(isinstance(v, int) and not isinstance(v, bool) for v in g):
        raise TypeError(f"a grid is a tuple of one to three ints, got {g!r}")
    return g


class Kernel:
    """A kernel of a module (launches autotune across its configs), or one
    config by its entry name. Launch with kernel[grid](*args); grid is a
    tuple of ints, or a function of the config's meta-parameters (a dict)
    that returns one."""

    def __init__(self, module, name, handle):
        self._module = module   # keeps the module alive
        self.name = name
        self._handle = handle
        n = _kernel_param_count(handle)
        self.params = []
        for i in range(n):
            p = _Param()
            if _kernel_param(handle, i, ctypes.byref(p)) != _OK:
                raise _error(_ERR_ARGS, name)
            self.params.append(_Parameter(p))

    def __repr__(self):
        return f"<phobos kernel {self.name}({', '.join(map(repr, self.params))})>"

    def __getitem__(self, grid):
        return _Launcher(self, grid)

    def __call__(self, *args, grid, **kwargs):
        return self.launch(grid, *args, **kwargs)

    @property
    def last_config(self):
        """The entry name of the config the last launch ran, or None."""
        c = _last_config(self._handle)
        return c.decode() if c else None

    def _start(self, args):
        if _target is not None:
            return
        cuda = [x for x in args if _is_torch(x) and x.is_cuda]
        init("gpu" if cuda and os.environ.get("PHOBOS_TARGET") != "interp" else "interp",
             device=(cuda[0].device.index or 0) if cuda else 0)

    def _device(self, args):
        """The GPU this launch runs on, the module's: the device its CUDA
        tensors are on, when the module has none yet."""
        devices = sorted({x.device.index or 0 for x in args if _is_torch(x) and x.is_cuda})
        m = self._module
        if m._device is None:
            m._device = devices[0] if devices else _torch_device()
        for d in devices:
            if d != m._device:
                raise ValueError(f"{self.name}: a tensor is on cuda:{d}, but this module runs on cuda:{m._device} "
                                 f"(load the file again with cuda:{d} current for that device)")
        return m._device

    def _by_name(self, args, kwargs):
        """args followed by kwargs in the signature's order, each parameter once."""
        names = [p.name for p in self.params]
        for k in kwargs:
            if k not in names:
                raise TypeError(f"{self.name} has no parameter named '{k}' ({', '.join(map(repr, self.params))})")
            if names.index(k) < len(args):
                raise TypeError(f"{self.name}: argument {k} given by position and by name")
        missing = [n for n in names[len(args):] if n not in kwargs]
        if missing and kwargs:
            raise TypeError(f"{self.name}: missing argument{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                            f"({', '.join(map(repr, self.params))})")
        return tuple(args) + tuple(kwargs[n] for n in names[len(args):] if n in kwargs)

    def launch(self, grid, *args, **kwargs):
        if kwargs:
            args = self._by_name(args, kwargs)
        if len(args) != len(self.params):
            raise TypeError(f"{self.name} takes {len(self.params)} arguments ({', '.join(map(repr, self.params))}), "
                            f"got {len(args)}")
        self._start(args)
        cargs = (_Arg * max(len(args), 1))()
        for i, (p, x) in enumerate(zip(self.params, args)):
            cargs[i] = _tensor_arg(self.name, p, x) if p.kind == _ARG_TENSOR else _scalar_arg(self.name, p, x)
        raised = []

        def fill(meta, user, out):
            try:
                m = meta.contents
                d = {m.names[i].decode(): int(m.values[i]) for i in range(m.n)}
                g = _grid_tuple(grid(d) if callable(grid) else grid)
                for i, v in enumerate(g):
                    out.contents[i] = max(0, min(v, 2**32 - 1))
            except BaseException as e:   # ctypes cannot carry it through C: raised after the call
                raised.append(e)
                out.contents[0] = 0

        if not callable(grid):
            _grid_tuple(grid)   # a bad grid is said before anything runs
        stream, guard = None, contextlib.nullcontext()
        if _target == "gpu":
            device = self._device(args)
            torch = sys.modules.get("torch")
            if torch is not None:
                guard = torch.cuda.device(device)   # ph_set_device moves the thread's context: torch puts its own back
                stream = torch.cuda.current_stream(device).cuda_stream   # ordered with torch's work there
        with guard:
            if _target == "gpu":
                _use_device(device)
            s = _launch(self._handle, _GridFn(fill), None, cargs, len(args), stream)
        if raised:
            raise raised[0]
        if s != _OK:
            raise _error(s)


class _Launcher:
    """kernel[grid]: called with the arguments, by position or by parameter name."""

    def __init__(self, kernel, grid):
        self._kernel, self._grid = kernel, grid

    def __call__(self, *args, **kwargs):
        return self._kernel.launch(self._grid, *args, **kwargs)


class Module:
    """A compiled .ph file (or source text, compile()): its kernels are attributes (module.vecadd), and
    module["entry__NAME_V"] picks one config."""

    def __init__(self, path, source=None):
        self.path = os.fspath(path)
        self._handle = None
        self._device = None   # the GPU it runs on: the current one at load, or its first launch's tensors'
        if _target == "gpu":
            self._device = _torch_device()
            _use_device(self._device)
        h = _vp()
        if source is None:
            s = _module_load_file(self.path.encode(), ctypes.byref(h))
        else:
            s = _module_load_string(self.path.encode(), source.encode(), ctypes.byref(h))
        if s == _ERR_NOT_FOUND:
            raise FileNotFoundError(_last_error().decode(errors="replace").rstrip("\n"))
        if s != _OK:
            raise _error(s)
        self._handle = h
        self._kernels = {}
        # the kernels' names, in the source's order (ph_module_kernel_name)
        self.kernels = tuple(_kernel_name(h, i).decode() for i in range(_kernel_count(h)))

    def kernel(self, name):
        if name not in self._kernels:
            k = _vp()
            if _kernel_get(self._handle, name.encode(), ctypes.byref(k)) != _OK:
                # the runtime's words, with the nearest kernel's name when one is near
                msg = _last_error().decode(errors="replace").rstrip("\n")
                raise AttributeError(f"{self.path}: {msg} (its kernels: {', '.join(self.kernels)})")
            self._kernels[name] = Kernel(self, name, k)
        return self._kernels[name]

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self.kernel(name)

    def __getitem__(self, name):
        return self.kernel(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.kernels))

    def __repr__(self):
        return f"<phobos module {self.path}: {', '.join(self.kernels)}>"

    def __del__(self):
        if self._handle is not None and _module_free is not None:
            _module_free(self._handle)
            self._handle = None


def load(path):
    """Compiles a .ph file into a Module. Errors in the source raise
    CompileError with the diagnostics (file:line:col: error: ...); a file
    that cannot be read raises FileNotFoundError."""
    return Module(path)


def compile(source, name="<string>"):
    """Compiles Phobos source text into a Module; name names it in
    diagnostics (name:line:col: error: ...), which raise CompileError."""
    if not isinstance(source, str):
        raise TypeError(f"compile: source must be a str, got {type(source).__name__}")
    return Module(name, source)


def kernel(fn):
    """@phobos.kernel: a kernel written as a Python function in a .py file
    (phobos.lang.kernel, @ph.kernel: see phobos/lang.py)."""
    from . import lang
    return lang.kernel(fn)


def cdiv(a, b):
    return (a + b - 1) // b
