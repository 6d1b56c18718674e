/* test_runtime_launch.c: launches against a fake driver
 * (test_runtime.h): winners remembered by dims, refusals that name each
 * config's reason, the caller's stream, modules on their own device and
 * after a shutdown, a tuned launch that allocates nothing; views of rank 4
 * passed with their strides; and the interpreter as the target, its memory
 * host memory. */
#include "test_runtime.h"

/* A second launch with the same dims takes the remembered winner: nothing
 * is timed again, even when another config would now be faster. */
Test(runtime, a_second_launch_with_the_same_dims_is_not_tuned_again)
{
    use_fake_driver();
    fake.fast = "vadd__BLOCK_256";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 3 * PH_TUNE_RUNS, "three configs, each timed");
    cr_assert_eq(fake.nlaunches, 3 * RUNS_TIMED + 1);
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_256");

    fake.fast = "vadd__BLOCK_512";
    args[0].ptr = 0x40000;   /* other buffers, the same dims */
    args[3] = ph_f32(3);
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 3 * PH_TUNE_RUNS, "nothing timed again");
    cr_assert_eq(fake.nlaunches, 3 * RUNS_TIMED + 2, "one launch");
    cr_assert_str_eq(fake.launched[3 * RUNS_TIMED + 1], "vadd__BLOCK_256");
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_256");
    cr_assert_eq(fake.nloads, 3);
    ph_module_free(m);
    ph_shutdown();
}

/* Two tensors with dims of their own: a change in any one dim (here the
 * second tensor's second) is new dims, tuned again; each set of dims keeps
 * its own winner. */
static const char *two_tensors_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.autotune(B=[16, 32])\n"
    "def cp(A: ph.tensor[ph.f32][M, K], C: ph.tensor[ph.f32][P, Q]):\n"
    "    C[0:+B, 0:+16] = A[0:+B, 0:+16]\n";

Test(runtime, other_dims_are_tuned_again)
{
    use_fake_driver();
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("cp.ph", two_tensors_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "cp", &k), PH_OK);
    ph_arg first[2] = {ph_tensor2(0x10000, 64, 64), ph_tensor2(0x20000, 64, 64)};
    ph_arg other[2] = {ph_tensor2(0x10000, 64, 64), ph_tensor2(0x20000, 64, 32)};
    fake.fast = "cp__B_16";
    cr_assert_eq(ph_launch(k, grid1, NULL, first, 2), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 2 * PH_TUNE_RUNS);
    cr_assert_str_eq(ph_kernel_last_config(k), "cp__B_16");

    fake.fast = "cp__B_32";
    cr_assert_eq(ph_launch(k, grid1, NULL, other, 2), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.ntimings, 4 * PH_TUNE_RUNS, "new dims: both configs timed again");
    cr_assert_str_eq(ph_kernel_last_config(k), "cp__B_32");

    cr_assert_eq(ph_launch(k, grid1, NULL, first, 2), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_kernel_last_config(k), "cp__B_16", "the first dims keep their winner");
    cr_assert_eq(ph_launch(k, grid1, NULL, other, 2), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_kernel_last_config(k), "cp__B_32");
    cr_assert_eq(fake.ntimings, 4 * PH_TUNE_RUNS, "neither is timed a second time");
    cr_assert_eq(fake.nlaunches, 2 * (2 * RUNS_TIMED + 1) + 2, "two tunings (each config's runs and the winner), then two launches");
    ph_module_free(m);
    ph_shutdown();
}

/* The refusal names the reason of each config that was eligible, and only
 * those; a later launch gives the same reasons, kept from the first, with
 * nothing loaded again. */
static const char *aligned_three_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.autotune(BLOCK=[128, 256, 512])\n"
    "@ph.aligned(N=\"BLOCK\")\n"
    "def vadd(X: ph.tensor[ph.f32][N], Y: ph.tensor[ph.f32][N], Z: ph.tensor[ph.f32][N], a: ph.f32):\n"
    "    i0: ph.let = ph.ctx.block.x * BLOCK\n"
    "    Z[i0:+BLOCK] = a * X[i0:+BLOCK] + Y[i0:+BLOCK]\n";

