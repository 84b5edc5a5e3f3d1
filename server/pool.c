#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "common/log.h"

struct rfsd_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rfsd_work *head, *tail;
    int stopping;
    int nthreads;
    pthread_t *threads;
};

static void *worker_main(void *arg)
{
    rfsd_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        rfsd_work *w = p->head;
        if (!w) {  /* stopping and drained */
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        p->head = w->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        w->next = NULL;
        w->run(w);
    }
}

int rfsd_pool_start(int nthreads, rfsd_pool **out)
{
    rfsd_pool *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    p->threads = calloc((size_t)nthreads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return -1;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    for (int i = 0; i < nthreads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker_main, p)) {
            RFS_LOGE("cannot start worker thread %d", i);
            p->nthreads = i;
            rfsd_pool_stop(p);
            return -1;
        }
        p->nthreads = i + 1;
    }
    *out = p;
    return 0;
}

void rfsd_pool_submit(rfsd_pool *p, rfsd_work *w)
{
    w->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = w;
    else
        p->head = w;
    p->tail = w;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int rfsd_pool_threads(const rfsd_pool *p) { return p->nthreads; }

void rfsd_pool_stop(rfsd_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p);
}
