/* test_emu_numerics.c — the numbers of compiled kernels on the emulator: every conversion path
 * codegen emits (LLVM instructions, NVVM fp8 intrinsics, inline-PTX cvt with rounding modes)
 * against the numerics library and directed-rounding references written here; CUDA's accurate
 * expf, sigmoid, rsqrt.approx, sqrt and division; the GPU's canonical NaN; integer division
 * corner cases that trap on x86; atomics from several OS threads; log1p (CUDA's log1pf),
 * copysign and isfinite on a million inputs against the numerics library and the bit rules. */
#include "emu_harness.h"
#include "numerics.h"
#include "ref.h"

#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *src =
    "kernel conv(x: f32[N], d: f64[N], w: i64[N], bf: u16[N, 4], hf: u16[N, 4], q: u8[N, 3], ii: i32[N, 4],\n"
    "            uu: u8[N, 2], dd: f32[N, 3], fi: f32[N, 3], e: f32[N, 7])\n"
    "    grid(cdiv(N, 64)) threads(64)\n"
    "{\n"
    "    let t = block.x * 64 + thread.x;\n"
    "    if t < N {\n"
    "        let v = x[t];\n"
    "        bf[t, 0] = bitcast<u16>(bf16(v));\n"
    "        bf[t, 1] = bitcast<u16>(convert<bf16>(v, rz));\n"
    "        bf[t, 2] = bitcast<u16>(convert<bf16>(v, rm));\n"
    "        bf[t, 3] = bitcast<u16>(convert<bf16>(v, rp));\n"
    "        hf[t, 0] = bitcast<u16>(f16(v));\n"
    "        hf[t, 1] = bitcast<u16>(convert<f16>(v, rz));\n"
    "        hf[t, 2] = bitcast<u16>(convert<f16>(v, rm));\n"
    "        hf[t, 3] = bitcast<u16>(convert<f16>(v, rp));\n"
    "        q[t, 0] = bitcast<u8>(e4m3(v));\n"
    "        q[t, 1] = bitcast<u8>(e5m2(v));\n"
    "        q[t, 2] = bitcast<u8>(e4m3(bf16(v)));\n"
    "        ii[t, 0] = i32(v);\n"
    "        ii[t, 1] = convert<i32>(v, rn);\n"
    "        ii[t, 2] = convert<i32>(v, rm);\n"
    "        ii[t, 3] = convert<i32>(v, rp);\n"
    "        uu[t, 0] = u8(v);\n"
    "        uu[t, 1] = convert<u8>(v, rn);\n"
    "        dd[t, 0] = f32(d[t]);\n"
    "        dd[t, 1] = convert<f32>(d[t], rz);\n"
    "        dd[t, 2] = convert<f32>(d[t], rp);\n"
    "        fi[t, 0] = f32(w[t]);\n"
    "        fi[t, 1] = convert<f32>(w[t], rz);\n"
    "        fi[t, 2] = convert<f32>(w[t], rm);\n"
    "        e[t, 0] = exp(v);\n"
    "        e[t, 1] = sigmoid(v);\n"
    "        e[t, 2] = rsqrt(v);\n"
    "        e[t, 3] = sqrt(v);\n"
    "        e[t, 4] = v / 3.0;\n"
    "        e[t, 5] = f32(bf16(v)) + f32(f16(v));\n"
    "        e[t, 6] = max(v, 0.0) + min(v, -0.0);\n"
    "    }\n"
    "}\n"
    "\n"
    "kernel fns(x: f32[N], y: f32[N], o: u32[N, 2], fin: u8[N]) grid(cdiv(N, 64)) threads(64)\n"
    "{\n"
    "    let t = block.x * 64 + thread.x;\n"
    "    if t < N {\n"
    "        o[t, 0] = bitcast<u32>(log1p(x[t]));\n"
    "        o[t, 1] = bitcast<u32>(copysign(x[t], y[t]));\n"
    "        fin[t] = select(isfinite(x[t]), u8(1), u8(0));\n"
    "    }\n"
    "}\n"
    "\n"
    "kernel ints(a: i32[N], b: i32[N], c: i8[N], k: i8[N], o: i32[N, 6], o8: i8[N, 2]) grid(cdiv(N, 64)) threads(64)\n"
    "{\n"
    "    let t = block.x * 64 + thread.x;\n"
    "    if t < N {\n"
    "        o[t, 0] = a[t] / b[t];\n"
    "        o[t, 1] = a[t] % b[t];\n"
    "        o[t, 2] = floordiv(a[t], b[t]);\n"
    "        o[t, 3] = floormod(a[t], b[t]);\n"
    "        o[t, 4] = a[t] << b[t];\n"
    "        o[t, 5] = a[t] >> b[t];\n"
    "        o8[t, 0] = c[t] / k[t];\n"
    "        o8[t, 1] = c[t] % k[t];\n"
    "    }\n"
    "}\n"
    "\n"
    "kernel atom(x: f32[N], acc: f32[1], cnt: i32[3]) grid(cdiv(N, 64)) threads(64)\n"
    "{\n"
    "    let t = block.x * 64 + thread.x;\n"
    "    if t < N {\n"
    "        atomic_add(acc[0], x[t]);\n"
    "        atomic_add(cnt[0], 1);\n"
    "        atomic_max(cnt[1], t);\n"
    "        atomic_xor(cnt[2], t);\n"
    "    }\n"
    "}\n";

