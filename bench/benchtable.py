"""benchtable.py: the tables `make bench` ends with. The GPU benchmarks write
their figures as TSV files in one folder ($BUILD/bench): phc's from
bench/attention_bench.c and bench/gemm_bench.c, PyTorch's from
bench/torch_bench.py. This joins them by case and prints markdown to paste
into docs/performance.md: attention, phc beside PyTorch's FlashAttention and
cuDNN backends; the seed's rows; GEMM, phc beside torch.matmul. TFLOP/s are
computed here from the milliseconds, with one formula for every column.
Standard library only, so the tables print where torch is absent (phc's
columns alone); tests/python/test_bench_table.py checks them on the CPU.

    python3 bench/benchtable.py [--commit HASH] [--date DATE] DIR

prints the tables and writes them to DIR/table.md as well.
"""

import datetime
import os
import subprocess
import sys

# The grid, as bench/attention_bench.c and bench/gemm_bench.c run it (torch_bench.py
# runs it from here), and the timing of bench/gpubench.h.
BATCH, HEADS = 4, 32
HEAD_DIMS = (64, 128)
N_CTXS = (1024, 2048, 4096, 8192, 16384)
GEMM_SHAPES = ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 4096, 2048))
WARMUPS = 3
WARM_MS, TIMED_MS, MAX_REPS = 250, 1000, 20000   # gpubench.h says why
GEMM_REPS = 50
FLUSH_BYTES = 256 << 20


def attention_reps(n_ctx):
    return 30 if n_ctx <= 4096 else 20


def attention_flops(pass_, causal, b, h, d, n):
    """Triton's tutorial's count: 4·B·H·N²·D for the forward pass, half when
    causal, 2.5 times that for the backward pass."""
    flops = 4.0 * b * h * n * n * d
    if causal:
        flops *= 0.5
    if pass_ == "bwd":
        flops *= 2.5
    return flops


def gemm_flops(m, n, k):
    return 2.0 * m * n * k


def tflops(flops, ms):
    return flops / ms / 1e9


# ---- reading ----

def parse_ms(text):
    """Milliseconds, or None for "n/a" and anything that is no positive number."""
    try:
        ms = float(text)
    except (TypeError, ValueError):
        return None
    return ms if 0 < ms < float("inf") else None


def parse_tsv(text):
    """(meta, header, rows) of a figures file: its "# key: value" lines as a
    dict, its header line's column names, and each row as a dict by them."""
    meta, header, rows = {}, None, []
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            key, sep, value = line[1:].partition(":")
            if sep:
                meta.setdefault(key.strip(), value.strip())
            continue
        fields = line.split("\t")
        if header is None:
            header = fields
        else:
            rows.append(dict(zip(header, fields + [""] * (len(header) - len(fields)))))
    return meta, header or [], rows


ATTENTION_KEY = ("pass", "causal", "B", "H", "D", "N")
GEMM_KEY = ("M", "N", "K")


def row_key(row, names):
    """The row's case as a tuple (the pass, "fwd" or "bwd", then integers: causal
    0 or 1, sizes positive), or None when a field is missing or malformed."""
    try:
        key = tuple(row[x] if x == "pass" else int(row[x]) for x in names)
    except (KeyError, ValueError):
        return None
    for name, value in zip(names, key):
        if name == "pass" and value not in ("fwd", "bwd") or name == "causal" and value not in (0, 1) or \
                name not in ("pass", "causal") and value <= 0:
            return None
    return key


class Figures:
    """Every figure read: per case, per implementation, (ms or None, note)."""

    def __init__(self):
        self.meta = {}
        self.attention = {}
        self.gemm = {}
        self.skipped = []   # "FILE: N malformed rows"

    def add(self, name, text):
        meta, header, rows = parse_tsv(text)
        if "pass" in header:
            table, names = self.attention, ATTENTION_KEY
        elif "M" in header:
            table, names = self.gemm, GEMM_KEY
        else:
            if rows:
                self.skipped.append(f"{name}: no attention or GEMM columns")
            return
        for key, value in meta.items():
            self.meta.setdefault(key, value)
        bad = 0
        for row in rows:
            key = row_key(row, names)
            if key is None or not row.get("impl"):
                bad += 1
                continue
            table.setdefault(key, {})[row["impl"]] = (parse_ms(row.get("ms")), row.get("config", "").strip())
        if bad:
            self.skipped.append(f"{name}: {bad} malformed row{'s' if bad > 1 else ''}")

    def empty(self):
        return not self.attention and not self.gemm

    def has(self, table, impl):
        return any(impl in per for per in table.values())


def load_dir(path):
    """The figures of every *.tsv in path, in name order (phc_* before torch_*:
    a device named by phc's runtime wins over torch's shorter name)."""
    fig = Figures()
    if os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            if name.endswith(".tsv"):
                with open(os.path.join(path, name), encoding="utf-8", errors="replace") as f:
                    fig.add(name, f.read())
    return fig


