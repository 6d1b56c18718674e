/* ops.h: the IR's ops, one row each, in the order of their IrOpKind
 * numbers (ir.h builds the enum and ir_ops[] from this list; the text form
 * and every pass that asks "which ops are like this?" read the columns).
 *
 * IR_OP(KIND, name, operands, results, properties)
 *   name        the op's word in the text form (docs/ir.md); NULL where the
 *               op is named by its sub-op (ir_unop_names and the others)
 *   operands,   how many the op takes and gives; -1 where the count varies
 *   results     (the verifier's rule for the op then checks it)
 *   properties  IR_OP_* flags of ir.h
 *
 * No include guard: ir.h includes it once per table it builds. */

/* leaves */
IR_OP(CONST,     "const",     0, 1, IR_OP_PURE)  /* scalar constant: ival (bool, i32) or fval (floats) */
IR_OP(PARAM,     "param",     0, 1, IR_OP_PURE)  /* scalar kernel parameter number `param` (i32 or f32) */
IR_OP(DIM,       "dim",       0, 1, IR_OP_PURE)  /* run-time i32 size of axis `axis` of tensor parameter `param` */
IR_OP(BLOCK_ID,  "block_id",  0, 1, IR_OP_PURE)  /* i32 ph.ctx.block.{x,y,z}: axis 0..2 */
IR_OP(GRID_DIM,  "grid_dim",  0, 1, IR_OP_PURE)  /* i32 ph.ctx.grid.{x,y,z}: axis 0..2 */
IR_OP(IOTA,      "iota",      0, 1, IR_OP_PURE | IR_OP_BUILT_AT_USE)  /* i32 tile; element value is its index along `axis` */
/* shape and type changes */
IR_OP(SPLAT,     "splat",     1, 1, IR_OP_PURE | IR_OP_BUILT_AT_USE)  /* scalar -> tile of the result type (same dtype) */
IR_OP(BROADCAST, "broadcast", 1, 1, IR_OP_PURE | IR_OP_BUILT_AT_USE)  /* tile -> larger shape, stretching dims of 1 (same dtype) */
IR_OP(CONVERT,   "convert",   1, 1, IR_OP_PURE | IR_OP_ELEMENTWISE)   /* dtype change, same shape; floats round to nearest even */
IR_OP(TRANSPOSE, "transpose", 1, 1, IR_OP_PURE)  /* [M,N] -> [N,M] */
/* elementwise, operands of equal type (scalars or tiles) */
IR_OP(UNARY,     NULL,        1, 1, IR_OP_PURE | IR_OP_ELEMENTWISE)   /* sub: IrUnop */
IR_OP(BINARY,    NULL,        2, 1, IR_OP_PURE | IR_OP_ELEMENTWISE)   /* sub: IrBinop */
IR_OP(CMP,       NULL,        2, 1, IR_OP_PURE | IR_OP_ELEMENTWISE)   /* sub: IrCmp; result dtype DT_BOOL */
IR_OP(SELECT,    "select",    3, 1, IR_OP_PURE | IR_OP_ELEMENTWISE)   /* args: cond (bool), a, b: all of one shape */
IR_OP(FMA,       "fma",       3, 1, IR_OP_PURE | IR_OP_ELEMENTWISE)   /* args a, b, c (floats, one type): a * b + c rounded once in f32, then to the dtype */
/* tile-wide */
IR_OP(REDUCE,    NULL,        1, 1, IR_OP_PURE)  /* sub: IrReduce along `axis`; [M,N] -> [M,1] (axis 1) or [1,N] (axis 0) */
IR_OP(DOT,       "dot",       3, 1, IR_OP_PURE)  /* args a, b, acc: acc + a @ b (or a @ b^T with flags & DOT_TRANS_B); f32 result */
/* along an axis, and vectors reshaped (docs/ir.md) */
IR_OP(ARGMAX,    "argmax",    1, 1, IR_OP_PURE)  /* i32 index of the largest along `axis` of a 2-D tile, as OP_REDUCE's shape; ties and NaN: docs/ir.md */
IR_OP(ARGMIN,    "argmin",    1, 1, IR_OP_PURE)  /* the same for the smallest */
IR_OP(CUMSUM,    "cumsum",    1, 1, IR_OP_PURE)  /* inclusive prefix sum along `axis` of a 2-D tile, same type; floats summed in f32 in order */
IR_OP(RESHAPE,   "reshape",   1, 1, IR_OP_PURE | IR_OP_BUILT_AT_USE)  /* between [n], [1, n] and [n, 1] (same dtype and elements) */
/* memory: tensor parameter `param`; args are the window's start per axis (i32 scalars) */
IR_OP(LOAD,      "load",     -1, 1, IR_OP_WINDOW)  /* result: the window, shape = result type; out-of-bounds elements read 0 */
IR_OP(STORE,     "store",    -1, 0, IR_OP_WINDOW | IR_OP_WRITES | IR_OP_EFFECT)
    /* args: starts..., value (tile of the window's shape, tensor dtype); out-of-bounds not written */
