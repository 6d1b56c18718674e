#!/usr/bin/env python3
"""wgmma_hazards.py: finds, in PTX, a register that a wgmma.mma_async may
still be using when another instruction touches it.

A wgmma.mma_async reads its A fragment (when A is in registers) and reads
and writes its accumulators asynchronously, until a wgmma.wait_group that
leaves fewer groups in flight than were committed after its own; the PTX
ISA leaves any other access to those registers in between undefined, and
on the GPU the access sees or clobbers the wrong values (a loop carrying a
P V across its back edge wrote the next P into the registers the P V was
reading: docs/performance.md, "twenty-third"). The CPU executor reads a
wgmma's operands at its issue, so only the PTX shows this.

The check is a forward dataflow over each entry's control flow graph: the
state maps a register to the age of the group it is in flight in (-1: not
yet committed; 0: the last group committed; ...); wgmma.commit_group ages
every register, wgmma.wait_group N retires those of age N or more, and at a
join a register is in flight if it is on any path, at its youngest age.
Reported: an instruction other than a wgmma.mma_async that writes a
register in flight, or reads an accumulator in flight.

    python3 tests/ptx/wgmma_hazards.py FILE.ptx...     exit 1 on a hazard
"""

import re
import sys

AGE_CAP = 16
REG = re.compile(r"%[A-Za-z_][A-Za-z0-9_]*")
# operations whose first operand is not a register they write
NO_DEST = ("st.", "red.", "bar.", "barrier.", "membar", "fence.", "wgmma.fence", "wgmma.commit_group",
           "wgmma.wait_group", "cp.", "bra", "ret", "exit", "call", "mbarrier.init", "mbarrier.inval",
           "mbarrier.expect_tx", "mbarrier.complete_tx", "prefetch", "setmaxnreg", "griddepcontrol", "trap",
           "stmatrix", "elect", "nanosleep", "tensormap", "multimem.st", "multimem.red", "cp.async")


def statements(body):
    """The entry's statements in order, each (line number, text), labels as 'LABEL:'."""
    out = []
    for no, raw in body:
        line = raw.split("//", 1)[0].strip()
        while line:
            m = re.match(r"^(\$?[A-Za-z_][\w$]*):\s*", line)
            if m and not line.startswith("%"):
                out.append((no, m.group(1) + ":"))
                line = line[m.end():]
                continue
            if line[0] in "{}":
                line = line[1:].strip()
                continue
            if ";" not in line:
                break
            stmt, line = line.split(";", 1)
            line = line.strip()
            stmt = stmt.strip()
            if stmt and not stmt.startswith("."):
                out.append((no, stmt))
    return out


def split_operands(text):
    """Top-level comma-separated operands (braces and brackets kept whole)."""
    ops, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        if ch == "," and depth == 0:
            ops.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        ops.append(cur.strip())
    return ops


def parse(stmt):
    """(opcode, operands) of a statement, its guard dropped."""
    s = re.sub(r"^@!?%\w+\s+", "", stmt)
    parts = s.split(None, 1)
    return parts[0], split_operands(parts[1]) if len(parts) > 1 else []


def accesses(op, operands):
    """(registers written, registers read) by an instruction."""
    if not operands:
        return set(), set()
    first = operands[0]
    if op.startswith(NO_DEST) or first.startswith("["):
        return set(), set(REG.findall(" ".join(operands)))
    written = set(REG.findall(first))
    read = set(REG.findall(" ".join(operands[1:])))
    return written, read


