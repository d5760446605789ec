/* The random stream of the C peers (c_markov.c, c_eventlist.c): xoroshiro128+, uniforms on
 * [0, 1) from its top 53 bits. */
#include <stdint.h>

static uint64_t s0, s1;
static inline uint64_t next(void) {
    uint64_t a = s0, b = s1, r = a + b;
    b ^= a; s0 = ((a << 55) | (a >> 9)) ^ b ^ (b << 14); s1 = (b << 36) | (b >> 28);
    return r;
}
static inline double unif(void) { return (next() >> 11) * (1.0 / 9007199254740992.0); }
static inline void seed_rng(uint64_t seed) { s0 = 0x9E3779B97F4A7C15ULL ^ seed; s1 = 0xBF58476D1CE4E5B9ULL; }
