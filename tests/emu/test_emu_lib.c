/* test_emu_lib.c — the emulation library on its own, with kernels written in C against the
 * emulator ABI (tl_emu_abi.h): grid sync in cooperative launches, deadlock reports that mix
 * barriers and grid syncs, warp syncs with disjoint masks, warp operations that lanes disagree
 * on, the racecheck's ordering by warp syncs, printf formatting, tensor ranges and the reports
 * of the global bounds check, the loader's and the launch's argument errors, and the numerics of
 * tl_emu_cvt / fma.rm / min / max against references (numerics library, the host's directed
 * rounding, _Float16). Also prints the cost of a fiber switch. */
#include "emu_harness.h"
#include "numerics.h"
#include "tilec/tl_emu_abi.h"

#include <fenv.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HAS(s, sub) EH_CHECK(strstr((s), (sub)) != NULL, "the message lacks \"%s\":\n%s", (sub), (s))

static uint32_t tid(void) { return tl_emu_sreg(TL_EMU_SREG_TID_X); }
static uint32_t bid(void) { return tl_emu_sreg(TL_EMU_SREG_CTAID_X); }

static tl_emu_status launch(void (*fn)(void **), void **params, unsigned grid, unsigned block, size_t smem, int coop,
                            int racecheck, char *err, size_t cap)
{
    tl_emu_kernel *k;
    tl_emu_kernel_from_fn(fn, "ckernel", &k);
    tl_emu_launch_config cfg = {{grid, 1, 1}, block, smem, coop, NULL, 0};
    tl_emu_options o = {.workers = 1, .racecheck = racecheck};
    tl_emu_status st = tl_emu_launch(k, params, &cfg, &o, err, cap);
    tl_emu_kernel_free(k);
    return st;
}

/* ---- MUFU tables: TILEC_EMU_MUFU installs them at the first launch ---- */

static void k_nop(void **p) { (void)p; }

static void test_mufu_table(void)
{
    int32_t deltas[1 << 10] = {0}; /* a table that says "correctly rounded": enough to see it used */
    /* cut 3: the rule for negative inputs that makes a kind 1 table complete (numerics.h) */
    size_t n = tl_num_mufu_encode(1, 10, 3, deltas, NULL, 0);
    uint8_t *blob = malloc(n);
    char path[] = "/tmp/tilec-emu-mufu-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    EH_CHECK(blob && tl_num_mufu_encode(1, 10, 3, deltas, blob, n) == n && f && fwrite(blob, 1, n, f) == n,
             "writing a MUFU table");
    if (f)
        fclose(f);
    free(blob);
    setenv("TILEC_EMU_MUFU", path, 1);
    EH_CHECK(!tl_num_ex2_is_exact(), "an ex2 table before any launch");
    char err[256];
    tl_emu_status st = launch(k_nop, NULL, 1, 32, 0, 0, 0, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK && tl_num_ex2_is_exact(), "TILEC_EMU_MUFU: %s", err);
    unsetenv("TILEC_EMU_MUFU");
    unlink(path);
    tl_num_mufu_uninstall(1);
}

/* ---- grid sync ---- */

static void k_grid(void **p)
{
    int32_t *buf = *(int32_t **)p[0], *out = *(int32_t **)p[1];
    uint32_t t = tid(), b = bid(), nb = tl_emu_sreg(TL_EMU_SREG_NCTAID_X), nt = tl_emu_sreg(TL_EMU_SREG_NTID_X);
    buf[b * nt + t] = (int32_t)(b * 1000 + t);
    tl_emu_grid_sync(0);
    out[b * nt + t] = buf[((b + 1) % nb) * nt + t];
}

static void test_grid_sync(void)
{
    int32_t buf[6 * 64], out[6 * 64];
    void *pb = buf, *po = out;
    void *params[2] = {&pb, &po};
    char err[1024];
    tl_emu_status st = launch(k_grid, params, 6, 64, 0, 1, 1, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "grid sync: %s", err);
    for (int b = 0; b < 6 && st == TL_EMU_OK; b++)
        for (int t = 0; t < 64; t++)
            EH_CHECK(out[b * 64 + t] == ((b + 1) % 6) * 1000 + t, "grid sync: block %d thread %d", b, t);
    st = launch(k_grid, params, 2, 64, 0, 0, 1, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_INVALID, "grid sync without a cooperative launch: %s", tl_emu_status_name(st));
    HAS(err, "grid_sync in kernel ckernel (block (0,0,0), thread 0) needs a cooperative launch");
}

