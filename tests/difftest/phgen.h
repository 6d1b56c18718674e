/* phgen.h: a generator of random valid Phobos programs for differential
 * testing, and a reducer that shrinks one while a property holds.
 *
 * A program is one kernel (sometimes two, alike but for @ph.launch) over
 * tensors whose dims are the names M, N, K, tiled by the meta-parameters BM,
 * BN, BK (several configs, with several @ph.launch thread counts; N or K
 * sometimes specialized, M, N, K sometimes promised @ph.aligned), plus the
 * run spec that launches it. Its
 * numerics keep the comparison with the interpreter meaningful: values
 * stay bounded, exp takes non-positive arguments, log/sqrt/rsqrt positive
 * ones, pow positive bases (or integer exponents) and small exponents, dots
 * are scaled by 1/K, and conditions, where-masks, float->int
 * conversions and float floor divisions see only values that every back
 * end computes bit-identically (integers, indices, raw inputs). */
#ifndef PHGEN_H
#define PHGEN_H

#include <stdbool.h>
#include <stdint.h>
#include "difftest.h"

typedef struct {
    int max_stmts;        /* statements before the stores, at the top level */
    int max_depth;        /* nesting of expressions */
    int max_configs;      /* elements of the autotune product */
    int max_tile;         /* elements of a [BM, BN] tile */
    int pct_aligned;      /* of programs, per dim M, N, K: an @ph.aligned promise */
    int pct_specialized;  /* of programs: N or K also an autotune name (a specialized dim) */
    int pct_two_kernels;  /* of programs: a second kernel, the same body under another launch */
    int pct_attention;    /* of top-level statements: an attention chain over K */
    int pct_stream;       /* of loops: loads moved by the loop counter, next to invariant ones */
    int pct_math_more;    /* of the math expressions: tanh, erf, sigmoid, pow, fma or inf/nan instead,
                           * drawn from a random stream of its own, so that the rest of the program is
                           * what the seed gave before these built-ins existed (0 gives those programs) */
    int pct_index;        /* of scalar leaves, row windows of loads and [BM, BN] stores: an element read as a
                           * scalar, a gather, a scatter instead; drawn from a stream of its own, as
                           * pct_math_more (0 gives the programs from before) */
    int pct_types;        /* of integer conversions and of dots: an 8-bit round trip (ph.i8, ph.u8) or an
                           * i8 x i8 -> i32 dot instead, from a stream of its own as pct_math_more's
                           * (0 gives the programs from before the 8-bit types) */
    int pct_mask;         /* of loads and of stores: ph.load with mask= and other=, ph.store with mask=,
                           * from a stream of its own as pct_math_more (0 gives the programs of before) */
    int pct_flow;         /* of loops with literal bounds: ph.static_range; of loads, half as many: passed
                           * through a @ph.func helper; a stream of its own again */
    int pct_strided;      /* of 2-D loads of inputs: from a rank-4 tensor [2, E0, 3, E1] passed as a view
                           * (strides not row-major), the window along axes 1 and 3, the others indexed
                           * by scalars (some outside); a stream of its own again */
    int pct_assert;       /* of statements: a ph.device_assert that always holds before it, from a stream of
                           * its own (0 gives the programs of before); the generator never prints */
    int pct_while;        /* of range loops: the same loop written as a while over a var counter, from a
                           * stream of its own (0 gives the programs of before) */
    int pct_i64;          /* of float-to-i32 conversions: a round trip through i64 arithmetic past 2^32
                           * (reading an i64 input); of i32 outputs: an i64 one; a stream of its own (0
                           * gives the programs of before i64) */
    int pct_warp_specialize;  /* of programs with tensor-core dots: @ph.warp_specialize(1) or (2) on the
                               * kernels, from a stream of its own (0 gives the programs of before) */
    int pct_atomic;       /* of f32 and i32 outputs stored as [BM, BN] tiles: ph.atomic_add into windows
                           * moved a few rows and columns (across the tensor's edges, sometimes twice, so
                           * blocks add into the same elements); of K loops of tensor-core dots: each
                           * step's dot also added into an f32 output of its own (a warp-specialized
                           * kernel's producer adds it); a stream of its own (0 gives the programs of before) */
} PhgenOptions;

