/* Peer for benchmarks/bench_peers.py: a hand-written C event-list simulator of the same model
 * as the event-list engine (N FIFO servers, Poisson arrivals, exponential service of mean 1,
 * Random or Pod(2) dispatch), recording every task's response time (float, by arrival order).
 * As in the engine, a binary heap holds the completion of every busy server and the next
 * arrival is kept beside it (an arrival comes first on a tie); per-server FIFO queues are ring
 * buffers of arrival times.  Pod(2) draws the second server among the other N - 1.
 * Usage: c_eventlist N LOAD TASKS POLICY(0 random, 1 pod2) SEED
 * Prints: events cpu_seconds mean_response_time
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "c_rng.h"

static inline double expo(double mean) { return -mean * log(1.0 - unif()); }

typedef struct { double t; int who; } ev; /* completion time of server who */
static ev *heap; static int hn;
static void push(double t, int who) {
    int i = hn++;
    while (i > 0) { int p = (i - 1) / 2; if (heap[p].t <= t) break; heap[i] = heap[p]; i = p; }
    heap[i].t = t; heap[i].who = who;
}
static ev pop(void) {
    ev top = heap[0], last = heap[--hn]; int i = 0;
    for (;;) { int c = 2 * i + 1; if (c >= hn) break; if (c + 1 < hn && heap[c + 1].t < heap[c].t) c++;
        if (heap[c].t >= last.t) break;
        heap[i] = heap[c]; i = c; }
    heap[i] = last; return top;
}

int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: %s N LOAD TASKS POLICY SEED\n", argv[0]); return 2; }
    int n = atoi(argv[1]); double load = atof(argv[2]); long tasks = atol(argv[3]);
    int pod = atoi(argv[4]); seed_rng((uint64_t)atol(argv[5]));
    clock_t c0 = clock(); /* CPU time of the whole simulation, allocation included */
    int cap = 16; /* ring buffer capacity per server (a power of two, doubled when full) */
    double **q = malloc(n * sizeof *q); int *head = calloc(n, sizeof(int)), *len = calloc(n, sizeof(int)), *qc = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) { q[i] = malloc(cap * sizeof(double)); qc[i] = cap; }
    float *resp = malloc(tasks * sizeof(float)); long **ords = malloc(n * sizeof(long *));
    for (int i = 0; i < n; i++) ords[i] = malloc(cap * sizeof(long));
    heap = malloc((n + 1) * sizeof(ev)); hn = 0;
    double rate = load * n; long arrivals = 0, departed = 0, events = 0;
    double next_arrival = expo(1.0 / rate);
    while (departed < tasks) {
        events++;
        if (arrivals < tasks && (hn == 0 || next_arrival <= heap[0].t)) {
            double now = next_arrival;
            int s = (int)(unif() * n);
            if (pod) { int s2 = (int)(unif() * (n - 1)); if (s2 >= s) s2++; if (len[s2] < len[s]) s = s2; }
            if (len[s] == qc[s]) { /* grow ring */
                double *nq = malloc(2 * qc[s] * sizeof(double)); long *no = malloc(2 * qc[s] * sizeof(long));
                for (int k = 0; k < len[s]; k++) { nq[k] = q[s][(head[s] + k) & (qc[s] - 1)]; no[k] = ords[s][(head[s] + k) & (qc[s] - 1)]; }
                free(q[s]); free(ords[s]); q[s] = nq; ords[s] = no; head[s] = 0; qc[s] *= 2; }
            int tail = (head[s] + len[s]) & (qc[s] - 1);
            q[s][tail] = now; ords[s][tail] = arrivals++; len[s]++;
            if (len[s] == 1) push(now + expo(1.0), s);
            next_arrival = now + expo(1.0 / rate);
        } else {
            ev e = pop();
            int s = e.who;
            resp[ords[s][head[s]]] = (float)(e.t - q[s][head[s]]);
            head[s] = (head[s] + 1) & (qc[s] - 1); len[s]--; departed++;
            if (len[s] > 0) push(e.t + expo(1.0), s);
        }
    }
    double secs = (double)(clock() - c0) / CLOCKS_PER_SEC, sum = 0;
    for (long k = 0; k < tasks; k++) sum += resp[k];
    printf("%ld %.6f %.6f\n", events, secs, sum / tasks);
    return 0;
}
