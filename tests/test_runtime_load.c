/* test_runtime_load.c: against a fake driver (test_runtime.h), a
 * kernel's configs generated and loaded: at once, on the module's device,
 * timed as they load, assembled by ptxas and cached, refused and out of
 * the eligible set, with dynamic shared memory; statistics, and the
 * switches PHOBOS_TIME_COMPILE, PHOBOS_OPT, PHOBOS_STATS, PHOBOS_LINEINFO, and the code
 * generator's, which key the cache. */
#include "test_runtime.h"

/* A kernel's configs go to the driver from the threads that generate
 * them, several at once, each in the context of the module's device
 * (here device 1, which no worker thread had current), and the calling
 * thread keeps its own context. */
Test(runtime, configs_are_assembled_at_once_on_the_modules_device)
{
    use_fake_driver();
    cr_assert_eq(ph_init(1), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_set_device(1), PH_OK, "%s", ph_last_error());
    setenv("PHOBOS_COMPILE_THREADS", "3", 1);
    fake.load_us = 200000;
    fake.fast = "vadd__BLOCK_128";   /* the others are not close: timed once */
    ph_module *m;
    ph_kernel *k = vadd_launched(&m);
    cr_assert_eq(fake.nloads, 3);
    cr_assert_geq(fake.most_loading, 2, "the driver assembled at most %d config at once", fake.most_loading);
    for (int i = 0; i < 3; i++) cr_assert_eq(fake.loaded_device[i], 1, "%s loaded for device %d", fake.loaded[i], fake.loaded_device[i]);
    cr_assert_eq(current_device(), 1);
    cr_assert_eq(launches_of("vadd__BLOCK_512"), RUNS_TIMED, "every config loaded is timed");
    unsetenv("PHOBOS_COMPILE_THREADS");
    ph_module_free(m);
    ph_shutdown();
}

/* On a first launch the configs are timed as they load, while the others
 * are still being compiled: here the fastest config's load ends only once
 * the two others were wholly timed (a launch that waited for every config
 * would wait 5 s for it, then time all three after), and it still wins. */
Test(runtime, configs_are_timed_as_they_load)
{
    setenv("PHOBOS_COMPILE_THREADS", "3", 1);
    use_fake_driver();
    fake.slow_load = "vadd__BLOCK_512";
    fake.slow_load_launches = 2 * RUNS_TIMED;
    fake.fast = "vadd__BLOCK_512";
    ph_module *m;
    ph_kernel *k = vadd_launched(&m);
    cr_assert_eq(fake.nloads, 3);
    int last = 0;
    while (strcmp(fake.loaded[last], "vadd__BLOCK_512")) last++;
    cr_assert_eq(fake.launches_before[last], 2 * RUNS_TIMED, "%d launches before the last config was in",
                 fake.launches_before[last]);
    cr_assert_eq(launches_of("vadd__BLOCK_128"), RUNS_TIMED);
    cr_assert_eq(launches_of("vadd__BLOCK_256"), RUNS_TIMED);
    cr_assert_eq(launches_of("vadd__BLOCK_512"), RUNS_TIMED + 1, "timed when it came, then launched");
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_512");
    unsetenv("PHOBOS_COMPILE_THREADS");
    ph_module_free(m);
    ph_shutdown();
}

/* A driver error while the configs come in (a module without its
 * function) fails the launch with the driver's words, once every thread
 * is done: the modules assembled for configs not taken yet are unloaded,
 * as is the failing one's. The configs loaded before the error stay
 * loaded: the next launch loads only the others. One thread compiles, so
 * the configs come in config order. */
Test(runtime, a_driver_error_while_configs_load_fails_the_launch)
{
    setenv("PHOBOS_COMPILE_THREADS", "1", 1);
    use_fake_driver();
    fake.no_function = "vadd__BLOCK_256";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_ERR_CUDA);
    cr_assert_str_eq(ph_last_error(), "cuModuleGetFunction failed: CUDA error 500 (fake error)");
    cr_assert_eq(fake.nloads, 3, "every config was assembled");
    cr_assert_eq(fake.nunloads, 2, "%d modules unloaded", fake.nunloads);
    cr_assert_str_eq(fake.unloaded[0], "vadd__BLOCK_256");
    cr_assert_str_eq(fake.unloaded[1], "vadd__BLOCK_512");
    cr_assert_eq(fake.nlaunches, 0);

    fake.no_function = NULL;
    fake.fast = "vadd__BLOCK_256";
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 5);
    cr_assert_eq(loads_of("vadd__BLOCK_128"), 1, "loaded by the failed launch, kept");
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_256");
    cr_assert_eq(launches_of("vadd__BLOCK_128"), RUNS_TIMED);
    unsetenv("PHOBOS_COMPILE_THREADS");
    ph_module_free(m);
    ph_shutdown();
}

