/* Copyright (c) 2026 The rfs developers. SPDX-License-Identifier: BSD-3-Clause */
/* The client runtime's executor (client/exec.c): jobs run on workers with every signal
 * blocked, finished workers are reused, a job never waits behind another, and destroying a
 * runtime ends its workers. The connection pool's part is in test_conn.c. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/client.h"

static void *blocked_signals(void *arg)
{
    (void)arg;
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, NULL, &now);
    int n = 0;
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        n += sigismember(&now, sigs[i]) == 1;
    return (void *)(intptr_t)n;
}

/* The caller's mask does not leak into the workers, nor theirs into the caller. */
static void test_workers_block_every_signal(void **state)
{
    (void)state;
    rfs_runtime *rt;
    assert_int_equal(rfs_runtime_create(&rt), RFS_OK);
    sigset_t none, before, after;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, &before);
    rfs_task t;
    assert_int_equal(rfs_task_start(rt, &t, blocked_signals, NULL), 0);
    assert_int_equal((intptr_t)rfs_task_join(&t), 8);
    pthread_sigmask(SIG_SETMASK, NULL, &after);
    assert_int_equal(sigismember(&after, SIGINT), 0);
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    rfs_runtime_destroy(rt);
}

static void *add_one(void *arg)
{
    return (void *)((intptr_t)arg + 1);
}

/* Jobs one after another run on the worker the first one made. */
static void test_finished_workers_are_reused(void **state)
{
    (void)state;
    rfs_runtime *rt;
    assert_int_equal(rfs_runtime_create(&rt), RFS_OK);
    for (intptr_t i = 0; i < 50; i++) {
        rfs_task t;
        assert_int_equal(rfs_task_start(rt, &t, add_one, (void *)i), 0);
        assert_int_equal((intptr_t)rfs_task_join(&t), i + 1);
    }
    rfs_runtime_stats st;
    rfs_runtime_get_stats(rt, &st);
    assert_int_equal(st.started, 1);
    assert_int_equal(st.workers, 1);
    rfs_runtime_destroy(rt);
}

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
} gate;

