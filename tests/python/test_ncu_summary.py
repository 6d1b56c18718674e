"""test_ncu_summary.py: bench/ncu_summary.py on a small source page written
here as ncu writes it (a kernel line, the columns, thousands separators):
the stall shares, the instruction with the most samples first, the hot loop
found by the execution count whose instructions issue the most (not an
mbarrier spin-wait's, run more often, nor the code run once), its opcodes
counted, predicates dropped, the samples split by execution count,
and a file that is no source page refused with a message. Standard library
only (runs under pytest or unittest)."""

import contextlib
import io
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))

import ncu_summary  # noqa: E402

COLUMNS = ["Address", "Source", "# Samples", "Instructions Executed",
           "stall_barrier", "stall_wait", "stall_math", "stall_barrier (Not Issued)"]


def page(rows):
    def quote(x):
        return '"' + str(x) + '"'
    lines = ['"Kernel Name","attn_fwd__D_128",', ",".join(quote(c) for c in COLUMNS)]
    lines += [",".join(quote(x) for x in r) for r in rows]
    return "\n".join(lines) + "\n"


ROWS = [
    # address, source, samples, executed, barrier, wait, math, barrier not issued
    ("0x10", "      LDC R1, c[0x0][0x28]", "2", "24", "0", "2", "0", "0"),
    ("0x20", "      HGMMA.64x64x16.F32 R24, gdesc[UR8], R24", "10", "1,024", "0", "6", "4", "0"),
    ("0x30", "      WARPGROUP.DEPBAR.LE gsb0, 0x0", "60", "1,024", "55", "5", "0", "55"),
    ("0x40", "      FMUL R3, R3, UR9", "8", "1,024", "0", "2", "6", "0"),
    ("0x50", "@!P0  FMUL R4, R4, UR9", "20", "1,024", "0", "10", "10", "0"),
    ("0x60", "      SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR10], R152", "0", "1,500", "0", "0", "0", "0"),
    ("0x70", "@!P0  BRA 0x60", "0", "1,500", "0", "0", "0", "0"),
    ("0x80", "      EXIT", "0", "24", "0", "0", "0", "0"),
]


class Summary(unittest.TestCase):
    def run_on(self, text, *args):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write(text)
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = ncu_summary.main([f.name, *args])
        finally:
            os.unlink(f.name)
        return rc, out.getvalue(), err.getvalue()

    def test_stall_shares_add_up_and_leave_out_the_not_issued_columns(self):
        rc, out, _ = self.run_on(page(ROWS))
        self.assertEqual(rc, 0)
        self.assertIn("stall samples: 100", out)
        self.assertIn("barrier               55.0%", out)
        self.assertIn("wait                  25.0%", out)
        self.assertIn("math                  20.0%", out)

    def test_the_instruction_holding_most_samples_comes_first_with_its_reasons(self):
        _, out, _ = self.run_on(page(ROWS), "--top", "2")
        listed = out.split("instructions with the most samples:\n")[1].splitlines()
        self.assertIn("WARPGROUP.DEPBAR.LE gsb0, 0x0  (barrier 55, wait 5)", listed[0])
        self.assertIn("60.00%  x1024", listed[0])
        self.assertIn("@!P0  FMUL", listed[1])
        self.assertTrue(listed[2].startswith("hot loop"))

    def test_the_hot_loop_is_the_count_that_issues_most_not_a_spin_wait(self):
        _, out, _ = self.run_on(page(ROWS))
        self.assertIn("hot loop: 4 instructions a warp an iteration (1024 warp iterations)", out)
        self.assertIn("FMUL 2 HGMMA 1 WARPGROUP 1", out)

    def test_samples_are_split_by_how_often_their_instructions_ran(self):
        _, out, _ = self.run_on(page(ROWS))
        counts = out.split("samples by execution count:\n")[1].splitlines()
        self.assertEqual(counts[0].split(), ["x1024", "4", "instructions", "98.0%"])
        self.assertEqual(counts[1].split(), ["x24", "2", "instructions", "2.0%"])
        self.assertEqual(len(counts), 2)   # the spin-wait's count holds no samples

    def test_a_file_that_is_no_source_page_is_refused(self):
        rc, out, err = self.run_on('"a","b"\n"1","2"\n')
        self.assertEqual(rc, 1)
        self.assertEqual(out, "")
        self.assertIn("not an ncu source page: no column 'Source'", err)


if __name__ == "__main__":
    unittest.main()
