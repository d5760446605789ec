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
 * with replacement: (cnt[k] / N)^D), and its response time is drawn as Erlang(k + 1) (a sum
 * of exponentials, by inversion here) and summed.  The system starts empty.
 *
 * Usage: c_counts N LOAD TASKS POLICY D SEED
 * Prints: events cpu_seconds mean_response_time
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "c_rng.h"

static inline double expo(void) { return -log(1.0 - unif()); }

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: c_counts N LOAD TASKS POLICY D SEED\n");
        return 2;
    }
    double n = atof(argv[1]), load = atof(argv[2]);
    long tasks = atol(argv[3]);
    int policy = atoi(argv[4]), d = atoi(argv[5]);
    seed_rng((uint64_t)atol(argv[6]));
    clock_t t0 = clock();
    int levels = 1 << 16;
    double *cnt = calloc(levels, sizeof(double));
    cnt[0] = n;
    double lam = load * n, now = 0.0, sum = 0.0;
    long arrivals = 0, events = 0;
    double scale = 1.0 / (n * (n - 1.0));
    while (arrivals < tasks) {
        double rate = lam + cnt[1];
        now += expo() / rate;
        double u = unif() * rate;
        events++;
        if (u < lam) {
            int k = 0;
            double v = 1.0 - unif();
            if (policy == 0) {
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
        }
    }
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    printf("%ld %.6f %.6f\n", events, cpu, sum / (double)tasks);
    free(cnt);
    return 0;
}
