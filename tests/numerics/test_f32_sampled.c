/* test_f32_sampled.c — the f32 -> narrow conversions (bf16 and f16 in four rounding modes,
 * e4m3, e5m2, e2m1, ue8m0, e5m6, and the packed x2 forms) on >= 10^8 inputs against the
 * enumerate-and-search reference. The inputs are every rounding boundary of every target
 * (representable values, midpoints and their f32 neighbours, both signs), special values and
 * NaN payloads, then pseudo-random patterns weighted toward the interesting ranges.
 * Usage: test_f32_sampled [total_inputs [threads]] */
#include "numerics.h"
#include "ref.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum {
    T_BF16, T_F16 = T_BF16 + 4, T_E4M3 = T_F16 + 4, T_E5M2, T_E2M1, T_UE8M0, T_E5M6 = T_UE8M0 + 4,
    T_E5M6_BEYOND, T_PACK, T_COUNT
};
static const char *const TALLY_NAMES[T_COUNT] = {
    "f32->bf16 rn", "f32->bf16 rz", "f32->bf16 rm", "f32->bf16 rp",
    "f32->f16 rn", "f32->f16 rz", "f32->f16 rm", "f32->f16 rp",
    "f32->e4m3 rn.satfinite", "f32->e5m2 rn.satfinite", "f32->e2m1 rn.satfinite",
    "f32->ue8m0 rz", "f32->ue8m0 rz.satfinite", "f32->ue8m0 rp", "f32->ue8m0 rp.satfinite",
    "f32->e5m6 vs spec pseudocode (|x| < 65536)", "f32->e5m6 |x| >= 65536 (hardware RZ rule)",
    "x2 packing, every 8th input (bf16x2 f16x2 e4m3x2 e5m2x2 e2m1x2 ue8m0x2 lane order)",
};

static const TlNumRound MODES[4] = {TL_NUM_RN, TL_NUM_RZ, TL_NUM_RM, TL_NUM_RP};

/* the 12-bit e5m6 grid, used only to place inputs on its rounding boundaries */
static RefFmt REF_E5M6 = {.name = "e5m6", .ebits = 5, .mbits = 6, .bias = 15, .max_code = 0x7BF,
                          .nan_code = 0x7FF, .sign_shift = 11};

static uint32_t *g_struct;      /* structured inputs */
static size_t g_nstruct, g_capstruct;
static uint64_t g_total;
static int g_threads;
static const uint64_t SEED = 0x7E5C0DE5EEDull;
enum { CHUNK = 1 << 20 };

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static void push(uint32_t x)
{
    if (g_nstruct == g_capstruct) {
        g_capstruct = g_capstruct ? 2 * g_capstruct : 1 << 16;
        g_struct = realloc(g_struct, g_capstruct * sizeof *g_struct);
        if (!g_struct) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
    }
    g_struct[g_nstruct++] = x;
}

/* x and its f32 neighbours within d ulps, both signs (magnitudes stay non-negative) */
static void push_around(uint32_t mag, int d)
{
    for (int k = -d; k <= d; k++) {
        int64_t m = (int64_t)mag + k;
        if (m < 0 || m > 0x7F800000)
            continue;
        push((uint32_t)m);
        push((uint32_t)m | 0x80000000u);
    }
}

static void build_structured(void)
{
    const RefFmt *fmts[6] = {&REF_F16, &REF_BF16, &REF_E4M3, &REF_E5M2, &REF_E2M1, &REF_E5M6};
    for (int k = 0; k < 6; k++) {
        const RefFmt *f = fmts[k];
        for (int c = 0; c < f->nvals; c++) {
            double lo = f->vals[c], hi = f->vals[c + 1];
            push_around(fbits((float)lo), 2);
            push_around(fbits((float)((lo + hi) / 2)), 2);   /* midpoints are exact in f32 */
        }
        push_around(fbits((float)f->vals[f->nvals]), 2);
    }
    for (int b = -149; b <= 127; b++) {                       /* ue8m0 boundaries: 2^b */
        push_around(fbits((float)ldexp(1.0, b)), 3);
        push_around(fbits((float)ldexp(1.5, b)), 1);
    }
    push_around(0x7F7FFFFFu, 3);                              /* FLT_MAX, inf */
    push_around(0x00800000u, 3);                              /* smallest normal */
    push_around(0x00400000u, 3);                              /* 2^-127 */
    push_around(0, 3);                                        /* zeros and tiny subnormals */
    push_around(0x007FFFFFu, 2);
    const uint32_t nans[] = {0x7F800001u, 0x7F800002u, 0x7FBFFFFFu, 0x7FC00000u, 0x7FC00001u,
                             0x7FFFFFFFu, 0x7FFFE000u, 0x7FC10000u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        push(nans[i]);
        push(nans[i] | 0x80000000u);
    }
    uint64_t s = SEED ^ 0x4E414Eull;
    for (int i = 0; i < 4096; i++)                            /* random NaN payloads */
        push(0x7F800000u | ((uint32_t)rng_next(&s) & 0x807FFFFFu) | 1u);
}

