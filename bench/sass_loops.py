#!/usr/bin/env python3
"""sass_loops.py: the innermost loops of a cubin's SASS that issue tensor-core
instructions (HGMMA, HMMA), each as its size in instructions, its mix of
float, MUFU and tensor-core instructions, and the order of its waits,
barriers and dots with the float work between them (runs of one kind
folded), for reading where ptxas put a wgmma wait (docs/performance.md,
"twentieth").

    python3 bench/sass_loops.py KERNEL.cubin      (phc --emit=cubin)
    python3 bench/sass_loops.py KERNEL.sass       (SASS text already made)

The SASS comes from cuobjdump -sass, or from nvdisasm; an nvdisasm older
than the ptxas that made the cubin (CUDA 11.8's reading ptxas 13's sm_90a
code) is given a copy whose ELF header has the older ABI's form (OS/ABI
0x33, ABI version 7, the architecture in the flags' low byte), which is
all it refuses."""

import collections
import re
import shutil
import struct
import subprocess
import sys
import tempfile

KINDS = ("HGMMA", "HMMA", "MUFU", "FFMA", "FMUL", "FADD", "FMNMX", "FSEL", "F2FP", "STL", "LDL")
ORDER = ("HGMMA", "HMMA", "WARPGROUP.DEPBAR", "WARPGROUP.ARRIVE", "BAR.", "SYNCS.PHASECHK", "MUFU")


def old_abi_copy(path):
    data = bytearray(open(path, "rb").read())
    flags = struct.unpack_from("<I", data, 0x30)[0]
    sm = (flags >> 8) & 0xFF
    data[7], data[8] = 0x33, 7
    struct.pack_into("<I", data, 0x30, sm | (5 << 8) | (sm << 16))
    out = tempfile.NamedTemporaryFile(suffix=".cubin", delete=False)
    out.write(data)
    out.close()
    return out.name


def sass_of(path):
    if not path.endswith(".cubin"):
        return open(path).read()
    for tool, args in (("cuobjdump", ["-sass"]), ("nvdisasm", ["-c"])):
        exe = shutil.which(tool)
        if not exe:
            continue
        got = subprocess.run([exe] + args + [path], capture_output=True, text=True)
        if got.returncode == 0 and "/*0000*/" in got.stdout:
            return got.stdout
        if tool == "nvdisasm":
            got = subprocess.run([exe] + args + [old_abi_copy(path)], capture_output=True, text=True)
            if got.returncode == 0:
                return got.stdout
    sys.exit("sass_loops.py: no cuobjdump or nvdisasm here reads %s" % path)


def instructions(text):
    ins, labels = [], {}
    for line in text.split("\n"):
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;", line)
        if m:
            op = re.sub(r"^@!?U?P\S+\s+", "", m.group(2))
            ins.append((int(m.group(1), 16), op))
        m = re.match(r"(\.L_x_\d+):", line)
        if m:
            labels[m.group(1)] = len(ins)
    return ins, labels


def loops(ins, labels):
    found = []
    for end, (_, op) in enumerate(ins):
        m = re.search(r"BRA.*`\((\.L_x_\d+)\)", op)
        if m and labels.get(m.group(1), len(ins)) <= end:
            start = labels[m.group(1)]
            if any(o.startswith(("HGMMA", "HMMA")) for _, o in ins[start:end + 1]):
                found.append((start, end))
    return [l for l in found if not any(o != l and o[0] >= l[0] and o[1] <= l[1] for o in found)]


def summary(body):
    mix = collections.Counter()
    for _, op in body:
        for k in KINDS:
            if op.startswith(k):
                mix[k] += 1
    seq, last, n = [], None, 0
    for _, op in body:
        key = next((k for k in ORDER if op.startswith(k)), None)
        if key in ("WARPGROUP.DEPBAR", "BAR.", "SYNCS.PHASECHK"):
            key = op.split(",")[0] + ("," + op.split(",")[1] if op.startswith("WARPGROUP.DEPBAR") else "")
        elif key is None and op.split()[0].split(".")[0] in ("FFMA", "FMUL", "FADD", "FMNMX", "FSEL"):
            key = "float"
        if key is None:
            continue
        if key == last:
            n += 1
            continue
        if last:
            seq.append(last + (" x%d" % n if n > 1 else ""))
        last, n = key, 1
    if last:
        seq.append(last + (" x%d" % n if n > 1 else ""))
    return mix, seq


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    ins, labels = instructions(sass_of(sys.argv[1]))
    for start, end in loops(ins, labels):
        body = ins[start:end + 1]
        mix, seq = summary(body)
        print("loop %x-%x: %d instructions; %s" % (body[0][0], body[-1][0], len(body),
              ", ".join("%s %d" % (k, mix[k]) for k in KINDS if mix[k])))
        print("  " + " | ".join(seq))


if __name__ == "__main__":
    main()
