/* ptxinfo.h: what a config costs, read back from text: the shared memory
 * its PTX declares (the kernel ABI of codegen.h), and the report ptxas -v
 * prints, which the CUDA driver's JIT writes in its verbose log too, with
 * the messages that say a wgmma pipeline was lost. Both
 * phc --stats and the runtime's statistics read them here. */
#ifndef PHC_PTXINFO_H
#define PHC_PTXINFO_H

#include "base/util.h"

/* The static shared memory, in bytes, that entry's PTX declares: its
 * scratch and operand arrays (0 when its shared memory is dynamic). */
int64_t ptx_static_shared_bytes(const char *ptx, const char *entry);

/* ptxas's messages that an entry's wgmma pipeline was lost (sm_90a): its
 * wgmma.mma_async serialized ("... instructions are serialized due to
 * ..."), or waits and fences it injected, which make a wgmma wait where
 * the code meant it to run on (C7517 "warpgroup.wait is injected", C7519
 * "warpgroup.arrive is injected"). Each is a fast path lost. */
typedef struct {
    int serialized, wait_injected, arrive_injected;
    char first[400];            /* the first of them, as ptxas wrote it, less its "ptxas info    : " and the function's name */
} PtxasWgmma;

/* One entry in ptxas -v's report; -1 where the report says nothing. */
typedef struct {
    int registers;              /* "Used N registers" */
    int64_t stack_frame;        /* bytes of local memory per thread ("N bytes stack frame") */
    int64_t spill_stores, spill_loads;
    int64_t shared;             /* static shared memory ("N bytes smem"; absent: 0) */
    PtxasWgmma wgmma;           /* none: all 0 */
} PtxasReport;

/* Reads entry's figures from log, the text ptxas -v prints (or a JIT's
 * verbose log), and its wgmma messages, wherever in log they are. false
 * when log has no report of entry (the messages are read all the same). */
bool ptxas_report_of(const char *log, const char *entry, PtxasReport *r);

/* One line's text of w for a --stats or PHOBOS_STATS line: "wgmma
 * pipeline lost: 1 serialized, 2 warpgroup.arrive injected (C7519);
 * first: ..."; false, and "" in buf, when there is none. */
bool ptxas_wgmma_text(const PtxasWgmma *w, char *buf, size_t n);

#endif
