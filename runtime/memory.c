/* memory.c: ph_malloc and the copies, on the calling thread's device,
 * whichever target runs (device.h's execution does the work). */
#include "phobos.h"

#include "device.h"
#include "error.h"

/* A memory call on the calling thread's device, made current from
 * call_begin to call_end. The lock is held only to find the device: a
 * copy that waits for the device does not hold up launches elsewhere. */
typedef struct {
    const PhExec *exec;
    const Device *dev;
    CUcontext saved;
} Call;

static ph_status call_begin(Call *c)
{
    const PhRuntime *rt = &ph_internal_runtime;
    ph_internal_lock();
    bool ready = rt->ready;
    c->exec = rt->exec;
    c->dev = ready ? &rt->devices[ph_internal_thread_device()] : NULL;
    ph_internal_unlock();
    if (!ready) return ph_internal_failf(PH_ERR_STATE, NOT_READY);
    return c->exec->enter(c->dev, &c->saved);
}

static ph_status call_end(const Call *c, ph_status s)
{
    c->exec->leave(c->dev, c->saved);
    return s;
}

ph_status ph_malloc(ph_devptr *p, size_t bytes)
{
    Call c;
    ph_status s = call_begin(&c);
    if (s) return s;
    if (!p) return call_end(&c, ph_internal_failf(PH_ERR_INVALID, "null pointer to ph_malloc"));
    return call_end(&c, c.exec->alloc(p, bytes));
}

ph_status ph_free(ph_devptr p)
{
    Call c;
    ph_status s = call_begin(&c);
    return s ? s : call_end(&c, c.exec->free(p));
}

ph_status ph_memcpy_htod(ph_devptr dst, const void *src, size_t bytes)
{
    Call c;
    ph_status s = call_begin(&c);
    if (s) return s;
    if (!dst || !src) return call_end(&c, ph_internal_failf(PH_ERR_INVALID, "null pointer to ph_memcpy_htod"));
    return call_end(&c, c.exec->htod(dst, src, bytes));
}

ph_status ph_memcpy_dtoh(void *dst, ph_devptr src, size_t bytes)
{
    Call c;
    ph_status s = call_begin(&c);
    if (s) return s;
    if (!dst || !src) return call_end(&c, ph_internal_failf(PH_ERR_INVALID, "null pointer to ph_memcpy_dtoh"));
    return call_end(&c, c.exec->dtoh(dst, src, bytes));
}

ph_status ph_memset8(ph_devptr dst, unsigned char value, size_t bytes)
{
    Call c;
    ph_status s = call_begin(&c);
    if (s) return s;
    if (!dst) return call_end(&c, ph_internal_failf(PH_ERR_INVALID, "null pointer to ph_memset8"));
    return call_end(&c, c.exec->memset8(dst, value, bytes));
}

ph_status ph_synchronize(void)
{
    Call c;
    ph_status s = call_begin(&c);
    return s ? s : call_end(&c, c.exec->synchronize());
}