# ---- formatting ----

def compact_config(entries, drop=("D", "MASKED")):
    """Entry names as the autotuner reports them, short: attn_fwd__D_64__BR_128__NT_128
    -> "fwd BR128 NT128" (the kernel's last word; D, given by the row, and MASKED, the
    hosts' flag for a kernel that cuts its last row block, left out)."""
    out = []
    for entry in entries.split():
        kernel, *metas = entry.split("__")
        words = [kernel.rsplit("_", 1)[-1]]
        for meta in metas:
            name, _, value = meta.rpartition("_")
            if name not in drop:
                words.append(name + value)
        out.append(" ".join(words))
    return ", ".join(out)


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def cell_tflops(flops, figure):
    ms = figure[0] if figure else None
    return (f"{tflops(flops, ms):.1f}", tflops(flops, ms)) if ms else ("n/a", None)


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "n/a"


def attention_order(key):
    pass_, causal, b, h, d, n = key
    return ({"fwd": 0, "bwd": 1}[pass_], causal, d, n, b, h)


def case_cells(key, with_bh):
    pass_, causal, b, h, d, n = key
    cells = [pass_, "yes" if causal else "no", str(d), str(n)]
    return cells + [str(b), str(h)] if with_bh else cells


def case_header(with_bh):
    return ["pass", "causal", "D", "N_CTX"] + (["B", "H"] if with_bh else [])


TORCH_ATTENTION = (("flash", "flash"), ("cudnn", "cuDNN"))


def best_phc(per):
    """The faster of bench/attention_tuned.ph's figure (phc) and
    bench/attention_fused.ph's (phc-fused), and whether it is the latter's."""
    tuned, fused = per.get("phc"), per.get("phc-fused")
    if fused and fused[0] and not (tuned and tuned[0] and tuned[0] <= fused[0]):
        return fused, True
    return tuned, False


def attention_table(fig):
    keys = sorted((k for k, per in fig.attention.items() if set(per) - {"phc-seed"}), key=attention_order)
    if not keys:
        return []
    with_bh = len({(k[2], k[3]) for k in keys}) > 1
    others = [(impl, label) for impl, label in TORCH_ATTENTION if fig.has(fig.attention, impl)]
    header = case_header(with_bh) + ["phc TFLOP/s"] + [f"{label} TFLOP/s" for _, label in others]
    header += [f"phc/{label}" for _, label in others] + ["phc configs"]
    rows = []
    for key in keys:
        per, flops = fig.attention[key], attention_flops(*key)
        best, fused = best_phc(per)
        phc_text, phc = cell_tflops(flops, best)
        cells = [cell_tflops(flops, per.get(impl)) for impl, _ in others]
        configs = ("fused: " if fused else "") + compact_config(best[1]) if best and best[0] else ""
        rows.append(case_cells(key, with_bh) + [phc_text] + [t for t, _ in cells] + [ratio(phc, v) for _, v in cells] + [configs])
    b, h = keys[0][2], keys[0][3]
    caption = "Attention, f16" + ("" if with_bh else f", batch {b}, {h} heads") + \
        ": TFLOP/s as Triton's tutorial counts them (4·B·H·N_CTX²·D, half when causal, 2.5 times for the backward pass)."
    if fig.has(fig.attention, "phc-fused"):
        caption += (" phc: the faster of bench/attention_tuned.ph and bench/attention_fused.ph"
                    " (configs marked fused: the latter's).")
    return [caption, ""] + markdown(header, rows)


def seed_table(fig):
    keys = sorted((k for k, per in fig.attention.items() if "phc-seed" in per), key=attention_order)
    if not keys:
        return []
    with_bh = len({(k[2], k[3]) for k in keys}) > 1
    flash = fig.has(fig.attention, "flash")
    header = case_header(with_bh) + ["seed TFLOP/s", "phc TFLOP/s", "seed/phc"] + (["flash TFLOP/s", "seed/flash"] if flash else [])
    rows = []
    for key in keys:
        per, flops = fig.attention[key], attention_flops(*key)
        (seed_text, seed), (phc_text, phc) = cell_tflops(flops, per.get("phc-seed")), cell_tflops(flops, per.get("phc"))
        row = case_cells(key, with_bh) + [seed_text, phc_text, ratio(seed, phc)]
        if flash:
            flash_text, fl = cell_tflops(flops, per.get("flash"))
            row += [flash_text, ratio(seed, fl)]
        rows.append(row)
    caption = "The seed, examples/attention/attention.ph (one config), beside the tuned kernels (phc)."
    return [caption, ""] + markdown(header, rows)


