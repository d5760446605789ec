/* Peer for benchmarks/bench_peers.py: a hand-written C simulator of the Markov chain the
 * compiled kernel's fast path simulates, doing the same work per event.
 *
 * N FIFO servers, Poisson arrivals of rate LOAD * N, exponential service of mean 1, and M
 * dispatchers.  With B busy servers the next event comes after an Exp(LOAD * N + B) time; one
 * uniform draw u * (LOAD * N + B) decides whether it is an arrival (and at which dispatcher)
 * or the departure of the task in service at the busy server it indexes (memorylessness).
 * Every task's arrival time is kept in its server's FIFO (a ring buffer) and every response
 * time is recorded (float, indexed by arrival order).  After the last arrival only
 * departures are simulated (the drain), as in the kernel.
 *
 * Policies: 0 random; 1 pod (D distinct probes: a redraw of a server already probed, the
 * first least loaded wins); 2 jiq (I-queues with delete requests: an idle server joins a
 * uniform I-queue; a dispatcher takes a uniform entry of its own, else a uniform server, and
 * a listed server that gets a task is deleted from its I-queue); 3 jiq-pod (jiq, with Pod(D)
 * when the I-queue is empty).  The system starts empty, every server listed (jiq family).
 *
 * Usage: c_markov N M LOAD TASKS POLICY D SEED
 * Prints: events cpu_seconds mean_response_time
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "c_rng.h"

static inline int index_of(int n) { int k = (int)(unif() * n); return k < n ? k : n - 1; }

typedef struct { double *t; long *ord; int head, len, cap; } fifo;

static int n, m, d;
static fifo *q;
static int *busy, *bpos, nbusy;
static int **iq, *iqn, *iqcap, *iq_of, *iq_pos;

static void iq_join(int s, int k) {
    if (iqn[k] == iqcap[k]) { iqcap[k] *= 2; iq[k] = realloc(iq[k], iqcap[k] * sizeof(int)); }
    iq[k][iqn[k]] = s; iq_pos[s] = iqn[k]++; iq_of[s] = k;
}
static void iq_leave(int s) {
    int k = iq_of[s], p = iq_pos[s], moved = iq[k][--iqn[k]];
    iq[k][p] = moved; iq_pos[moved] = p; iq_of[s] = -1;
}
static int probe(void) {
    int sample[64], best = -1;
    for (int k = 0; k < d; k++) {
        int s, seen;
        do { s = index_of(n); seen = 0; for (int i = 0; i < k; i++) if (sample[i] == s) { seen = 1; break; } } while (seen);
        sample[k] = s;
        if (best < 0 || q[s].len < q[best].len) best = s;
    }
    return best;
}

int main(int argc, char **argv) {
    if (argc < 8) { fprintf(stderr, "usage: %s N M LOAD TASKS POLICY D SEED\n", argv[0]); return 2; }
    n = atoi(argv[1]); m = atoi(argv[2]); double load = atof(argv[3]); long tasks = atol(argv[4]);
    int policy = atoi(argv[5]); d = atoi(argv[6]);
    seed_rng((uint64_t)atol(argv[7]));
    if (d < 1 || d > 64 || 2 * d > n) { fprintf(stderr, "D must be in [1, min(64, N / 2)]\n"); return 2; }
    clock_t c0 = clock();
    q = calloc(n, sizeof *q);
    for (int s = 0; s < n; s++) { q[s].cap = 8; q[s].t = malloc(8 * sizeof(double)); q[s].ord = malloc(8 * sizeof(long)); }
    busy = malloc(n * sizeof(int)); bpos = malloc(n * sizeof(int)); nbusy = 0;
    float *resp = malloc(tasks * sizeof(float));
    int jiq = policy >= 2;
    iq = malloc(m * sizeof(int *)); iqn = calloc(m, sizeof(int)); iqcap = malloc(m * sizeof(int));
    iq_of = malloc(n * sizeof(int)); iq_pos = malloc(n * sizeof(int));
    for (int k = 0; k < m; k++) { iqcap[k] = 16; iq[k] = malloc(16 * sizeof(int)); }
    for (int s = 0; s < n; s++) { iq_of[s] = -1; if (jiq) iq_join(s, index_of(m)); }
    double lam_n = load * n, now = 0.0;
    long arrivals = 0, departed = 0, events = 0;
    while (departed < tasks) {
        double lam = arrivals < tasks ? lam_n : 0.0, rate = lam + nbusy;
        now += -log(1.0 - unif()) / rate;
        double u = unif() * rate;
        events++;
        if (u < lam) {
            int disp = (int)(u / lam * m), s;
            if (disp >= m) disp = m - 1;
            if (jiq && iqn[disp] > 0) { s = iq[disp][index_of(iqn[disp])]; iq_leave(s); }
            else if (policy == 1 || policy == 3) s = probe();
            else s = index_of(n);
            if (jiq && iq_of[s] >= 0) iq_leave(s); /* delete request */
            fifo *f = &q[s];
            if (f->len == f->cap) { /* grow the ring */
                double *nt = malloc(2 * f->cap * sizeof(double)); long *no = malloc(2 * f->cap * sizeof(long));
                for (int k = 0; k < f->len; k++) { nt[k] = f->t[(f->head + k) & (f->cap - 1)]; no[k] = f->ord[(f->head + k) & (f->cap - 1)]; }
                free(f->t); free(f->ord); f->t = nt; f->ord = no; f->head = 0; f->cap *= 2;
            }
            int tail = (f->head + f->len) & (f->cap - 1);
            f->t[tail] = now; f->ord[tail] = arrivals++;
            if (f->len++ == 0) { bpos[s] = nbusy; busy[nbusy++] = s; }
        } else {
            int k = (int)(u - lam);
            if (k >= nbusy) k = nbusy - 1;
            int s = busy[k];
            fifo *f = &q[s];
            resp[f->ord[f->head]] = (float)(now - f->t[f->head]);
            f->head = (f->head + 1) & (f->cap - 1); departed++;
            if (--f->len == 0) {
                int last = busy[--nbusy]; busy[bpos[s]] = last; bpos[last] = bpos[s];
                if (jiq) iq_join(s, index_of(m));
            }
        }
    }
    double secs = (double)(clock() - c0) / CLOCKS_PER_SEC, sum = 0;
    for (long k = 0; k < tasks; k++) sum += resp[k];
    printf("%ld %.6f %.6f\n", events, secs, sum / tasks);
    return 0;
}
