"""phobos.lang: kernels written in a .py file, as Triton users write them.

    from __future__ import annotations   # the annotations name dims (N) Python does not know
    import phobos.lang as ph

    @ph.kernel
    @ph.autotune(BLOCK=[128, 256])
    def vecadd(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N]):
        i0: ph.let = ph.ctx.block.x * BLOCK
        Z[i0:+BLOCK] = X[i0:+BLOCK] + Y[i0:+BLOCK]

    vecadd[lambda meta: (phobos.cdiv(n, meta["BLOCK"]),)](x, y, z)

The function is Phobos code, not Python: Python never runs its body. The
decorator keeps the function's text (inspect.getsource), and the first
launch compiles it with phc as a .ph file of its own, with the .py file's
name and line numbers, so a diagnostic points into the .py file. Every
other attribute of this module (ph.autotune, ph.tensorcore, ph.f32, ...)
is a stand-in that Python may evaluate while it defines the function and
that does nothing. See docs/python.md."""

import functools
import inspect
import re
import sys

import phobos

__all__ = ["kernel", "KernelFunction"]

# ---- the annotations must stay text ----

_FUTURE_ANNOTATIONS = 0x1000000   # __future__.annotations.compiler_flag
_LAZY_ANNOTATIONS = sys.version_info >= (3, 14)   # PEP 649: annotations are evaluated only when asked for


def _importer():
    """The code object of the module-level code that imports this module, or None."""
    f = sys._getframe(1)
    while f is not None and (f.f_code.co_filename == __file__ or f.f_code.co_filename.startswith("<frozen importlib")):
        f = f.f_back
    return f.f_code if f is not None and f.f_code.co_name == "<module>" else None


def _check_annotations_stay_text():
    """A kernel's annotations name dims and meta-parameters (N, BLOCK) that
    are no Python names: Python before 3.14 would evaluate them when it
    defines the function and raise NameError before the decorator sees it.
    Said at the import, where the fix goes, rather than as that NameError."""
    code = _importer()
    if _LAZY_ANNOTATIONS or code is None or code.co_flags & _FUTURE_ANNOTATIONS:
        return
    raise ImportError(f"{code.co_filename}: put 'from __future__ import annotations' at the top of the file, before "
                      f"'import phobos.lang': a kernel's annotations name its dims (ph.tensor[ph.f32][N]), which "
                      f"Python {sys.version_info[0]}.{sys.version_info[1]} would otherwise evaluate as Python names")


_check_annotations_stay_text()


# ---- stand-ins for what Python evaluates of a kernel's definition ----

class _StandIn:
    """ph.autotune(...), ph.tensorcore, ph.f32[...]: evaluated by Python
    when it defines a kernel function, checked by phc when it compiles it.
    As a decorator it gives the function back unchanged."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"<phobos.lang stand-in {self._name}>"

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _StandIn(f"{self._name}.{attr}")

    def __getitem__(self, item):
        return self

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and (callable(args[0]) and not isinstance(args[0], _StandIn)):
            return args[0]   # applied as a decorator
        return self


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _StandIn(name)


# ---- the function's text, as a .ph file ----

def _aliases(fn):
    """The names fn's module binds to this module (import phobos.lang as ph: "ph")."""
    here = sys.modules[__name__]
    return [name for name, value in fn.__globals__.items() if value is here]


def _source_lines(fn):
    try:
        lines, first = inspect.getsourcelines(fn)
        path = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError) as e:
        raise phobos.CompileError(f"{fn.__qualname__}: a kernel function needs its source in a .py file ({e}); "
                                  f"for text built at run time, use phobos.compile(source)") from None
    return lines, first, path


# A meta-parameter named in a decorator's argument is a string in a .py file,
# @ph.launch("T"): a bare T would be a Python name evaluated with the
# decorator. Its quotes become spaces, so that columns do not move.
_QUOTED_META = re.compile(r"""(\.(?:launch|stages|warp_specialize|occupancy)\(\s*)(["'])([A-Za-z_]\w*)\2(\s*\))""")


