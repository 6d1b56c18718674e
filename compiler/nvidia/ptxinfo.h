/* ptxinfo.h: what a config costs, read back from text: the shared memory
 * its PTX declares (the kernel ABI of codegen.h), and the report ptxas -v
 * prints, which the CUDA driver's JIT writes in its verbose log too. Both
 * phc --stats and the runtime's statistics read them here. */
#ifndef PHC_PTXINFO_H
#define PHC_PTXINFO_H

#include "base/util.h"

/* The static shared memory, in bytes, that entry's PTX declares: its
 * scratch and operand arrays (0 when its shared memory is dynamic). */
int64_t ptx_static_shared_bytes(const char *ptx, const char *entry);

/* One entry in ptxas -v's report; -1 where the report says nothing. */
typedef struct {
    int registers;              /* "Used N registers" */
    int64_t stack_frame;        /* bytes of local memory per thread ("N bytes stack frame") */
    int64_t spill_stores, spill_loads;
    int64_t shared;             /* static shared memory ("N bytes smem"; absent: 0) */
} PtxasReport;

/* Reads entry's figures from log, the text ptxas -v prints (or a JIT's
 * verbose log). false when log has no report of entry. */
bool ptxas_report_of(const char *log, const char *entry, PtxasReport *r);

#endif
