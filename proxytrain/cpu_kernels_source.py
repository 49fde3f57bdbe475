"""C++ source of the fused CPU kernels (RMSNorm, RoPE, SwiGLU, cross-entropy; fp32 and bf16 logits).

Plain C functions without torch headers, compiled and loaded by ``proxytrain.cpu_kernels``; the build
key hashes this text, so any edit here rebuilds the kernels.
"""

SOURCE = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>

#define LANES 8

#ifdef CM_FAST
/* fast numerics: the C library's expf (glibc's vector libmvec when linked); its result depends on the
   CPU (ifunc variants) and on the ISA the file is built for */
#ifndef CM_NO_MVEC
extern "C" float expf(float) __attribute__((simd("notinbranch")));
#endif
static inline float cm_expf(float x) { return expf(x); }
static inline float cm_logf(float x) { return logf(x); }
#else
/* Reproducible numerics: exp and log from IEEE +, *, / and bit operations only, built without FMA
   contraction (-ffp-contract=off), so scalar, SSE, AVX2 and AVX-512 builds give the same bits on
   every CPU. exp: x = n ln2 + r, |r| <= ln2/2 (Cody-Waite split of ln2), exp(r) by Cephes' degree-6
   polynomial (about 1 ulp), times 2^n as two exact powers of two. */
static inline float cm_pow2i(int32_t n) {
    uint32_t u = (uint32_t)(n + 127) << 23; float f; memcpy(&f, &u, 4); return f;
}
static inline float cm_expf(float x) {
    const float hi = 88.7228394f, lo = -103.9720840f;
    const float xc = x > hi ? hi : (x < lo ? lo : (x == x ? x : 0.0f));
    const float t = xc * 1.44269504089f;
    const float n = (t + 12582912.0f) - 12582912.0f;  /* round to nearest: |t| < 2^22 */
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float y = p * (r * r) + r + 1.0f;
    const int32_t ni = (int32_t)n, n1 = ni / 2;
    const float e = y * cm_pow2i(n1) * cm_pow2i(ni - n1);
    return x > hi ? INFINITY : (x != x ? x : e);
}
/* log of a positive normal float, in double: x = 2^k m, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(f)
   with f = (m - 1)/(m + 1), |f| < 0.172, by its series to f^17 (error < 1e-14), rounded once to float */
static inline float cm_logf(float x) {
    uint32_t u; memcpy(&u, &x, 4);
    int32_t k = (int32_t)((u >> 23) & 0xFF) - 127;
    uint32_t mu = (u & 0x7FFFFFu) | 0x3F800000u;
    float mf; memcpy(&mf, &mu, 4);
    double m = (double)mf;
    if (m > 1.4142135623730951) { m *= 0.5; k += 1; }
    const double f = (m - 1.0) / (m + 1.0), f2 = f * f;
    double s = 1.0 / 17.0;
    s = s * f2 + 1.0 / 15.0; s = s * f2 + 1.0 / 13.0; s = s * f2 + 1.0 / 11.0; s = s * f2 + 1.0 / 9.0;
    s = s * f2 + 1.0 / 7.0; s = s * f2 + 1.0 / 5.0; s = s * f2 + 1.0 / 3.0; s = s * f2 + 1.0;
    return (float)(2.0 * f * s + (double)k * 0.6931471805599453);
}
#endif

static inline float dot8(const float* a, const float* b, int64_t d) {
    float acc[LANES] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + LANES <= d; j += LANES)
        for (int l = 0; l < LANES; ++l) acc[l] += a[j + l] * b[j + l];
    float s = 0.0f;
    for (int l = 0; l < LANES; ++l) s += acc[l];
    for (; j < d; ++j) s += a[j] * b[j];
    return s;
}