Test(runtime, the_refusal_names_each_eligible_configs_reason)
{
    use_fake_driver();
    fake.refuse[0] = "vadd__BLOCK_128";
    fake.refuse[1] = "vadd__BLOCK_256";
    fake.refuse[2] = "vadd__BLOCK_512";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", aligned_three_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    /* N = 768: BLOCK 512 breaks its promise and is not eligible */
    ph_arg args[4] = {ph_tensor1(0x10000, 768), ph_tensor1(0x20000, 768), ph_tensor1(0x30000, 768), ph_f32(2)};
    const char *want = "vadd: no eligible config could be loaded: "
        "the CUDA driver refused vadd__BLOCK_128 (error 218): ptxas error   : Entry function 'vadd__BLOCK_128' uses too much "
        "shared data (0x10000 bytes, 0xc000 max); "
        "the CUDA driver refused vadd__BLOCK_256 (error 218): ptxas error   : Entry function 'vadd__BLOCK_256' uses too much "
        "shared data (0x10000 bytes, 0xc000 max)";
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_ERR_MODULE);
    cr_assert_str_eq(ph_last_error(), want);
    cr_assert_eq(fake.nloads, 2);
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_ERR_MODULE);
    cr_assert_str_eq(ph_last_error(), want);
    cr_assert_eq(fake.nloads, 2, "a refused config is not loaded again");
    cr_assert_eq(fake.nlaunches, 0);
    ph_module_free(m);
    ph_shutdown();
}

/* ph_launch_stream puts every launch on the caller's stream, the timed
 * ones and the CUDA events that time them too; ph_launch uses the NULL
 * stream. */
Test(runtime, launches_and_their_timing_go_on_the_callers_stream)
{
    use_fake_driver();
    fake.fast = "vadd__BLOCK_256";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    CUstream stream = (CUstream)(uintptr_t)0x5000;
    cr_assert_eq(ph_launch_stream(k, grid1, NULL, args, 4, stream), PH_OK, "%s", ph_last_error());
    enum { RUNS = PH_TUNE_WARMUPS + PH_TUNE_RUNS, LAUNCHES = 3 * RUNS + 1 };
    cr_assert_eq(fake.nlaunches, LAUNCHES, "three configs timed, then the fastest");
    for (int i = 0; i < fake.nlaunches; i++) cr_assert_eq(fake.launched_on[i], stream, "launch %d on %p", i, (void *)fake.launched_on[i]);
    cr_assert_eq(fake.nrecords, 3 * PH_TUNE_RUNS * 2 + 1, "two events for each timed run, one before the scratch is freed");
    for (int i = 0; i < fake.nrecords; i++) cr_assert_eq(fake.recorded_on[i], stream, "event %d recorded on %p", i, (void *)fake.recorded_on[i]);

    CUstream other = (CUstream)(uintptr_t)0x6000;
    cr_assert_eq(ph_launch_stream(k, grid1, NULL, args, 4, other), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.launched_on[LAUNCHES], other, "a tuned launch goes on its own stream");
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_null(fake.launched_on[LAUNCHES + 1], "ph_launch is the NULL stream");
    cr_assert_eq(fake.nlaunches, LAUNCHES + 2);
    ph_module_free(m);
    ph_shutdown();
}

/* What a thread that never chose a device sees and does: a launch of a
 * module loaded for device 1, a malloc, and the context it had after each. */
typedef struct {
    ph_kernel *k;
    ph_status launch, malloc_status;
    int device, launched_device, context_after_launch, context_after_malloc;
    ph_devptr p;
} Stranger;

static void *stranger(void *arg)
{
    Stranger *t = arg;
    ph_get_device(&t->device);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    t->launch = ph_launch(t->k, grid1, NULL, args, 4);
    t->launched_device = fake.launched_device[(fake.nlaunches - 1) % 256];
    t->context_after_launch = current_device();
    t->malloc_status = ph_malloc(&t->p, 64);
    t->context_after_malloc = current_device();
    return NULL;
}

/* Two devices: ph_init retains each one's context; the first is every
 * thread's device until it calls ph_set_device; a module runs on the
 * device it was loaded for, whatever thread launches it; ph_malloc works
 * on the calling thread's device; each call puts back the context the
 * thread had; ph_shutdown releases both. */