static uint32_t fb(float f) { return ref_bits(f); }
static float bf(uint32_t u) { return ref_f32(u); }

/* directed-rounding references: the host's conversions under fesetround */
static float round_f64(double d, int mode)
{
    fesetround(mode);
    volatile double vd = d;
    volatile float r = (float)vd;
    fesetround(FE_TONEAREST);
    return r;
}

static float round_i64(int64_t i, int mode)
{
    fesetround(mode);
    volatile int64_t vi = i;
    volatile float r = (float)vi;
    fesetround(FE_TONEAREST);
    return r;
}

static int64_t to_int(float v, int mode, int64_t lo, int64_t hi)
{
    if (isnan(v))
        return 0;
    double r = mode == 0 ? trunc(v) : mode == 1 ? rint(v) : mode == 2 ? floor(v) : ceil(v);
    return r < (double)lo ? lo : r > (double)hi ? hi : (int64_t)r;
}

static uint32_t canon(float f) { return isnan(f) ? 0x7FFFFFFFu : fb(f); }

#define N 4096

static void test_conversions(void)
{
    EhKernel k;
    if (!eh_compile("numerics.tl", src, "conv", NULL, 0, &k)) {
        eh_failures++;
        return;
    }
    static float x[N];
    static double d[N];
    static int64_t w[N];
    static const uint32_t special[] = {
        0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7FC00001, 0xFFA00000, 0x7F800001,
        0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0x3F000000, 0x3FC00000, 0x40200000, 0xC0200000,
        0x477FE000, 0x477FF000, 0x477FEFFF, 0x43E00000, 0x43E80000, 0x43F00000, 0x4F000000, 0xCF000001,
        0x501502F9, 0x437F8000, 0xBF000000, 0x7F000000, 0x3F7FFFFF, 0x33800000, 0x387FC000, 0x38800000};
    uint64_t seed = 12345;
    for (int i = 0; i < N; i++) {
        uint32_t u;
        if (i < (int)(sizeof special / sizeof special[0]))
            u = special[i];
        else if (i % 3 == 0)
            u = (uint32_t)eh_rand(&seed); /* any bit pattern */
        else
            u = fb(eh_randn(&seed) * (float)(1 << (eh_rand(&seed) % 20)));
        x[i] = bf(u);
        d[i] = i % 4 == 0 ? (double)x[i] : (double)eh_randn(&seed) * pow(2.0, (double)(int)(eh_rand(&seed) % 300) - 150);
        w[i] = i % 5 == 0 ? (int64_t)eh_rand(&seed) : (int64_t)(eh_rand(&seed) % 100000000) - 50000000;
    }
    d[1] = NAN;
    d[2] = -INFINITY;
    d[3] = 1e300;
    w[0] = INT64_MIN;
    w[1] = INT64_MAX;
    w[2] = (1 << 24) + 1;
    static uint16_t obf[N * 4], ohf[N * 4];
    static uint8_t oq[N * 3], ouu[N * 2];
    static int32_t oii[N * 4];
    static float odd[N * 3], ofi[N * 3], oe[N * 7];
    int64_t n1[1] = {N}, s4[2] = {N, 4}, s3[2] = {N, 3}, s2[2] = {N, 2}, s7[2] = {N, 7};
    EhArg a[11] = {eh_tensor(x, 1, n1, NULL),    eh_tensor(d, 1, n1, NULL),    eh_tensor(w, 1, n1, NULL),
                   eh_tensor(obf, 2, s4, NULL),  eh_tensor(ohf, 2, s4, NULL),  eh_tensor(oq, 2, s3, NULL),
                   eh_tensor(oii, 2, s4, NULL),  eh_tensor(ouu, 2, s2, NULL),  eh_tensor(odd, 2, s3, NULL),
                   eh_tensor(ofi, 2, s3, NULL),  eh_tensor(oe, 2, s7, NULL)};
    char err[2048];
    tl_emu_options o = {.workers = 3, .racecheck = 1};
    tl_emu_status st = eh_run(&k, a, 11, &o, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "conv: %s", err);
    int bad = 0;
#define EXPECT(cond, ...)                                                                                              \
    do {                                                                                                               \
        if (!(cond) && bad++ < 12)                                                                                     \
            EH_CHECK(0, __VA_ARGS__);                                                                                  \
        else if (!(cond))                                                                                              \
            eh_failures++;                                                                                             \
    } while (0)
    static const TlNumRound rm[4] = {TL_NUM_RN, TL_NUM_RZ, TL_NUM_RM, TL_NUM_RP};
    for (int i = 0; i < N && st == TL_EMU_OK; i++) {
        uint32_t u = fb(x[i]);
        for (int r = 0; r < 4; r++) {
            EXPECT(obf[i * 4 + r] == tl_num_f32_to_bf16(u, rm[r]), "bf16 mode %d of 0x%08x: 0x%04x, want 0x%04x", r, u,
                   obf[i * 4 + r], tl_num_f32_to_bf16(u, rm[r]));
            EXPECT(ohf[i * 4 + r] == tl_num_f32_to_f16(u, rm[r]), "f16 mode %d of 0x%08x: 0x%04x, want 0x%04x", r, u,
                   ohf[i * 4 + r], tl_num_f32_to_f16(u, rm[r]));
        }
        EXPECT(oq[i * 3] == tl_num_f32_to_e4m3(u), "e4m3 of 0x%08x: 0x%02x", u, oq[i * 3]);
        EXPECT(oq[i * 3 + 1] == tl_num_f32_to_e5m2(u), "e5m2 of 0x%08x: 0x%02x", u, oq[i * 3 + 1]);
        EXPECT(oq[i * 3 + 2] == tl_num_f32_to_e4m3(tl_num_bf16_to_f32(tl_num_f32_to_bf16(u, TL_NUM_RN))),
               "e4m3(bf16) of 0x%08x", u);
        for (int r = 0; r < 4; r++) {
            int64_t want = to_int(x[i], r == 0 ? 0 : r, INT32_MIN, INT32_MAX);
            EXPECT(oii[i * 4 + r] == want, "i32 mode %d of %a (0x%08x): %d, want %lld", r, x[i], u, oii[i * 4 + r],
                   (long long)want);
        }
        EXPECT(ouu[i * 2] == to_int(x[i], 0, 0, 255), "u8 of %a: %d", x[i], ouu[i * 2]);
        EXPECT(ouu[i * 2 + 1] == to_int(x[i], 1, 0, 255), "u8 rn of %a: %d", x[i], ouu[i * 2 + 1]);
        float dw[3] = {round_f64(d[i], FE_TONEAREST), round_f64(d[i], FE_TOWARDZERO), round_f64(d[i], FE_UPWARD)};
        uint64_t du;
        memcpy(&du, &d[i], 8);
        /* a NaN keeps its sign and the top of its payload, and becomes quiet (H200) */
        uint32_t dnan = (uint32_t)(du >> 63) << 31 | 0x7FC00000u | (uint32_t)(du >> 29 & 0x3FFFFF);
        for (int r = 0; r < 3; r++)
            EXPECT(fb(odd[i * 3 + r]) == (isnan(d[i]) ? dnan : fb(dw[r])), "f64 -> f32 (%d) of %a: %a, want %a", r, d[i],
                   odd[i * 3 + r], dw[r]);
        float iw[3] = {round_i64(w[i], FE_TONEAREST), round_i64(w[i], FE_TOWARDZERO), round_i64(w[i], FE_DOWNWARD)};
        for (int r = 0; r < 3; r++)
            EXPECT(fb(ofi[i * 3 + r]) == fb(iw[r]), "i64 -> f32 (%d) of %lld: %a, want %a", r, (long long)w[i],
                   ofi[i * 3 + r], iw[r]);
        float ex = ref_expf(x[i]);
        float sg = 1.0f / (1.0f + ref_expf(-x[i]));
        float want_e[7] = {ex, sg, bf(tl_num_rsqrt_approx(u, false)), sqrtf(x[i]), x[i] / 3.0f,
                           bf(tl_num_bf16_to_f32(tl_num_f32_to_bf16(u, TL_NUM_RN))) +
                               bf(tl_num_f16_to_f32(tl_num_f32_to_f16(u, TL_NUM_RN))),
                           (isnan(x[i]) ? 0.0f : x[i] > 0.0f ? x[i] : 0.0f) + (isnan(x[i]) ? -0.0f : x[i] < -0.0f ? x[i] : -0.0f)};
        for (int j = 0; j < 7; j++)
            EXPECT(fb(oe[i * 7 + j]) == canon(want_e[j]), "math %d of %a (0x%08x): 0x%08x, want 0x%08x", j, x[i], u,
                   fb(oe[i * 7 + j]), canon(want_e[j]));
    }
    eh_free(&k);
}