static uint32_t random_input(uint64_t *s)
{
    uint64_t r = rng_next(s);
    uint32_t lo32 = (uint32_t)r, sign = (uint32_t)(r >> 63) << 31;
    unsigned pick = (unsigned)(r >> 32) % 100;
    if (pick < 30)
        return lo32;                                          /* any pattern */
    uint64_t r2 = rng_next(s);
    uint32_t mant = (uint32_t)r2 & 0x7FFFFFu;
    if (pick < 70) {                                          /* 2^-27 .. 2^33 */
        uint32_t e = 100 + (uint32_t)(r2 >> 32) % 61;
        return sign | e << 23 | mant;
    }
    if (pick < 80) {                                          /* tiny and subnormal */
        uint32_t e = (uint32_t)(r2 >> 32) % 12;
        return sign | e << 23 | mant;
    }
    /* near a rounding boundary of a random format */
    const RefFmt *fmts[6] = {&REF_F16, &REF_BF16, &REF_E4M3, &REF_E5M2, &REF_E2M1, &REF_E5M6};
    const RefFmt *f = fmts[(r2 >> 32) % 6];
    int c = (int)((r2 >> 40) % (uint64_t)(f->nvals));
    double v = (r2 & 0x100000) ? f->vals[c] : (f->vals[c] + f->vals[c + 1]) / 2;
    int64_t m = (int64_t)fbits((float)v) + (int64_t)((r2 >> 21) % 9) - 4;
    if (m < 0)
        m = 0;
    return sign | (uint32_t)m;
}

typedef struct RefAll {
    uint32_t bf16[4], f16[4], e4m3[4], e5m2[4], e2m1[4];
    uint8_t ue[4];
} RefAll;

static void reference_all(uint32_t x, RefAll *r)
{
    ref_round_f32(&REF_BF16, x, r->bf16);
    ref_round_f32(&REF_F16, x, r->f16);
    ref_round_f32(&REF_E4M3, x, r->e4m3);
    ref_round_f32(&REF_E5M2, x, r->e5m2);
    ref_round_f32(&REF_E2M1, x, r->e2m1);
    ref_ue8m0(x, r->ue);
}

static void check_one(uint32_t x, uint32_t p, const RefAll *r, const RefAll *rp, bool pack,
                      Tally *t)
{
    for (int m = 0; m < 4; m++) {
        uint16_t b = tl_num_f32_to_bf16(x, MODES[m]);
        tally_hit(&t[T_BF16 + m], b == r->bf16[m], "x=%08x got %04x want %04x", x, b, r->bf16[m]);
        uint16_t h = tl_num_f32_to_f16(x, MODES[m]);
        tally_hit(&t[T_F16 + m], h == r->f16[m], "x=%08x got %04x want %04x", x, h, r->f16[m]);
    }
    uint8_t q = tl_num_f32_to_e4m3(x);
    tally_hit(&t[T_E4M3], q == r->e4m3[0], "x=%08x got %02x want %02x", x, q, r->e4m3[0]);
    q = tl_num_f32_to_e5m2(x);
    tally_hit(&t[T_E5M2], q == r->e5m2[0], "x=%08x got %02x want %02x", x, q, r->e5m2[0]);
    q = tl_num_f32_to_e2m1(x);
    tally_hit(&t[T_E2M1], q == r->e2m1[0], "x=%08x got %x want %x", x, q, r->e2m1[0]);
    for (int k = 0; k < 4; k++) {
        q = tl_num_f32_to_ue8m0(x, k < 2 ? TL_NUM_RZ : TL_NUM_RP, k & 1);
        tally_hit(&t[T_UE8M0 + k], q == r->ue[k], "x=%08x got %02x want %02x", x, q, r->ue[k]);
    }
    uint32_t ef = (x >> 23) & 0xFF;
    if (ef != 0xFF) {   /* inf and NaN: test_sf_e5m6 checks the documented codes */
        uint16_t e = tl_num_f32_to_e5m6(x);
        if (ef <= 142) {
            uint16_t w = ref_e5m6_spec(x);
            tally_hit(&t[T_E5M6], e == w, "x=%08x got %03x want %03x", x, e, w);
        } else {
            /* hardware RZ stops at 65504 (0x7BFF); the carry rule then adds one when the low
             * 17 bits are >= 0x10000, since the code 0x7BF is odd */
            uint16_t w = (uint16_t)((x >> 20 & 0x800u) | ((x & 0x1FFFFu) >= 0x10000u ? 0x7C0u : 0x7BFu));
            tally_hit(&t[T_E5M6_BEYOND], e == w, "x=%08x got %03x want %03x", x, e, w);
        }
    }
    /* lane order of the packed forms (a -> high half, b -> low half), on every 8th input */
    if (!pack)
        return;
    bool ok = tl_num_bf16x2_from_f32(x, p, TL_NUM_RN) == (r->bf16[0] << 16 | rp->bf16[0])
           && tl_num_bf16x2_from_f32(x, p, TL_NUM_RZ) == (r->bf16[1] << 16 | rp->bf16[1])
           && tl_num_f16x2_from_f32(x, p, TL_NUM_RN) == (r->f16[0] << 16 | rp->f16[0])
           && tl_num_e4m3x2_from_f32(x, p) == (r->e4m3[0] << 8 | rp->e4m3[0])
           && tl_num_e5m2x2_from_f32(x, p) == (r->e5m2[0] << 8 | rp->e5m2[0])
           && tl_num_e2m1x2_from_f32(x, p) == (r->e2m1[0] << 4 | rp->e2m1[0])
           && tl_num_ue8m0x2_from_f32(x, p, TL_NUM_RP, true) == (r->ue[3] << 8 | rp->ue[3]);
    tally_hit(&t[T_PACK], ok, "a=%08x b=%08x", x, p);
}

