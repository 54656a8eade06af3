/* Capture's reductions of a float32 CPU activation, fused into one call (see _native/__init__.py).
 *
 * A forward hook that reduces an activation with torch or numpy calls runs some twenty
 * distinct kernels, and each pays tens of microseconds to bring its code and data back into
 * the caches right after the model's own op (benchmarks/bench_cold.py measures it).  These
 * functions do the same work in one call and one pass over each element:
 *
 *   nfw_image_f32     (N, C, H, W): min / max / sum over the whole tensor, the summary's
 *                     chunk sample, and for batch element `sample` the channels' mean |x|
 *                     over every `rank_step`-th row, the `k` most active channels, every
 *                     channel pooled to the grid, the chosen channels pooled to the top maps,
 *                     and the mean over channels pooled.
 *   nfw_sequence_f32  (N, L, D): the same statistics and sample, and for `sample` the
 *                     token x feature map pooled and the per-token L2 norms (pooled).
 *
 * Both write min, max, sum and the float16 scale to `stats`, and the float16 parts to `f16`
 * as they are made (divided by `hint`, rounded to nearest even: numpy's conversion takes
 * several nanoseconds an element); they return 1 when the scale is not `hint` (the caller
 * runs again with it), else 0.  `work` is scratch.  nfw_to_half converts on its own.
 *
 * Pooling has adaptive_avg_pool2d's windows: window i of n -> p covers
 * [floor(i n / p), ceil((i + 1) n / p)).  Sums run in eight float lanes in blocks and are
 * gathered in double.  Minimum and maximum skip NaN (a comparison with NaN is false) while
 * the sum takes it in: the caller sees a NaN or Inf from the sum, min and max, and redoes
 * such a tensor on its masked path.  Built without -ffast-math (which would change the
 * process's denormal handling) and without FMA contraction, so that both builds (baseline
 * and AVX2) give the same numbers.
 */

#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE__) || defined(__F16C__)
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

/* sum of |x| (abs) or of x*x (!abs) over x[0:n), float lanes gathered in double */
static double lane_sum(const float *restrict x, int64_t n, int squares) {
    double sum = 0.0;
    int64_t i = 0;
    while (i + LANES <= n) {
        int64_t end = i + BLOCK < n ? i + BLOCK : n;
        v8f t0 = {0}, t1 = {0};
        if (squares) {
            for (; i + 2 * LANES <= end; i += 2 * LANES) {
                v8f a = load8(x + i), b = load8(x + i + 8);
                t0 += a * a, t1 += b * b;
            }
            for (; i + LANES <= end; i += LANES) t0 += load8(x + i) * load8(x + i);
        } else {
            for (; i + 2 * LANES <= end; i += 2 * LANES)
                t0 += abs8(load8(x + i)), t1 += abs8(load8(x + i + 8));
            for (; i + LANES <= end; i += LANES) t0 += abs8(load8(x + i));
        }
        sum += (double)lanes_sum(t0 + t1);
    }
    for (; i < n; i++) sum += squares ? (double)x[i] * x[i] : fabs((double)x[i]);
    return sum;
}

/* The summary's chunk sample: `rows` runs of `width` elements, every `step`-th run starting
 * at run `first` (rows == 0: all n elements). */