/* log1p against tl_num_log1pf (which test_libdevice checks against libdevice's __nv_log1pf),
 * copysign and isfinite against their bit rules (docs/language.md §12): the special values, dense
 * runs around -1, 0 and the powers of two where the round-toward-zero sum changes exponent, and
 * random patterns */
static void test_log1p_copysign_isfinite(void)
{
    EhKernel k;
    if (!eh_compile("numerics.tl", src, "fns", NULL, 0, &k)) {
        eh_failures++;
        return;
    }
    enum { M = 1 << 20 };
    static float x[M], y[M];
    static uint32_t o[M * 2];
    static uint8_t fin[M];
    uint64_t seed = 777;
    int n = 0;
    static const uint32_t special[] = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7FC12345,
                                       0xFFA00001, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF,
                                       0xBF800000, 0xBF7FFFFF, 0xBF800001, 0x3F800000, 0x33800000, 0xB3800000};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        x[n++] = bf(special[i]);
    for (uint32_t u = 0xBF7F0000u; u <= 0xBF800100u; u++) /* just above and below -1 */
        x[n++] = bf(u);
    for (uint32_t e = 100; e < 160; e++) /* every power of two near 1, both signs, +-64 ulp */
        for (int d = -64; d <= 64; d++) {
            x[n++] = bf((e << 23) + (uint32_t)d);
            x[n++] = bf(0x80000000u | ((e << 23) + (uint32_t)d));
        }
    while (n < M)
        x[n++] = bf((uint32_t)eh_rand(&seed));
    for (int i = 0; i < M; i++)
        y[i] = bf((uint32_t)eh_rand(&seed));
    int64_t n1[1] = {M}, n2[2] = {M, 2};
    EhArg a[4] = {eh_tensor(x, 1, n1, NULL), eh_tensor(y, 1, n1, NULL), eh_tensor(o, 2, n2, NULL),
                  eh_tensor(fin, 1, n1, NULL)};
    char err[2048];
    tl_emu_options opts = {.workers = 2, .racecheck = 0};
    tl_emu_status st = eh_run(&k, a, 4, &opts, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "fns: %s", err);
    int bad = 0;
    for (int i = 0; i < M && st == TL_EMU_OK; i++) {
        uint32_t u = fb(x[i]), v = fb(y[i]);
        uint32_t want_l = tl_num_log1pf(u), want_c = (u & 0x7FFFFFFFu) | (v & 0x80000000u);
        uint8_t want_f = (u & 0x7FFFFFFFu) < 0x7F800000u;
        EXPECT(o[2 * i] == want_l, "log1p(0x%08x): 0x%08x, want 0x%08x", u, o[2 * i], want_l);
        EXPECT(o[2 * i + 1] == want_c, "copysign(0x%08x, 0x%08x): 0x%08x, want 0x%08x", u, v, o[2 * i + 1], want_c);
        EXPECT(fin[i] == want_f, "isfinite(0x%08x): %d", u, fin[i]);
    }
    eh_free(&k);
}

