/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* idle_yield: makes MPICH's idle ranks give the CPU away (LD_PRELOAD, benchmarks only).
 *
 * MPICH 4.0 (ch4:ucx, Debian's build) waits for messages by polling in a tight loop and never
 * yields: libmpich imports neither sched_yield nor any sleep, and MPIR_CVAR_POLLS_BEFORE_YIELD
 * belongs to the ch3 device, which this build does not have. With more ranks than cores (4
 * ranks on this machine's 2) a rank waiting in a collective spins through its whole time
 * slice while the rank it waits for is descheduled: a 4-rank jacobi3d that needs 1.8 s takes
 * 70 s. Open MPI avoids this by calling sched_yield() when idle once it knows it is
 * oversubscribed (mpi_yield_when_idle).
 *
 * Every pass of MPICH's progress loop calls UCX's ucp_worker_progress() (the netmod's
 * progress), even when the traffic goes through MPICH's own shared memory, which UCX does not
 * see (so its return value says nothing about whether MPICH found work). This library
 * interposes that one function. A call that comes more than 50 us after the previous one
 * returned starts a new wait (in between, the application computed); within a wait, every
 * IDLE_SPINS calls it gives the CPU away:
 *   - sched_yield() while the wait is short (< 10 ms, a few scheduler time slices): the rank that is waited for, if it is
 *     queued on this core, runs at once (a halo exchange between oversubscribed ranks);
 *   - nanosleep() once the wait is long (a rank waiting while an aggregator talks to a server
 *     50 ms away): the core goes to whoever needs it (rfsd, ABT's threads, other jobs), and the
 *     kernel's timer slack makes the nap ~50-60 us, small against such waits.
 * Nothing else changes: same protocol, same data path, same collective algorithms. Measured
 * here, 4 ranks of jacobi3d --local 48 --peak: 70 s without it (--iters 10 --compute-scale
 * 200), 1.8 s with it; with --iters 6 --compute-scale 1000, 1.9-2.3 s with it, 1.8-1.9 s with
 * Open MPI, 5.2-5.4 s when napping from the first idle poll on.
 *
 * RFS_BENCH_IDLE_SPINS overrides the number of idle polls between two yields (default 64);
 * 0 turns the library into a plain pass-through.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

typedef struct ucp_worker *ucp_worker_h;
typedef unsigned (*progress_fn)(ucp_worker_h);

enum {
    NEW_WAIT_GAP_NS = 50000, /* a gap this long between two polls: the application ran */
    LONG_WAIT_NS = 10000000, /* waiting longer than this: sleep instead of yield */
};

static progress_fn real_progress;
static unsigned long spins_per_yield = 64;
/* per thread: callers with MPI_THREAD_MULTIPLE poll from several threads */
static _Thread_local unsigned long polls;
static _Thread_local struct timespec wait_start, last_return;

/* Runs after every DT_NEEDED library (libucp among them) is mapped, before main(). */
__attribute__((constructor)) static void idle_yield_init(void)
{
    real_progress = (progress_fn)dlsym(RTLD_NEXT, "ucp_worker_progress");
    const char *e = getenv("RFS_BENCH_IDLE_SPINS");
    if (e && *e) {
        char *end = NULL;
        unsigned long v = strtoul(e, &end, 10);
        if (end && *end == '\0')
            spins_per_yield = v;
    }
}

static long long ns_between(const struct timespec *a, const struct timespec *b)
{
    return (b->tv_sec - a->tv_sec) * 1000000000LL + (b->tv_nsec - a->tv_nsec);
}

unsigned ucp_worker_progress(ucp_worker_h worker)
{
    if (!real_progress)
        abort(); /* cannot happen: whoever called this linked libucp, which defines it */
    unsigned events = real_progress(worker);
    if (spins_per_yield == 0)
        return events;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (ns_between(&last_return, &now) > NEW_WAIT_GAP_NS) {
        wait_start = now;
        polls = 0;
    }
    if (events == 0 && ++polls % spins_per_yield == 0) {
        if (ns_between(&wait_start, &now) < LONG_WAIT_NS) {
            sched_yield();
        } else {
            struct timespec nap = {0, 1000};
            nanosleep(&nap, NULL);
        }
        clock_gettime(CLOCK_MONOTONIC, &now); /* time away from the CPU is not a gap */
    }
    last_return = now;
    return events;
}
