/* irutil.h: editing IR in place, for the passes that move and copy ops
 * (licm.c, pipeline.c, async.c): inserting and removing ops, copying an op,
 * rewriting uses, growing a loop's carried values. */
#ifndef PHC_IRUTIL_H
#define PHC_IRUTIL_H

#include "ir.h"

void ir_block_insert(IrFunc *f, IrBlock *b, int index, IrOp *op);
void ir_block_remove(IrBlock *b, int index);
/* A copy of op (not of regions) reading args instead of its own, with new results. */
IrOp *ir_clone_op(IrFunc *f, const IrOp *op, const ValueId *args);
/* A copy of op reading map[a] for each operand a (where map[a] is set,
 * a < nmap), its regions copied too with blocks and values of their own;
 * map[r] is set to the copy's value for each result and block argument
 * r below nmap. */
IrOp *ir_clone_deep(IrFunc *f, const IrOp *op, ValueId *map, int nmap);
/* The value a for loop starts v with, v being one of its carried values
 * (a body argument past the counter, or a result); 0 for any other value. */
ValueId ir_carried_init(const IrFunc *f, ValueId v);
/* The issued dot (DOT_ISSUED) whose result v is, or whose result a for
 * loop carries as v (a body argument or a result: the dot in flight across
 * the back edge, wgmma_overlap.c), else NULL. */
const IrOp *ir_issued_dot(const IrFunc *f, ValueId v);
/* A copy of f whose blocks and ops are its own, with the same value
 * numbers, for passes that change it while f stays as it is (a target's
 * passes, run by the code generator). It borrows f's names, parameters
 * and meta-parameters: free it (ir_func_free) before f. */
IrFunc *ir_func_clone(const IrFunc *f);
/* Every use of from inside blk (nested blocks too) reads to instead. */
void ir_replace_uses(IrBlock *blk, ValueId from, ValueId to);
/* Adds a carried value to loop op: init before the loop; returns the new
 * block argument; the body's yield gets next appended. */
ValueId ir_for_add_carried(IrFunc *f, IrOp *loop, ValueId init, ValueId next_placeholder);
/* Marks in inside[] every value defined in blk: block arguments and op results, nested too. */
void ir_mark_defined(const IrBlock *blk, bool *inside);
/* Whether op, or an op of its regions, reads v. */
bool ir_op_uses(const IrOp *op, ValueId v);
/* Whether blk (b may be NULL), or a region of one of its ops, holds a dot. */
bool ir_has_dot(const IrBlock *b);
/* Whether v (through broadcasts) is exp(x - max(x, y)) or exp2 of it, in
 * either order of max's operands: the factor an online softmax rescales
 * its running sums by, exactly 1 wherever the maximum did not move (so a
 * product with it may be skipped there: codegen's rescale skip). */
bool ir_is_max_rescale(const IrFunc *f, ValueId v);
/* Whether v is a ring slot that a wait_async at body's top level gives. */
bool ir_waited_slot(const IrFunc *f, const IrBlock *body, ValueId v);
/* By parameter: whether the kernel writes that tensor anywhere, by a store
 * or an atomic_add (a malloc'd array, nparams entries at least one). */
bool *ir_stored_params(const IrFunc *f);
/* Whether v can be recomputed from the loop's induction variable iv and
 * values from outside the loop (inside[] marks the loop's values) through
 * scalar ops of the body; marks those ops in need[]. */
bool ir_loop_computable(const IrFunc *f, ValueId v, ValueId iv, const bool *inside, bool *need, int depth);
/* The scalar ops of loop body `body` (counter iv) that compute load's
 * window starts from the counter and values from outside the loop: a
 * need[] array (nvalues + 1 entries, caller frees) marking them, or NULL
 * when a start does not follow from the counter so. */
bool *ir_window_chain(const IrFunc *f, const IrBlock *body, const IrOp *load, ValueId iv);
/* Copies the ops of body marked in need[] (values below nneed), in order,
 * into blk from index *pos, with iv replaced by at; map[old] = new for
 * each (map: nvalues + 1 entries, zeroed; map[iv] is set to at). */
void ir_copy_marked(IrFunc *f, const IrBlock *body, const bool *need, int nneed, ValueId iv, ValueId at,
                    IrBlock *blk, int *pos, ValueId *map);

/* A warp-specialized kernel's rings by channel: the rings whose copies a
 * commit closes together (one group: K and V of attention's loop) share a
 * channel, so a ring nested around another (a persistent kernel's Q around
 * its K and V) is a channel of its own, its groups waited for and released
 * apart. ring_chan[r] (IR_MAX_RINGS entries): ring r's channel, -1 for a
 * ring never copied into; chan_stages[ch] (IR_MAX_RINGS entries): the most
 * stages of its rings. Returns the number of channels, in the order of
 * their lowest ring. */
int ir_ring_channels(const IrFunc *f, int *ring_chan, int *chan_stages);

#endif