def fused_table(fig):
    """The backward two ways: bench/attention_tuned.ph's three kernels (phc)
    beside bench/attention_fused.ph's, whose dK/dV kernel adds dQ (phc-fused)."""
    keys = sorted((k for k, per in fig.attention.items() if k[0] == "bwd" and "phc-fused" in per), key=attention_order)
    if not keys:
        return []
    with_bh = len({(k[2], k[3]) for k in keys}) > 1
    cudnn = fig.has(fig.attention, "cudnn")
    header = case_header(with_bh) + ["three kernels TFLOP/s", "fused TFLOP/s", "fused/three"]
    header += (["cuDNN TFLOP/s", "best/cuDNN"] if cudnn else []) + ["fused configs"]
    rows = []
    for key in keys:
        per, flops = fig.attention[key], attention_flops(*key)
        (three_text, three), (fused_text, fused) = cell_tflops(flops, per.get("phc")), cell_tflops(flops, per.get("phc-fused"))
        row = case_cells(key, with_bh) + [three_text, fused_text, ratio(fused, three)]
        if cudnn:
            cudnn_text, cu = cell_tflops(flops, per.get("cudnn"))
            best = max((v for v in (three, fused) if v), default=None)
            row += [cudnn_text, ratio(best, cu)]
        fused_fig = per.get("phc-fused", (None, ""))
        rows.append(row + [compact_config(fused_fig[1]) if fused_fig[0] else ""])
    caption = ("The backward two ways: bench/attention_tuned.ph's (a dQ kernel that computes S and P again) "
               "beside bench/attention_fused.ph's (dQ added by the dK/dV kernel).")
    return [caption, ""] + markdown(header, rows)


def gemm_table(fig):
    keys = sorted(fig.gemm)
    if not keys:
        return []
    torch = fig.has(fig.gemm, "torch")
    header = ["M", "N", "K", "phc TFLOP/s"] + (["torch.matmul TFLOP/s", "phc/torch"] if torch else []) + ["phc config"]
    rows = []
    for key in keys:
        per, flops = fig.gemm[key], gemm_flops(*key)
        phc_text, phc = cell_tflops(flops, per.get("phc"))
        row = [str(x) for x in key] + [phc_text]
        if torch:
            torch_text, tv = cell_tflops(flops, per.get("torch"))
            row += [torch_text, ratio(phc, tv)]
        phc_fig = per.get("phc", (None, ""))
        rows.append(row + [compact_config(phc_fig[1], drop=()) if phc_fig[0] else ""])
    caption = "GEMM, f16 inputs, f32 accumulation, f16 output: TFLOP/s = 2·M·N·K / time."
    return [caption, ""] + markdown(header, rows)


def missing_notes(fig):
    """A line per (implementation, reason) with no figure: how many cases."""
    counts = {}
    for table in (fig.attention, fig.gemm):
        for per in table.values():
            for impl, (ms, note) in per.items():
                if ms is None:
                    reason = note or "no reason given"
                    counts[(impl, reason)] = counts.get((impl, reason), 0) + 1
    return [f"- n/a, {impl}, {n} case{'s' if n > 1 else ''}: {reason}" for (impl, reason), n in sorted(counts.items())]


def header_line(meta, date, commit):
    parts = ["`make bench`", date]
    if meta.get("device"):
        name, _, details = meta["device"].partition(", ")   # "NVIDIA H200, sm_90, 132 SMs"
        parts.append(f"{name} ({details})" if details else name)
    if meta.get("torch"):
        parts.append("torch " + meta["torch"])
    if commit:
        parts.append("commit " + commit)
    return ", ".join(parts)


def render(fig, date, commit):
    out = [header_line(fig.meta, date, commit)]
    method = ("CUDA events around each repetition, the L2 cache flushed before it (a 256 MB write), after a quarter second of"
              " warm-ups the median of 20 or more and of a second of them at least.")
    out += ["", method]
    for table in (attention_table(fig), fused_table(fig), seed_table(fig), gemm_table(fig)):
        if table:
            out += [""] + table
    notes = missing_notes(fig) + [f"- skipped: {s}" for s in fig.skipped]
    if notes:
        out += [""] + notes
    return "\n".join(out) + "\n"


def git_commit():
    try:
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return r.stdout.strip() if r.returncode == 0 else ""


def main(argv):
    args, commit, date = list(argv[1:]), None, None
    while len(args) > 1 and args[0] in ("--commit", "--date"):
        if args[0] == "--commit":
            commit = args[1]
        else:
            date = args[1]
        del args[:2]
    if len(args) != 1:
        print("usage: benchtable.py [--commit HASH] [--date DATE] DIR", file=sys.stderr)
        return 2
    fig = load_dir(args[0])
    if fig.empty():
        print(f"bench table: no GPU figures in {args[0]} (the GPU benchmarks were skipped)")
        return 0
    text = render(fig, date or datetime.date.today().isoformat(), git_commit() if commit is None else commit)
    print("\n---- table (markdown, for docs/performance.md) ----\n")
    print(text, end="")
    try:
        with open(os.path.join(args[0], "table.md"), "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        print(f"bench table: cannot write {args[0]}/table.md: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