/* Cross-entropy over rows of logits [n, v] (fp32 or bf16, row-contiguous), one row in L1 at a time.
   Forward: lse[i] = log sum_j exp(x_ij), loss[i] = lse[i] - x_i,t (0 where t < 0). Backward: out_ij =
   g_i (exp(x_ij - lse_i) - [j == t_i]), written in the logits' dtype (bf16: round to nearest even). */
static inline float ld(const float* x, int64_t j) { return x[j]; }
static inline float ld(const uint16_t* x, int64_t j) {
    uint32_t u = (uint32_t)x[j] << 16; float f; memcpy(&f, &u, 4); return f;
}
static inline void st(float* o, int64_t j, float f) { o[j] = f; }
static inline void st(uint16_t* o, int64_t j, float f) {
    uint32_t u; memcpy(&u, &f, 4); u += 0x7FFFu + ((u >> 16) & 1u); o[j] = (uint16_t)(u >> 16);
}

template <typename T>
static void ce_fwd(const T* __restrict x, const int64_t* __restrict t, float* __restrict loss,
                   float* __restrict lse, int64_t n, int64_t v) {
    for (int64_t i = 0; i < n; ++i) {
        const T* xr = x + i * v;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int64_t j = 0; j < v; ++j) m = m > ld(xr, j) ? m : ld(xr, j);
        float acc[LANES] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t j = 0;
        for (; j + LANES <= v; j += LANES)
#pragma omp simd
            for (int l = 0; l < LANES; ++l) acc[l] += cm_expf(ld(xr, j + l) - m);
        float s = 0.0f;
        for (int l = 0; l < LANES; ++l) s += acc[l];
        for (; j < v; ++j) s += cm_expf(ld(xr, j) - m);
        const float z = m + cm_logf(s);
        lse[i] = z;
        loss[i] = t[i] >= 0 ? z - ld(xr, t[i]) : 0.0f;
    }
}

template <typename T>
static void ce_bwd(const T* __restrict x, const int64_t* __restrict t, const float* __restrict lse,
                   const float* __restrict g, T* __restrict out, int64_t n, int64_t v) {
    for (int64_t i = 0; i < n; ++i) {
        const T* xr = x + i * v;
        T* orow = out + i * v;
        const float gi = t[i] >= 0 ? g[i] : 0.0f, z = lse[i];
#pragma omp simd
        for (int64_t j = 0; j < v; ++j) st(orow, j, gi * cm_expf(ld(xr, j) - z));
        if (t[i] >= 0) st(orow, t[i], gi * (cm_expf(ld(xr, t[i]) - z) - 1.0f));
    }
}

extern "C" {

void cm_ce_fwd_f32(const float* x, const int64_t* t, float* loss, float* lse, int64_t n, int64_t v) {
    ce_fwd(x, t, loss, lse, n, v);
}
void cm_ce_fwd_bf16(const uint16_t* x, const int64_t* t, float* loss, float* lse, int64_t n, int64_t v) {
    ce_fwd(x, t, loss, lse, n, v);
}
void cm_ce_bwd_f32(const float* x, const int64_t* t, const float* lse, const float* g, float* out, int64_t n,
                   int64_t v) {
    ce_bwd(x, t, lse, g, out, n, v);
}
void cm_ce_bwd_bf16(const uint16_t* x, const int64_t* t, const float* lse, const float* g, uint16_t* out,
                    int64_t n, int64_t v) {
    ce_bwd(x, t, lse, g, out, n, v);
}

/* y = x * r * w per row, r = (mean(x^2) + eps)^-1/2 stored in rstd[row]. */
void cm_rms_fwd(const float* __restrict x, const float* __restrict w, float* __restrict y,
                float* __restrict rstd, int64_t n, int64_t d, float eps) {
    for (int64_t i = 0; i < n; ++i) {
        const float* xr = x + i * d;
        float* yr = y + i * d;
        const float r = 1.0f / sqrtf(dot8(xr, xr, d) / (float)d + eps);
        rstd[i] = r;
        for (int64_t j = 0; j < d; ++j) yr[j] = xr[j] * r * w[j];
    }
}

/* dx = r (g w) - x r^3 / d * sum_j(g w x);  dw += sum_rows(g x r) (fp64 accumulator, zeroed here). */
void cm_rms_bwd(const float* __restrict g, const float* __restrict x, const float* __restrict w,
                const float* __restrict rstd, float* __restrict dx, double* __restrict dw,
                int64_t n, int64_t d) {
    for (int64_t j = 0; j < d; ++j) dw[j] = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float* gr = g + i * d;
        const float* xr = x + i * d;
        float* dr = dx + i * d;
        const float r = rstd[i];
        float acc[LANES] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t j = 0;
        for (; j + LANES <= d; j += LANES)
            for (int l = 0; l < LANES; ++l) acc[l] += gr[j + l] * w[j + l] * xr[j + l];
        float s = 0.0f;
        for (int l = 0; l < LANES; ++l) s += acc[l];
        for (; j < d; ++j) s += gr[j] * w[j] * xr[j];
        const float c = -r * r * r * s / (float)d;
        for (j = 0; j < d; ++j) {
            dr[j] = gr[j] * w[j] * r + xr[j] * c;
            dw[j] += (double)(gr[j] * xr[j] * r);
        }
    }
}