/* A stand-in for ptxas in a new folder: it counts its runs (in
 * FOLDER/ptxas.runs), and writes as the cubin "\177ELF" and the PTX's entry
 * name, with ptxas -v's report of it; with fail set it rejects the PTX. */
static void fake_ptxas(char *dir, bool fail)
{
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/ptxas", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\necho \"$@\" >> \"$0.runs\"\n%s"
               "while [ \"$1\" != -o ]; do shift; done\n"
               "name=$(sed -n 's/^.*\\.entry \\([A-Za-z0-9_]*\\)(.*/\\1/p' \"$3\")\n"
               "printf '\\177ELF%%s' \"$name\" > \"$2\"\n"
               "echo \"ptxas info    : Compiling entry function '$name' for 'sm_90'\"\n"
               "echo \"ptxas info    : Function properties for $name\"\n"
               "echo '    0 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads'\n"
               "echo 'ptxas info    : Used 20 registers, used 0 barriers'\n",
            fail ? "echo 'ptxas fatal   : rejected' >&2\nexit 1\n" : "");
    fclose(f);
    cr_assert_eq(chmod(path, 0755), 0);
}

static int lines_in(const char *path)
{
    char *text = tu_read_file(path);
    int n = 0;
    for (const char *p = text; p && *p; p++) n += *p == '\n';
    free(text);
    return n;
}

/* With a ptxas (PHOBOS_PTXAS names it), each config is assembled by it,
 * one process per config, and the driver gets cubins; ptxas -v's report
 * gives the spills; the cubins are cached on disk, so the same configs
 * loaded again run no ptxas. */
Test(runtime, configs_are_assembled_by_ptxas_and_cached)
{
    use_fake_driver();
    char bin[] = "/tmp/phobos-fake-ptxas.XXXXXX", cache[] = "/tmp/phobos-cubins.XXXXXX", tool[128], runs[128];
    fake_ptxas(bin, false);
    cr_assert_not_null(mkdtemp(cache));
    snprintf(tool, sizeof tool, "%s/ptxas", bin);
    snprintf(runs, sizeof runs, "%s/ptxas.runs", bin);
    setenv("PHOBOS_PTXAS", tool, 1);
    setenv("PHOBOS_CACHE_DIR", cache, 1);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    for (int round = 0; round < 2; round++) {
        ph_module *m;
        ph_kernel *k;
        cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
        cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
        ph_set_autotune(1);
        cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
        /* the second time the autotuner's winner, kept on disk, is the only config loaded */
        cr_assert_eq(fake.nloads, round ? 4 : 3);
        for (int i = 0; i < fake.nloads; i++) cr_assert(fake.loaded_cubin[i], "%s was loaded as PTX", fake.loaded[i]);
        cr_assert_eq(lines_in(runs), 3, "round %d: ptxas ran %d times", round, lines_in(runs));
        ph_stats st;
        cr_assert_eq(ph_kernel_stats(k, fake.loaded[fake.nloads - 1], &st), PH_OK, "%s", ph_last_error());
        cr_assert_eq(st.spill_store_bytes, round ? -1 : 4, "the report of ptxas -v, when it ran");
        ph_module_free(m);
    }
    char *ran = tu_read_file(runs);
    cr_assert(!strncmp(ran, "-v -arch=sm_90a -o ", 19), "ptxas ran as: %s", ran);
    free(ran);
    unsetenv("PHOBOS_CACHE_DIR");
    ph_shutdown();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", bin, cache);
    cr_assert_eq(system(cmd), 0);
}