/* block 0's thread 0 waits at a barrier while every other thread waits at the grid sync */
static void k_mixed(void **p)
{
    (void)p;
    if (bid() == 0 && tid() == 0)
        tl_emu_barrier(0);
    else
        tl_emu_grid_sync(0);
}

static void test_deadlock_mixed(void)
{
    char err[2048];
    tl_emu_status st = launch(k_mixed, NULL, 2, 64, 0, 1, 1, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_DEADLOCK, "mixed deadlock: %s: %s", tl_emu_status_name(st), err);
    HAS(err, "deadlock in kernel ckernel, block (0,0,0): no thread can continue (and 1 more blocks)");
    HAS(err, "thread 0: wait at sync_threads");
    HAS(err, "threads 1-63: wait at grid_sync");
}

/* ---- warp syncs and the racecheck ---- */

static void k_wsync(void **p)
{
    int32_t *s = tl_emu_smem(), *out = *(int32_t **)p[0];
    int mode = *(int *)p[1];
    uint32_t t = tid(), lane = t % 32;
    tl_emu_shared_access(&s[t], 4, TL_EMU_WRITE, 1);
    s[t] = (int32_t)t;
    if (mode == 1) {
        tl_emu_warp_sync(0xFFFFFFFFu, 2);
    } else if (mode == 2) { /* two half-warps, each its own mask */
        tl_emu_warp_sync(lane < 16 ? 0x0000FFFFu : 0xFFFF0000u, 2);
    }
    uint32_t src = mode == 3 ? t ^ 32 : (mode == 2 ? (t ^ 1) : (t ^ 17));
    tl_emu_shared_access(&s[src], 4, TL_EMU_READ, 3);
    out[t] = s[src];
}

static void test_warp_sync_race(void)
{
    int32_t out[64];
    void *po = out;
    char err[2048];
    for (int mode = 0; mode < 4; mode++) {
        int m = mode;
        void *params[2] = {&po, &m};
        tl_emu_status st = launch(k_wsync, params, 1, 64, 256, 0, 1, err, sizeof err);
        /* 0: no sync (race); 1: warp sync orders the warp; 2: half-warp syncs order half-warps;
         * 3: a warp sync does not order accesses across warps (race) */
        tl_emu_status want = mode == 0 || mode == 3 ? TL_EMU_ERROR_RACE : TL_EMU_OK;
        EH_CHECK(st == want, "warp sync mode %d: %s: %s", mode, tl_emu_status_name(st), err);
        if (st == TL_EMU_OK)
            for (int t = 0; t < 64; t++)
                EH_CHECK(out[t] == (int)(mode == 2 ? t ^ 1 : t ^ 17), "warp sync mode %d thread %d", mode, t);
    }
}

static void k_disagree(void **p)
{
    (void)p;
    if (tid() == 31)
        tl_emu_vote(TL_EMU_VOTE_BALLOT, 0xFFFFFFFFu, 1, 5);
    else
        tl_emu_shfl(TL_EMU_SHFL_BFLY, 0xFFFFFFFFu, 1, 1, 31, 6);
}

static void test_warp_disagree(void)
{
    char err[1024];
    tl_emu_status st = launch(k_disagree, NULL, 1, 32, 0, 0, 1, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_WARP, "disagreeing lanes: %s: %s", tl_emu_status_name(st), err);
    HAS(err, "thread 31 (warp 0, lane 31): ballot (member mask 0xffffffff) while lane 0 of the warp waits at shfl_xor");
}

/* ---- printf ---- */

typedef struct Out {
    char buf[512];
    size_t len;
} Out;

static void capture(void *ctx, const char *text, size_t n)
{
    Out *o = ctx;
    if (o->len + n < sizeof o->buf) {
        memcpy(o->buf + o->len, text, n);
        o->len += n;
        o->buf[o->len] = 0;
    }
}