static void copy_sample(const float *x, int64_t n, int64_t width, int64_t step, int64_t first,
                        int64_t rows, float *out) {
    if (rows == 0) {
        memcpy(out, x, (size_t)n * sizeof(float));
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        memcpy(out + r * width, x + (first + r * step) * width, (size_t)width * sizeof(float));
}

/* Pooling windows of one map geometry, computed once per call (a division per window
 * edge per channel would cost more than the additions).  Window i of n -> p covers
 * [floor(i n / p), ceil((i + 1) n / p)). */
#define MAX_POOLED 256
#define SMALL_MAP 64 /* maps of at most this many cells: a weight matrix pools both axes */
#define SMALL_CHANNEL 1024 /* channels of at most this many cells are pooled as a block */
typedef struct {
    int64_t h, w, ph, pw;
    int32_t rs[MAX_POOLED], re[MAX_POOLED], cs[MAX_POOLED], ce[MAX_POOLED];
    float col_inv[MAX_POOLED]; /* 1 / columns per window */
    float dense[SMALL_MAP * SMALL_MAP]; /* small maps: weight of cell e in output o at [e][o] */
} Windows;

/* Adaptive windows of n -> p without a division per window: i n = q p + r, stepped. */
static void window_edges(int64_t n, int64_t p, int32_t *start, int32_t *end) {
    const int64_t whole = n / p, part = n % p;
    int64_t q = 0, r = 0; /* i n = q p + r, 0 <= r < p */
    for (int64_t i = 0; i < p; i++) {
        start[i] = (int32_t)q;
        q += whole, r += part;
        if (r >= p) q++, r -= p;
        end[i] = (int32_t)(q + (r != 0)); /* ceil((i + 1) n / p) */
    }
}

static void windows_init(Windows *win, int64_t h, int64_t w, int64_t ph, int64_t pw) {
    win->h = h, win->w = w, win->ph = ph, win->pw = pw;
    if (ph <= 0 || pw <= 0 || (ph == h && pw == w)) return; /* nothing pooled: a copy */
    window_edges(h, ph, win->rs, win->re);
    window_edges(w, pw, win->cs, win->ce);
    for (int64_t j = 0; j < pw; j++) win->col_inv[j] = 1.0f / (float)(win->ce[j] - win->cs[j]);
    if (h * w <= SMALL_MAP) {
        memset(win->dense, 0, (size_t)(h * w) * SMALL_MAP * sizeof(float));
        for (int64_t i = 0; i < ph; i++)
            for (int64_t j = 0; j < pw; j++) {
                float weight = 1.0f / (float)((win->re[i] - win->rs[i]) * (win->ce[j] - win->cs[j]));
                for (int64_t r = win->rs[i]; r < win->re[i]; r++)
                    for (int64_t q = win->cs[j]; q < win->ce[j]; q++)
                        win->dense[(r * w + q) * SMALL_MAP + i * pw + j] = weight;
            }
    }
}

/* dst[j] = f * (sum of src[k j : k j + k]) for j < n; loops the compiler vectorises */
static void sum_groups(const float *restrict src, int64_t n, int64_t k, float f,
                       float *restrict dst) {
    switch (k) {
    case 1:
        for (int64_t j = 0; j < n; j++) dst[j] = src[j] * f;
        return;
    case 2:
        for (int64_t j = 0; j < n; j++) dst[j] = (src[2 * j] + src[2 * j + 1]) * f;
        return;
    case 3:
        for (int64_t j = 0; j < n; j++) dst[j] = (src[3 * j] + src[3 * j + 1] + src[3 * j + 2]) * f;
        return;
    case 4:
        for (int64_t j = 0; j < n; j++)
            dst[j] = ((src[4 * j] + src[4 * j + 1]) + (src[4 * j + 2] + src[4 * j + 3])) * f;
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        float total = 0.0f;
        for (int64_t q = 0; q < k; q++) total += src[k * j + q];
        dst[j] = total * f;
    }
}

/* Pool one row (w values) to pw columns, times scale. */
static void pool_columns(const Windows *win, const float *restrict src, float *restrict dst,
                         float scale) {
    const int64_t w = win->w, pw = win->pw;
    if (w % pw == 0 && w / pw <= 4) { /* equal short windows */
        sum_groups(src, pw, w / pw, scale * win->col_inv[0], dst);
        return;
    }
    for (int64_t j = 0; j < pw; j++) {
        int64_t q = win->cs[j], end = win->ce[j];
        v8f lanes = {0};
        for (; q + LANES <= end; q += LANES) lanes += load8(src + q); /* wide windows */
        float total = lanes_sum(lanes);
        for (; q < end; q++) total += src[q];
        dst[j] = total * (scale * win->col_inv[j]);
    }
}

/* Pooled row i of the map m (win's windows) into dst; row: w floats of scratch. */
static void pool_row(const Windows *win, const float *restrict m, int64_t i,
                     float *restrict dst, float *restrict row) {
    const int64_t w = win->w, start = win->rs[i], end = win->re[i];
    const float *src = m + start * w;
    if (end - start > 1) { /* (no copy first: a load right after a store of it stalls) */
        const float *restrict first = src, *restrict second = src + w;
        for (int64_t q = 0; q < w; q++) row[q] = first[q] + second[q];
        for (int64_t r = start + 2; r < end; r++) {
            const float *restrict next = m + r * w;
            for (int64_t q = 0; q < w; q++) row[q] += next[q];
        }
        src = row;
    }
    pool_columns(win, src, dst, 1.0f / (float)(end - start));
}

/* Average pool of the map m to win's size into out; row: w floats of scratch. */
static void pool_map(const Windows *win, const float *restrict m, float *restrict out,
                     float *restrict row) {
    const int64_t w = win->w, ph = win->ph, pw = win->pw, cells = win->h * w;
    if (ph == win->h && pw == w) {
        memcpy(out, m, (size_t)(ph * w) * sizeof(float));
        return;
    }
    if (cells <= SMALL_MAP) { /* out = m . dense, one output vector of at most 64 */
        /* the running outputs stay in registers: eight vectors, of which `used` count */
        const int64_t outputs = ph * pw, used = (outputs + LANES - 1) / LANES;
        v8f t[SMALL_MAP / LANES] = {{0}};
        for (int64_t e = 0; e < cells; e++) {
            const v8f v = {m[e], m[e], m[e], m[e], m[e], m[e], m[e], m[e]};
            const float *restrict weights = win->dense + e * SMALL_MAP;
            for (int64_t o = 0; o < SMALL_MAP / LANES; o++)
                if (o < used) t[o] += v * load8(weights + o * LANES);
        }
        float total[SMALL_MAP];
        memcpy(total, t, sizeof total);
        memcpy(out, total, (size_t)outputs * sizeof(float));
        return;
    }
    for (int64_t i = 0; i < ph; i++) pool_row(win, m, i, out + i * pw, row);
}

/* The weight-matrix pooling of two small maps (consecutive in x and in out) to at most 32
 * outputs each: two independent sets of running sums, so that neither waits on the other. */
static void pool_dense_two(const Windows *win, const float *restrict x, float *restrict out) {
    const int64_t cells = win->h * win->w, outputs = win->ph * win->pw;
    const float *restrict a = x, *restrict b = x + cells;
    v8f s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, u0 = {0}, u1 = {0}, u2 = {0}, u3 = {0};
    for (int64_t e = 0; e < cells; e++) {
        const float *restrict weights = win->dense + e * SMALL_MAP;
        const v8f w0 = load8(weights), w1 = load8(weights + 8), w2 = load8(weights + 16),
                  w3 = load8(weights + 24);
        const v8f va = {a[e], a[e], a[e], a[e], a[e], a[e], a[e], a[e]};
        const v8f vb = {b[e], b[e], b[e], b[e], b[e], b[e], b[e], b[e]};
        s0 += va * w0, s1 += va * w1, s2 += va * w2, s3 += va * w3;
        u0 += vb * w0, u1 += vb * w1, u2 += vb * w2, u3 += vb * w3;
    }
    float total[8 * LANES];
    memcpy(total, &s0, sizeof s0), memcpy(total + 8, &s1, sizeof s1);
    memcpy(total + 16, &s2, sizeof s2), memcpy(total + 24, &s3, sizeof s3);
    memcpy(total + 32, &u0, sizeof u0), memcpy(total + 40, &u1, sizeof u1);
    memcpy(total + 48, &u2, sizeof u2), memcpy(total + 56, &u3, sizeof u3);
    memcpy(out, total, (size_t)outputs * sizeof(float));
    memcpy(out + outputs, total + 32, (size_t)outputs * sizeof(float));
}

/* pool_map of each of c maps stored one after another (c x h x w) into out (c x ph x pw).
 * Windows that divide both axes: two flat passes over the whole block, so that small maps
 * (many channels of a few dozen cells) pay no loop overhead per channel; tmp: c h pw floats.
 * Other windows: map by map. */
static void pool_block(const Windows *win, const float *restrict x, int64_t c,
                       float *restrict out, float *restrict row, float *restrict tmp) {
    const int64_t h = win->h, w = win->w, ph = win->ph, pw = win->pw;
    if (ph == h && pw == w) {
        memcpy(out, x, (size_t)(c * h * w) * sizeof(float));
        return;
    }
    if (h % ph || w % pw) {
        int64_t ch = 0;
        if (h * w <= SMALL_MAP && ph * pw <= 4 * LANES)
            for (; ch + 1 < c; ch += 2)
                pool_dense_two(win, x + ch * h * w, out + ch * ph * pw);
        for (; ch < c; ch++) pool_map(win, x + ch * h * w, out + ch * ph * pw, row);
        return;
    }
    const int64_t kh = h / ph, kw = w / pw, rows = c * ph;
    sum_groups(x, c * h * pw, kw, 1.0f / (float)(kh * kw), tmp); /* every row's columns */
    for (int64_t o = 0; o < rows; o++) { /* then each group of kh rows, summed in registers */
        const float *restrict group = tmp + o * kh * pw;
        float *restrict dst = out + o * pw;
        if (kh == 2) {
            for (int64_t j = 0; j < pw; j++) dst[j] = group[j] + group[pw + j];
            continue;
        }
        for (int64_t j = 0; j < pw; j++) {
            float total = group[j];
            for (int64_t r = 1; r < kh; r++) total += group[r * pw + j];
            dst[j] = total;
        }
    }
}

/* Average pool of the n values of x to p (1-D, any p), into out. */
static void pool_1d(const float *restrict x, int64_t n, int64_t p, float *restrict out) {
    for (int64_t j = 0; j < p; j++) {
        int64_t start = j * n / p, end = ((j + 1) * n + p - 1) / p;
        double total = 0.0;
        for (int64_t q = start; q < end; q++) total += x[q];
        out[j] = (float)(total / (double)(end - start));
    }
}

/* float32 -> float16 bits, round to nearest even; overflow gives Inf, NaN stays NaN */
static inline uint16_t half_bits(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: rounds to Inf */
    if (ax < 0x38800000u) { /* below 2**-14: a float16 subnormal (or zero) */
        float a;
        memcpy(&a, &ax, sizeof a);
        a += 0.5f; /* the float unit rounds at the float16 subnormal step, 2**-24 */
        uint32_t r;
        memcpy(&r, &a, sizeof r);
        return (uint16_t)(sign | (r - 0x3f000000u));
    }
    /* rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even */
    ax += 0xc8000fffu + ((ax >> 13) & 1u);
    return (uint16_t)(sign | (ax >> 13));
}

int64_t nfw_to_half(const float *restrict src, int64_t n, float multiplier,
                    uint16_t *restrict dst) {
    int64_t i = 0;
#ifdef __F16C__
    __m256 m = _mm256_set1_ps(multiplier);
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(src + i), m);
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
#endif
    for (; i < n; i++) dst[i] = half_bits(src[i] * multiplier);
    return 0;
}

