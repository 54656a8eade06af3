/* Capture's reductions of a float32 CPU activation, fused into one call (see __init__.py).
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
 * Both take their shape's parameters as one int64 array (enums below), write min, max, sum
 * and the float16 scale to `stats`, the sample to `sample_out`, and every kept part into the
 * one buffer `out` at the byte offsets the parameters give, the float16 parts as they are
 * made (divided by `hint`, rounded to nearest even: numpy's conversion takes several
 * nanoseconds an element); they return 1 when the scale is not `hint` (the caller runs
 * again with it), else 0.  `work` is scratch.  nfw_to_half converts on its own.
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
#if defined(__SSE2__) || defined(__F16C__)
#include <immintrin.h>
#endif

#include "lanes.h" /* eight float lanes, running statistics */
#include "pool.h"  /* adaptive average pooling */

#define ACC_BLOCK 2048 /* cells whose sums over channels are made together (8 KB) */

/* The summary's chunk sample: `rows` runs of `width` elements, every `step`-th run starting
 * at run `first` (rows == 0: all n elements).  Written with non-temporal stores where the
 * processor has them: the sample is read only after the pass, and ordinary stores would first
 * fetch the lines they write and push the model's data out of the cache. */
static void copy_sample(const float *x, int64_t n, int64_t width, int64_t step, int64_t first,
                        int64_t rows, float *out) {
    if (rows == 0) rows = 1, width = n, step = 0, first = 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *src = x + (first + r * step) * width;
        float *dst = out + r * width;
#if defined(__SSE2__)
        int32_t bits;
        for (int64_t i = 0; i < width; i++) {
            memcpy(&bits, src + i, sizeof bits);
            _mm_stream_si32((int *)(dst + i), bits);
        }
#else
        memcpy(dst, src, (size_t)width * sizeof(float));
#endif
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
    /* non-temporal, as copy_sample's (the reducers fence them in finish(); a call from
     * Python reads them back on this thread, which sees its own stores in order) */
    if (((uintptr_t)dst & 15) == 0) {
        for (; i + 8 <= n; i += 8) {
            __m256 v = _mm256_mul_ps(_mm256_loadu_ps(src + i), m);
            _mm_stream_si128((__m128i *)(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
        }
    }
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(src + i), m);
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
#endif
    for (; i < n; i++) dst[i] = half_bits(src[i] * multiplier);
    return 0;
}

/* The power of two that float16 parts are divided by (the rule of retained.half_scale): 1 when
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
#if defined(__SSE2__)
    _mm_sfence(); /* the non-temporal stores are done before the caller reads anything */
#endif
    stats_out(s, stats);
    stats[3] = half_scale(stats[0], stats[1]);
    return isfinite(stats[0] + stats[1] + stats[2]) && stats[3] != hint;
}

/* The map m pooled to win's size, times `multiplier`, as float16 into dst (tmp: the pooled
 * float32, row: scratch); a map kept whole is converted as it is. */
static void emit(const Windows *win, const float *m, float multiplier, uint16_t *dst,
                 float *tmp, float *row) {
    const float *pooled = m;
#if defined(__AVX2__) && defined(__F16C__)
    if (win->h == 2 * win->ph && win->w == 2 * win->pw && win->pw >= 8) {
        /* 2 x 2 windows: pooled and converted in one pass, the same products as below
         * (pool_row's, then nfw_to_half's) */
        const int64_t w = win->w, ph = win->ph, pw = win->pw;
        const float f = 0.5f * win->col_inv[0];
        const __m256 scale = _mm256_set1_ps(f), times = _mm256_set1_ps(multiplier);
        for (int64_t i = 0; i < ph; i++) {
            const float *restrict r0 = m + 2 * i * w, *restrict r1 = r0 + w;
            uint16_t *out = dst + i * pw;
            int64_t j = 0;
            for (; j + 8 <= pw; j += 8) {
                __m256 h = _mm256_mul_ps(_mm256_mul_ps(windows8(r0, r1, j), scale), times);
                _mm_storeu_si128((__m128i *)(out + j),
                                 _mm256_cvtps_ph(h, _MM_FROUND_TO_NEAREST_INT));
            }
            for (; j < pw; j++)
                out[j] = half_bits(((r0[2 * j] + r1[2 * j]) + (r0[2 * j + 1] + r1[2 * j + 1]))
                                   * f * multiplier);
        }
        return;
    }
#endif
    if (win->ph != win->h || win->pw != win->w) {
        pool_map(win, m, tmp, row);
        pooled = tmp;
    }
    nfw_to_half(pooled, win->ph * win->pw, multiplier, dst);
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
            total = abs_sum(xs + ch * hw, hw);
        else
            for (int64_t r = rank_step / 2; r < h; r += rank_step)
                total += abs_sum(xs + ch * hw + r * w, w);
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
        /* statistics and the sums over channels, a block of cells at a time: the block's
         * sums stay in the first-level cache while every channel adds to them */
        for (int64_t p0 = 0; p0 < hw; p0 += ACC_BLOCK) {
            const int64_t cells = hw - p0 < ACC_BLOCK ? hw - p0 : ACC_BLOCK;
            memset(acc + p0, 0, (size_t)cells * sizeof(float));
            for (int64_t ch = 0; ch < c; ch++) stats_add(&s, xs + ch * hw + p0, cells, acc + p0);
        }
        for (int64_t ch = 0; ch < c; ch++) { /* then each map pooled */
            const float *m = xs + ch * hw;
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
            token_norms[done] = (float)sqrt(stats_add_squares(&s, xs + done * dim, dim));
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