/* SwiGLU on rows h = [gate | up] of width 2f: sig = sigmoid(gate), out = gate * sig * up. */
void cm_swiglu_fwd(const float* __restrict h, float* __restrict sig, float* __restrict out,
                   int64_t n, int64_t f) {
    for (int64_t i = 0; i < n; ++i) {
        const float* a = h + i * 2 * f;
        const float* u = a + f;
        float* sr = sig + i * f;
        float* orow = out + i * f;
#pragma omp simd
        for (int64_t j = 0; j < f; ++j) {
            const float s = 1.0f / (1.0f + cm_expf(-a[j]));
            sr[j] = s;
            orow[j] = a[j] * s * u[j];
        }
    }
}

/* d gate = g up s (1 + gate (1 - s)),  d up = g gate s; written into gh = [d gate | d up]. */
void cm_swiglu_bwd(const float* __restrict g, const float* __restrict h, const float* __restrict sig,
                   float* __restrict gh, int64_t n, int64_t f) {
    for (int64_t i = 0; i < n; ++i) {
        const float* gr = g + i * f;
        const float* a = h + i * 2 * f;
        const float* u = a + f;
        const float* sr = sig + i * f;
        float* dg = gh + i * 2 * f;
        float* du = dg + f;
        for (int64_t j = 0; j < f; ++j) {
            const float s = sr[j], act = a[j] * s;
            du[j] = gr[j] * act;
            dg[j] = gr[j] * u[j] * (s * (1.0f + a[j] * (1.0f - s)));
        }
    }
}

/* RoPE, half-split convention, on [B, S, H, D] views with element strides (D contiguous):
   out1 = x1 cos - sign * x2 sin,  out2 = x2 cos + sign * x1 sin;  cos/sin are [S, D/2]. */
void cm_rope(const float* __restrict x, int64_t xb, int64_t xs, int64_t xh,
             float* __restrict out, int64_t ob, int64_t os, int64_t oh,
             const float* __restrict cs, const float* __restrict sn,
             int64_t B, int64_t S, int64_t H, int64_t D, float sign) {
    const int64_t half = D / 2;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s) {
            const float* c = cs + s * half;
            const float* si = sn + s * half;
            for (int64_t h = 0; h < H; ++h) {
                const float* xr = x + b * xb + s * xs + h * xh;
                float* orow = out + b * ob + s * os + h * oh;
                for (int64_t j = 0; j < half; ++j) {
                    const float x1 = xr[j], x2 = xr[j + half], sv = sign * si[j];
                    orow[j] = x1 * c[j] - x2 * sv;
                    orow[j + half] = x2 * c[j] + x1 * sv;
                }
            }
        }
}

}
"""
