"""test_bench_table.py: the tables `make bench` ends with (bench/benchtable.py),
on the CPU from fixed TSV files: TFLOP/s counted as Triton's tutorial counts
them, phc's and torch's figures joined by case, ratio columns, "n/a" where a
figure is missing, phc's columns alone without torch, malformed rows skipped
and said so. And bench/torch_bench.py's control flow with a stand-in for
torch: every case of the grid a row, the L2 flush before each timed
repetition, the median of the repetitions, a backend's refusal a row "n/a"
with its reason. Standard library only (runs under pytest or unittest)."""

import contextlib
import io
import os
import shutil
import sys
import tempfile
import types
import unittest
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))

import benchtable as bt  # noqa: E402
import torch_bench  # noqa: E402

ATTN_HEADER = "impl\tpass\tcausal\tB\tH\tD\tN\tms\tconfig"
FWD_1024 = bt.attention_flops("fwd", 0, 4, 32, 64, 1024)


def ms_for(flops, tflops):
    """The milliseconds that make flops run at tflops TFLOP/s."""
    return repr(flops / tflops / 1e9)


def attn_row(impl, pass_, causal, d, n, tflops, config=""):
    ms = ms_for(bt.attention_flops(pass_, causal, 4, 32, d, n), tflops) if tflops else "n/a"
    return f"{impl}\t{pass_}\t{causal}\t4\t32\t{d}\t{n}\t{ms}\t{config}"


PHC_ATTENTION = "\n".join([
    "# source: bench/attention_tuned.ph",
    "# device: NVIDIA H200, sm_90, 132 SMs",
    ATTN_HEADER,
    # out of order on purpose: the table sorts by pass, causal, D, N
    attn_row("phc", "bwd", 0, 64, 1024, 150.0, "attn_bwd_delta__D_64__BR_64 attn_bwd_dkdv__D_64__BR_32__BC_128__NT_128 "
             "attn_bwd_dq__D_64__BR_128__BC_64__NT_128"),
    attn_row("phc", "fwd", 1, 64, 1024, 90.0, "attn_fwd__D_64__BR_128__BC_64__NT_128__S_2"),
    attn_row("phc", "fwd", 0, 128, 1024, 0, "no config of attn_fwd accepts these dims"),
    attn_row("phc", "fwd", 0, 64, 2048, 240.0, "attn_fwd__D_64__BR_128__BC_64__NT_128__S_2"),
    attn_row("phc", "fwd", 0, 64, 1024, 200.0, "attn_fwd__D_64__BR_128__BC_64__NT_128__S_2"),
]) + "\n"

TORCH_ATTENTION = "\n".join([
    "# source: torch",
    "# device: NVIDIA H200",
    "# torch: 2.11.0+cu130",
    ATTN_HEADER,
    attn_row("flash", "fwd", 0, 64, 1024, 400.0),
    attn_row("cudnn", "fwd", 0, 64, 1024, 500.0),
    attn_row("flash", "fwd", 1, 64, 1024, 300.0),
    attn_row("cudnn", "fwd", 1, 64, 1024, 0, "No available kernel"),
    attn_row("flash", "bwd", 0, 64, 1024, 300.0),
    attn_row("cudnn", "bwd", 0, 64, 1024, 0, "No available kernel"),
    attn_row("flash", "fwd", 0, 64, 2048, 480.0),
    attn_row("cudnn", "fwd", 0, 64, 2048, 600.0),
]) + "\n"

SEED = "\n".join([ATTN_HEADER, attn_row("phc-seed", "fwd", 0, 64, 1024, 100.0, "attn_fwd__D_64__BR_32__BC_32")]) + "\n"

GEMM_HEADER = "impl\tM\tN\tK\tms\tconfig"
PHC_GEMM = "\n".join([
    "# device: NVIDIA H200, sm_90, 132 SMs", GEMM_HEADER,
    f"phc\t8192\t4096\t2048\t{ms_for(bt.gemm_flops(8192, 4096, 2048), 300.0)}\tgemm__BM_128__BN_128__BK_32__NT_128__S_3",
    f"phc\t2048\t2048\t2048\t{ms_for(bt.gemm_flops(2048, 2048, 2048), 200.0)}\tgemm__BM_64__BN_128__BK_64__NT_128__S_2",
]) + "\n"
TORCH_GEMM = "\n".join([GEMM_HEADER, f"torch\t2048\t2048\t2048\t{ms_for(bt.gemm_flops(2048, 2048, 2048), 500.0)}\t"]) + "\n"


def figures(**files):
    fig = bt.Figures()
    for name in sorted(files):
        fig.add(name + ".tsv", files[name])
    return fig