def blocks_of(stmts):
    """Basic blocks: (label or None, [statements]) and each one's successors (indices)."""
    blocks, cur = [], []
    label = None
    for no, s in stmts:
        if s.endswith(":"):
            if cur or label is not None:
                blocks.append((label, cur))
            label, cur = s[:-1], []
            continue
        cur.append((no, s))
        op, _ = parse(s)
        if op.startswith(("bra", "ret", "exit")):
            blocks.append((label, cur))
            label, cur = None, []
    if cur or label is not None:
        blocks.append((label, cur))
    index = {b[0]: i for i, b in enumerate(blocks) if b[0] is not None}
    succ = []
    for i, (_, body) in enumerate(blocks):
        nxt = [i + 1] if i + 1 < len(blocks) else []
        if not body:
            succ.append(nxt)
            continue
        s = body[-1][1]
        op, operands = parse(s)
        if op.startswith("bra"):
            target = index.get(operands[0]) if operands else None
            guarded = s.lstrip().startswith("@")
            succ.append(([target] if target is not None else []) + (nxt if guarded else []))
        elif op.startswith(("ret", "exit")):
            succ.append(nxt if s.lstrip().startswith("@") else [])
        else:
            succ.append(nxt)
    return blocks, succ


def step(state, no, stmt, report):
    """The state after one statement; report(no, text) for a hazard."""
    op, operands = parse(stmt)
    if op.startswith("wgmma.mma_async"):
        state = dict(state)
        acc = set(REG.findall(operands[0]))
        a = set(REG.findall(operands[1])) if len(operands) > 1 and operands[1].startswith("{") else set()
        for r in acc:
            state[r] = (-1, no, "accumulator")
        for r in a:
            if r in state and state[r][2] == "accumulator":
                report(no, f"{r} is an accumulator in flight (the wgmma at line {state[r][1]}) and this one's A")
            state[r] = (-1, no, "A")
        return state
    if op.startswith("wgmma.commit_group"):
        return {r: (min(age + 1, AGE_CAP), at, kind) for r, (age, at, kind) in state.items()}
    if op.startswith("wgmma.wait_group"):
        n = int(operands[0]) if operands and operands[0].isdigit() else 0
        return {r: v for r, v in state.items() if v[0] < n}
    written, read = accesses(op, operands)
    for r in sorted(written):
        if r in state:
            report(no, f"{r} written while the wgmma at line {state[r][1]} may still use it (its {state[r][2]})")
    for r in sorted(read):
        if r in state and state[r][2] == "accumulator":
            report(no, f"{r} read while the wgmma at line {state[r][1]} may still write it (its accumulator)")
    return state


def join(a, b):
    out = dict(a)
    for r, v in b.items():
        if r not in out or v[0] < out[r][0]:
            out[r] = v
    return out


def check_entry(name, body, path):
    blocks, succ = blocks_of(statements(body))
    if not any("wgmma.mma_async" in s for _, stmts in blocks for _, s in stmts):
        return []
    into = [None] * len(blocks)
    into[0] = {}
    work = [0]
    while work:
        i = work.pop()
        state = into[i]
        for no, s in blocks[i][1]:
            state = step(state, no, s, lambda *a: None)
        for j in succ[i]:
            new = state if into[j] is None else join(into[j], state)
            if new != into[j]:
                into[j] = new
                work.append(j)
    found = []
    for i, (_, stmts) in enumerate(blocks):
        state = into[i]
        if state is None:
            continue
        for no, s in stmts:
            state = step(state, no, s, lambda at, msg: found.append(f"{path}:{at}: {name}: {msg}"))
    return found


def entries(lines):
    """(name, [(line number, text)]) of each .entry or .func with a body."""
    out, name, body, depth = [], None, [], 0
    for no, line in enumerate(lines, 1):
        if name is None:
            m = re.search(r"\.(?:entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", line)
            if m:
                name, body, depth, started = m.group(1), [], 0, False
            continue
        code = line.split("//", 1)[0]
        if not started and "{" not in code:
            continue
        if not started:
            started = True
            code = code[code.index("{") + 1:]
            depth = 1
        depth += code.count("{") - code.count("}")
        body.append((no, line))
        if depth <= 0:
            out.append((name, body))
            name = None
    return out


def main(paths):
    found = []
    for path in paths:
        with open(path) as f:
            lines = f.read().splitlines()
        for name, body in entries(lines):
            found += check_entry(name, body, path)
    for f in found:
        print(f)
    if found:
        print(f"wgmma_hazards.py: {len(found)} accesses to registers a wgmma may still use", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
