/* Capture's reductions of a float32 CPU activation, fused into one call (see __init__.py).
 *
 * A forward hook that reduces an activation with torch or numpy calls runs some twenty
 * distinct kernels, and each pays tens of microseconds to bring its code and data back into
 * the caches right after the model's own op (benchmarks/bench_cold.py measures it).  These
 * functions do the same work in one call, reading each element of the kept sample from
 * memory once (what else reads it, reads it from the first-level cache), the other batch
 * elements once for their statistics:
 *
 *   nfw_image_f32     (N, C, H, W): min / max / sum over the whole tensor, the summary's
 *                     chunk sample, and for batch element `sample` the channels' mean |x|
 *                     over every `rank_step`-th row, the `k` most active channels, every
 *                     channel pooled to the grid, the chosen channels pooled to the top maps,
 *                     and the mean over channels pooled.
 *   nfw_sequence_f32  (N, L, D): the same statistics and sample, and for `sample` the
 *                     token x feature map pooled and the per-token L2 norms (pooled).
 *   nfw_flat_f32      any shape, as its values: the statistics, the sample and the L2 norm
 *                     (a parameter's gradient, whose summary is all that is kept).
 *
 * The first two take their shape's parameters as one struct (below), write min, max, sum
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

#define ACC_BLOCK 2048 /* cells read together from every channel, then pooled (8 KB) */

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

/* The power of two that float16 parts are divided by (the rule of retained.scale_for): 1 when
 * float16 holds the peak |x| well (2**-10 <= peak < 2**15) or there is nothing to scale,
 * else the one putting the peak in [2**14, 2**15), and never below 2**-126 (float32's
 * smallest normal number: the scale and its inverse stay float32 numbers). */