Test(runtime, each_module_runs_on_the_device_it_was_loaded_for)
{
    use_fake_driver();
    cr_assert_eq(fake.retained[0], 1);
    cr_assert_eq(current_device(), 0, "the first ph_init leaves its device's context current");
    int dev = -5;
    cr_assert_eq(ph_get_device(&dev), PH_OK);
    cr_assert_eq(dev, 0);
    cr_assert_eq(ph_set_device(1), PH_ERR_STATE);
    cr_assert_str_eq(ph_last_error(), "device 1 is not initialized (call ph_init(1) first)");

    cr_assert_eq(ph_init(1), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_init(1), PH_OK);
    cr_assert_eq(fake.retained[1], 1, "a device is started once");
    cr_assert_eq(ph_get_device(&dev), PH_OK);
    cr_assert_eq(dev, 0, "the first device started stays the default");
    cr_assert_eq(current_device(), 0, "starting another device leaves the thread's context alone");
    cr_assert_eq(ph_init(2), PH_ERR_NO_DEVICE);
    cr_assert_str_eq(ph_last_error(), "device 2 does not exist (this machine has 2)");

    ph_module *m0, *m1;
    ph_kernel *k0, *k1;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m0), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_set_device(1), PH_OK, "%s", ph_last_error());
    cr_assert_eq(current_device(), 1, "ph_set_device makes its device's context current");
    cr_assert_eq(ph_get_device(&dev), PH_OK);
    cr_assert_eq(dev, 1);
    ph_devptr p = 0;
    cr_assert_eq(ph_malloc(&p, 64), PH_OK, "%s", ph_last_error());
    cr_assert_eq(device_of(p), 1, "allocated on device 1");
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m1), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m0, "vadd__BLOCK_128", &k0), PH_OK);
    cr_assert_eq(ph_kernel_get(m1, "vadd__BLOCK_128", &k1), PH_OK);

    cr_assert_eq(ph_set_device(0), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k1, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.launched_device[0], 1, "m1 was loaded for device 1");
    cr_assert_eq(current_device(), 0, "the launch put back the thread's context");
    cr_assert_eq(ph_launch(k0, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.launched_device[1], 0, "m0 was loaded for device 0");
    cr_assert_eq(ph_malloc(&p, 64), PH_OK);
    cr_assert_eq(device_of(p), 0, "allocated on device 0");

    Stranger t = {.k = k1, .device = -5};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, stranger, &t), 0);
    pthread_join(th, NULL);
    cr_assert_eq(t.device, 0, "a thread that never chose has the default device");
    cr_assert_eq(t.launch, PH_OK);
    cr_assert_eq(t.launched_device, 1, "m1 runs on device 1 from any thread");
    cr_assert_eq(t.context_after_launch, -1, "the thread had no context, and has none after");
    cr_assert_eq(t.malloc_status, PH_OK);
    cr_assert_eq(device_of(t.p), 0, "its memory is on its device, the default");
    cr_assert_eq(t.context_after_malloc, -1);

    ph_module_free(m0);
    ph_module_free(m1);
    ph_shutdown();
    cr_assert_eq(fake.retained[0], 0, "ph_shutdown releases device 0");
    cr_assert_eq(fake.retained[1], 0, "and device 1");
    cr_assert_eq(ph_set_device(0), PH_ERR_STATE);
    cr_assert_eq(ph_get_device(&dev), PH_ERR_STATE);
}

/* A module outlives a ph_shutdown: its configs went with the context, so
 * its next launch loads them again, on the device the launching thread
 * has in the new runtime. */
Test(runtime, a_module_from_before_a_shutdown_loads_again)
{
    use_fake_driver();
    cr_assert_eq(ph_init(1), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_set_device(1), PH_OK);
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd__BLOCK_256", &k), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 1);
    cr_assert_eq(fake.launched_device[0], 1);
    ph_shutdown();
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_ERR_STATE);
    cr_assert_eq(ph_init(0), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nloads, 2, "loaded again");
    cr_assert_eq(fake.launched_device[1], 0, "on this thread's device now");
    ph_module_free(m);
    ph_shutdown();
}

