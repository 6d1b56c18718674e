/* test_ptxinfo.c: reading a config's costs back from text: ptxas -v's
 * report as two releases of ptxas print it, an entry whose name begins
 * another's, an entry the report lacks; the messages that say an entry's
 * wgmma pipeline was lost, ahead of the reports; and the shared memory
 * PTX declares, statically (at module scope or demoted into the entry) or
 * dynamically. */
#include <criterion/criterion.h>

#include "codegen/codegen.h"
#include "nvidia/ptxinfo.h"

/* CUDA 13's ptxas -v: barriers counted, "smem" only where there is some. */
static const char cuda13_log[] =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'k__BR_64' for 'sm_90'\n"
    "ptxas info    : Function properties for k__BR_64\n"
    "    856 bytes stack frame, 1064 bytes spill stores, 1036 bytes spill loads\n"
    "ptxas info    : Used 255 registers, used 1 barriers, 856 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 649.995 ms\n"
    "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
    "ptxas info    : Function properties for k\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 119 registers, used 1 barriers, 46592 bytes smem\n"
    "ptxas info    : Compile time = 8.011 ms\n";

Test(ptxinfo, ptxas_report_per_entry)
{
    PtxasReport r;
    cr_assert(ptxas_report_of(cuda13_log, "k__BR_64", &r));
    cr_expect_eq(r.registers, 255);
    cr_expect_eq(r.stack_frame, 856);
    cr_expect_eq(r.spill_stores, 1064);
    cr_expect_eq(r.spill_loads, 1036);
    cr_expect_eq(r.shared, 0, "no smem reported: none static");
    /* "k" is the start of "k__BR_64": its own report, not the other's */
    cr_assert(ptxas_report_of(cuda13_log, "k", &r));
    cr_expect_eq(r.registers, 119);
    cr_expect_eq(r.stack_frame, 0);
    cr_expect_eq(r.spill_stores, 0);
    cr_expect_eq(r.spill_loads, 0);
    cr_expect_eq(r.shared, 46592);
    cr_expect_not(ptxas_report_of(cuda13_log, "k__BR", &r));
    cr_expect_eq(r.registers, -1);
    cr_expect_not(ptxas_report_of("", "k", &r));
}

/* An older ptxas: constant banks on the registers' line, no barriers; a
 * function the entry calls is reported between entries, and is not the entry's. */
Test(ptxinfo, older_ptxas_and_called_functions)
{
    static const char log[] =
        "ptxas info    : 64604 bytes gmem, 76 bytes cmem[3]\n"
        "ptxas info    : Function properties for helper\n"
        "    24 bytes stack frame, 20 bytes spill stores, 20 bytes spill loads\n"
        "ptxas info    : Compiling entry function 'red' for 'sm_80'\n"
        "ptxas info    : Function properties for red\n"
        "    352 bytes stack frame, 288 bytes spill stores, 308 bytes spill loads\n"
        "ptxas info    : Used 63 registers, 332 bytes cmem[0], 20 bytes cmem[2], 2048 bytes smem\n"
        "ptxas info    : Compiling entry function 'black' for 'sm_80'\n"
        "ptxas info    : Function properties for black\n"
        "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
        "ptxas info    : Used 40 registers, 332 bytes cmem[0]\n";
    PtxasReport r;
    cr_assert(ptxas_report_of(log, "red", &r));
    cr_expect_eq(r.registers, 63);
    cr_expect_eq(r.stack_frame, 352);
    cr_expect_eq(r.spill_stores, 288);
    cr_expect_eq(r.spill_loads, 308);
    cr_expect_eq(r.shared, 2048);
    cr_assert(ptxas_report_of(log, "black", &r));
    cr_expect_eq(r.registers, 40);
    cr_expect_eq(r.spill_stores + r.spill_loads + r.stack_frame + r.shared, 0);
    cr_assert(ptxas_report_of(log, "helper", &r));
    cr_expect_eq(r.stack_frame, 24);
    cr_expect_eq(r.registers, -1, "a called function's registers are its caller's");
}

/* Static arrays at module scope, or demoted into their one user's body;
 * an extern array is dynamic memory, which the constant gives. */
Test(ptxinfo, shared_memory_the_ptx_declares)
{
    static const char ptx[] =
        ".version 8.0\n"
        ".target sm_90\n"
        "// a_smem has been demoted\n"
        ".shared .align 16 .b8 b_smem[5120];\n"
        ".extern .shared .align 16 .b8 c_shared[];\n"
        ".visible .const .align 4 .u32 c_dynamic_shared_bytes = 64512;\n"
        ".visible .entry a(\n"
        ")\n"
        "{\n"
        "\t.shared .align 16 .b8 a_smem[27648];\n"
        "\tst.shared.v4.b32 \t[a_smem+16], {%r1, %r2, %r3, %r4};\n"
        "}\n"
        ".visible .entry b_x(\n"
        ")\n"
        "{\n"
        "\t.shared .align 4 .b32 b_x_smem[8];\n"
        "}\n";
    cr_expect_eq(ptx_static_shared_bytes(ptx, "a"), 27648);
    cr_expect_eq(ptx_static_shared_bytes(ptx, "b"), 5120, "not b_x's");
    cr_expect_eq(ptx_static_shared_bytes(ptx, "b_x"), 32, "eight 32-bit words");
    cr_expect_eq(ptx_static_shared_bytes(ptx, "c"), 0);
    cr_expect_eq(codegen_dynamic_shared_bytes(ptx, "c"), 64512);
    cr_expect_eq(codegen_dynamic_shared_bytes(ptx, "a"), 0);
    cr_expect_eq(ptx_static_shared_bytes(ptx, "nope"), 0);
}