def table_lines(text, first_cell):
    """The markdown lines of text whose first cell is first_cell."""
    return [line for line in text.splitlines() if line.startswith(f"| {first_cell} |")]


class FlopsTest(unittest.TestCase):
    def test_tutorial_convention(self):
        self.assertEqual(bt.attention_flops("fwd", 0, 4, 32, 64, 1024), 4 * 4 * 32 * 1024 * 1024 * 64)
        self.assertEqual(bt.attention_flops("fwd", 1, 4, 32, 64, 1024), 2 * 4 * 32 * 1024 * 1024 * 64)
        self.assertEqual(bt.attention_flops("bwd", 0, 4, 32, 128, 2048), 2.5 * 4 * 4 * 32 * 2048 * 2048 * 128)
        self.assertEqual(bt.attention_flops("bwd", 1, 4, 32, 128, 2048), 1.25 * 4 * 4 * 32 * 2048 * 2048 * 128)
        self.assertEqual(bt.gemm_flops(8192, 4096, 2048), 2 * 8192 * 4096 * 2048)
        self.assertAlmostEqual(bt.tflops(1e12, 1000.0), 1.0)

    def test_grid_and_repetitions(self):
        self.assertEqual(len(bt.HEAD_DIMS) * len(bt.N_CTXS), 10)
        self.assertEqual(bt.N_CTXS[-1], 16384)
        self.assertGreaterEqual(min(bt.attention_reps(n) for n in bt.N_CTXS), 20)
        self.assertGreaterEqual(bt.GEMM_REPS, 20)


class ParseTest(unittest.TestCase):
    def test_meta_header_and_na(self):
        meta, header, rows = bt.parse_tsv(PHC_ATTENTION)
        self.assertEqual(meta["device"], "NVIDIA H200, sm_90, 132 SMs")
        self.assertEqual(header[0], "impl")
        self.assertEqual(len(rows), 5)
        self.assertIsNone(bt.parse_ms(rows[2]["ms"]))
        self.assertAlmostEqual(bt.tflops(FWD_1024, bt.parse_ms(rows[4]["ms"])), 200.0)

    def test_ms_that_is_no_figure(self):
        for text in ("n/a", "", "-1", "0", "inf", "nan", "abc", None):
            self.assertIsNone(bt.parse_ms(text), text)

    def test_malformed_rows_are_skipped_and_said(self):
        text = "\n".join([ATTN_HEADER, "phc\tfwd\tx\t4\t32\t64\t1024\t1.0\t", "phc\tsideways\t0\t4\t32\t64\t1024\t1.0\t",
                          "phc\tfwd\t0\t4", "\tfwd\t0\t4\t32\t64\t1024\t1.0\t", "phc\tfwd\t2\t4\t32\t64\t1024\t1.0\t",
                          "phc\tfwd\t0\t4\t32\t64\t-8\t1.0\t", attn_row("phc", "fwd", 0, 64, 1024, 200.0)]) + "\n"
        fig = figures(bad=text)
        self.assertEqual(list(fig.attention), [("fwd", 0, 4, 32, 64, 1024)])
        self.assertEqual(fig.skipped, ["bad.tsv: 6 malformed rows"])

    def test_garbage_never_raises(self):
        fig = figures(a="\x00\t\t\n#\n# : \n\t", b="M\n1\t2\t3", c="pass\timpl\n\n\t\t\t\t\t\t\t\t\t\t\t")
        bt.render(fig, "2026-01-01", "")


