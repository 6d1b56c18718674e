#!/usr/bin/env python3
"""layers.py: the source tree keeps the layers docs/architecture.md draws.

Each folder of sources is a layer and may use (include a header of, or
call a function defined in) only itself and the layers ALLOWED names for
it. Includes are read from the sources; calls from the symbols the build's
objects define and use (nm), so a call through a prototype written by hand
counts too. Fails, naming the file and the line or symbol, on:
  - a use of a layer that is not allowed (an upward or sideways arrow);
  - a circle of files that use each other across folders, and any circle
    at all between files of a folder listed in NO_CIRCLES;
  - a source file (of the layers, tests, bench, examples, python) over
    MAX_LINES lines.

    python3 tests/layers.py [BUILD]      (BUILD: the build folder, default build)
"""
import os
import re
import subprocess
import sys

MAX_LINES = 900

# layer -> the layers it may use (besides itself); the relation is acyclic.
ALLOWED = {
    "compiler/base": [],
    "compiler/ir": ["compiler/base"],
    "compiler/layout": ["compiler/base", "compiler/ir"],
    "compiler/passes": ["compiler/base", "compiler/ir", "compiler/layout"],
    "dsl": ["compiler/base", "compiler/ir"],
    "compiler/codegen": ["compiler/base", "compiler/ir", "compiler/layout"],
    "compiler/nvidia": ["compiler/base", "compiler/ir", "compiler/layout", "compiler/codegen"],
    "compiler/driver": ["compiler/base", "compiler/ir", "compiler/layout", "compiler/passes", "dsl",
                        "compiler/codegen", "compiler/nvidia"],
    "runtime/include": [],
    "runtime": ["runtime/include", "compiler/base", "compiler/ir", "compiler/layout", "compiler/passes", "dsl",
                "compiler/codegen", "compiler/nvidia", "compiler/driver"],
    "compiler/cli": ["runtime/include", "compiler/base", "compiler/ir", "compiler/layout", "compiler/passes", "dsl",
                     "compiler/codegen", "compiler/nvidia", "compiler/driver"],
}
# Folders whose files may not use each other in a circle either.
NO_CIRCLES = {"runtime"}
# Where a header named in #include "..." is looked for, after the includer's folder.
INCLUDE_DIRS = ["dsl", "compiler", "runtime", "runtime/include"]
SOURCE_EXT = (".c", ".h", ".re")


def layer_of(path):
    folder = os.path.dirname(path)
    return folder if folder in ALLOWED else None


def sources():
    files = []
    for top in ("compiler", "dsl", "runtime"):
        for root, _, names in os.walk(top):
            files += [os.path.join(root, n) for n in names if n.endswith(SOURCE_EXT)]
    return sorted(files)


def every_source():
    """The layers' files and the tests', benchmarks', examples' and Python's."""
    files = sources()
    for top in ("tests", "bench", "examples", "python"):
        for root, _, names in os.walk(top):
            files += [os.path.join(root, n) for n in names if n.endswith(SOURCE_EXT + (".py", ".sh"))]
    return sorted(files)


def resolve(includer, name):
    for d in [os.path.dirname(includer)] + INCLUDE_DIRS:
        p = os.path.normpath(os.path.join(d, name))
        if os.path.isfile(p):
            return p
    return None


def check_acyclic(errors):
    state = {}

    def visit(layer, stack):
        if state.get(layer) == 1:
            errors.append("layers.py: ALLOWED has a circle: " + " -> ".join(stack + [layer]))
            return
        if state.get(layer) == 2:
            return
        state[layer] = 1
        for dep in ALLOWED[layer]:
            visit(dep, stack + [layer])
        state[layer] = 2

    for layer in ALLOWED:
        visit(layer, [])


def include_edges(files, errors):
    edges = {}
    for f in files:
        with open(f, encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                target = resolve(f, m.group(1))
                if target is None:
                    if not m.group(1).endswith("lexer.c"):
                        errors.append(f"{f}:{lineno}: #include \"{m.group(1)}\" is no file of the tree")
                    continue
                edges.setdefault(f, {}).setdefault(target, f"{f}:{lineno}: #include \"{m.group(1)}\"")
    return edges


def call_edges(files, build, errors):
    """file -> file it calls (or whose data it reads), from the objects' symbols."""
    defined, used = {}, {}
    for f in files:
        if not f.endswith((".c", ".re")):
            continue
        obj = os.path.join(build, "obj", f[:-2] + ".o") if f.endswith(".c") else os.path.join(build, "obj/gen/lexer.o")
        if not os.path.isfile(obj):
            errors.append(f"layers.py: no object {obj} for {f} (make all first)")
            continue
        out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) < 2:
                continue
            sym, kind = parts[0], parts[1]
            if kind == "U":
                used.setdefault(f, set()).add(sym)
            elif kind.isupper():
                defined.setdefault(sym, f)
    edges = {}
    for f, syms in used.items():
        for s in sorted(syms):
            g = defined.get(s)
            if g and g != f:
                edges.setdefault(f, {}).setdefault(g, f"{f}: calls {s} ({g})")
    return edges


def circles(nodes, edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            strong(v)
    return out


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    errors = []
    check_acyclic(errors)
    files = sources()
    for f in files:
        if layer_of(f) is None:
            errors.append(f"{f}: in no layer (a folder of ALLOWED in tests/layers.py)")
    for f in every_source():
        with open(f, encoding="utf-8") as fh:
            n = sum(1 for _ in fh)
        if n > MAX_LINES:
            errors.append(f"{f}: {n} lines, over {MAX_LINES}")
    uses = include_edges(files, errors)
    for f, targets in call_edges(files, build, errors).items():
        for g, why in targets.items():
            uses.setdefault(f, {}).setdefault(g, why)
    for f, targets in uses.items():
        a = layer_of(f)
        for g, why in targets.items():
            b = layer_of(g)
            if a and b and a != b and b not in ALLOWED[a]:
                errors.append(f"{why}: {a} may not use {b}")
    for comp in circles(files, uses):
        folders = sorted({os.path.dirname(f) for f in comp})
        if len(folders) > 1 or folders[0] in NO_CIRCLES:
            errors.append("a circle of files that use each other: " + " ".join(comp))
    for e in errors:
        print(e)
    if errors:
        print(f"layers.py: {len(errors)} problems")
        return 1
    print(f"layers.py: {len(files)} files in {len(ALLOWED)} layers, no use against the layers, no circle across folders")
    return 0


if __name__ == "__main__":
    sys.exit(main())