/* How many times ph_launch allocated. */
static long allocations_of(ph_kernel *k, const ph_arg *args, int nargs, ph_status *s)
{
    allocations = 0;
    counting = true;
    *s = ph_launch(k, grid1, NULL, args, nargs);
    counting = false;
    return allocations;
}

/* Once a kernel's configs are loaded and tuned for the launch's dims, a
 * launch allocates nothing: through the autotuner, or one config by its
 * entry name. Tuning new dims allocates (the winner is remembered), which
 * shows the count sees the runtime's allocations. */
Test(runtime, a_tuned_launch_allocates_nothing)
{
    if (!COUNTS_ALLOCATIONS) cr_skip_test("AddressSanitizer owns malloc here: allocations are not counted");
    use_fake_driver();
    ph_module *m;
    ph_kernel *k, *one;
    ph_status s;
    cr_assert_eq(ph_module_load_string("v.ph", three_configs_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd", &k), PH_OK);
    cr_assert_eq(ph_kernel_get(m, "vadd__BLOCK_128", &one), PH_OK);
    ph_arg args[4] = {ph_tensor1(0x10000, 1024), ph_tensor1(0x20000, 1024), ph_tensor1(0x30000, 1024), ph_f32(2)};
    long first = allocations_of(k, args, 4, &s);
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());
    cr_assert_gt(first, 0, "the first launch generates and loads three configs");

    long again = allocations_of(k, args, 4, &s);
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());
    cr_assert_eq(again, 0, "a launch with tuned dims allocated %ld times", again);

    for (int i = 0; i < 3; i++) args[i].dims[0] = 2048;
    long tuned = allocations_of(k, args, 4, &s);
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());
    cr_assert_eq(tuned, 1, "tuning new dims remembers the winner (%ld allocations)", tuned);
    cr_assert_eq(allocations_of(k, args, 4, &s), 0);
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());

    cr_assert_eq(ph_launch(one, grid1, NULL, args, 4), PH_OK, "%s", ph_last_error());
    long single = allocations_of(one, args, 4, &s);
    cr_assert_eq(s, PH_OK, "%s", ph_last_error());
    cr_assert_eq(single, 0, "a launch of one loaded config allocated %ld times", single);
    ph_module_free(m);
    ph_shutdown();
}

/* ---- the interpreter as the target (PH_INTERPRETER, PHOBOS_TARGET=interp) ---- */

/* Host arrays are the arguments; the launch has run when it returns; the
 * first eligible config is the one run (BLOCK 256 is not, for N = 384). */
Test(runtime, the_interpreter_runs_launches_on_host_memory)
{
    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_device_name(), "the CPU interpreter");
    ph_module *m;
    ph_kernel *k = get(&m, "vadd");
    float x[384], y[384], z[384];
    for (int i = 0; i < 384; i++) { x[i] = (float)i; y[i] = 1.0f - (float)i / 2; z[i] = -1; }
    long n = 384;
    ph_arg args[4] = {ph_tensor1((ph_devptr)(uintptr_t)x, n), ph_tensor1((ph_devptr)(uintptr_t)y, n),
                      ph_tensor1((ph_devptr)(uintptr_t)z, n), ph_f32(2.0f)};
    cr_assert_eq(ph_launch(k, grid_of_n, &n, args, 4), PH_OK, "%s", ph_last_error());
    for (int i = 0; i < 384; i++) cr_assert_float_eq(z[i], 2.0f * x[i] + y[i], 1e-6f, "z[%d] = %g", i, z[i]);
    cr_assert_str_eq(ph_kernel_last_config(k), "vadd__BLOCK_128");
    cr_assert_eq(ph_synchronize(), PH_OK);
    memset(z, 0, sizeof z);
    cr_assert_eq(ph_launch_stream(k, grid_of_n, &n, args, 4, (void *)(uintptr_t)0x5000), PH_OK, "the stream is ignored: %s",
                 ph_last_error());
    for (int i = 0; i < 384; i++) cr_assert_float_eq(z[i], 2.0f * x[i] + y[i], 1e-6f, "z[%d] = %g", i, z[i]);
    n = 100;   /* a multiple of no BLOCK: each config says why it refuses */
    args[0].dims[0] = args[1].dims[0] = args[2].dims[0] = n;
    cr_assert_eq(ph_launch(k, grid_of_n, &n, args, 4), PH_ERR_NOT_ELIGIBLE);
    cr_assert_str_eq(ph_last_error(), "vadd: no config accepts these arguments: "
                     "vadd__BLOCK_128 promises N % BLOCK == 0, but N = 100 is not a multiple of 128; "
                     "vadd__BLOCK_256 promises N % BLOCK == 0, but N = 100 is not a multiple of 256");
    args[0].dims[0] = 128;
    cr_assert_eq(ph_launch(k, grid_of_n, &n, args, 4), PH_ERR_ARGS);
    cr_assert(strstr(ph_last_error(), "dim N is 128 in X but 100 in Y") != NULL, "%s", ph_last_error());
    ph_module_free(m);
    ph_shutdown();
}