/* The power of two that float16 parts are divided by (the rule of _retain._scale_for): 1 when
 * float16 holds the peak |x| well (2**-10 <= peak < 2**15) or there is nothing to scale,
 * else the one putting the peak in [2**14, 2**15). */
static double half_scale(double lo, double hi) {
    double peak = -lo > hi ? -lo : hi;
    if (!isfinite(peak) || peak == 0.0 || (peak >= 0x1p-10 && peak < 0x1p15)) return 1.0;
    int exponent;
    frexp(peak, &exponent);
    return ldexp(1.0, exponent - 15);
}

/* stats <- min, max, sum, scale.  The float16 parts were written divided by `hint`, the scale
 * expected (1: most activations); 1 when the scale differs (the caller runs again with it),
 * else 0.  A tensor with NaN or Inf returns 0: the caller redoes it on its masked path. */
static int64_t finish(const Stats *s, double *stats, double hint) {
    stats_out(s, stats);
    stats[3] = half_scale(stats[0], stats[1]);
    return isfinite(stats[0] + stats[1] + stats[2]) && stats[3] != hint;
}

/* The map m pooled to win's size, times `multiplier`, as float16 into dst (tmp: the pooled
 * float32, row: scratch); a map kept whole is converted as it is. */
static void emit(const Windows *win, const float *m, float multiplier, uint16_t *dst,
                 float *tmp, float *row) {
    const float *pooled = m;
    if (win->ph != win->h || win->pw != win->w) {
        pool_map(win, m, tmp, row);
        pooled = tmp;
    }
    nfw_to_half(pooled, win->ph * win->pw, multiplier, dst);
}

