/* Eight float lanes (GCC vector extensions) and the running statistics built on them: min,
 * max (NaN skipped) and sum (with the sums over channels), sums of |x| and x*x.  Part of reduce.c
 * (one translation unit); included only there. */

#ifndef NFW_LANES_H
#define NFW_LANES_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE__)
#include <immintrin.h>
#endif

typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

#define LANES 8
#define BLOCK 4096 /* elements summed in float lanes before the lanes go into the double */

static inline v8f load8(const float *p) {
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* min8(v, m) / max8(v, m): m where v is NaN (minps semantics: the second operand wins
 * when either is NaN), so NaN never enters a running minimum or maximum */
#if defined(__AVX__)
static inline v8f min8(v8f a, v8f b) { return (v8f)_mm256_min_ps((__m256)a, (__m256)b); }
static inline v8f max8(v8f a, v8f b) { return (v8f)_mm256_max_ps((__m256)a, (__m256)b); }
#elif defined(__SSE__)
typedef float v4f __attribute__((vector_size(16)));
static inline v8f min8(v8f a, v8f b) {
    v4f a0 = {a[0], a[1], a[2], a[3]}, a1 = {a[4], a[5], a[6], a[7]};
    v4f b0 = {b[0], b[1], b[2], b[3]}, b1 = {b[4], b[5], b[6], b[7]};
    v4f r0 = (v4f)_mm_min_ps((__m128)a0, (__m128)b0), r1 = (v4f)_mm_min_ps((__m128)a1, (__m128)b1);
    return (v8f){r0[0], r0[1], r0[2], r0[3], r1[0], r1[1], r1[2], r1[3]};
}
static inline v8f max8(v8f a, v8f b) {
    v4f a0 = {a[0], a[1], a[2], a[3]}, a1 = {a[4], a[5], a[6], a[7]};
    v4f b0 = {b[0], b[1], b[2], b[3]}, b1 = {b[4], b[5], b[6], b[7]};
    v4f r0 = (v4f)_mm_max_ps((__m128)a0, (__m128)b0), r1 = (v4f)_mm_max_ps((__m128)a1, (__m128)b1);
    return (v8f){r0[0], r0[1], r0[2], r0[3], r1[0], r1[1], r1[2], r1[3]};
}
#else
static inline v8f select8(v8i mask, v8f a, v8f b) {
    return (v8f)((mask & (v8i)a) | (~mask & (v8i)b));
}
static inline v8f min8(v8f a, v8f b) { return select8(a < b, a, b); }
static inline v8f max8(v8f a, v8f b) { return select8(a > b, a, b); }
#endif

static inline v8f abs8(v8f a) { return (v8f)((v8i)a & 0x7fffffff); }

static inline float lanes_sum(v8f v) {
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

typedef struct {
    v8f lo, hi;
    float tail_lo, tail_hi;
    double sum;
} Stats;

static void stats_init(Stats *s) {
    for (int j = 0; j < LANES; j++) {
        s->lo[j] = INFINITY;
        s->hi[j] = -INFINITY;
    }
    s->tail_lo = INFINITY;
    s->tail_hi = -INFINITY;
    s->sum = 0.0;
}

static inline void add_to(float *acc, v8f v) {
    v8f a = load8(acc) + v;
    memcpy(acc, &a, sizeof a);
}

/* min, max and sum of x[0:n); with acc, also acc[i] += x[i] (the sum over channels).
 * Four independent vectors per step, so that no step waits on the one before. */
static void stats_add(Stats *s, const float *restrict x, int64_t n, float *restrict acc) {
    v8f lo0 = s->lo, lo1 = lo0, hi0 = s->hi, hi1 = hi0;
    int64_t i = 0;
    while (i + LANES <= n) {
        int64_t end = i + BLOCK < n ? i + BLOCK : n;
        v8f t0 = {0}, t1 = {0}, t2 = {0}, t3 = {0};
        for (; i + 4 * LANES <= end; i += 4 * LANES) {
            v8f a = load8(x + i), b = load8(x + i + 8), c = load8(x + i + 16),
                d = load8(x + i + 24);
            lo0 = min8(a, lo0), lo1 = min8(b, lo1), lo0 = min8(c, lo0), lo1 = min8(d, lo1);
            hi0 = max8(a, hi0), hi1 = max8(b, hi1), hi0 = max8(c, hi0), hi1 = max8(d, hi1);
            t0 += a, t1 += b, t2 += c, t3 += d;
            if (acc) {
                add_to(acc + i, a), add_to(acc + i + 8, b);
                add_to(acc + i + 16, c), add_to(acc + i + 24, d);
            }
        }
        for (; i + LANES <= end; i += LANES) {
            v8f a = load8(x + i);
            lo0 = min8(a, lo0), hi0 = max8(a, hi0), t0 += a;
            if (acc) add_to(acc + i, a);
        }
        s->sum += (double)lanes_sum((t0 + t1) + (t2 + t3));
    }
    for (; i < n; i++) {
        float v = x[i];
        s->tail_lo = v < s->tail_lo ? v : s->tail_lo;
        s->tail_hi = v > s->tail_hi ? v : s->tail_hi;
        s->sum += (double)v;
        if (acc) acc[i] += v;
    }
    s->lo = min8(lo1, lo0);
    s->hi = max8(hi1, hi0);
}

/* stats_add of x[0:n) (no channel sums), returning the sum of x*x over it (float lanes
 * gathered in double, as abs_sum does): a token's statistics and norm in one read */
static double stats_add_squares(Stats *s, const float *restrict x, int64_t n) {
    v8f lo0 = s->lo, lo1 = lo0, hi0 = s->hi, hi1 = hi0;
    double squares = 0.0;
    int64_t i = 0;
    while (i + LANES <= n) {
        int64_t end = i + BLOCK < n ? i + BLOCK : n;
        v8f t0 = {0}, t1 = {0}, q0 = {0}, q1 = {0};
        for (; i + 2 * LANES <= end; i += 2 * LANES) {
            v8f a = load8(x + i), b = load8(x + i + 8);
            lo0 = min8(a, lo0), lo1 = min8(b, lo1), hi0 = max8(a, hi0), hi1 = max8(b, hi1);
            t0 += a, t1 += b, q0 += a * a, q1 += b * b;
        }
        for (; i + LANES <= end; i += LANES) {
            v8f a = load8(x + i);
            lo0 = min8(a, lo0), hi0 = max8(a, hi0), t0 += a, q0 += a * a;
        }
        s->sum += (double)lanes_sum(t0 + t1);
        squares += (double)lanes_sum(q0 + q1);
    }
    for (; i < n; i++) {
        float v = x[i];
        s->tail_lo = v < s->tail_lo ? v : s->tail_lo;
        s->tail_hi = v > s->tail_hi ? v : s->tail_hi;
        s->sum += (double)v;
        squares += (double)v * v;
    }
    s->lo = min8(lo1, lo0);
    s->hi = max8(hi1, hi0);
    return squares;
}

static void stats_out(const Stats *s, double *out) {
    float lo = s->tail_lo, hi = s->tail_hi;
    for (int j = 0; j < LANES; j++) {
        lo = s->lo[j] < lo ? s->lo[j] : lo;
        hi = s->hi[j] > hi ? s->hi[j] : hi;
    }
    out[0] = lo;
    out[1] = hi;
    out[2] = s->sum;
}

/* sum of |x| over x[0:n), float lanes gathered in double (squares: stats_add_squares) */
static double abs_sum(const float *restrict x, int64_t n) {
    double sum = 0.0;
    int64_t i = 0;
    while (i + LANES <= n) {
        int64_t end = i + BLOCK < n ? i + BLOCK : n;
        v8f t0 = {0}, t1 = {0};
        for (; i + 2 * LANES <= end; i += 2 * LANES)
            t0 += abs8(load8(x + i)), t1 += abs8(load8(x + i + 8));
        for (; i + LANES <= end; i += LANES) t0 += abs8(load8(x + i));
        sum += (double)lanes_sum(t0 + t1);
    }
    for (; i < n; i++) sum += fabs((double)x[i]);
    return sum;
}

/* Statistics of the batch elements other than `sample`, each `block` elements long. */
static void stats_others(Stats *s, const float *x, int64_t n_batch, int64_t block,
                         int64_t sample) {
    for (int64_t b = 0; b < n_batch; b++)
        if (b != sample) stats_add(s, x + b * block, block, NULL);
}

#endif