/* Memory calls work on host memory, so a program written for the GPU
 * (ph_malloc, copies, ph_memset8) runs unchanged. */
Test(runtime, the_interpreters_memory_is_host_memory)
{
    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK, "%s", ph_last_error());
    ph_devptr d = 0;
    cr_assert_eq(ph_malloc(&d, 64), PH_OK);
    cr_assert_eq(ph_memset8(d, 0x3f, 64), PH_OK);
    unsigned char back[64];
    cr_assert_eq(ph_memcpy_dtoh(back, d, 64), PH_OK);
    cr_assert_eq(back[0], 0x3f);
    cr_assert_eq(back[63], 0x3f);
    const char hello[] = "hello";
    cr_assert_eq(ph_memcpy_htod(d, hello, sizeof hello), PH_OK);
    cr_assert_str_eq((const char *)(uintptr_t)d, "hello");
    cr_assert_eq(ph_free(d), PH_OK);
    ph_shutdown();
    cr_assert_eq(ph_malloc(&d, 64), PH_ERR_STATE);
}

/* PHOBOS_TARGET=interp turns any ph_init into the interpreter's; changing
 * target without ph_shutdown is refused. */
Test(runtime, phobos_target_interp_selects_the_interpreter)
{
    setenv("PHOBOS_TARGET", "interp", 1);
    cr_assert_eq(ph_init(0), PH_OK, "%s", ph_last_error());
    cr_assert_str_eq(ph_device_name(), "the CPU interpreter");
    cr_assert_eq(ph_device_multiprocessors(), 1);
    unsetenv("PHOBOS_TARGET");
    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK);
    cr_assert_eq(ph_init(0), PH_ERR_STATE);
    cr_assert(strstr(ph_last_error(), "already runs on the CPU interpreter") != NULL, "%s", ph_last_error());
    ph_shutdown();
    cr_assert_str_eq(ph_device_name(), "no device");
    cr_assert_eq(ph_device_multiprocessors(), 0);
}

/* A kernel's signature, parameter by parameter: names, kinds, element
 * types, ranks, named and literal dims. */
Test(runtime, kernel_params_describe_the_signature)
{
    ph_module *m;
    ph_kernel *k = get(&m, "twod");
    cr_assert_eq(ph_kernel_param_count(k), 2);
    cr_assert_eq(ph_kernel_param_count(NULL), -1);
    ph_param p;
    cr_assert_eq(ph_kernel_param(k, 0, &p), PH_OK);
    cr_assert_str_eq(p.name, "A");
    cr_assert_eq(p.kind, PH_ARG_TENSOR);
    cr_assert_str_eq(p.dtype, "f16");
    cr_assert_eq(p.rank, 2);
    cr_assert_str_eq(p.dim_names[0], "M");
    cr_assert_null(p.dim_names[1]);
    cr_assert_eq(p.dim_values[1], 64);
    cr_assert_eq(ph_kernel_param(k, 2, &p), PH_ERR_INVALID);
    cr_assert(strstr(ph_last_error(), "twod has no parameter 2") != NULL, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "vadd__BLOCK_256", &k), PH_OK);
    cr_assert_eq(ph_kernel_param_count(k), 4);
    cr_assert_eq(ph_kernel_param(k, 3, &p), PH_OK);
    cr_assert_str_eq(p.name, "a");
    cr_assert_eq(p.kind, PH_ARG_F32);
    cr_assert_str_eq(p.dtype, "f32");
    cr_assert_eq(p.rank, 0);
    cr_assert_eq(ph_kernel_param(k, 2, &p), PH_OK);
    cr_assert_str_eq(p.dim_names[0], "N");
    cr_assert_eq(p.rank, 1);
    ph_module_free(m);
}