static void test_integers(void)
{
    EhKernel k;
    if (!eh_compile("numerics.tl", src, "ints", NULL, 0, &k)) {
        eh_failures++;
        return;
    }
    enum { M = 200 };
    int32_t a[M], b[M], o[M * 6];
    int8_t c[M], kk[M], o8[M * 2];
    uint64_t seed = 5;
    for (int i = 0; i < M; i++) {
        a[i] = i % 7 == 0 ? INT32_MIN : (int32_t)eh_rand(&seed);
        b[i] = i % 7 == 0 ? -1 : i % 11 == 0 ? 0 : (int32_t)(eh_rand(&seed) % 80) - 40;
        c[i] = i % 3 == 0 ? -128 : (int8_t)eh_rand(&seed);
        kk[i] = i % 3 == 0 ? -1 : i % 5 == 0 ? 0 : (int8_t)(eh_rand(&seed) % 15 - 7);
    }
    int64_t n1[1] = {M}, n6[2] = {M, 6}, n2[2] = {M, 2};
    EhArg args[6] = {eh_tensor(a, 1, n1, NULL), eh_tensor(b, 1, n1, NULL), eh_tensor(c, 1, n1, NULL),
                     eh_tensor(kk, 1, n1, NULL), eh_tensor(o, 2, n6, NULL), eh_tensor(o8, 2, n2, NULL)};
    char err[1024];
    tl_emu_status st = eh_run(&k, args, 6, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "ints: %s", err);
    for (int i = 0; i < M && st == TL_EMU_OK; i++) {
        int64_t x = a[i], y = b[i] == 0 ? 1 : b[i]; /* codegen divides by 1 for a zero divisor */
        int32_t q = (int32_t)(uint32_t)(uint64_t)(x / y), r = (int32_t)(x % y);
        int64_t fq = x / y - ((x % y != 0) && ((x % y < 0) != (y < 0)));
        int32_t fr = (int32_t)(x - fq * y);
        uint32_t sh = (uint32_t)b[i];
        int32_t shl = sh >= 32 ? 0 : (int32_t)((uint32_t)a[i] << sh);
        int32_t shr = sh >= 32 ? (a[i] < 0 ? -1 : 0) : a[i] >> sh;
        int32_t want[6] = {q, r, (int32_t)(uint32_t)(uint64_t)fq, fr, shl, shr};
        for (int j = 0; j < 6; j++)
            EH_CHECK(o[i * 6 + j] == want[j], "int op %d of %d, %d: %d, want %d", j, a[i], b[i], o[i * 6 + j], want[j]);
        int y8 = kk[i] == 0 ? 1 : kk[i];
        int8_t q8 = (int8_t)(c[i] / y8), r8 = (int8_t)(c[i] % y8);
        EH_CHECK(o8[i * 2] == q8 && o8[i * 2 + 1] == r8, "i8 %d / %d: %d %d, want %d %d", c[i], kk[i], o8[i * 2],
                 o8[i * 2 + 1], q8, r8);
    }
    eh_free(&k);
}