static void *wait_gate(void *arg)
{
    gate *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static void *open_gate(void *arg)
{
    gate *g = arg;
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* Long jobs (ABT's senders wait for work for as long as the engine runs) never hold up a job
 * started after them: with a queue behind busy workers this would hang. */
static void test_a_job_never_waits_behind_another(void **state)
{
    (void)state;
    rfs_runtime *rt;
    assert_int_equal(rfs_runtime_create(&rt), RFS_OK);
    gate g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    rfs_task waiters[20], opener;
    for (int i = 0; i < 20; i++)
        assert_int_equal(rfs_task_start(rt, &waiters[i], wait_gate, &g), 0);
    assert_int_equal(rfs_task_start(rt, &opener, open_gate, &g), 0);
    rfs_task_join(&opener);
    for (int i = 0; i < 20; i++)
        rfs_task_join(&waiters[i]);
    rfs_runtime_stats st;
    rfs_runtime_get_stats(rt, &st);
    assert_true(st.started >= 21);
    rfs_runtime_destroy(rt);
}

/* A job may start and join jobs of its own (a transfer's streams run inside a nonblocking
 * operation's job). */
static void *nested(void *arg)
{
    rfs_runtime *rt = arg;
    rfs_task t;
    if (rfs_task_start(rt, &t, add_one, (void *)(intptr_t)41) != 0)
        return NULL;
    return rfs_task_join(&t);
}

static void test_jobs_start_jobs(void **state)
{
    (void)state;
    rfs_runtime *rt;
    assert_int_equal(rfs_runtime_create(&rt), RFS_OK);
    rfs_task t;
    assert_int_equal(rfs_task_start(rt, &t, nested, rt), 0);
    assert_int_equal((intptr_t)rfs_task_join(&t), 42);
    rfs_runtime_destroy(rt);
}

/* The default runtime is one object, made on first use. */
static void test_default_runtime_is_shared(void **state)
{
    (void)state;
    rfs_runtime *a = rfs_runtime_default(), *b = rfs_runtime_default();
    assert_non_null(a);
    assert_ptr_equal(a, b);
    rfs_task t;
    assert_int_equal(rfs_task_start(a, &t, blocked_signals, NULL), 0);
    assert_int_equal((intptr_t)rfs_task_join(&t), 8);
}

#ifndef __SANITIZE_THREAD__ /* see main */
/* A child forked after the default runtime made workers has none of them: its jobs still run
 * (a job handed to the parent's idle worker would wait forever: the child ends by SIGALRM). */
static void test_default_runtime_works_after_fork(void **state)
{
    (void)state;
    rfs_runtime *rt = rfs_runtime_default();
    rfs_task t;
    assert_int_equal(rfs_task_start(rt, &t, add_one, (void *)(intptr_t)1), 0);
    assert_int_equal((intptr_t)rfs_task_join(&t), 2);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(10);
        rfs_task c;
        int ok = rfs_task_start(rt, &c, add_one, (void *)(intptr_t)6) == 0 &&
                 (intptr_t)rfs_task_join(&c) == 7;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}
#endif

/* ---- parts: what a layer above keeps per runtime ---- */

static int destroyed[4], n_destroyed, made;

typedef struct part {
    int id;
} part;

static void *make_a(rfs_runtime *rt)
{
    (void)rt;
    made++;
    part *p = malloc(sizeof *p);
    p->id = 1;
    return p;
}

static void *make_b(rfs_runtime *rt)
{
    (void)rt;
    made++;
    part *p = malloc(sizeof *p);
    p->id = 2;
    return p;
}

static void destroy_part(void *x)
{
    part *p = x;
    destroyed[n_destroyed++] = p->id;
    free(p);
}

static const rfs_runtime_part_desc desc_a = {"a", make_a, destroy_part};
static const rfs_runtime_part_desc desc_b = {"b", make_b, destroy_part};

/* A part is made once per runtime, on first use; peeking makes none; runtimes have parts of
 * their own; destroying a runtime destroys its parts, the newest first. */
static void test_parts_are_per_runtime(void **state)
{
    (void)state;
    rfs_runtime *rt, *other;
    assert_int_equal(rfs_runtime_create(&rt), RFS_OK);
    assert_int_equal(rfs_runtime_create(&other), RFS_OK);
    made = n_destroyed = 0;
    assert_null(rfs_runtime_part_peek(rt, &desc_a));
    part *a = rfs_runtime_part(rt, &desc_a);
    assert_non_null(a);
    assert_ptr_equal(rfs_runtime_part(rt, &desc_a), a);
    assert_ptr_equal(rfs_runtime_part_peek(rt, &desc_a), a);
    part *b = rfs_runtime_part(rt, &desc_b);
    assert_int_equal(b->id, 2);
    assert_int_equal(made, 2);
    assert_null(rfs_runtime_part_peek(other, &desc_a));
    part *oa = rfs_runtime_part(other, &desc_a);
    assert_true(oa != a);
    assert_int_equal(made, 3);
    rfs_runtime_destroy(rt);
    assert_int_equal(n_destroyed, 2);
    assert_int_equal(destroyed[0], 2); /* b, made after a */
    assert_int_equal(destroyed[1], 1);
    rfs_runtime_destroy(other);
    assert_int_equal(n_destroyed, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workers_block_every_signal),
        cmocka_unit_test(test_finished_workers_are_reused),
        cmocka_unit_test(test_a_job_never_waits_behind_another),
        cmocka_unit_test(test_jobs_start_jobs),
        cmocka_unit_test(test_default_runtime_is_shared),
        cmocka_unit_test(test_parts_are_per_runtime),
#ifndef __SANITIZE_THREAD__ /* ThreadSanitizer ends a forked child of a threaded process that
                               starts threads (die_after_fork), which is what this tests */
        cmocka_unit_test(test_default_runtime_works_after_fork),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