/* A module lists its kernels by name, in the source's order, not its
 * configs; a misspelt name gets the nearest kernel's offered. */
Test(runtime, a_module_lists_its_kernels_and_offers_the_nearest)
{
    ph_module *m;
    get(&m, "vadd");
    cr_assert_eq(ph_module_kernel_count(m), 2, "vadd (two configs) and twod");
    cr_assert_str_eq(ph_module_kernel_name(m, 0), "vadd");
    cr_assert_str_eq(ph_module_kernel_name(m, 1), "twod");
    cr_assert_null(ph_module_kernel_name(m, 2));
    cr_assert_null(ph_module_kernel_name(m, -1));
    cr_assert_eq(ph_module_kernel_count(NULL), -1);
    cr_assert_null(ph_module_kernel_name(NULL, 0));
    ph_kernel *k;
    cr_assert_eq(ph_kernel_get(m, "vad", &k), PH_ERR_NOT_FOUND);
    cr_assert_str_eq(ph_last_error(), "no kernel named 'vad' in this module; did you mean 'vadd'?");
    cr_assert_eq(ph_kernel_get(m, "towd", &k), PH_ERR_NOT_FOUND);
    cr_assert_str_eq(ph_last_error(), "no kernel named 'towd' in this module; did you mean 'twod'?");
    cr_assert_eq(ph_kernel_get(m, "matmul", &k), PH_ERR_NOT_FOUND);
    cr_assert_str_eq(ph_last_error(), "no kernel named 'matmul' in this module");
    ph_module_free(m);
}

/* On a 9.0 device (sm_90a) an entry that copies by TMA takes a tensor map
 * per (tensor, box) and a flag each after the ABI's parameters: the maps
 * built from the launch's tensors (dims innermost first, the row stride in
 * bytes, the box the entry copies, the 128-byte swizzle, zeros outside),
 * the flag 1; a tensor whose rows are no multiple of 16 bytes gets no map
 * and the flag 0, and its map's bytes are zeros. */
static const char *tma_gemm_src =
    "import phobos.lang as ph\n"
    "@ph.kernel\n"
    "@ph.tensorcore\n"
    "@ph.launch(128)\n"
    "@ph.stages(2)\n"
    "def g(A: ph.tensor[ph.f16][M, K], B: ph.tensor[ph.f16][K, N], C: ph.tensor[ph.f16][M, N]):\n"
    "    m0: ph.let = ph.ctx.block.x * 64\n"
    "    acc: ph.var[ph.tile[ph.f32][64, 128]] = 0.0\n"
    "    for k0 in range(0, K, 64):\n"
    "        acc += ph.dot(A[m0:+64, k0:+64], B[k0:+64, 0:+128])\n"
    "    C[m0:+64, 0:+128] = ph.f16(acc)\n";