IR_OP(ATOMIC_ADD, "atomic_add", -1, 0, IR_OP_WINDOW | IR_OP_WRITES | IR_OP_EFFECT)
    /* args as OP_STORE's, tensor f32 or i32: the value is added to each in-bounds element,
     * atomically with other blocks' adds; out-of-bounds not touched */
/* memory by element: tensor parameter `param`; args are an i32 index per axis, each of the
 * shape of the elements read or written (scalars for one element) */
IR_OP(GATHER,    "gather",   -1, 1, 0)  /* result: element (i, j) is the tensor's element at the indices'
                                         * (i, j); 0 where one lies outside the tensor */
IR_OP(SCATTER,   "scatter",  -1, 0, IR_OP_WRITES | IR_OP_EFFECT)
    /* args: indices..., value (their shape, tensor dtype); each element whose indices lie inside is
     * written; of elements with the same indices one value lands, which is not specified */
IR_OP(SCATTER_ADD, "scatter_add", -1, 0, IR_OP_WRITES | IR_OP_EFFECT)
    /* args as OP_SCATTER's, tensor f32 or i32: each element whose indices lie inside gets its
     * value added, atomically (elements with the same indices each add theirs) */
/* asynchronous copies through shared memory (the async pass makes them; docs/ir.md) */
IR_OP(COPY_ASYNC, "copy_async", -1, 1, IR_OP_WINDOW)
    /* args: starts..., slot (i32); axis: ring, ival: the ring's slots. Its value is the window,
     * as OP_LOAD's; it lands in shared memory only by a later wait */
IR_OP(COMMIT_ASYNC, "commit_async", 0, 0, IR_OP_EFFECT)  /* closes a group of the copies issued since the last commit */
IR_OP(WAIT_ASYNC, "wait_async", -1, -1, IR_OP_EFFECT)
    /* args: copies; results: the same values, readable. ival: the groups that may still be in
     * flight. Waits, then (with args) a barrier; an effect, since the barrier protects ring slots */
IR_OP(RELEASE_ASYNC, "release_async", -1, 0, IR_OP_EFFECT)
    /* args: a wait's results. Nothing reads their ring slots after it, so a producer warp may
     * refill them (warp_specialize.c places it after the slots' last reader) */
IR_OP(WAIT_DOTS, "wait_dots", -1, -1, IR_OP_EFFECT)
    /* args: results of dots flagged DOT_ISSUED; results: the same values, readable. ival: the
     * groups of dots issued before it that may still be in flight (wgmma_overlap.c makes it) */
/* debugging (docs/ir.md): str holds the text, file the source file */
IR_OP(DEVICE_PRINT,  "device_print",  -1, 0, IR_OP_EFFECT)  /* args: scalars; prints "pid (x, y, z) str v..." once per block */
IR_OP(DEVICE_ASSERT, "device_assert",  1, 0, IR_OP_EFFECT)  /* args: cond (bool scalar or tile); stops the launch where an
                                                              * element is false, naming file, loc and the message str */
/* control */
IR_OP(FOR,       "for",      -1, -1, IR_OP_REGIONS)  /* args: lower, upper, inits...; ival: step (> 0); body args: iv, carried...; results: carried */
IR_OP(IF,        "if",        1, -1, IR_OP_REGIONS)  /* args: cond (bool scalar); body = then, els = else; results yielded by both */
IR_OP(WHILE,     "while",    -1, -1, IR_OP_REGIONS)
    /* args: inits; results: carried. body: the condition region (args: carried; yields one bool
     * scalar), els: the loop body (args: carried; yields the next carried values). The condition
     * runs before each iteration, and the loop ends when it is false */
IR_OP(YIELD,     "yield",    -1, 0, IR_OP_EFFECT)    /* last op of a for body, an if branch or a while region; args: the values passed on */
IR_OP(RETURN,    "return",    0, 0, IR_OP_EFFECT)    /* ends the block's work */