static void test_atomics(void)
{
    EhKernel k;
    if (!eh_compile("numerics.tl", src, "atom", NULL, 0, &k)) {
        eh_failures++;
        return;
    }
    enum { M = 64 * 50 - 5 };
    static float x[M];
    for (int i = 0; i < M; i++)
        x[i] = (float)(i % 13) * 0.5f; /* exact sums in any order */
    float acc = 0.0f, want = 0.0f;
    int32_t cnt[3] = {0, -1, 0}, xr = 0;
    for (int i = 0; i < M; i++) {
        want += x[i];
        xr ^= i;
    }
    int64_t n1[1] = {M}, one[1] = {1}, three[1] = {3};
    EhArg args[3] = {eh_tensor(x, 1, n1, NULL), eh_tensor(&acc, 1, one, NULL), eh_tensor(cnt, 1, three, NULL)};
    char err[1024];
    tl_emu_options o = {.workers = 4, .racecheck = 1};
    tl_emu_status st = eh_run(&k, args, 3, &o, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "atomics: %s", err);
    EH_CHECK(acc == want && cnt[0] == M && cnt[1] == M - 1 && cnt[2] == xr, "atomics from 4 OS threads: %g %d %d %d",
             acc, cnt[0], cnt[1], cnt[2]);
    /* atom.add.f32 flushes subnormal inputs and results to zero (PTX ISA) */
    float tiny = 1e-40f;
    acc = 0.0f;
    int64_t n[1] = {1};
    EhArg a1[3] = {eh_tensor(&tiny, 1, n, NULL), eh_tensor(&acc, 1, one, NULL), eh_tensor(cnt, 1, three, NULL)};
    st = eh_run(&k, a1, 3, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK && acc == 0.0f && !signbit(acc), "atomic add of a subnormal: %a", acc);
    eh_free(&k);
}