Test(runtime, tensor_maps_are_built_from_the_launchs_tensors)
{
    use_fake_driver();
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("g.ph", tma_gemm_src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "g", &k), PH_OK);
    ph_arg args[3] = {ph_tensor2_t(0x10000, PH_F16, 256, 192), ph_tensor2_t(0x40000, PH_F16, 192, 128),
                      ph_tensor2_t(0x80000, PH_F16, 256, 128)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 3), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nmaps, 2, "a map for A's ring and one for B's");
    const uint64_t want_addr[2] = {0x10000, 0x40000}, want_dims[2][2] = {{192, 256}, {128, 192}}, want_stride[2] = {384, 256};
    for (int j = 0; j < 2; j++) {
        cr_expect_eq(fake.maps[j].addr, want_addr[j]);
        cr_expect_eq(fake.maps[j].dims[0], want_dims[j][0], "map %d: dim 0 (columns) %llu", j, (unsigned long long)fake.maps[j].dims[0]);
        cr_expect_eq(fake.maps[j].dims[1], want_dims[j][1], "map %d: dim 1 (rows) %llu", j, (unsigned long long)fake.maps[j].dims[1]);
        cr_expect_eq(fake.maps[j].strides[0], want_stride[j], "map %d: row stride %llu bytes", j, (unsigned long long)fake.maps[j].strides[0]);
        cr_expect(fake.maps[j].box[0] == 64 && fake.maps[j].box[1] == 64, "map %d: box %u x %u", j, fake.maps[j].box[0], fake.maps[j].box[1]);
        cr_expect(fake.maps[j].swizzle == 3 && fake.maps[j].dtype == 1 && fake.maps[j].oob == 0 && fake.maps[j].elem[0] == 1,
                  "map %d: 128-byte swizzle, 2-byte elements, zeros outside", j);
    }
    /* the launch's parameters: A, B, C (3 each), the two maps, their flags */
    for (int j = 0; j < 2; j++) {
        uint64_t mark;
        memcpy(&mark, fake.launch_params[9 + j], 8);
        cr_expect_eq(mark, want_addr[j], "parameter %d is map %d", 9 + j, j);
        cr_expect_eq(*(int32_t *)fake.launch_params[11 + j], 1, "map %d's flag", j);
    }
    cr_expect_null(fake.launch_params[13]);
    /* the same tensors again: the maps are kept, none rebuilt */
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 3), PH_OK, "%s", ph_last_error());
    cr_expect_eq(fake.nmaps, 2, "maps rebuilt for the same tensors");
    uint64_t kept;
    memcpy(&kept, fake.launch_params[10], 8);
    cr_expect_eq(kept, want_addr[1], "the kept map of B");

    args[0] = ph_tensor2_t(0x10000, PH_F16, 256, 100);   /* rows of 200 bytes: no map for A */
    args[1] = ph_tensor2_t(0x40000, PH_F16, 100, 128);
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 3), PH_OK, "%s", ph_last_error());
    cr_assert_eq(fake.nmaps, 3, "B's map alone");
    cr_expect_eq(fake.maps[2].addr, 0x40000);
    cr_expect_eq(fake.maps[2].dims[1], 100);
    cr_expect_eq(*(int32_t *)fake.launch_params[11], 0, "A's flag");
    cr_expect_eq(*(int32_t *)fake.launch_params[12], 1, "B's flag");
    static const unsigned char zeros[128];
    cr_expect_eq(memcmp(fake.launch_params[9], zeros, 128), 0, "A's map is zeros");
    ph_module_free(m);
    ph_shutdown();
}

/* A rank-4 tensor goes to the kernel as its address, its four dims and its
 * four strides (the kernel ABI, compiler/ir/abi.h), a view's as given and
 * row-major ones where none are; the runtime refuses a negative stride and
 * strides that reach 2^62 elements, naming the parameter. */