static void k_print(void **p)
{
    (void)p;
    /* the buffer as PTX code packs it: each value at an offset aligned to its size */
    _Alignas(8) unsigned char buf[64];
    double d = 3.14159;
    int32_t i = -42, c = 'Z';
    uint32_t x = 0xBEEF;
    int64_t l = -1234567890123ll;
    memcpy(buf + 0, &d, 8);
    memcpy(buf + 8, &i, 4);
    memcpy(buf + 12, &x, 4);
    memcpy(buf + 16, &l, 8);
    memcpy(buf + 24, &c, 4);
    memcpy(buf + 32, &d, 8);
    tl_emu_vprintf("[%7.3f|%-5d|%#x|%lld|%c|%%|%.2e]\n", buf);
    tl_emu_vprintf("no arguments\n", NULL);
}

static void test_printf(void)
{
    Out o = {{0}, 0};
    tl_emu_kernel *k;
    tl_emu_kernel_from_fn(k_print, "print", &k);
    tl_emu_launch_config cfg = {{1, 1, 1}, 1, 0, 0, NULL, 0};
    tl_emu_options opt = {.workers = 1, .output = capture, .output_ctx = &o};
    char err[256];
    tl_emu_status st = tl_emu_launch(k, NULL, &cfg, &opt, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "printf: %s", err);
    EH_CHECK(!strcmp(o.buf, "[  3.142|-42  |0xbeef|-1234567890123|Z|%|3.14e+00]\nno arguments\n"), "printf: %s", o.buf);
    tl_emu_kernel_free(k);
}

/* ---- the global bounds check: tensor ranges, and accesses as compiled code reports them ---- */

static void test_tensor_range(void)
{
    static char buf[256];
    int64_t sh[2] = {4, 8}, st[2] = {16, 1};
    tl_emu_range r = tl_emu_tensor_range(buf, 32, 2, sh, st, "x");
    EH_CHECK(r.base == buf && r.bytes == 4 * (1 + 3 * 16 + 7), "strided: %p %zu", r.base, r.bytes);
    int64_t neg[2] = {-16, 1}; /* rows in reverse: the lowest byte is three rows down */
    r = tl_emu_tensor_range(buf + 192, 32, 2, sh, neg, "x");
    EH_CHECK(r.base == buf && r.bytes == 4 * (1 + 3 * 16 + 7), "negative stride: %p %zu", r.base, r.bytes);
    int64_t n5[1] = {5}, one[1] = {1}, n6[1] = {6};
    r = tl_emu_tensor_range(buf, 4, 1, n5, one, "q"); /* e2m1: 5 values in 3 bytes */
    EH_CHECK(r.base == buf && r.bytes == 3, "e2m1: %zu", r.bytes);
    r = tl_emu_tensor_range(buf, 4, 1, n6, one, "q");
    EH_CHECK(r.bytes == 3, "e2m1 x 6: %zu", r.bytes);
    int64_t bc[2] = {4, 8}, bst[2] = {0, 1}; /* broadcast rows */
    r = tl_emu_tensor_range(buf, 16, 2, bc, bst, "b");
    EH_CHECK(r.bytes == 16, "broadcast: %zu", r.bytes);
    int64_t empty[2] = {4, 0};
    r = tl_emu_tensor_range(buf, 32, 2, empty, st, "e");
    EH_CHECK(r.base == buf && r.bytes == 0, "empty: %zu", r.bytes);
    r = tl_emu_tensor_range(NULL, 32, 2, sh, st, "absent");
    EH_CHECK(!r.base && r.bytes == 0, "absent: %p %zu", r.base, r.bytes);
}

/* p[0]: the address to touch, p[1]: the tensor it goes through */
static void k_touch(void **p)
{
    const char *a = *(const char **)p[0];
    uint32_t t = *(uint32_t *)p[1];
    const uint64_t *r = tl_emu_global_ranges();
    uint64_t base = t < TL_EMU_MAX_RANGES ? r[2 * t] : 0, size = t < TL_EMU_MAX_RANGES ? r[2 * t + 1] : 0;
    if ((uint64_t)(uintptr_t)a - base > size - 8 || size < 8)
        tl_emu_global_access(a, 8, TL_EMU_WRITE, 3, t);
}