typedef struct Worker {
    int id;
    Tally t[T_COUNT];
} Worker;

static void *work(void *arg)
{
    Worker *w = arg;
    uint64_t nchunks = (g_total + CHUNK - 1) / CHUNK;
    for (uint64_t c = (uint64_t)w->id; c < nchunks; c += (uint64_t)g_threads) {
        uint64_t s = SEED ^ (c * 0x9E3779B97F4A7C15ull);
        uint64_t begin = c * CHUNK, end = begin + CHUNK < g_total ? begin + CHUNK : g_total;
        uint32_t prev = 0x3F800000u;
        RefAll rprev, rcur;
        reference_all(prev, &rprev);
        for (uint64_t i = begin; i < end; i++) {
            uint32_t x = i < g_nstruct ? g_struct[i] : random_input(&s);
            reference_all(x, &rcur);
            check_one(x, prev, &rcur, &rprev, (i & 7) == 0, w->t);
            prev = x;
            rprev = rcur;
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    ref_init();
    REF_E5M6.nvals = REF_E5M6.max_code + 1;
    REF_E5M6.vals = malloc(sizeof(double) * (size_t)(REF_E5M6.nvals + 1));
    for (int c = 0; c < REF_E5M6.nvals; c++)
        REF_E5M6.vals[c] = ref_decode_mag(&REF_E5M6, c);
    REF_E5M6.vals[REF_E5M6.nvals] = 65536.0;
    build_structured();

    g_total = argc > 1 ? strtoull(argv[1], NULL, 0) : 100000000ull;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    g_threads = argc > 2 ? atoi(argv[2]) : (int)(ncpu > 0 ? ncpu : 1);
    if (g_threads < 1 || g_threads > 256)
        g_threads = 1;
    if (g_total < g_nstruct)
        g_total = g_nstruct;
    double t0 = now_seconds();

    Worker *ws = calloc((size_t)g_threads, sizeof *ws);
    pthread_t *th = calloc((size_t)g_threads, sizeof *th);
    for (int i = 0; i < g_threads; i++) {
        ws[i].id = i;
        for (int k = 0; k < T_COUNT; k++)
            ws[i].t[k].name = TALLY_NAMES[k];
        if (pthread_create(&th[i], NULL, work, &ws[i]) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            return 2;
        }
    }
    Tally total[T_COUNT];
    memset(total, 0, sizeof total);
    for (int k = 0; k < T_COUNT; k++)
        total[k].name = TALLY_NAMES[k];
    for (int i = 0; i < g_threads; i++) {
        pthread_join(th[i], NULL);
        for (int k = 0; k < T_COUNT; k++)
            tally_merge(&total[k], &ws[i].t[k]);
    }
    printf("inputs: %llu (%zu structured boundary/special values, the rest pseudo-random, "
           "seed %#llx), %d threads, %.1f s\n", (unsigned long long)g_total, g_nstruct,
           (unsigned long long)SEED, g_threads, now_seconds() - t0);
    int fail = 0;
    for (int k = 0; k < T_COUNT; k++)
        fail |= tally_report(&total[k]);
    free(ws);
    free(th);
    return fail;
}