Test(runtime, views_go_to_the_kernel_with_their_strides)
{
    use_fake_driver();
    static const char src[] = "import phobos.lang as ph\n\n@ph.kernel\n"
                              "def v(X: ph.tensor[ph.f32][B, H, N, D], Y: ph.tensor[ph.f32][N]):\n"
                              "    Y[0:+8] = X[1, 2, 0:+8, 3]\n";
    ph_module *m;
    ph_kernel *k;
    cr_assert_eq(ph_module_load_string("v.ph", src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "v", &k), PH_OK);
    ph_param p;
    cr_assert_eq(ph_kernel_param(k, 0, &p), PH_OK);
    cr_expect(p.rank == 4 && !strcmp(p.dim_names[3], "D"));
    const int64_t dims[4] = {2, 3, 40, 64}, view[4] = {40 * 3 * 64, 64, 3 * 64, 1};   /* [B, N, H, D] memory */
    ph_arg args[2] = {ph_tensor_nd(0x10000, PH_F32, 4, dims, view), ph_tensor1_t(0x90000, PH_F32, 40)};
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 2), PH_OK, "%s", ph_last_error());
    uint64_t want[9] = {0x10000, 2, 3, 40, 64, 40 * 3 * 64, 64, 3 * 64, 1};
    for (int i = 0; i < 9; i++) {
        uint64_t got;
        memcpy(&got, fake.launch_params[i], 8);
        cr_expect_eq(got, want[i], "parameter %d is %llu, not %llu", i, (unsigned long long)got, (unsigned long long)want[i]);
    }
    args[0] = ph_tensor_nd(0x10000, PH_F32, 4, dims, NULL);   /* no strides: row-major */
    cr_assert_eq(ph_launch(k, grid1, NULL, args, 2), PH_OK, "%s", ph_last_error());
    const uint64_t row_major[4] = {3 * 40 * 64, 40 * 64, 64, 1};
    for (int i = 0; i < 4; i++) {
        uint64_t got;
        memcpy(&got, fake.launch_params[5 + i], 8);
        cr_expect_eq(got, row_major[i], "stride %d is %llu", i, (unsigned long long)got);
    }
    const int64_t backwards[4] = {40 * 3 * 64, 64, -3 * 64, 1}, huge[4] = {(int64_t)1 << 62, 0, 0, 1};
    args[0] = ph_tensor_nd(0x10000, PH_F32, 4, dims, backwards);
    cr_expect_eq(ph_launch(k, grid1, NULL, args, 2), PH_ERR_ARGS);
    cr_expect_str_eq(ph_last_error(), "v: parameter X: stride 2 is -192; strides must be from 0 to 2^62");
    args[0] = ph_tensor_nd(0x10000, PH_F32, 4, dims, huge);
    cr_expect_eq(ph_launch(k, grid1, NULL, args, 2), PH_ERR_ARGS);
    cr_expect_str_eq(ph_last_error(), "v: parameter X: its strides reach past 2^62 elements");
    ph_module_free(m);
    ph_shutdown();
}

/* A kernel whose ph.device_assert failed: the driver answers the next
 * synchronization with CUDA_ERROR_ASSERT, and the status says so, and that
 * the context is gone. */
static CUresult assert_failed(void) { return PH_CUDA_ERROR_ASSERT; }

Test(runtime, a_failed_device_assert_is_named)
{
    use_fake_driver();
    PhDriver *d = (PhDriver *)ph_internal_driver();
    d->CtxSynchronize = assert_failed;
    cr_assert_eq(ph_synchronize(), PH_ERR_CUDA);
    cr_assert(strstr(ph_last_error(), "a device assert failed (ph.device_assert; CUDA error 710"), "%s", ph_last_error());
    cr_assert(strstr(ph_last_error(), "the CUDA context is unusable from now on"), "%s", ph_last_error());
    d->CtxSynchronize = fake_ok;
    ph_shutdown();
}

/* On the interpreter a failed ph.device_assert gives the GPU's status, its
 * message naming file:line:col, the block and the message; the runtime
 * stays usable (no context is lost on the CPU). */
Test(runtime, a_failed_device_assert_on_the_interpreter)
{
    cr_assert_eq(ph_init(PH_INTERPRETER), PH_OK, "%s", ph_last_error());
    ph_module *m;
    ph_kernel *k;
    const char *src = "import phobos.lang as ph\n"
                      "@ph.kernel\n"
                      "def pos(X: ph.tensor[ph.f32][N]):\n"
                      "    ph.device_assert(X[ph.ctx.block.x] > 0.0, \"X must be positive\")\n";
    cr_assert_eq(ph_module_load_string("pos.ph", src, &m), PH_OK, "%s", ph_last_error());
    cr_assert_eq(ph_kernel_get(m, "pos", &k), PH_OK);
    float x[4] = {1, 2, -3, 4};
    long n = 4;
    ph_arg args[1] = {ph_tensor1((ph_devptr)(uintptr_t)x, n)};
    cr_assert_eq(ph_launch(k, grid_of_n, &n, args, 1), PH_ERR_CUDA);
    cr_assert_str_eq(ph_last_error(), "pos.ph:4:5: device assert failed in kernel 'pos', block (2, 0, 0): X must be positive");
    x[2] = 3;
    cr_assert_eq(ph_launch(k, grid_of_n, &n, args, 1), PH_OK, "%s", ph_last_error());
    ph_module_free(m);
    ph_shutdown();
}
