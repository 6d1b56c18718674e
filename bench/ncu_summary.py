"""ncu_summary.py: where a kernel's time goes, from Nsight Compute's per-instruction page.

    ncu --clock-control none --section WarpStateStats --section SourceCounters \
        --kernel-name regex:attn_fwd --launch-count 1 -o fwd PROGRAM ...
    ncu -i fwd.ncu-rep --page source --csv --print-source sass > fwd.csv
    python3 bench/ncu_summary.py fwd.csv [--top N]

prints the warps' stall samples by reason, the instructions that hold the
most samples (each with its two largest reasons), the hot loop: the
execution count whose instructions issue the most (a loop's body runs its
count of warp iterations), how many there are an iteration and which
opcodes, and the samples by execution count (what the loop holds against
the code a warp runs once).
A kernel that issues more instructions an iteration than its tensor-core
work takes cycles cannot hide its softmax behind the dots; a kernel whose
samples sit at WARPGROUP.DEPBAR waits for its dots. Standard library only,
so it runs on the GPU machine beside ncu and only the summary comes back.
"""

import argparse
import collections
import csv
import sys


def number(text):
    """ncu's figures, with thousands separators; anything else is 0."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read_page(lines):
    """The rows of the source page as dicts: the first line names the kernel,
    the second the columns."""
    rows = list(csv.reader(lines))
    if len(rows) < 2:
        raise ValueError("not an ncu source page: fewer than two lines")
    header = rows[1]
    for need in ("Source", "# Samples", "Instructions Executed"):
        if need not in header:
            raise ValueError(f"not an ncu source page: no column {need!r}")
    return [dict(zip(header, r)) for r in rows[2:] if len(r) == len(header)]


def opcode(source):
    """The instruction's opcode without its predicate and modifiers: FMUL, HGMMA."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def stall_columns(row):
    return [k for k in row if k.startswith("stall_") and "Not Issued" not in k]


def summarize(rows, top=20):
    """The summary's lines."""
    out = []
    if not rows:
        return ["no instructions"]
    stalls = stall_columns(rows[0])
    total = collections.Counter()
    for r in rows:
        for s in stalls:
            total[s] += number(r[s])
    samples = sum(total.values())
    out.append(f"stall samples: {samples:.0f}")
    for s, v in total.most_common():
        if v:
            out.append(f"  {s[len('stall_'):]:20s} {100 * v / samples:5.1f}%")
    out.append(f"the {top} instructions with the most samples:")
    for r in sorted(rows, key=lambda r: -number(r["# Samples"]))[:top]:
        why = sorted(((number(r[s]), s[len("stall_"):]) for s in stalls), reverse=True)[:2]
        share = 100 * number(r["# Samples"]) / samples if samples else 0.0
        reasons = ", ".join(f"{name} {v:.0f}" for v, name in why if v)
        out.append(f"  {share:5.2f}%  x{number(r['Instructions Executed']):.0f}  {r['Source'].strip()[:60]}  ({reasons})")
    # the body of the loop that matters: the execution count whose
    # instructions issue the most (a spin-wait runs more often but is two
    # instructions; the code before and after the loop has more, run once)
    counts = collections.Counter(number(r["Instructions Executed"]) for r in rows if number(r["Instructions Executed"]))
    hot = max(counts, key=lambda c: (c * counts[c], c)) if counts else 0.0
    body = [r for r in rows if number(r["Instructions Executed"]) == hot]
    mix = collections.Counter(opcode(r["Source"]) for r in body)
    out.append(f"hot loop: {len(body)} instructions a warp an iteration ({hot:.0f} warp iterations)")
    out.append("  " + " ".join(f"{op} {n}" for op, n in mix.most_common()))
    out.extend(by_count(rows))
    return out


def by_count(rows, top=6):
    """The samples by how often their instructions ran: code of one count
    is one stretch of the kernel (a loop's body, what a warp runs once
    before and after it, a producer's loop), so a short kernel whose
    samples sit outside its hot loop loses its time in the prologue and
    epilogue, which only overlap with other work across blocks."""
    held = collections.Counter()
    size = collections.Counter()
    for r in rows:
        c = number(r["Instructions Executed"])
        held[c] += number(r["# Samples"])
        size[c] += 1
    samples = sum(held.values())
    out = ["samples by execution count:"]
    for c, v in sorted(held.items(), key=lambda kv: (-kv[1], -kv[0]))[:top]:
        if v:
            share = 100 * v / samples
            out.append(f"  x{c:<12.0f} {size[c]:6d} instructions {share:5.1f}%")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="ncu -i REPORT --page source --csv --print-source sass")
    ap.add_argument("--top", type=int, default=20, help="instructions to list (default 20)")
    a = ap.parse_args(argv)
    try:
        with open(a.csv, newline="") as f:
            rows = read_page(f)
    except (OSError, ValueError) as e:
        print(f"ncu_summary.py: {a.csv}: {e}", file=sys.stderr)
        return 1
    print("\n".join(summarize(rows, a.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