class TableTest(unittest.TestCase):
    def setUp(self):
        self.fig = figures(phc_attention=PHC_ATTENTION, torch_attention=TORCH_ATTENTION, phc_seed_attention=SEED,
                           phc_gemm=PHC_GEMM, torch_gemm=TORCH_GEMM)
        self.text = bt.render(self.fig, "2026-12-01", "abc1234")

    def test_header_line(self):
        self.assertEqual(self.text.splitlines()[0],
                         "`make bench`, 2026-12-01, NVIDIA H200 (sm_90, 132 SMs), torch 2.11.0+cu130, commit abc1234")

    def test_attention_joined_with_ratios(self):
        header = table_lines(self.text, "pass")[0]
        self.assertEqual(header, "| pass | causal | D | N_CTX | phc TFLOP/s | flash TFLOP/s | cuDNN TFLOP/s | phc/flash | "
                                 "phc/cuDNN | phc configs |")
        self.assertEqual(table_lines(self.text, "fwd")[:5], [
            "| fwd | no | 64 | 1024 | 200.0 | 400.0 | 500.0 | 0.50 | 0.40 | fwd BR128 BC64 NT128 S2 |",
            "| fwd | no | 64 | 2048 | 240.0 | 480.0 | 600.0 | 0.50 | 0.40 | fwd BR128 BC64 NT128 S2 |",
            "| fwd | no | 128 | 1024 | n/a | n/a | n/a | n/a | n/a |  |",
            "| fwd | yes | 64 | 1024 | 90.0 | 300.0 | n/a | 0.30 | n/a | fwd BR128 BC64 NT128 S2 |",
            # the seed's table follows, with its own header
            "| fwd | no | 64 | 1024 | 100.0 | 200.0 | 0.50 | 400.0 | 0.25 |",
        ])
        self.assertEqual(table_lines(self.text, "bwd"), [
            "| bwd | no | 64 | 1024 | 150.0 | 300.0 | n/a | 0.50 | n/a | delta BR64, dkdv BR32 BC128 NT128, dq BR128 BC64 NT128 |"])

    def test_seed_table(self):
        self.assertIn("| pass | causal | D | N_CTX | seed TFLOP/s | phc TFLOP/s | seed/phc | flash TFLOP/s | seed/flash |",
                      self.text)

    def test_fused_backward_beside_the_three_kernels(self):
        fused = "\n".join([ATTN_HEADER,
                           attn_row("phc-fused", "fwd", 0, 64, 1024, 210.0, "attn_fwd__D_64__BR_128__BC_64__NT_128__S_2"),
                           attn_row("phc-fused", "bwd", 0, 64, 1024, 180.0, "attn_bwd_delta__D_64__BR_64 "
                                    "attn_bwd_dkdv__D_64__BR_64__BC_128__NT_256__W_1 attn_bwd_dq__D_64__BR_64")]) + "\n"
        torch = TORCH_ATTENTION.replace(attn_row("cudnn", "bwd", 0, 64, 1024, 0, "No available kernel"),
                                        attn_row("cudnn", "bwd", 0, 64, 1024, 200.0))
        text = bt.render(figures(phc_attention=PHC_ATTENTION, torch_attention=torch, phc_fused_attention=fused),
                         "2026-12-04", "abc1234")
        self.assertIn("| pass | causal | D | N_CTX | three kernels TFLOP/s | fused TFLOP/s | fused/three | cuDNN TFLOP/s | "
                      "best/cuDNN | fused configs |", text)
        # the main table's bwd row (the faster file's figure), then the two-ways row: the faster against cuDNN
        self.assertEqual(table_lines(text, "bwd"), [
            "| bwd | no | 64 | 1024 | 180.0 | 300.0 | 200.0 | 0.60 | 0.90 | fused: delta BR64, dkdv BR64 BC128 NT256 W1, dq BR64 |",
            "| bwd | no | 64 | 1024 | 150.0 | 180.0 | 1.20 | 200.0 | 0.90 | delta BR64, dkdv BR64 BC128 NT256 W1, dq BR64 |"])
        # the forward too: the fused file's where faster, the tuned file's elsewhere
        self.assertEqual(table_lines(text, "fwd")[:2], [
            "| fwd | no | 64 | 1024 | 210.0 | 400.0 | 500.0 | 0.53 | 0.42 | fused: fwd BR128 BC64 NT128 S2 |",
            "| fwd | no | 64 | 2048 | 240.0 | 480.0 | 600.0 | 0.50 | 0.40 | fwd BR128 BC64 NT128 S2 |"])
        self.assertIn("phc: the faster of bench/attention_tuned.ph and bench/attention_fused.ph", text)
        self.assertNotIn("two ways", self.text)
        self.assertNotIn("the faster of", self.text)

    def test_fused_file_alone_fills_the_main_table(self):
        """make bench BENCH_PARTS="fused torch": no figures of the tuned file, the main table the fused file's."""
        fused = "\n".join([ATTN_HEADER, attn_row("phc-fused", "fwd", 0, 64, 1024, 450.0,
                                                  "attn_fwd__D_64__BR_192__BC_128__NT_384__S_3__W_1")]) + "\n"
        text = bt.render(figures(phc_fused_attention=fused, torch_attention=TORCH_ATTENTION), "2026-12-05", "")
        self.assertEqual(table_lines(text, "fwd")[0],
                         "| fwd | no | 64 | 1024 | 450.0 | 400.0 | 500.0 | 1.13 | 0.90 | fused: fwd BR192 BC128 NT384 S3 W1 |")

    def test_gemm_joined(self):
        self.assertEqual(table_lines(self.text, "M"), ["| M | N | K | phc TFLOP/s | torch.matmul TFLOP/s | phc/torch | phc config |"])
        self.assertEqual(table_lines(self.text, "2048"), ["| 2048 | 2048 | 2048 | 200.0 | 500.0 | 0.40 | gemm BM64 BN128 BK64 NT128 S2 |"])
        self.assertEqual(table_lines(self.text, "8192"), ["| 8192 | 4096 | 2048 | 300.0 | n/a | n/a | gemm BM128 BN128 BK32 NT128 S3 |"])

    def test_missing_figures_say_why(self):
        self.assertIn("- n/a, cudnn, 2 cases: No available kernel", self.text)
        self.assertIn("- n/a, phc, 1 case: no config of attn_fwd accepts these dims", self.text)

    def test_phc_alone_without_torch(self):
        text = bt.render(figures(phc_attention=PHC_ATTENTION, phc_gemm=PHC_GEMM), "2026-12-01", "")
        self.assertEqual(text.splitlines()[0], "`make bench`, 2026-12-01, NVIDIA H200 (sm_90, 132 SMs)")
        self.assertEqual(table_lines(text, "pass"), ["| pass | causal | D | N_CTX | phc TFLOP/s | phc configs |"])
        self.assertIn("| fwd | no | 64 | 1024 | 200.0 | fwd BR128 BC64 NT128 S2 |", text)
        self.assertEqual(table_lines(text, "M"), ["| M | N | K | phc TFLOP/s | phc config |"])
        self.assertNotIn("flash", text)

    def test_varying_batch_gets_columns(self):
        other = ATTN_HEADER + "\nphc\tfwd\t0\t2\t8\t64\t1024\t1.0\t\n"
        text = bt.render(figures(a=PHC_ATTENTION, b=other), "d", "")
        self.assertIn("| pass | causal | D | N_CTX | B | H | phc TFLOP/s | phc configs |", text)

    def test_markdown_rows_have_header_width(self):
        for block in self.text.split("\n\n"):
            rows = [line for line in block.splitlines() if line.startswith("|")]
            widths = {line.count("|") for line in rows}
            self.assertLessEqual(len(widths), 1, block)

    def test_compact_config(self):
        self.assertEqual(bt.compact_config("attn_fwd__D_128__BR_64__BC_32__NT_256__S_3"), "fwd BR64 BC32 NT256 S3")
        self.assertEqual(bt.compact_config("attn_fwd__D_64__BR_192__BC_128__NT_384__S_3__W_2__MASKED_1"),
                         "fwd BR192 BC128 NT384 S3 W2")
        self.assertEqual(bt.compact_config(""), "")
        self.assertEqual(bt.compact_config("plain"), "plain")


