/* targets.c: the rows of NVIDIA's targets (codegen/target.h).
 *
 * Both write PTX ISA 8.0 and prefer the tensor cores (mma.sync) to FMA
 * loops, and fill ring slots with cp.async; they differ in the chip the
 * back end schedules for and ptxas assembles for. */
#include "codegen/target.h"

#include "nvidia/targets.h"

static const DotEngine *const ampere_dots[] = {&dot_mma_sync, &dot_fma, NULL};

const Target nvidia_sm80 = {
    .name = "sm_80",
    .sm = 80,
    .ptx_version = 80,
    .llvm_cpu = "sm_80",
    .llvm_features = "+ptx80",
    .caps = TARGET_TENSOR_CORES | TARGET_ASYNC_COPY,
    .dots = ampere_dots,
    .copy = &copy_cp_async,
    .passes = NULL,
    .isa = &nvidia_isa,
    .fix_ptx = ptxas_workarounds,
};

/* Hopper through Ampere's instructions: wgmma and TMA would be an sm_90a
 * row of their own (docs/architecture.md, "Targets"). */
const Target nvidia_sm90 = {
    .name = "sm_90",
    .sm = 90,
    .ptx_version = 80,
    .llvm_cpu = "sm_90",
    .llvm_features = "+ptx80",
    .caps = TARGET_TENSOR_CORES | TARGET_ASYNC_COPY,
    .dots = ampere_dots,
    .copy = &copy_cp_async,
    .passes = NULL,
    .isa = &nvidia_isa,
    .fix_ptx = ptxas_workarounds,
};