/* CUDA 13's ptxas -v -arch=sm_90a: the wgmma messages come first, in no
 * order of entries, each naming its function at the end (these three
 * from bench/attention_tuned.ph as phc compiled it, and from PTX edited
 * to read an accumulator mid-stage and to call an extern function). */
static const char sm90a_log[] =
    "ptxas info    : (C7519) warpgroup.arrive is injected in around line 174430 by compiler to allow use of registers in GMMA in function 'attn_bwd_dq__D_64__BR_64__BC_32__NT_128'\n"
    "ptxas info    : (C7519) warpgroup.arrive is injected in around line 173869 by compiler to allow use of registers in GMMA in function 'attn_bwd_dq__D_64__BR_64__BC_32__NT_128'\n"
    "ptxas info    : (C7517) warpgroup.wait is injected in around line 1049 by compiler to allow use of registers defined by GMMA in function 'gemm'\n"
    "ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized due to program dependence on "
    "compiler-inserted WG.AR in divergent path in the function 'gemm'\n"
    "ptxas info    : (C7519) warpgroup.arrive is injected in around line 1057 by compiler to allow use of registers in GMMA in function 'gemm'\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'attn_bwd_dq__D_64__BR_64__BC_32__NT_128' for 'sm_90a'\n"
    "ptxas info    : Function properties for attn_bwd_dq__D_64__BR_64__BC_32__NT_128\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 124 registers, used 1 barriers, 32768 bytes smem\n"
    "ptxas info    : Compile time = 960.451 ms\n"
    "ptxas info    : Compiling entry function 'gemm__S_3' for 'sm_90a'\n"
    "ptxas info    : Function properties for gemm__S_3\n"
    "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 156 registers, used 1 barriers\n"
    "ptxas info    : Compiling entry function 'gemm' for 'sm_90a'\n"
    "ptxas info    : Function properties for gemm\n"
    "    256 bytes stack frame, 768 bytes spill stores, 512 bytes spill loads\n"
    "ptxas info    : Used 162 registers, used 1 barriers\n";

Test(ptxinfo, wgmma_pipelines_lost_per_entry)
{
    PtxasReport r;
    cr_assert(ptxas_report_of(sm90a_log, "attn_bwd_dq__D_64__BR_64__BC_32__NT_128", &r));
    cr_expect_eq(r.registers, 124);
    cr_expect_eq(r.shared, 32768);
    cr_expect_eq(r.wgmma.arrive_injected, 2);
    cr_expect_eq(r.wgmma.wait_injected + r.wgmma.serialized, 0);
    cr_expect_str_eq(r.wgmma.first, "(C7519) warpgroup.arrive is injected in around line 174430 by compiler to allow use of registers in GMMA");
    char text[600];
    cr_expect(ptxas_wgmma_text(&r.wgmma, text, sizeof text));
    cr_expect_str_eq(text, "wgmma pipeline lost: 2 warpgroup.arrive injected (C7519); first: (C7519) warpgroup.arrive is injected in "
                           "around line 174430 by compiler to allow use of registers in GMMA");

    cr_assert(ptxas_report_of(sm90a_log, "gemm", &r));
    cr_expect_eq(r.registers, 162);
    cr_expect_eq(r.spill_stores, 768);
    cr_expect_eq(r.wgmma.serialized, 1);
    cr_expect_eq(r.wgmma.wait_injected, 1);
    cr_expect_eq(r.wgmma.arrive_injected, 1);
    cr_expect_str_eq(r.wgmma.first, "(C7517) warpgroup.wait is injected in around line 1049 by compiler to allow use of registers defined by GMMA");
    cr_expect(ptxas_wgmma_text(&r.wgmma, text, sizeof text));
    cr_expect_not_null(strstr(text, "lost: 1 serialized, 1 warpgroup.wait injected (C7517), 1 warpgroup.arrive injected (C7519); first: "));

    /* "gemm" begins "gemm__S_3", whose pipeline is whole */
    cr_assert(ptxas_report_of(sm90a_log, "gemm__S_3", &r));
    cr_expect_eq(r.registers, 156);
    cr_expect_eq(r.wgmma.serialized + r.wgmma.wait_injected + r.wgmma.arrive_injected, 0);
    cr_expect_not(ptxas_wgmma_text(&r.wgmma, text, sizeof text));
    cr_expect_str_eq(text, "");

    /* messages of an entry whose report is missing are still read */
    cr_expect_not(ptxas_report_of(sm90a_log, "attn", &r));
    cr_expect_eq(r.wgmma.arrive_injected, 0, "'attn' is no function the messages name");
    cr_expect_not(ptxas_report_of("ptxas info    : (C7519) warpgroup.arrive is injected in around line 7 by compiler to allow use of "
                                  "registers in GMMA in function 'k'\r\n", "k", &r));
    cr_expect_eq(r.wgmma.arrive_injected, 1);
    cr_expect_str_eq(r.wgmma.first, "(C7519) warpgroup.arrive is injected in around line 7 by compiler to allow use of registers in GMMA");
}
