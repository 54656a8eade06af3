/* Average pooling with adaptive_avg_pool2d's windows: window i of n -> p covers
 * [floor(i n / p), ceil((i + 1) n / p)).  Part of reduce.c (one translation unit); included
 * only there. */

#ifndef NFW_POOL_H
#define NFW_POOL_H

#include "lanes.h"

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

#if defined(__AVX2__)
/* Eight sums of neighbouring pairs, in order: a[2j] + a[2j + 1] for j < 8 (a: 16 floats in
 * two vectors) */
static inline __m256 pairs8(__m256 lo, __m256 hi) {
    __m256 h = _mm256_hadd_ps(lo, hi); /* [a0+a1, a2+a3, a8+a9, a10+a11 | a4+a5, ...] */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(h), 0xd8));
}

/* The eight 2 x 2 window sums (r0 + r1 in pairs) of output columns j .. j + 7 */
static inline __m256 windows8(const float *r0, const float *r1, int64_t j) {
    const float *a = r0 + 2 * j, *b = r1 + 2 * j;
    return pairs8(_mm256_add_ps(_mm256_loadu_ps(a), _mm256_loadu_ps(b)),
                  _mm256_add_ps(_mm256_loadu_ps(a + 8), _mm256_loadu_ps(b + 8)));
}
#endif

/* dst[j] = f * (sum of src[k j : k j + k]) for j < n; loops the compiler vectorises, and
 * for pairs and fours with AVX, horizontal adds (the compiler's own vectors for these
 * strided sums took three times longer): the same sums in the same order, so both builds
 * agree */
static void sum_groups(const float *restrict src, int64_t n, int64_t k, float f,
                       float *restrict dst) {
    int64_t j = 0;
#if defined(__AVX2__)
    const __m256 scale = _mm256_set1_ps(f);
    if (k == 2) {
        for (; j + 8 <= n; j += 8) {
            __m256 h = pairs8(_mm256_loadu_ps(src + 2 * j), _mm256_loadu_ps(src + 2 * j + 8));
            _mm256_storeu_ps(dst + j, _mm256_mul_ps(h, scale));
        }
    } else if (k == 4) {
        const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for (; j + 8 <= n; j += 8) {
            const float *g = src + 4 * j;
            __m256 h = _mm256_hadd_ps(
                _mm256_hadd_ps(_mm256_loadu_ps(g), _mm256_loadu_ps(g + 8)),
                _mm256_hadd_ps(_mm256_loadu_ps(g + 16), _mm256_loadu_ps(g + 24)));
            h = _mm256_permutevar8x32_ps(h, order); /* ((a0+a1)+(a2+a3)), ... in order */
            _mm256_storeu_ps(dst + j, _mm256_mul_ps(h, scale));
        }
    }
#endif
    src += k * j, dst += j, n -= j;
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
#if defined(__AVX2__)
    if (end - start == 2 && w == 2 * win->pw) { /* 2 x 2 windows: rows and pairs in one pass */
        const float *restrict r0 = src, *restrict r1 = src + w;
        const float f = 0.5f * win->col_inv[0]; /* (what pool_columns multiplies by) */
        const __m256 scale = _mm256_set1_ps(f);
        int64_t j = 0;
        for (; j + 8 <= win->pw; j += 8) /* (r0 + r1) summed in pairs, as below */
            _mm256_storeu_ps(dst + j, _mm256_mul_ps(windows8(r0, r1, j), scale));
        for (; j < win->pw; j++)
            dst[j] = ((r0[2 * j] + r1[2 * j]) + (r0[2 * j + 1] + r1[2 * j + 1])) * f;
        return;
    }
#endif
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

/* Small maps (at most SMALL_MAP cells) eight at a time, cell-major: t[e] holds cell e of
 * eight maps, so each output is its window's cells summed in eight lanes, times one over
 * the window's size (a weight matrix per map did eight times the arithmetic).  Returns the
 * maps done (a multiple of eight). */
static int64_t pool_small_eight(const Windows *win, const float *restrict x, int64_t c,
                                float *restrict out) {
    const int64_t w = win->w, cells = win->h * w, ph = win->ph, pw = win->pw;
    const int64_t outputs = ph * pw;
    v8f t[SMALL_MAP];
    int64_t ch = 0;
    for (; ch + LANES <= c; ch += LANES) {
        const float *restrict maps = x + ch * cells;
        const float *restrict m0 = maps, *restrict m1 = m0 + cells, *restrict m2 = m1 + cells,
                              *restrict m3 = m2 + cells, *restrict m4 = m3 + cells,
                              *restrict m5 = m4 + cells, *restrict m6 = m5 + cells,
                              *restrict m7 = m6 + cells;
        for (int64_t e = 0; e < cells; e++) /* (built in registers: no narrow stores) */
            t[e] = (v8f){m0[e], m1[e], m2[e], m3[e], m4[e], m5[e], m6[e], m7[e]};
        float *restrict dst = out + ch * outputs;
        for (int64_t i = 0; i < ph; i++)
            for (int64_t j = 0; j < pw; j++) {
                v8f total = {0};
                for (int64_t r = win->rs[i]; r < win->re[i]; r++)
                    for (int64_t q = win->cs[j]; q < win->ce[j]; q++) total += t[r * w + q];
                total *= 1.0f / (float)((win->re[i] - win->rs[i]) * (win->ce[j] - win->cs[j]));
                float lanes[LANES];
                memcpy(lanes, &total, sizeof lanes);
                for (int64_t l = 0; l < LANES; l++) dst[l * outputs + i * pw + j] = lanes[l];
            }
    }
    return ch;
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
        int64_t ch = h * w <= SMALL_MAP ? pool_small_eight(win, x, c, out) : 0;
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

#endif