void phgen_default_options(PhgenOptions *o);

/* The features a program exercises, for coverage counts. */
typedef enum {
    PF_UNARY, PF_BINARY, PF_MATH, PF_ROW_REDUCE, PF_COL_REDUCE,
    PF_DOT_FMA, PF_DOT_T, PF_DOT_TRANSPOSE, PF_DOT_TC_F16, PF_DOT_TC_BF16, PF_DOT_K_LOOP,
    PF_IOTA_MASK, PF_WHERE, PF_CONVERT, PF_F2I, PF_INT_DIV,
    PF_FOR_CARRY, PF_STEP_NOT_DIVIDING, PF_IF_ELIF_ELSE, PF_EARLY_RETURN, PF_STORE_LOOP,
    PF_EDGE_WINDOW, PF_RANK1, PF_NONPOW2_TILE, PF_POW2_TILE,
    PF_F32, PF_F16, PF_BF16, PF_I32_TENSOR,
    PF_MULTI_CONFIG, PF_LAUNCH_META, PF_THREADS_32, PF_THREADS_256,
    PF_ALIGNED, PF_SPECIALIZED, PF_MULTI_KERNEL, PF_ONLINE_SOFTMAX, PF_ATTENTION_TC,
    PF_LOOP_LOAD, PF_INVARIANT_LOAD,
    PF_TANH_ERF_SIGMOID, PF_POW, PF_FMA, PF_INF_NAN,
    PF_ARG_REDUCE, PF_CUMSUM, PF_RESHAPE, PF_RANK1_STORE,
    PF_ELEMENT, PF_GATHER, PF_SCATTER,
    PF_I8_CONVERT, PF_DOT_I8,
    PF_MASKED_LOAD, PF_MASKED_STORE, PF_STATIC_RANGE, PF_HELPER,
    PF_F8_CONVERT, PF_DOT_F8,
    PF_STRIDED_VIEW,
    PF_WHILE, PF_DEVICE_ASSERT,
    PF_I64_ARITH, PF_I64_TENSOR,
    PF_COUNT   /* at most 64: PhgenProgram.features is a uint64_t */
} PhgenFeature;

extern const char *const phgen_feature_names[PF_COUNT];

typedef struct PhgenProgram PhgenProgram;

/* The program for seed (deterministic). opt may be NULL for the defaults. */
PhgenProgram *phgen_generate(uint64_t seed, const PhgenOptions *opt);
void phgen_free(PhgenProgram *p);
/* The .ph text, its run spec in a "# run:" header line (caller frees). */
char *phgen_source(const PhgenProgram *p);
const DtSpec *phgen_spec(const PhgenProgram *p);
uint64_t phgen_features(const PhgenProgram *p);   /* bit (1 << PhgenFeature) */

/* One call: the source of seed's program; *spec receives its run spec. */
char *phgen_program(uint64_t seed, const PhgenOptions *opt, DtSpec *spec);

/* ---- reduction ---- */
/* True while the candidate still shows the failure being reduced. */
typedef bool (*PhgenPredicate)(const char *source, const DtSpec *spec, void *user);

/* Shrinks p in place while still_fails holds: one config per kernel, then
 * statements dropped (a statement goes only when nothing left uses what it
 * declares), then the grid, the dims and the tile sizes made smaller, until
 * no step helps or max_tries candidates were tried. Returns the number of
 * steps taken. */
int phgen_reduce(PhgenProgram *p, PhgenPredicate still_fails, void *user, int max_tries);

/* Statements left (for tests of the reducer). */
int phgen_count_stmts(const PhgenProgram *p);

#endif