static tl_emu_status touch(const tl_emu_range *ranges, int n, const char *a, uint32_t t, char *err, size_t cap)
{
    tl_emu_kernel *k;
    tl_emu_kernel_from_fn(k_touch, "touch", &k);
    void *params[2] = {&a, &t};
    tl_emu_launch_config cfg = {{1, 1, 1}, 1, 0, 0, ranges, n};
    tl_emu_options o = {.workers = 1};
    tl_emu_status st = tl_emu_launch(k, params, &cfg, &o, err, cap);
    tl_emu_kernel_free(k);
    return st;
}

static void test_global_access(void)
{
    static char mem[1024];
    tl_emu_range r[3] = {{mem, 64, "a", 0, 0}, {NULL, 0, "opt", 0, 0}, {mem + 512, 256, NULL, 0, 0}};
    char err[512];
    EH_CHECK(touch(r, 3, mem + 56, 0, err, sizeof err) == TL_EMU_OK, "the last 8 bytes of a: %s", err);
    tl_emu_status st = touch(r, 3, mem + 60, 0, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_MEMORY, "straddling the end: %s", tl_emu_status_name(st));
    HAS(err, "kernel touch, block (0,0,0), thread 0 writes 8 bytes at 0x");
    HAS(err, "], offset 60 of 'a', 4 bytes past the end of its 64 bytes");
    /* through a known tensor: inside another one is still out of bounds */
    st = touch(r, 3, mem + 512, 0, err, sizeof err);
    HAS(err, "offset 512 of 'a', 456 bytes past the end of its 64 bytes");
    st = touch(r, 3, mem + 500, 2, err, sizeof err);
    HAS(err, "offset -12 of tensor parameter 2, 12 bytes before its start");
    st = touch(r, 3, (const char *)16, 1, err, sizeof err);
    HAS(err, "writes 8 bytes at 0x10 [");
    HAS(err, "], through 'opt', a null pointer (the tensor is absent or empty)");
    /* a tensor the compiler could not tell: any range will do, else the nearest is named */
    EH_CHECK(touch(r, 3, mem + 600, TL_EMU_NO_TENSOR, err, sizeof err) == TL_EMU_OK, "in some range: %s", err);
    st = touch(r, 3, mem + 100, TL_EMU_NO_TENSOR, err, sizeof err);
    HAS(err, "], outside every tensor argument (the nearest: offset 100 of 'a', 44 bytes past the end of its 64 "
             "bytes)");
    st = touch(r + 1, 1, mem, TL_EMU_NO_TENSOR, err, sizeof err);
    HAS(err, "], outside every tensor argument (none has memory)");
    /* without ranges nothing is checked */
    EH_CHECK(touch(NULL, 0, mem + 1000, 0, err, sizeof err) == TL_EMU_OK, "unchecked: %s", err);
}

/* ---- argument errors ---- */

static void k_nothing(void **p) { (void)p; }

static void test_errors(void)
{
    char err[512];
    tl_emu_kernel *k = NULL;
    static const char junk[] = "this is not an object file at all, not even close, whatever its length may be";
    tl_emu_status st = tl_emu_kernel_load(junk, sizeof junk, "k", NULL, &k, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_INVALID && !k, "loading junk: %s", tl_emu_status_name(st));
    HAS(err, "cannot load the emulator object: not a 64-bit little-endian ELF file");
    st = tl_emu_kernel_load(junk, 10, "k", NULL, &k, err, sizeof err);
    HAS(err, "the object is too short");
    tl_emu_kernel_from_fn(k_nothing, "nothing", &k);
    tl_emu_launch_config cfg = {{1, 1, 1}, 0, 0, 0, NULL, 0};
    st = tl_emu_launch(k, NULL, &cfg, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_INVALID, "0 threads: %s", tl_emu_status_name(st));
    HAS(err, "tl_emu_launch: 0 threads per block (1 to 1024 are possible)");
    cfg.block = 2048;
    st = tl_emu_launch(k, NULL, &cfg, NULL, err, sizeof err);
    HAS(err, "tl_emu_launch: 2048 threads per block");
    cfg.block = 32;
    cfg.grid[1] = 0;
    st = tl_emu_launch(k, NULL, &cfg, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "an empty grid: %s", err);
    tl_emu_kernel_free(k);
}