/* kernel `name` of `text` compiled for sm_<sm> (host code) and loaded into the emulator; NULL
 * after a reported failure. *p and *a are to be destroyed by the caller (either may be NULL). */
static tl_emu_kernel *load_for_sm(const char *name, const char *text, int sm, tilec_program **p, tilec_artifact **a)
{
    char path[64], err[512];
    snprintf(path, sizeof path, "%s.tl", name);
    *p = NULL;
    *a = NULL;
    tilec_program_from_string(path, text, NULL, p);
    tilec_target t = {sm, 3, 1};
    if (tilec_compile(*p, name, NULL, 0, &t, a) != TILEC_OK) {
        EH_CHECK(0, "%s for sm_%d: %s", name, sm, tilec_program_diagnostics(*p));
        return NULL;
    }
    tl_emu_kernel *k = NULL;
    tl_emu_status st = tl_emu_kernel_load((*a)->object, (*a)->object_size, (*a)->entry, name, &k, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "loading %s: %s", name, err);
    return st == TL_EMU_OK ? k : NULL;
}

/* One block of 128 threads over kernel `name`'s n row-major rows x cols tensors (the arguments'
 * data in ptrs, in order); false, with the failure reported, if the launch fails */
static bool launch_tiles(tl_emu_kernel *k, const char *name, int sm, void **ptrs, int n, int32_t rows, int32_t cols,
                         int racecheck)
{
    char err[512] = "";
    int64_t s0 = cols, s1 = 1;
    void *params[5 * 4];
    for (int i = 0; i < n; i++) {
        void **a = params + 5 * i;
        a[0] = &ptrs[i];
        a[1] = &rows;
        a[2] = &cols;
        a[3] = &s0;
        a[4] = &s1;
    }
    tl_emu_launch_config cfg = {{1, 1, 1}, 128, 0, 0, NULL, 0};
    tl_emu_options o = {.workers = 1, .racecheck = racecheck};
    tl_emu_status st = k ? tl_emu_launch(k, params, &cfg, &o, err, sizeof err) : TL_EMU_ERROR_INVALID;
    EH_CHECK(st == TL_EMU_OK, "%s sm_%d: %s", name, sm, err);
    return st == TL_EMU_OK;
}

static void unload(tl_emu_kernel *k, tilec_artifact *a, tilec_program *p)
{
    tl_emu_kernel_free(k);
    tilec_artifact_destroy(a);
    tilec_program_destroy(p);
}

/* FP4: the software encoder codegen writes for sm_90a and the cvt.e2m1x2 instructions of
 * sm_100a must both give the PTX semantics (numerics library), packed even-low */