class MainTest(unittest.TestCase):
    def run_main(self, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = bt.main(["benchtable.py", *args])
        return status, out.getvalue()

    def test_no_figures_is_no_failure(self):
        with tempfile.TemporaryDirectory() as d:
            status, out = self.run_main(d)
            self.assertEqual(status, 0)
            self.assertIn("no GPU figures", out)
            self.assertFalse(os.path.exists(os.path.join(d, "table.md")))

    def test_prints_and_writes_table(self):
        with tempfile.TemporaryDirectory() as d:
            for name, text in (("phc_attention.tsv", PHC_ATTENTION), ("torch_attention.tsv", TORCH_ATTENTION)):
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
            status, out = self.run_main("--commit", "abc1234", "--date", "2026-12-01", d)
            self.assertEqual(status, 0)
            with open(os.path.join(d, "table.md")) as f:
                table = f.read()
            self.assertTrue(out.endswith(table))
            # the device phc's runtime names wins over torch's shorter name
            self.assertTrue(table.startswith("`make bench`, 2026-12-01, NVIDIA H200 (sm_90, 132 SMs), torch 2.11.0+cu130"))

    def test_usage(self):
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(self.run_main()[0], 2)


# ---- torch_bench.py with a stand-in for torch ----

class FakeTensor:
    def __init__(self, log, shape=(1,)):
        self.log, self.shape = log, tuple(shape)

    def zero_(self):
        self.log.append("flush")


class FakeTorch:
    """As much of torch as torch_bench uses: every timed repetition lasts one
    more millisecond than the last, and cuDNN refuses head dim 128."""

    def __init__(self):
        log, state = [], {"backend": None, "elapsed": 0.0}
        self.log, self.__version__, self.float16, self.uint8 = log, "0.0+fake", "f16", "u8"

        class Event:
            def __init__(self, enable_timing=False):
                self.name = None

            def record(self):
                log.append("record")

            def synchronize(self):
                pass

            def elapsed_time(self, end):
                state["elapsed"] += 1.0
                return state["elapsed"]

        @contextlib.contextmanager
        def sdpa_kernel(backend):
            before, state["backend"] = state["backend"], backend
            try:
                yield
            finally:
                state["backend"] = before

        def sdpa(q, k, v, is_causal=False, scale=None):
            if state["backend"] == "CUDNN" and q.shape[-1] == 128:
                warnings.warn("cuDNN: head dim 128 not supported here")
                raise RuntimeError("No available kernel. Aborting execution.")
            log.append("work")
            return FakeTensor(log, q.shape)

        def grad(out, inputs, dout, retain_graph=False):
            log.append("work")
            return inputs

        def matmul(a, b):
            log.append("work")
            return FakeTensor(log, (a.shape[0], b.shape[1]))

        self.state = state
        self.reset_elapsed = lambda: state.update(elapsed=0.0)
        self.empty = lambda n, dtype=None, device=None: FakeTensor(log, (n,))
        self.randn = lambda shape, device=None, dtype=None, requires_grad=False: FakeTensor(log, shape)
        self.matmul = matmul
        self.cuda = types.SimpleNamespace(is_available=lambda: True, get_device_name=lambda: "Fake GPU", Event=Event,
                                          synchronize=lambda: None, empty_cache=lambda: None)
        self.nn = types.SimpleNamespace(
            functional=types.SimpleNamespace(scaled_dot_product_attention=sdpa),
            attention=types.SimpleNamespace(SDPBackend=types.SimpleNamespace(FLASH_ATTENTION="FLASH", CUDNN_ATTENTION="CUDNN"),
                                            sdpa_kernel=sdpa_kernel))
        self.autograd = types.SimpleNamespace(grad=grad)
        self.backends = types.SimpleNamespace(cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(
            allow_fp16_reduced_precision_reduction=True)))


