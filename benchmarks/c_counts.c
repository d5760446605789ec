/* Peer for benchmarks/bench_peers.py: a hand-written C simulator of the occupancy-count
 * chain the counts engine (src/cloudsched/dispatch/_kernel_counts.py) simulates, doing the
 * same work per event.
 *
 * N exchangeable FIFO servers, Poisson arrivals of rate LOAD * N, exponential service of
 * mean 1.  The state is cnt[i], the number of servers holding at least i tasks.  With B =
 * cnt[1] busy servers the next event comes after an Exp(LOAD * N + B) time; one uniform draw
 * u * (LOAD * N + B) decides whether it is an arrival or the departure of a uniform busy
 * server (the level read off the same draw).  An arrival joins level k by policy (0 random;
 * 1 pod(D) with distinct probes: P(min >= k) = prod_{i<D} (cnt[k] - i) / (N - i); 2 pod(D)
 * with replacement: (cnt[k] / N)^D; 3 jiq-pod(D) with delete requests over M dispatchers, on
 * iq[j], the number of I-queues holding j idle servers: the arrival's dispatcher read off the
 * event's draw as a size class, a non-empty I-queue giving an idle server, an empty one pod(D)
 * with distinct probes and a delete request when the server found is idle, and a server that
 * empties joining a uniform I-queue), and its response time is drawn as Erlang(k + 1) (a sum
 * of exponentials, by inversion here) and summed.  The system starts empty (jiq-pod: every
 * server listed in a uniform I-queue).
 *
 * Usage: c_counts N M LOAD TASKS POLICY D SEED
 * Prints: events cpu_seconds mean_response_time
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "c_rng.h"

static inline double expo(void) { return -log(1.0 - unif()); }
static inline long index_of(long n) { long k = (long)(unif() * n); return k < n ? k : n - 1; }

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: c_counts N M LOAD TASKS POLICY D SEED\n");
        return 2;
    }
    double n = atof(argv[1]), m = atof(argv[2]), load = atof(argv[3]);
    long tasks = atol(argv[4]);
    int policy = atoi(argv[5]), d = atoi(argv[6]);
    seed_rng((uint64_t)atol(argv[7]));
    clock_t t0 = clock();
    int levels = 1 << 16;
    double *cnt = calloc(levels, sizeof(double));
    double *iq = calloc(levels, sizeof(double));
    cnt[0] = n;
    if (policy == 3) {  /* every server listed in a uniform I-queue */
        long nm = (long)m;
        int *size = calloc(nm, sizeof(int));
        for (long s = 0; s < (long)n; s++) size[index_of(nm)]++;
        for (long k = 0; k < nm; k++) iq[size[k]] += 1.0;
        free(size);
    }
    double lam = load * n, now = 0.0, sum = 0.0;
    long arrivals = 0, events = 0;
    double scale = 1.0 / (n * (n - 1.0));
    while (arrivals < tasks) {
        double rate = lam + cnt[1];
        now += expo() / rate;
        double u = unif() * rate;
        events++;
        if (u < lam) {
            int k = 0, took = 0;
            if (policy == 3) {
                double x = u / lam * m;
                if (x >= iq[0]) {  /* its I-queue gives an idle server */
                    int c = 0; double acc = iq[0];
                    while (acc <= x) acc += iq[++c];
                    iq[c] -= 1.0; iq[c - 1] += 1.0; took = 1;
                }
            }
            double v = took ? 1.0 : 1.0 - unif();
            if (took) {
            } else if (policy == 0) {
                double w = n * v;
                while (cnt[k + 1] >= w) k++;
            } else if (policy == 2 || d == 1) {
                double w = d == 2 ? n * sqrt(v) : n * pow(v, 1.0 / d);
                while (cnt[k + 1] >= w) k++;
            } else if (d == 2) {
                while (cnt[k + 1] * (cnt[k + 1] - 1.0) * scale >= v) k++;
            } else {
                for (;;) {
                    double p = 1.0, c = cnt[k + 1];
                    for (int i = 0; i < d && p > 0.0; i++) p *= (c - i) / (n - i);
                    if (p < v || p <= 0.0) break;
                    k++;
                }
            }
            if (policy == 3 && !took && k == 0) {  /* delete request */
                double x = unif() * (n - cnt[1]), acc = 0.0;
                int c = 0;
                while (acc <= x) { c++; acc += c * iq[c]; }
                iq[c] -= 1.0; iq[c - 1] += 1.0;
            }
            double rt = 0.0;
            for (int i = 0; i <= k; i++) rt += expo();
            sum += rt;
            cnt[k + 1] += 1.0;
            arrivals++;
        } else {
            double w = u - lam;
            int k = 1;
            while (cnt[k + 1] > w) k++;
            cnt[k] -= 1.0;
            if (policy == 3 && k == 1) {  /* idle: joins a uniform I-queue */
                double x = unif() * m, acc = iq[0];
                int c = 0;
                while (acc <= x) acc += iq[++c];
                iq[c] -= 1.0; iq[c + 1] += 1.0;
            }
        }
    }
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("%ld %.6f %.6f\n", events, cpu, sum / (double)tasks);
    free(cnt);
    free(iq);
    return 0;
}