/* A ptxas that rejects the PTX leaves it to the driver's JIT. */
Test(runtime, what_ptxas_rejects_goes_to_the_driver)
{
    use_fake_driver();
    char bin[] = "/tmp/phobos-fake-ptxas.XXXXXX", tool[128], runs[128];
    fake_ptxas(bin, true);
    snprintf(tool, sizeof tool, "%s/ptxas", bin);
    snprintf(runs, sizeof runs, "%s/ptxas.runs", bin);
    setenv("PHOBOS_PTXAS", tool, 1);
    ph_module *m;
    ph_kernel *k = vadd_launched(&m);
    cr_assert_eq(lines_in(runs), 3);
    cr_assert_eq(fake.nloads, 3);
    for (int i = 0; i < 3; i++) cr_assert(!fake.loaded_cubin[i], "%s was loaded as a cubin", fake.loaded[i]);
    ph_module_free(m);
    ph_shutdown();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", bin);
    cr_assert_eq(system(cmd), 0);
}

/* Of three configs the driver refuses one: the two others load, are timed
 * and the faster runs; the refused one is never launched nor loaded again.
 * Only the launched kernel's configs are loaded, each as its own module. */
Test(runtime, a_refused_config_leaves_the_eligible_set)
{
    use_fake_driver();
    fake.refuse[0] = "vadd__BLOCK_256";
    fake.fast = "vadd__BLOCK_512";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 3, "each config is a module of its own");
    cr_assert_eq(loads_of("vadd__BLOCK_128"), 1);
    cr_assert_eq(loads_of("vadd__BLOCK_256"), 1);
    cr_assert_eq(loads_of("vadd__BLOCK_512"), 1);
    cr_assert_eq(launches_of("vadd__BLOCK_256"), 0, "the refused config never runs");
    cr_assert_eq(launches_of("vadd__BLOCK_128"), RUNS_TIMED, "timed: a warm-up and the timed runs");
    cr_assert_eq(launches_of("vadd__BLOCK_512"), RUNS_TIMED + 1, "timed, then launched as the faster");
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_512");

    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 3, "nothing is loaded twice, nor the refused config again");
    cr_assert_eq(launches_of("vadd__BLOCK_512"), RUNS_TIMED + 2);

    /* one config by its entry name: the driver's words */
    ph_kernel *one;
    cr_assert_eq(ph_kernel_get(m, "vadd__BLOCK_256", &one), PH_OK);
    cr_assert_eq(ph_launch(one, grid1, NULL, args, 4), PH_ERR_MODULE);
    cr_assert_str_eq(ph_last_error(), "vadd__BLOCK_256: no eligible config could be loaded: the CUDA driver refused "
                     "vadd__BLOCK_256 (error 218): ptxas error   : Entry function 'vadd__BLOCK_256' uses too much "
                     "shared data (0x10000 bytes, 0xc000 max)");
    cr_assert_eq(fake.nloads, 3);
    ph_module_free(m);
    ph_shutdown();
}

/* A config whose registers a thread leave room for fewer threads than a
 * block of it launches is refused at load, never launched (the launch
 * would fail with CUDA error 701 in the middle of autotuning); the others
 * are timed and run. */
Test(runtime, a_config_whose_block_does_not_fit_the_registers_is_refused)
{
    use_fake_driver();
    fake.few_threads = "vadd__BLOCK_256";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(launches_of("vadd__BLOCK_256"), 0, "the config that does not fit never runs");
    cr_assert_geq(launches_of("vadd__BLOCK_128"), RUNS_TIMED, "the others timed");
    cr_assert_geq(launches_of("vadd__BLOCK_512"), RUNS_TIMED);
    int unloaded = 0;
    for (int i = 0; i < fake.nunloads; i++) unloaded += !strcmp(fake.unloaded[i], "vadd__BLOCK_256");
    cr_assert_eq(unloaded, 1, "its module is unloaded");

    ph_kernel *one;
    cr_assert_eq(ph_kernel_get(m, "vadd__BLOCK_256", &one), PH_OK);
    cr_assert_eq(ph_launch(one, grid1, NULL, args, 4), PH_ERR_MODULE);
    const char *e = ph_last_error();
    cr_assert(strstr(e, "vadd__BLOCK_256 is refused: a block of it launches ") &&
              strstr(e, " threads, and with its 40 registers a thread this device runs at most 32"), "%s", e);
    ph_module_free(m);
    ph_shutdown();
}