/* acc[p] = sum over the c maps (of hw cells, one after another) of cell p: the running
 * sums of a run of cells stay in registers while every channel goes by. */
static void channel_sum(const float *restrict x, int64_t c, int64_t hw, float *restrict acc) {
    int64_t p = 0;
    for (; p + 4 * LANES <= hw; p += 4 * LANES) {
        v8f t0 = {0}, t1 = {0}, t2 = {0}, t3 = {0};
        for (int64_t ch = 0; ch < c; ch++) {
            const float *m = x + ch * hw + p;
            t0 += load8(m), t1 += load8(m + 8), t2 += load8(m + 16), t3 += load8(m + 24);
        }
        memcpy(acc + p, &t0, sizeof t0), memcpy(acc + p + 8, &t1, sizeof t1);
        memcpy(acc + p + 16, &t2, sizeof t2), memcpy(acc + p + 24, &t3, sizeof t3);
    }
    for (; p + LANES <= hw; p += LANES) {
        v8f t = {0};
        for (int64_t ch = 0; ch < c; ch++) t += load8(x + ch * hw + p);
        memcpy(acc + p, &t, sizeof t);
    }
    for (; p < hw; p++) {
        float t = 0.0f;
        for (int64_t ch = 0; ch < c; ch++) t += x[ch * hw + p];
        acc[p] = t;
    }
}