/* a real object without the entry asked for */
static void test_missing_entry(void)
{
    const char *src = "kernel k1(x: f32[N]) grid(1) threads(32) { x[thread.x] = 1.0; }\n";
    tilec_program *p;
    tilec_program_from_string("m.tl", src, NULL, &p);
    tilec_target t = {90, 3, 1};
    tilec_artifact *a = NULL;
    if (tilec_compile(p, "k1", NULL, 0, &t, &a) != TILEC_OK) {
        EH_CHECK(0, "compiling k1: %s", tilec_program_diagnostics(p));
        tilec_program_destroy(p);
        return;
    }
    char err[512];
    tl_emu_kernel *k = NULL;
    tl_emu_status st = tl_emu_kernel_load(a->object, a->object_size, "nothere", NULL, &k, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_INVALID, "missing entry: %s", tl_emu_status_name(st));
    HAS(err, "no entry '__tl_emu_nothere' in the object");
    st = tl_emu_kernel_load(a->object, a->object_size / 2, a->entry, NULL, &k, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_INVALID, "truncated object: %s", tl_emu_status_name(st));
    st = tl_emu_kernel_load(a->object, a->object_size, a->entry, NULL, &k, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK && tl_emu_kernel_symbol(k, a->entry) != NULL, "the kernel's symbol: %s", err);
    tl_emu_kernel_free(k);
    tilec_artifact_destroy(a);
    tilec_program_destroy(p);
}

/* ---- numerics ---- */