/* When the driver refuses every eligible config, the launch says why for each. */
Test(runtime, every_config_refused_says_why)
{
    use_fake_driver();
    fake.refuse[0] = "vadd__BLOCK_128";
    fake.refuse[1] = "vadd__BLOCK_256";
    fake.refuse[2] = "vadd__BLOCK_512";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_ERR_MODULE);
    const char *e = ph_last_error();
    cr_assert(!strncmp(e, "vadd: no eligible config could be loaded: the CUDA driver refused vadd__BLOCK_128 (error 218): ", 94), "%s", e);
    cr_assert(strstr(e, "; the CUDA driver refused vadd__BLOCK_256 (error 218): ptxas error") != NULL, "%s", e);
    cr_assert(strstr(e, "Entry function 'vadd__BLOCK_512' uses too much shared data") != NULL, "%s", e);
    cr_assert_eq(fake.nlaunches, 0);
    ph_module_free(m);
    ph_shutdown();
}

/* A launch loads its own kernel's eligible configs and nothing else: not
 * the module's other kernels, not the configs its dims rule out. */
Test(runtime, configs_load_when_first_launched)
{
    use_fake_driver();
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", vecadd_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    cr_assert_eq(fake.nloads, 0, "nothing is loaded before a launch");
    /* N = 128 * 3: only BLOCK 128 keeps its promise N % BLOCK == 0 */
    ph_arg args[4] = {ph_tensor1(0x10000, 384), ph_tensor1(0x20000, 384), ph_tensor1(0x30000, 384), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 1);
    cr_assert_str_eq(fake.loaded[0], "vadd__BLOCK_128");
    cr_assert_eq(fake.nlaunches, 1, "one eligible config: no timing");
    ph_kernel *t;
    cr_assert_eq(ph_kernel_get(m, "twod", &t), PH_OK);
    ph_arg targs[2] = {ph_tensor2(0x10000, 16, 64), ph_tensor2(0x20000, 16, 64)};
    cr_assert_eq(ph_launch(t, grid1, NULL, targs, 2), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 2);
    cr_assert_str_eq(fake.loaded[1], "twod");
    ph_module_free(m);
    ph_shutdown();
}

/* tr__BM_32 transposes through 16 KiB of static shared memory, tr__BM_128
 * through 64 KiB of dynamic shared memory, tr__BM_512 would need 256 KiB. */
static const char *transpose_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.autotune(BM=[32, 128, 512])\n"
    "def tr(A: ph.tensor[ph.f32][N, 128], C: ph.tensor[ph.f32][128, N]):\n"
    "    i0: ph.let = ph.ctx.block.x * BM\n"
    "    C[:, i0:+BM] = ph.transpose(A[i0:+BM, :])\n";

static int launches_with_shared(const char *name, unsigned bytes)
{
    int n = 0;
    for (int i = 0; i < fake.nlaunches && i < 256; i++) n += !strcmp(fake.launched[i], name) && fake.launched_shared[i] == bytes;
    return n;
}

/* A config over 48 KB is allowed its dynamic shared memory once, when it
 * loads, and every launch asks for it; a static config asks for none; a
 * config over the device's opt-in maximum leaves the eligible set before
 * the driver sees it, saying why. */
Test(runtime, configs_over_48_kb_take_dynamic_shared_memory)
{
    use_fake_driver();
    fake.fast = "tr__BM_128";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr", &k), PH_OK);
    ph_arg args[2] = {ph_tensor2(0x10000, 512, 128), ph_tensor2(0x20000, 128, 512)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 2), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 2, "the config over the device's maximum never reaches the driver");
    cr_assert_eq(loads_of("tr__BM_32"), 1);
    cr_assert_eq(loads_of("tr__BM_128"), 1);
    cr_assert_eq(fake.nallowed, 1);
    cr_assert_str_eq(fake.allowed[0], "tr__BM_128");
    cr_assert_eq(fake.allowed_bytes[0], 65536);
    cr_assert_eq(launches_with_shared("tr__BM_32", 0), RUNS_TIMED, "timed with no dynamic shared memory");
    cr_assert_eq(launches_with_shared("tr__BM_128", 65536), RUNS_TIMED + 1, "timed, then launched, with 64 KiB each time");
    cr_assert_eq(fake.nlaunches, 2 * RUNS_TIMED + 1);
    cr_assert_str_eq(ph_kernel_last_config(k), "tr__BM_128");

    ph_kernel *big;
    cr_assert_eq(ph_kernel_get(m, "tr__BM_512", &big), PH_OK);
    cr_assert_eq(ph_launch(big, grid1, NULL, args, 2), PH_ERR_MODULE);
    cr_assert_str_eq(ph_last_error(), "tr__BM_512: no eligible config could be loaded: tr__BM_512 is refused: it needs "
                     "262144 bytes of shared memory, more than the 232448 a block of this device may have");
    cr_assert_eq(fake.nloads, 2);
    cr_assert_eq(fake.nallowed, 1, "the allowance is set once, at load");
    ph_module_free(m);
    ph_shutdown();
}