/* Statistics of the batch elements other than `sample`, each `block` elements long. */
static void stats_others(Stats *s, const float *x, int64_t n_batch, int64_t block,
                         int64_t sample) {
    for (int64_t b = 0; b < n_batch; b++)
        if (b != sample) stats_add(s, x + b * block, block, NULL);
}

/* What one shape needs, in an int64 array the caller keeps per shape (one pointer to pass
 * instead of twenty integers): */
enum { I_N, I_C, I_H, I_W, I_WIDTH, I_STEP, I_FIRST, I_ROWS, I_RANK_STEP, I_K, I_GH, I_GW,
       I_MH, I_MW, I_TH, I_TW, I_AT_TOP, I_AT_MEAN_ABS, I_AT_F16 }; /* image */
enum { S_N, S_L, S_D, S_WIDTH, S_STEP, S_FIRST, S_ROWS, S_HL, S_HD, S_NORMS, S_AT_NORMS,
       S_AT_F16 }; /* sequence */

/* out: one buffer for what is kept, at the byte offsets the parameters give */
int64_t nfw_image_f32(const int64_t *p, const float *x, int64_t sample, double *stats,
                      float *sample_out, char *out, float *work, double hint) {
    const int64_t n_batch = p[I_N], c = p[I_C], h = p[I_H], w = p[I_W];
    const int64_t s_width = p[I_WIDTH], s_step = p[I_STEP], s_first = p[I_FIRST],
                  s_rows = p[I_ROWS], rank_step = p[I_RANK_STEP];
    int64_t k = p[I_K];
    const int64_t gh = p[I_GH], gw = p[I_GW], mh = p[I_MH], mw = p[I_MW], th = p[I_TH],
                  tw = p[I_TW];
    int64_t *top = (int64_t *)(out + p[I_AT_TOP]);
    float *mean_abs = (float *)(out + p[I_AT_MEAN_ABS]);
    uint16_t *f16 = (uint16_t *)(out + p[I_AT_F16]);
    const int64_t hw = h * w, numel = n_batch * c * hw;
    const float *xs = x + sample * c * hw;
    int64_t most = gh * gw > mh * mw ? gh * gw : mh * mw;
    if (th * tw > most) most = th * tw;
    /* work: the channel sums, a row, one pooled map, and for small maps the pooled block */
    float *acc = work, *row = acc + hw, *tmp = row + w, *block = tmp + most;
    const float multiplier = (float)(1.0 / hint);
    Stats s;
    stats_init(&s);
    stats_others(&s, x, n_batch, c * hw, sample);

    /* rank the channels by mean |x| over every rank_step-th row, starting half a step in */
    int64_t ranked_rows = 0;
    for (int64_t r = rank_step / 2; r < h; r += rank_step) ranked_rows++;
    for (int64_t ch = 0; ch < c; ch++) {
        double total = 0.0;
        if (rank_step == 1) /* every row: one contiguous run */
            total = lane_sum(xs + ch * hw, hw, 0);
        else
            for (int64_t r = rank_step / 2; r < h; r += rank_step)
                total += lane_sum(xs + ch * hw + r * w, w, 0);
        mean_abs[ch] = (float)(total / (double)(ranked_rows * w));
    }
    /* the k most active, largest first, ties to the lower index: insertion into a sorted
     * list of k, which most channels pass with one comparison */
    int64_t chosen[64], n_chosen = 0;
    if (k > 64) k = 64;
    if (k > c) k = c;
    for (int64_t ch = 0; th > 0 && ch < c; ch++) {
        float v = mean_abs[ch];
        if (n_chosen == k && !(v > mean_abs[chosen[k - 1]])) continue;
        int64_t at = n_chosen < k ? n_chosen++ : k - 1;
        while (at > 0 && v > mean_abs[chosen[at - 1]]) {
            chosen[at] = chosen[at - 1];
            at--;
        }
        chosen[at] = ch;
    }
    for (int64_t i = 0; i < n_chosen; i++) top[i] = chosen[i];

    uint16_t *grid = f16, *mean = grid + c * gh * gw, *tops = mean + mh * mw;
    Windows to_grid, to_top, to_mean;
    windows_init(&to_grid, h, w, gh, gw);
    windows_init(&to_top, h, w, th, tw);
    windows_init(&to_mean, h, w, mh, mw);
    if (hw <= SMALL_CHANNEL) { /* small maps: flat passes over the whole sample */
        stats_add(&s, xs, c * hw, NULL);
        channel_sum(xs, c, hw, acc);
        if (gh == h && gw == w) {
            nfw_to_half(xs, c * hw, multiplier, grid);
        } else {
            pool_block(&to_grid, xs, c, block, row, block + c * gh * gw);
            nfw_to_half(block, c * gh * gw, multiplier, grid);
        }
        for (int64_t i = 0; th > 0 && i < k; i++)
            emit(&to_top, xs + chosen[i] * hw, multiplier, tops + i * th * tw, tmp, row);
    } else {
        memset(acc, 0, (size_t)hw * sizeof(float));
        for (int64_t ch = 0; ch < c; ch++) { /* each map read once from memory */
            const float *m = xs + ch * hw;
            stats_add(&s, m, hw, acc);
            emit(&to_grid, m, multiplier, grid + ch * gh * gw, tmp, row);
            for (int64_t i = 0; th > 0 && i < k; i++)
                if (chosen[i] == ch) emit(&to_top, m, multiplier, tops + i * th * tw, tmp, row);
        }
    }
    /* the mean over channels: the channel sums pooled, over c (times the multiplier, a power
     * of two: one product, the same value) */
    emit(&to_mean, acc, multiplier / (float)c, mean, tmp, row);
    copy_sample(x, numel, s_width, s_step, s_first, s_rows, sample_out);
    return finish(&s, stats, hint);
}