static const char *fp4_src = "kernel fp4(x: f32[16, 64], q: e2m1[16, 64], back: f32[16, 64]) grid(1) threads(128)\n"
                             "{\n"
                             "    frag f: f32[16, 64];\n"
                             "    copy(x, f);\n"
                             "    copy(f, q);\n"
                             "    sync_threads();\n"
                             "    frag g: f32[16, 64];\n"
                             "    copy(q, g);\n"
                             "    copy(g, back);\n"
                             "}\n";

static void test_fp4(int sm)
{
    tilec_program *p;
    tilec_artifact *a;
    tl_emu_kernel *k = load_for_sm("fp4", fp4_src, sm, &p, &a);
    static float x[16 * 64], back[16 * 64];
    static uint8_t q[16 * 32];
    uint64_t seed = 31 + (uint64_t)sm;
    static const uint32_t sp[] = {0x3E800000, 0x3F400000, 0x3FA00000, 0x3FE00000, 0x40200000, 0x40600000,
                                  0x40A00000, 0x40E00000, 0x7FC00000, 0xFF800000, 0x80000001, 0xBE000000,
                                  0xFFC00000, 0xFF800001, 0x7F800001, 0xFFFFFFFF, 0x80000000, 0x7F800000};
    /* every code boundary (ties included) and code value, one ulp either side, both signs,
     * then random values */
    static const float edge[] = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f,
                                 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 0x1p-126f, 1e30f, 0x1.fffffep127f};
    int n = 0;
    for (int i = 0; i < (int)(sizeof sp / sizeof sp[0]); i++)
        x[n++] = tl_num_float(sp[i]);
    for (int i = 0; i < (int)(sizeof edge / sizeof edge[0]); i++)
        for (int d = -1; d <= 1; d++) {
            float v = tl_num_float(tl_num_bits(edge[i]) + (uint32_t)(edge[i] == 0.0f ? d * d : d));
            x[n++] = v;
            x[n++] = -v;
        }
    while (n < 16 * 64)
        x[n++] = eh_randn(&seed) * 3.0f;
    void *ptrs[3] = {x, q, back};
    bool ok = launch_tiles(k, "fp4", sm, ptrs, 3, 16, 64, 1);
    for (int i = 0; i < 16 * 64 && ok; i += 2) {
        uint8_t lo = tl_num_f32_to_e2m1(tl_num_bits(x[i])), hi = tl_num_f32_to_e2m1(tl_num_bits(x[i + 1]));
        EH_CHECK(q[i / 2] == tl_num_e2m1_pack(lo, hi), "sm_%d e2m1 of %a, %a: 0x%02x, want 0x%02x", sm, x[i], x[i + 1],
                 q[i / 2], tl_num_e2m1_pack(lo, hi));
        EH_CHECK(tl_num_bits(back[i]) == tl_num_e2m1_to_f32(lo) && tl_num_bits(back[i + 1]) == tl_num_e2m1_to_f32(hi),
                 "sm_%d e2m1 decode at %d", sm, i);
    }
    unload(k, a, p);
}

/* FP4 from f16 registers: the f16x2 encoder codegen writes for sm_90a (and sm_100a's widening to
 * the f32 pair instruction), on every one of the 65536 f16 values */
static const char *fp4h_src = "kernel fp4h(x: f16[64, 1024], q: e2m1[64, 1024]) grid(1) threads(128)\n"
                              "{\n"
                              "    for r in 0 .. 32 step 8 {\n"
                              "        frag f: f16[8, 1024];\n"
                              "        copy(x[r : r + 8, :], f);\n"
                              "        copy(f, q[r : r + 8, :]);\n"
                              "    }\n"
                              "    for r in 32 .. 64 step 8 {\n"   /* runs of 2: one byte per f16x2 */
                              "        frag f: f16[8, 1024] layout(vec = 2);\n"
                              "        copy(x[r : r + 8, :], f);\n"
                              "        copy(f, q[r : r + 8, :]);\n"
                              "    }\n"
                              "}\n";