/* When the driver will not allow a function its dynamic shared memory,
 * that config leaves the eligible set with the driver's error. */
Test(runtime, a_refused_shared_memory_allowance_leaves_the_eligible_set)
{
    use_fake_driver();
    fake.deny_shared = true;
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr", &k), PH_OK);
    ph_arg args[2] = {ph_tensor2(0x10000, 512, 128), ph_tensor2(0x20000, 128, 512)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 2), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_kernel_last_config(k), "tr__BM_32");
    cr_assert_eq(fake.nlaunches, 1, "one config left: no timing");
    ph_kernel *one;
    cr_assert_eq(ph_kernel_get(m, "tr__BM_128", &one), PH_OK);
    cr_assert_eq(ph_launch(one, grid1, NULL, args, 2), PH_ERR_MODULE);
    cr_assert_str_eq(ph_last_error(), "tr__BM_128: no eligible config could be loaded: the CUDA driver refused tr__BM_128 "
                     "65536 bytes of dynamic shared memory (error 1): fake error");
    ph_module_free(m);
    ph_shutdown();
}

/* ph_kernel_stats: a named config is loaded as a launch would load it,
 * and its figures are the driver's (registers, local memory, static shared
 * memory, the block limit), the JIT log's (spills) and the runtime's own
 * (the dynamic shared memory each launch asks for, the block). NULL is
 * the last launch's config; before any launch, only a kernel's one config. */
Test(runtime, kernel_stats_come_from_the_driver)
{
    use_fake_driver();
    fake.fast = "tr__BM_32";
    ph_module *m;
    ph_kernel *k, *one;
    ph_stats s;
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr", &k), PH_OK);
    cr_assert_eq(ph_kernel_stats(k, NULL, &s), PH_ERR_INVALID);
    cr_assert_str_eq(ph_last_error(), "tr has 3 configs and none was launched yet: name one");
    cr_assert_eq(ph_kernel_stats(k, "tr__BM_64", &s), PH_ERR_NOT_FOUND);
    cr_assert_str_eq(ph_last_error(), "tr has no config named 'tr__BM_64'");
    cr_assert_eq(ph_kernel_stats(NULL, NULL, &s), PH_ERR_INVALID);
    cr_assert_eq(fake.nloads, 0);

    cr_assert_eq(ph_kernel_stats(k, "tr__BM_128", &s), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 1, "the config is loaded to be asked");
    cr_assert_str_eq(s.config, "tr__BM_128");
    cr_expect_eq(s.threads, 128);
    cr_expect_eq(s.registers, 40);
    cr_expect_eq(s.local_bytes, 16);
    cr_expect_eq(s.spill_store_bytes, 8);
    cr_expect_eq(s.spill_load_bytes, 12);
    cr_expect_eq(s.static_shared_bytes, 1024);
    cr_expect_eq(s.dynamic_shared_bytes, 65536, "64 KiB: dynamic");
    cr_expect_eq(s.max_threads_per_block, 1024);
    cr_assert_eq(ph_kernel_stats(k, "tr__BM_512", &s), PH_ERR_MODULE, "a refused config has no figures");

    ph_arg args[2] = {ph_tensor2(0x10000, 512, 128), ph_tensor2(0x20000, 128, 512)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 2), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_stats(k, NULL, &s), PH_OK, "%s", ph_last_error());
    cr_expect_str_eq(s.config, "tr__BM_32", "the config the last launch used");
    cr_expect_eq(s.dynamic_shared_bytes, 0);
    cr_expect_eq(fake.nloads, 2, "nothing is loaded twice");
    cr_assert_eq(ph_kernel_get(m, "tr__BM_32", &one), PH_OK);
    cr_assert_eq(ph_kernel_stats(one, NULL, &s), PH_OK, "a kernel of one config needs no name");
    ph_module_free(m);
    ph_shutdown();

    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK);
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK);
    cr_assert_eq(ph_kernel_get(m, "tr__BM_32", &one), PH_OK);
    cr_assert_eq(ph_kernel_stats(one, NULL, &s), PH_ERR_STATE);
    cr_assert_str_eq(ph_last_error(), "statistics come from the CUDA driver; the interpreter has none");
    ph_module_free(m);
    ph_shutdown();
}