static double d_of(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static uint64_t bits64(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static const int fenv_of[4] = {FE_TONEAREST, FE_TOWARDZERO, FE_DOWNWARD, FE_UPWARD};

static void test_cvt(void)
{
    uint64_t seed = 777;
    int bad = 0;
    for (int i = 0; i < 400000 && bad < 10; i++) {
        uint32_t u = (uint32_t)eh_rand(&seed);
        if (i % 4 == 1) /* near the rounding boundaries of f16 / bf16 */
            u = (u & 0xFFFFE000u) | (0x1000u + (uint32_t)(eh_rand(&seed) % 3) - 1);
        for (int r = 0; r < 4; r++) {
            uint64_t h = tl_emu_cvt(u, TL_EMU_F32, TL_EMU_F16, (uint32_t)r);
            uint64_t b = tl_emu_cvt(u, TL_EMU_F32, TL_EMU_BF16, (uint32_t)r);
            if (h != tl_num_f32_to_f16(u, (TlNumRound)r) || b != tl_num_f32_to_bf16(u, (TlNumRound)r)) {
                EH_CHECK(0, "f32 0x%08x mode %d: f16 0x%04llx bf16 0x%04llx", u, r, (unsigned long long)h,
                         (unsigned long long)b);
                bad++;
            }
        }
        /* f64 -> f32 and int64 -> f32 / f64 against the host under each rounding mode */
        uint64_t du = eh_rand(&seed);
        double d = i % 3 ? d_of(du) : (double)u * (1.0 + 1e-12);
        int64_t v = (int64_t)eh_rand(&seed) >> (eh_rand(&seed) % 60);
        for (int r = 0; r < 4; r++) {
            fesetround(fenv_of[r]);
            volatile double vd = d;
            volatile int64_t vv = v;
            volatile float want = (float)vd, wi = (float)vv;
            volatile double wd = (double)vv;
            fesetround(FE_TONEAREST);
            /* a NaN keeps its sign and the top of its payload, and becomes quiet (H200) */
            uint64_t db = bits64(d);
            uint32_t wb = isnan(d) ? (uint32_t)(db >> 63) << 31 | 0x7FC00000u | (uint32_t)(db >> 29 & 0x3FFFFF)
                                   : tl_num_bits(want);
            uint64_t got = tl_emu_cvt(bits64(d), TL_EMU_F64, TL_EMU_F32, (uint32_t)r);
            uint64_t gi = tl_emu_cvt((uint64_t)v, TL_EMU_S64, TL_EMU_F32, (uint32_t)r);
            uint64_t gd = tl_emu_cvt((uint64_t)v, TL_EMU_S64, TL_EMU_F64, (uint32_t)r);
            if (got != wb || gi != tl_num_bits(wi) || gd != bits64(wd)) {
                EH_CHECK(0, "mode %d: f64 %a -> 0x%08llx (want 0x%08x); i64 %lld -> 0x%08llx / 0x%016llx", r, d,
                         (unsigned long long)got, wb, (long long)v, (unsigned long long)gi, (unsigned long long)gd);
                bad++;
            }
        }
        /* f32 -> f64 is exact; a NaN keeps its sign and payload and becomes quiet (H200) */
        uint64_t wide = tl_emu_cvt(u, TL_EMU_F32, TL_EMU_F64, TL_EMU_RN);
        uint64_t wwide = (u & 0x7FFFFFFFu) > 0x7F800000u
                             ? (uint64_t)(u >> 31) << 63 | 0x7FF8000000000000ull | (uint64_t)(u & 0x3FFFFFu) << 29
                             : bits64((double)tl_num_float(u));
        if (wide != wwide) {
            EH_CHECK(0, "f32 0x%08x -> f64 0x%016llx, want 0x%016llx", u, (unsigned long long)wide,
                     (unsigned long long)wwide);
            bad++;
        }
#if defined(__FLT16_MAX__)
        /* one rounding from f64 and from integers straight to f16 */
        _Float16 hd = (_Float16)d, hi = (_Float16)v;
        uint16_t hdb, hib;
        memcpy(&hdb, &hd, 2);
        memcpy(&hib, &hi, 2);
        if (isnan(d)) /* the sign and the leading payload bits, quiet (H200) */
            hdb = (uint16_t)(bits64(d) >> 63 << 15 | 0x7E00u | (bits64(d) >> 42 & 0x1FF));
        if (tl_emu_cvt(bits64(d), TL_EMU_F64, TL_EMU_F16, TL_EMU_RN) != hdb ||
            tl_emu_cvt((uint64_t)v, TL_EMU_S64, TL_EMU_F16, TL_EMU_RN) != hib) {
            EH_CHECK(0, "f16 from f64 %a or from %lld", d, (long long)v);
            bad++;
        }
#endif
        /* f32 -> integers: rounded as asked, saturated, NaN -> 0 */
        float f = tl_num_float(u);
        for (int r = 0; r < 4; r++) {
            double rr = r == 0 ? rint(f) : r == 1 ? trunc(f) : r == 2 ? floor(f) : ceil(f);
            int64_t w32 = isnan(f) ? 0 : rr < -2147483648.0 ? INT32_MIN : rr > 2147483647.0 ? INT32_MAX : (int64_t)rr;
            uint64_t wu8 = isnan(f) ? 0 : rr < 0 ? 0 : rr > 255 ? 255 : (uint64_t)rr;
            if ((int32_t)tl_emu_cvt(u, TL_EMU_F32, TL_EMU_S32, (uint32_t)r) != w32 ||
                tl_emu_cvt(u, TL_EMU_F32, TL_EMU_U8, (uint32_t)r) != wu8) {
                EH_CHECK(0, "f32 %a mode %d to integers", f, r);
                bad++;
            }
        }
    }
}

static void test_fma_rm(void)
{
    uint64_t seed = 4242;
    int bad = 0;
    static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 0x1p-149f, -0x1p-149f, 0x1.fffffep127f, INFINITY, NAN};
    for (int i = 0; i < 300000 && bad < 10; i++) {
        float a, b, c;
        if (i < 729) {
            a = special[i % 9], b = special[i / 9 % 9], c = special[i / 81 % 9];
        } else {
            a = tl_num_float((uint32_t)eh_rand(&seed));
            b = tl_num_float((uint32_t)eh_rand(&seed));
            c = i % 2 ? -a * b : tl_num_float((uint32_t)eh_rand(&seed)); /* cancellations too */
        }
        fesetround(FE_DOWNWARD);
        volatile float va = a, vb = b, vc = c;
        volatile float want = fmaf(va, vb, vc);
        fesetround(FE_TONEAREST);
        float got = tl_emu_fma_rm(a, b, c);
        uint32_t wb = isnan(want) ? 0x7FFFFFFFu : tl_num_bits(want);
        if (tl_num_bits(got) != wb) {
            EH_CHECK(0, "fma.rm(%a, %a, %a) = %a, want %a", a, b, c, got, want);
            bad++;
        }
    }
    /* the expf sequence's use: t in [0, 1] */
    EH_CHECK(tl_emu_fma_rm(0.99999994f, 252.0f, 12582913.0f) == 12583164.0f, "fma.rm in expf");
}

static void test_minmax(void)
{
    float qnan = tl_num_float(0x7FC12345u);
    EH_CHECK(tl_num_bits(tl_emu_fminf(qnan, 2.0f)) == tl_num_bits(2.0f), "min(NaN, 2)");
    EH_CHECK(tl_num_bits(tl_emu_fmaxf(-3.0f, qnan)) == tl_num_bits(-3.0f), "max(-3, NaN)");
    EH_CHECK(tl_num_bits(tl_emu_fminf(qnan, qnan)) == 0x7FFFFFFFu, "min(NaN, NaN) is the canonical NaN");
    /* -0 is below +0 in either operand order (H200) */
    EH_CHECK(tl_num_bits(tl_emu_fminf(-0.0f, 0.0f)) == 0x80000000u, "min(-0, +0)");
    EH_CHECK(tl_num_bits(tl_emu_fminf(0.0f, -0.0f)) == 0x80000000u, "min(+0, -0)");
    EH_CHECK(tl_num_bits(tl_emu_fmaxf(0.0f, -0.0f)) == 0x00000000u, "max(+0, -0)");
    EH_CHECK(tl_num_bits(tl_emu_fmaxf(-0.0f, 0.0f)) == 0x00000000u, "max(-0, +0)");
    EH_CHECK(tl_num_bits(tl_emu_fminf(-0.0f, -0.0f)) == 0x80000000u && tl_num_bits(tl_emu_fmaxf(0.0f, 0.0f)) == 0,
             "min / max of equal zeros");
    EH_CHECK(tl_emu_fmin(1.0, -2.0) == -2.0 && tl_emu_fmax(1.0, -2.0) == 1.0, "f64 min / max");
    EH_CHECK(signbit(tl_emu_fmin(0.0, -0.0)) && signbit(tl_emu_fmin(-0.0, 0.0)) && !signbit(tl_emu_fmax(0.0, -0.0)) &&
                 !signbit(tl_emu_fmax(-0.0, 0.0)),
             "f64 min / max of signed zeros");
    EH_CHECK(tl_emu_sat(NAN) == 0.0f && tl_emu_sat(-1.0f) == 0.0f && tl_emu_sat(2.0f) == 1.0f && tl_emu_sat(0.25f) == 0.25f,
             "saturate");
}

/* ---- stack overflow ---- */

static int deep(int n)
{
    volatile char buf[4096];
    buf[0] = (char)n;
    return n ? deep(n - 1) + buf[0] : 0;
}

static void k_overflow(void **p)
{
    (void)p;
    if (tid() == 3)
        deep(1000); /* 4 MB of frames */
}

static void test_stack_overflow(void)
{
    char err[512];
    tl_emu_status st = launch(k_overflow, NULL, 1, 32, 0, 0, 0, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_MEMORY, "stack overflow: %s: %s", tl_emu_status_name(st), err);
    HAS(err, "kernel ckernel, block (0,0,0), thread 3: stack overflow");
    st = launch(k_nothing, NULL, 2, 64, 0, 0, 0, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "a launch after a stack overflow: %s", err);
}

/* ---- fiber switch cost ---- */

static void k_barriers(void **p)
{
    int n = *(int *)p[0];
    for (int i = 0; i < n; i++)
        tl_emu_barrier(0);
}

static void bench_switch(void)
{
    int n = 200;
    void *params[1] = {&n};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char err[256];
    tl_emu_status st = launch(k_barriers, params, 4, 1024, 0, 0, 0, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    EH_CHECK(st == TL_EMU_OK, "barriers: %s", err);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    double switches = 4.0 * 1024 * (n + 1) * 2;
    printf("fiber switches: %.0f in %.3f s, %.1f ns each\n", switches, s, 1e9 * s / switches);
}

int main(void)
{
    test_mufu_table();
    test_grid_sync();
    test_deadlock_mixed();
    test_warp_sync_race();
    test_warp_disagree();
    test_printf();
    test_tensor_range();
    test_global_access();
    test_errors();
    test_missing_entry();
    test_cvt();
    test_fma_rm();
    test_minmax();
    test_stack_overflow();
    bench_switch();
    return eh_finish("emu_lib");
}
