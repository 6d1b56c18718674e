/* gpubench.h: what the GPU benchmarks (attention_bench.c, gemm_bench.c)
 * share: the device started or the bench skipped, CUDA events taken from
 * the driver (the runtime has no event API of its own), an L2 flush
 * before each timed repetition, the median of the repetitions, random f16
 * inputs, and the TSV files that bench/benchtable.py joins with torch's
 * figures. bench/torch_bench.py times torch the same way: the warm-ups,
 * repetitions and flush size below are its too. */
#ifndef GPUBENCH_H
#define GPUBENCH_H

#include <stdint.h>
#include <stdio.h>

#include "phobos.h"

/* Bytes written before each timed repetition: more than any current GPU's
 * L2 cache, so no repetition finds the last one's data there. */
#define GPUBENCH_FLUSH_BYTES ((size_t)256 << 20)

/* A GPU at its power limit moves its clock by a quarter within a tenth of
 * a second and settles into swings about a second long (an H100 under
 * attention: 1335 to 1980 MHz, nvidia-smi's SW power cap), so a figure
 * timed over a few milliseconds is a sample of wherever the swing was.
 * Each figure is timed over at least a second, after a quarter second of
 * warm-up: what the GPU sustains, and the same for every figure. */
enum { GPUBENCH_WARMUPS = 3, GPUBENCH_WARM_MS = 250, GPUBENCH_TIMED_MS = 1000, GPUBENCH_MAX_REPS = 20000 };

/* Timed repetitions for an attention case at context length n_ctx: 30 up
 * to 4096, 20 (the floor) above, where one backward pass takes tenths of
 * a second; 50 for a GEMM, which takes milliseconds. */
int gpubench_attention_reps(int64_t n_ctx);
enum { GPUBENCH_GEMM_REPS = 50 };

typedef struct GpuBench GpuBench;

/* Starts device 0 and the timer (events and the flush buffer). Returns NULL,
 * after printing "WHAT skipped: why", where there is no GPU to time on. */
GpuBench *gpubench_open(const char *what);
void gpubench_close(GpuBench *b);

/* One timed piece of work: kernel launches on the legacy default stream. */
typedef ph_status (*GpuWork)(void *user);

/* Runs work untimed GPUBENCH_WARMUPS times and for GPUBENCH_WARM_MS, then
 * timed at least reps times and until the timed runs add up to
 * GPUBENCH_TIMED_MS (GPUBENCH_MAX_REPS at most), each after the flush and
 * between two events recorded on the legacy default stream (the flush
 * outside them); the median in *ms. */
ph_status gpubench_time(GpuBench *b, GpuWork work, void *user, int reps, double *ms);

/* Fills n f16 elements at dst with values uniform in [-0.5, 0.5) drawn
 * from a generator seeded with seed: distinct seeds, independent inputs. */
ph_status gpubench_random_f16(ph_devptr dst, size_t n, uint64_t seed);

/* A TSV file of figures: "# key: value" lines, then the header line
 * `columns` (tab-separated), then a row per gpubench_row call. */
FILE *gpubench_tsv_open(const char *path, const char *source, const char *columns);

/* Writes a row: `key` (tab-separated fields), ms ("n/a" when ms < 0) and
 * note (the configs, or why there is no figure; tabs and newlines become
 * spaces). */
void gpubench_tsv_row(FILE *tsv, const char *key, double ms, const char *note);

#endif