/* What the code above prints on stderr, whole: stderr goes to a file. */
static char *stderr_of_launch(ph_kernel *k, const ph_arg *args, int nargs)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/phobos-stats.%d", getpid());
    fflush(stderr);
    int saved = dup(STDERR_FILENO), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(saved >= 0 && fd >= 0);
    dup2(fd, STDERR_FILENO);
    close(fd);
    ph_status s = ph_launch(k, grid1, NULL, args, nargs);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());
    char *text = tu_read_file(path);
    unlink(path);
    return text;
}

/* PHOBOS_TIME_COMPILE=1: the first launch generates the kernel's three
 * configs at once; a line each, in config order, says where its time
 * went, then one line the batch's. A launch that generates nothing says
 * nothing. */
Test(runtime, phobos_time_compile_reports_each_config_of_a_batch)
{
    setenv("PHOBOS_TIME_COMPILE", "1", 1);
    setenv("PHOBOS_COMPILE_THREADS", "2", 1);
    use_fake_driver();
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    char *log = stderr_of_launch(k, args, 4);
    const char *at = log;
    static const char *const lines[] = {"phobos: time: vadd__BLOCK_128: ", "phobos: time: vadd__BLOCK_256: ",
                                        "phobos: time: vadd__BLOCK_512: ",
                                        "phobos: time: 3 configs generated (0 from the PTX cache) on 2 threads in "};
    for (int i = 0; i < 4; i++) {
        const char *line = strstr(at, lines[i]);
        cr_assert_not_null(line, "no '%s' after what came before in:\n%s", lines[i], log);
        at = line + strlen(lines[i]);
    }
    cr_expect(strstr(log, "ms CPU (lowering ") && strstr(log, ", LLVM pipeline ") && strstr(log, ", NVPTX back end "), "%s", log);
    free(log);
    log = stderr_of_launch(k, args, 4);
    cr_expect_str_eq(log, "", "every config is loaded: nothing generated, nothing said");
    free(log);
    ph_module_free(m);
    ph_shutdown();
    unsetenv("PHOBOS_TIME_COMPILE");
    unsetenv("PHOBOS_COMPILE_THREADS");
}

/* PHOBOS_OPT picks the JIT's pipeline: O3 and O0 are other files in the
 * disk cache than the default's, and O0's PTX is not the default's. */
Test(runtime, phobos_opt_picks_the_pipeline_and_its_cache_file)
{
    char dir[] = "/tmp/phobos-cache-test.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    setenv("PHOBOS_CACHE_DIR", dir, 1);
    ph_module *m;
    char *plain, *ptx, err[512];
    bool cached;
    cr_assert_eq(ph_module_load_string("v.ph", vecadd_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &plain, &cached, err, sizeof err), 0, "%s", err);
    cr_assert(!cached);
    static const char *const levels[] = {"O3", "O0"};
    for (int i = 0; i < 2; i++) {
        setenv("PHOBOS_OPT", levels[i], 1);
        cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &ptx, &cached, err, sizeof err), 0, "%s", err);
        cr_assert(!cached, "PHOBOS_OPT=%s: generated, not the default's file", levels[i]);
        if (i == 1) cr_expect_str_neq(ptx, plain, "O0 is not optimized");
        free(ptx);
        cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &ptx, &cached, err, sizeof err), 0, "%s", err);
        cr_assert(cached, "PHOBOS_OPT=%s: its own file, read back", levels[i]);
        free(ptx);
    }
    unsetenv("PHOBOS_OPT");
    cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &ptx, &cached, err, sizeof err), 0, "%s", err);
    cr_assert(cached);
    cr_expect_str_eq(ptx, plain);
    free(ptx);
    free(plain);
    ph_module_free(m);
    unsetenv("PHOBOS_CACHE_DIR");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* The code generator's environment switches (PHOBOS_DOT_OVERLAP,
 * PHOBOS_RESCALE_SKIP) are part of a module's cache key: a module loaded
 * with one set finds no file of one loaded without, and its own once
 * written. */