int64_t nfw_sequence_f32(const int64_t *p, const float *x, int64_t sample, double *stats,
                         float *sample_out, char *out, float *work, double hint) {
    const int64_t n_batch = p[S_N], length = p[S_L], dim = p[S_D];
    const int64_t s_width = p[S_WIDTH], s_step = p[S_STEP], s_first = p[S_FIRST],
                  s_rows = p[S_ROWS], hl = p[S_HL], hd = p[S_HD], n_norms = p[S_NORMS];
    float *norms = (float *)(out + p[S_AT_NORMS]);
    uint16_t *f16 = (uint16_t *)(out + p[S_AT_F16]);
    const int64_t numel = n_batch * length * dim;
    const float *xs = x + sample * length * dim;
    float *token_norms = work, *row = token_norms + length, *pooled = row + dim;
    const float multiplier = (float)(1.0 / hint);
    Stats s;
    stats_init(&s);
    stats_others(&s, x, n_batch, length * dim, sample);
    /* row by row, so that each token is read from memory once: its statistics and norm,
     * then its window of rows pooled while they are still in the cache */
    Windows win;
    windows_init(&win, length, dim, hl, hd);
    const int copy = hl == length && hd == dim;
    int64_t done = 0; /* rows read so far (windows may share a row) */
    for (int64_t i = 0; i < hl; i++) {
        int64_t end = copy ? i + 1 : win.re[i];
        for (; done < end; done++) {
            const float *token = xs + done * dim;
            stats_add(&s, token, dim, NULL);
            token_norms[done] = (float)sqrt(lane_sum(token, dim, 1));
        }
        if (copy) {
            nfw_to_half(xs + i * dim, dim, multiplier, f16 + i * dim);
        } else {
            pool_row(&win, xs, i, pooled, row);
            nfw_to_half(pooled, hd, multiplier, f16 + i * hd);
        }
    }
    if (n_norms == length)
        memcpy(norms, token_norms, (size_t)length * sizeof(float));
    else
        pool_1d(token_norms, length, n_norms, norms);
    copy_sample(x, numel, s_width, s_step, s_first, s_rows, sample_out);
    return finish(&s, stats, hint);
}

/* The interface's version: the loader refuses a build whose version is not its own (a stale
 * library left by an earlier build would otherwise be called with other arguments). */
int64_t nfw_version(void) { return 2; }

/* 1 when this processor runs the AVX2 build (AVX2 and F16C). */
int64_t nfw_has_avx2(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
#else
    return 0;
#endif
}