def _decorator_line(line, alias):
    """A decorator line as phc reads it: @phobos.kernel (or the decorator
    under another name) is @<alias>.kernel; quoted meta-parameter names are bare."""
    stripped = line.lstrip()
    indent = line[:len(line) - len(stripped)]
    if re.match(r"@\s*[\w.]*\bkernel\s*(#.*)?$", stripped):
        return f"{indent}@{alias}.kernel\n"
    return _QUOTED_META.sub(lambda m: f"{m.group(1)} {m.group(3)} {m.group(4)}", line)


def _phobos_source(fn, lines, first):
    """The .ph text of fn: its lines at their line numbers in the .py file
    (blank lines before), the import of the language on the line before the
    first, the decorators as phc spells them, the indentation of a function
    defined inside a block removed. Returns the text, that indentation, and
    how many lines the text's numbers are past the file's (1 when the
    function starts on the file's first line, else 0)."""
    aliases = _aliases(fn)
    text = "".join(lines)
    used = [a for a in aliases if re.search(rf"\b{re.escape(a)}\.", text)]
    alias = (used or aliases or [None])[0]
    if alias is None:
        raise phobos.CompileError(f"{fn.__code__.co_filename}:{first}: {fn.__name__}: 'import phobos.lang as ph' "
                                  f"is not in the function's module; its source names the language through that name")
    indent = len(lines[0]) - len(lines[0].lstrip())
    body, in_decorators = [], True
    for line in lines:
        line = line[indent:] if line[:indent].strip() == "" else line.lstrip()
        if in_decorators and re.match(r"(async\s+)?def\b", line):
            in_decorators = False
        body.append(_decorator_line(line, alias) if in_decorators else line)
    header = "\n" * max(first - 2, 0) + f"import phobos.lang as {alias}\n"
    if first < 2:   # no line free above the function: the numbers move by one
        header = f"import phobos.lang as {alias}\n"
    return header + "".join(body), indent, (1 if first < 2 else 0)


def _diagnostics_in_file(message, path, indent, line_shift):
    """phc's path:line:col places, moved back to the .py file's columns (and
    lines, when the function starts on the file's first line)."""
    if not indent and not line_shift:
        return message
    place = re.compile(rf"({re.escape(path)}):(\d+):(\d+):")
    return place.sub(lambda m: f"{m.group(1)}:{int(m.group(2)) - line_shift}:{int(m.group(3)) + indent}:", message)


# ---- the decorator ----

class KernelFunction:
    """A kernel written as a Python function: launched as a phobos.Kernel
    (kernel[grid](*args), kernel(*args, grid=...)), compiled at its first
    launch, or when .params, .module or .compile() asks for it."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.name = fn.__name__
        lines, first, self.path = _source_lines(fn)
        self.source, self._indent, self._line_shift = _phobos_source(fn, lines, first)
        self._kernel = None

    def __repr__(self):
        state = "compiled" if self._kernel else "not compiled yet"
        return f"<phobos kernel function {self.name} of {self.path}, {state}>"

    def compile(self):
        """Compiles the function now (once); CompileError holds phc's
        diagnostics, at the .py file's lines and columns."""
        if self._kernel is None:
            try:
                module = phobos.compile(self.source, name=self.path)
            except phobos.CompileError as e:
                msg = _diagnostics_in_file(str(e), self.path, self._indent, self._line_shift)
                raise phobos.CompileError(msg, e.status) from None
            self._kernel = module.kernel(self.name)
        return self._kernel

    @property
    def module(self):
        return self.compile()._module

    @property
    def params(self):
        return self.compile().params

    @property
    def last_config(self):
        return self._kernel.last_config if self._kernel else None

    def __getitem__(self, grid):
        return phobos._Launcher(self, grid)

    def __call__(self, *args, grid, **kwargs):
        return self.launch(grid, *args, **kwargs)

    def launch(self, grid, *args, **kwargs):
        return self.compile().launch(grid, *args, **kwargs)


def kernel(fn):
    """@ph.kernel (also phobos.kernel): fn's text is a Phobos kernel; the
    first decorator, above @ph.autotune and the others, as in a .ph file."""
    if isinstance(fn, _StandIn) or not inspect.isfunction(fn):
        raise TypeError(f"@kernel applies to a function (def), not {type(fn).__name__}")
    return KernelFunction(fn)