static void test_fp4_from_f16(int sm)
{
    tilec_program *p;
    tilec_artifact *a;
    tl_emu_kernel *k = load_for_sm("fp4h", fp4h_src, sm, &p, &a);
    static uint16_t x[65536];
    static uint8_t q[32768];
    for (int i = 0; i < 65536; i++)
        x[i] = (uint16_t)(i * 40503u);   /* every value once, neighbours far apart */
    void *ptrs[2] = {x, q};
    bool ok = launch_tiles(k, "fp4h", sm, ptrs, 2, 64, 1024, 0);
    int bad = 0;
    for (int i = 0; i < 65536 && ok; i += 2) {
        uint8_t lo = tl_num_f32_to_e2m1(tl_num_f16_to_f32(x[i])), hi = tl_num_f32_to_e2m1(tl_num_f16_to_f32(x[i + 1]));
        if (q[i / 2] != tl_num_e2m1_pack(lo, hi) && bad++ < 4)
            EH_CHECK(0, "sm_%d e2m1 of f16 0x%04x, 0x%04x: 0x%02x, want 0x%02x", sm, x[i], x[i + 1], q[i / 2],
                     tl_num_e2m1_pack(lo, hi));
    }
    EH_CHECK(bad == 0, "sm_%d: %d of 32768 e2m1 pairs from f16 differ", sm, bad);
    unload(k, a, p);
}

/* FP4 decoding: every byte value (two codes), through the byte-permute path that whole 32-bit
 * words of e2m1 take into f32 and f16 registers (runs of 8 and of 32) and through the per-byte
 * path (runs of 2) */
static const char *fp4d_src = "kernel fp4d(q: e2m1[16, 256], a: f32[16, 256], b: f16[16, 256], c: f32[16, 256])\n"
                              "    grid(1) threads(128)\n"
                              "{\n"
                              "    frag f: f32[16, 256] layout(vec = 8);\n"
                              "    copy(q, f);\n"
                              "    copy(f, a);\n"
                              "    frag h: f16[16, 256] layout(vec = 32);\n"
                              "    copy(q, h);\n"
                              "    copy(h, b);\n"
                              "    frag p: f32[16, 256] layout(vec = 2);\n"
                              "    copy(q, p);\n"
                              "    copy(p, c);\n"
                              "}\n";

static void test_fp4_decode(int sm)
{
    tilec_program *p;
    tilec_artifact *art;
    tl_emu_kernel *k = load_for_sm("fp4d", fp4d_src, sm, &p, &art);
    static uint8_t q[16 * 128];
    static uint32_t a[16 * 256], c[16 * 256];
    static uint16_t h[16 * 256];
    for (int i = 0; i < 16 * 128; i++)
        q[i] = (uint8_t)(i * 7);   /* every byte value 8 times, neighbours different */
    void *ptrs[4] = {q, a, h, c};
    bool ok = launch_tiles(k, "fp4d", sm, ptrs, 4, 16, 256, 0);
    int bad = 0;
    for (int i = 0; i < 16 * 256 && ok; i++) {
        uint8_t code = (uint8_t)(i % 2 ? q[i / 2] >> 4 : q[i / 2] & 0xF);
        uint32_t want = tl_num_e2m1_to_f32(code);
        uint16_t want16 = tl_num_e2m1_to_f16(code);
        if ((a[i] != want || h[i] != want16 || c[i] != want) && bad++ < 4)
            EH_CHECK(0, "sm_%d: e2m1 code 0x%x at %d: f32 0x%08x (runs of 8), f16 0x%04x, f32 0x%08x (runs of 2); "
                     "want 0x%08x / 0x%04x", sm, code, i, a[i], h[i], c[i], want, want16);
    }
    EH_CHECK(bad == 0, "sm_%d: %d of 4096 decoded e2m1 elements differ", sm, bad);
    unload(k, art, p);
}

int main(void)
{
    test_conversions();
    test_log1p_copysign_isfinite();
    test_integers();
    test_atomics();
    test_fp4(90);
    test_fp4(100);
    test_fp4_from_f16(90);
    test_fp4_from_f16(100);
    test_fp4_decode(90);
    test_fp4_decode(100);
    return eh_finish("emu_numerics");
}