static double half_scale(double lo, double hi) {
    double peak = -lo > hi ? -lo : hi;
    if (!isfinite(peak) || peak == 0.0 || (peak >= 0x1p-10 && peak < 0x1p15)) return 1.0;
    int exponent;
    frexp(peak, &exponent);
    return ldexp(1.0, exponent - 15 < -126 ? -126 : exponent - 15);
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

/* What one shape needs, in a struct the caller keeps per shape (one pointer to pass instead
 * of twenty integers).  Mirrored field by field by ImageParams / SequenceParams in
 * __init__.py, which refuses a build whose sizes (nfw_params_size) are not its own. */
typedef struct {
    int64_t n, c, h, w;                  /* the shape */
    int64_t width, step, first, rows;    /* the summary's chunk sample (rows 0: all) */
    int64_t rank_step, k;                /* rows read to rank channels; top channels kept */
    int64_t gh, gw, mh, mw, th, tw;      /* grid, mean and top map sizes */
    int64_t at_top, at_mean_abs, at_f16; /* byte offsets of the parts in `out` */
} ImageParams;

typedef struct {
    int64_t n, length, dim;
    int64_t width, step, first, rows;
    int64_t hl, hd, norms;               /* token map size, norms kept */
    int64_t at_norms, at_f16;
} SequenceParams;

/* out: one buffer for what is kept, at the byte offsets the parameters give */
int64_t nfw_image_f32(const ImageParams *p, const float *x, int64_t sample, double *stats,
                      float *sample_out, char *out, float *work, double hint) {
    const int64_t n_batch = p->n, c = p->c, h = p->h, w = p->w;
    const int64_t s_width = p->width, s_step = p->step, s_first = p->first, s_rows = p->rows,
                  rank_step = p->rank_step;
    int64_t k = p->k;
    const int64_t gh = p->gh, gw = p->gw, mh = p->mh, mw = p->mw, th = p->th, tw = p->tw;
    int64_t *top = (int64_t *)(out + p->at_top);
    float *mean_abs = (float *)(out + p->at_mean_abs);
    uint16_t *f16 = (uint16_t *)(out + p->at_f16);
    const int64_t hw = h * w, numel = n_batch * c * hw;
    const float *xs = x + sample * c * hw;
    int64_t most = gh * gw > mh * mw ? gh * gw : mh * mw;
    if (th * tw > most) most = th * tw;
    /* work: the channel sums, a row, one pooled map, and for small maps the pooled block */
    /* work: each channel's rank total, the channel sums, a row, one pooled map, and for small
     * maps the pooled block and the group's column sums */
    double *ranks = (double *)work;
    float *acc = work + 2 * c, *row = acc + hw, *tmp = row + w, *block = tmp + most;
    const float multiplier = (float)(1.0 / hint);
    Stats s;
    stats_init(&s);
    stats_others(&s, x, n_batch, c * hw, sample);

    uint16_t *grid = f16, *mean = grid + c * gh * gw, *tops = mean + mh * mw;
    Windows to_grid, to_top, to_mean;
    windows_init(&to_grid, h, w, gh, gw);
    windows_init(&to_top, h, w, th, tw);
    windows_init(&to_mean, h, w, mh, mw);
    const int whole = gh == h && gw == w; /* the grid keeps every cell */
    const int64_t rank_first = rank_step / 2;
    memset(acc, 0, (size_t)hw * sizeof(float));
    memset(ranks, 0, (size_t)c * sizeof(double));
    /* One read of each cell of the sample from memory: its statistics, its channel's sums
     * and its rank rows (every rank_step-th row, from half a step in: |x| summed in double),
     * then its pooling to the grid from the first-level cache. */
    if (hw <= SMALL_CHANNEL) {
        /* small maps: a group of whole channels (about ACC_BLOCK cells) at a time, pooled
         * together (pool_block's flat passes; groups of eight for pool_small_eight) */
        int64_t group = (ACC_BLOCK / hw) & ~(int64_t)7;
        if (group < 8) group = 8;
        float *sums = block + c * gh * gw; /* pool_block's scratch: group h gw floats */
        for (int64_t c0 = 0; c0 < c; c0 += group) {
            const int64_t n = c - c0 < group ? c - c0 : group;
            for (int64_t ch = c0; ch < c0 + n; ch++) {
                const float *m = xs + ch * hw;
                stats_add(&s, m, hw, acc);
                if (rank_step == 1)
                    ranks[ch] = abs_sum(m, hw);
                else
                    for (int64_t r = rank_first; r < h; r += rank_step)
                        ranks[ch] += abs_sum(m + r * w, w);
            }
            if (!whole) pool_block(&to_grid, xs + c0 * hw, n, block + c0 * gh * gw, row, sums);
        }
        nfw_to_half(whole ? xs : block, c * gh * gw, multiplier, grid);
    } else {
        /* large maps: band by band, a band being the rows of consecutive grid rows' windows
         * (about ACC_BLOCK cells; a row that two windows share counts once); each channel's
         * band gets its statistics, its share of the channel sums and its rank rows, then is
         * pooled to its grid rows while it is in the first-level cache */
        int64_t done = 0; /* rows counted so far */
        for (int64_t i0 = 0; i0 < gh;) {
            int64_t i1 = i0 + 1; /* the band: grid rows i0 .. i1 - 1 */
            const int64_t r0 = whole ? i0 : to_grid.rs[i0];
            while (i1 < gh && ((whole ? i1 + 1 : to_grid.re[i1]) - r0) * w <= ACC_BLOCK) i1++;
            const int64_t r1 = whole ? i1 : to_grid.re[i1 - 1];
            const int64_t from = done > r0 ? done : r0;
            int64_t rank_row = rank_first; /* the first rank row at or after `from` */
            if (from > rank_first)
                rank_row += (from - rank_first + rank_step - 1) / rank_step * rank_step;
            for (int64_t ch = 0; ch < c; ch++) {
                const float *m = xs + ch * hw;
                if (r1 > from) {
                    stats_add(&s, m + from * w, (r1 - from) * w, acc + from * w);
                    for (int64_t r = rank_row; r < r1; r += rank_step)
                        ranks[ch] += abs_sum(m + r * w, w);
                }
                float *pooled = tmp;
                if (whole)
                    pooled = (float *)(m + i0 * w);
                else
                    for (int64_t i = i0; i < i1; i++)
                        pool_row(&to_grid, m, i, tmp + (i - i0) * gw, row);
                nfw_to_half(pooled, (i1 - i0) * gw, multiplier, grid + (ch * gh + i0) * gw);
            }
            if (r1 > done) done = r1;
            i0 = i1;
        }
    }
    /* rank the channels by mean |x| over their rank rows */
    int64_t ranked_rows = 0;
    for (int64_t r = rank_first; r < h; r += rank_step) ranked_rows++;
    for (int64_t ch = 0; ch < c; ch++)
        mean_abs[ch] = (float)(ranks[ch] / (double)(ranked_rows * w));
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
    /* the chosen channels at the top maps' size (read again: k of c channels) */
    for (int64_t i = 0; th > 0 && i < k; i++)
        emit(&to_top, xs + chosen[i] * hw, multiplier, tops + i * th * tw, tmp, row);
    /* the mean over channels: the channel sums pooled, over c (times the multiplier, a power
     * of two: one product, the same value) */
    emit(&to_mean, acc, multiplier / (float)c, mean, tmp, row);
    copy_sample(x, numel, s_width, s_step, s_first, s_rows, sample_out);
    return finish(&s, stats, hint);
}

int64_t nfw_sequence_f32(const SequenceParams *p, const float *x, int64_t sample,
                         double *stats, float *sample_out, char *out, float *work, double hint) {
    const int64_t n_batch = p->n, length = p->length, dim = p->dim;
    const int64_t s_width = p->width, s_step = p->step, s_first = p->first, s_rows = p->rows,
                  hl = p->hl, hd = p->hd, n_norms = p->norms;
    float *norms = (float *)(out + p->at_norms);
    uint16_t *f16 = (uint16_t *)(out + p->at_f16);
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

/* Any float32 tensor, read as its n values (a parameter's gradient: a summary and no views):
 * min, max, sum and the sum of squares into stats[0..3] (the L2 norm is the root of the last),
 * and the summary's chunk sample, as copy_sample takes it. One read of x. */
int64_t nfw_flat_f32(const float *x, int64_t n, int64_t width, int64_t step, int64_t first,
                     int64_t rows, double *stats, float *sample_out) {
    Stats s;
    stats_init(&s);
    const double squares = stats_add_squares(&s, x, n);
    copy_sample(x, n, width, step, first, rows, sample_out);
#if defined(__SSE2__)
    _mm_sfence();
#endif
    stats_out(&s, stats);
    stats[3] = squares;
    return 0;
}

/* The interface's version: the loader refuses a build whose version is not its own (a stale
 * library left by an earlier build would otherwise be called with other arguments). */
int64_t nfw_version(void) { return 4; }

/* The size of each parameter struct (0: ImageParams, 1: SequenceParams), which the loader
 * checks against its own mirror of them; -1 for another kind. */
int64_t nfw_params_size(int64_t kind) {
    return kind == 0 ? (int64_t)sizeof(ImageParams)
                     : kind == 1 ? (int64_t)sizeof(SequenceParams) : -1;
}

/* 1 when this processor runs the AVX2 build (AVX2 and F16C). */
int64_t nfw_has_avx2(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
#else
    return 0;
#endif
}