Test(runtime, code_generation_switches_key_the_ptx_cache)
{
    char dir[] = "/tmp/phobos-cache-test.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    setenv("PHOBOS_CACHE_DIR", dir, 1);
    static const char *const switches[][2] = {
        {NULL, NULL}, {"PHOBOS_DOT_OVERLAP", "0"}, {"PHOBOS_RESCALE_SKIP", "1"}, {"PHOBOS_BULK_ADD", "1"}, {"PHOBOS_ADD_INSIDE", "1"}};
    for (int i = 0; i < 5; i++) {
        if (switches[i][0]) setenv(switches[i][0], switches[i][1], 1);
        for (int again = 0; again < 2; again++) {
            ph_module *m;
            char *ptx, err[512];
            bool cached;
            cr_assert_eq(ph_module_load_string("v.ph", vecadd_src, &m), PH_OK, "%s", ph_last_error());
            cr_assert_eq(ph_internal_config_ptx(m, 0, "sm_90", &ptx, &cached, err, sizeof err), 0, "%s", err);
            cr_expect_eq(cached, again == 1, "%s=%s, load %d: cached %d", switches[i][0] ? switches[i][0] : "none",
                         switches[i][1] ? switches[i][1] : "", again, cached);
            free(ptx);
            ph_module_free(m);
        }
        if (switches[i][0]) unsetenv(switches[i][0]);
    }
    unsetenv("PHOBOS_CACHE_DIR");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* PHOBOS_STATS=1: each config prints its figures when it loads, once;
 * where the JIT's log holds no report, the spills are not made up. */
Test(runtime, phobos_stats_prints_a_line_per_loaded_config)
{
    setenv("PHOBOS_STATS", "1", 1);
    use_fake_driver();
    fake.fast = "tr__BM_128";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr", &k), PH_OK);
    ph_arg args[2] = {ph_tensor2(0x10000, 512, 128), ph_tensor2(0x20000, 128, 512)};
    char *err = stderr_of_launch(k, args, 2);
    cr_expect_str_eq(err,
        "phobos: tr__BM_32: 40 registers, 8 bytes spill stores, 12 bytes spill loads, 16 bytes local memory, "
        "1024 bytes static shared, 0 bytes dynamic shared, 128 threads (at most 1024)\n"
        "phobos: tr__BM_128: 40 registers, 8 bytes spill stores, 12 bytes spill loads, 16 bytes local memory, "
        "1024 bytes static shared, 65536 bytes dynamic shared, 128 threads (at most 1024)\n");
    free(err);
    err = stderr_of_launch(k, args, 2);
    cr_expect_str_eq(err, "", "loaded configs print nothing again");
    free(err);
    ph_module_free(m);

    fake.quiet_jit = true;
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr__BM_32", &k), PH_OK);
    err = stderr_of_launch(k, args, 2);
    cr_expect_str_eq(err, "phobos: tr__BM_32: 40 registers, spills not reported, 16 bytes local memory, "
                          "1024 bytes static shared, 0 bytes dynamic shared, 128 threads (at most 1024)\n");
    free(err);
    ph_stats s;
    cr_assert_eq(ph_kernel_stats(k, NULL, &s), PH_OK);
    cr_expect(s.spill_store_bytes == -1 && s.spill_load_bytes == -1);
    ph_module_free(m);
    ph_shutdown();
    unsetenv("PHOBOS_STATS");
}

/* With PHOBOS_LINEINFO=1 the JIT is asked to keep the line information
 * (CU_JIT_GENERATE_LINE_INFO); without it, it is not. */
Test(runtime, lineinfo_asks_the_jit_for_line_information)
{
    use_fake_driver();
    ph_module *m;
    ph_kernel *a, *b;
    cr_assert_eq(ph_module_load_string("tr.ph", transpose_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "tr__BM_32", &a), PH_OK);
    cr_assert_eq(ph_kernel_get(m, "tr__BM_128", &b), PH_OK);
    ph_arg args[2] = {ph_tensor2(0x10000, 512, 128), ph_tensor2(0x20000, 128, 512)};
    cr_assert_eq(ph_launch(a, grid1, NULL, args, 2), PH_OK, "%s", ph_last_error());
    setenv("PHOBOS_LINEINFO", "1", 1);
    cr_assert_eq(ph_launch(b, grid1, NULL, args, 2), PH_OK, "%s", ph_last_error());
    unsetenv("PHOBOS_LINEINFO");
    cr_assert_eq(fake.nloads, 2);
    cr_expect_not(fake.line_info_asked[0]);
    cr_expect(fake.line_info_asked[1]);
    ph_module_free(m);
    ph_shutdown();
}