class TorchBenchTest(unittest.TestCase):
    def run_bench(self, torch):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(torch_bench.run(torch, d), 0)
        return d, bt.load_dir(d)

    def test_every_case_a_row_and_refusals_na(self):
        torch = FakeTorch()
        d, fig = self.run_bench(torch)
        self.assertEqual(len(fig.attention), 2 * 2 * len(bt.HEAD_DIMS) * len(bt.N_CTXS))
        self.assertEqual(fig.skipped, [])
        for (pass_, causal, b, h, dim, n), per in fig.attention.items():
            self.assertEqual((b, h), (bt.BATCH, bt.HEADS))
            self.assertEqual(set(per), {"flash", "cudnn"})
            self.assertIsNotNone(per["flash"][0])
            if dim == 128:
                self.assertIsNone(per["cudnn"][0])
                self.assertEqual(per["cudnn"][1], "cuDNN: head dim 128 not supported here; No available kernel. Aborting execution.")
            else:
                self.assertIsNotNone(per["cudnn"][0])
        self.assertEqual(sorted(fig.gemm), sorted(bt.GEMM_SHAPES))
        self.assertTrue(all(per["torch"][0] is not None for per in fig.gemm.values()))
        self.assertEqual(fig.meta["torch"], "0.0+fake")
        self.assertFalse(torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)
        self.assertIn("| fwd | yes | 128 | 16384 | n/a |", bt.render(fig, "d", ""))

    def test_flush_before_every_timed_repetition(self):
        torch = FakeTorch()
        self.run_bench(torch)
        log = torch.log
        starts = [i for i in range(0, len(log) - 2) if log[i:i + 3] == ["record", "work", "record"]]
        self.assertGreater(len(starts), 0)
        for i in starts:
            self.assertEqual(log[i - 1], "flush", i)
        # every record pairs around one piece of work: nothing else is timed
        self.assertEqual(log.count("record"), 2 * len(starts))
        self.assertEqual(log.count("flush"), len(starts))

    def test_median_of_the_repetitions(self):
        torch = FakeTorch()
        timer = torch_bench.Timer(torch)
        torch.reset_elapsed()
        # the fake's repetitions take 1, 2, 3, ... ms: at least `reps` of them, and a second's worth
        self.assertEqual(timer.median_ms(lambda: None, 50), 25.5)   # the median of 1..50 (45 make a second)
        self.assertEqual(timer.median_ms(lambda: None, 3), 59.0)    # of 51..67, the first 17 to add up to 1000

    def test_no_cuda_skips(self):
        torch = FakeTorch()
        torch.cuda.is_available = lambda: False
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(torch_bench.run(torch, "/nonexistent/never-written"), 0)
        self.assertIn("skipped", out.getvalue())


if __name__ == "__main__":
    unittest.main()
