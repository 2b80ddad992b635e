/* test_emu_warp.c — thread-level semantics on the emulator: thread / block ids, shuffles of
 * every mode and width (checked against the PTX definition written out here), 64-bit shuffles,
 * ballot, match_any, warp reductions, barriers with shared memory, and barriers after some
 * threads returned. */
#include "emu_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *src =
    "kernel ids(out: i32[B, T, 4]) grid(B) threads(96)\n"
    "{\n"
    "    out[block.x, thread.x, 0] = thread.x;\n"
    "    out[block.x, thread.x, 1] = lane;\n"
    "    out[block.x, thread.x, 2] = warp;\n"
    "    out[block.x, thread.x, 3] = block_dim.x * 1000 + grid_dim.x;\n"
    "}\n"
    "\n"
    "kernel shuffles(x: i32[T], d: i32[T], out: i32[T, 12]) grid(1) threads(64)\n"
    "{\n"
    "    let t = thread.x;\n"
    "    let v = x[t];\n"
    "    let k = d[t];\n"
    "    out[t, 0] = shfl(v, k);\n"
    "    out[t, 1] = shfl(v, k, 16);\n"
    "    out[t, 2] = shfl(v, k, 8);\n"
    "    out[t, 3] = shfl_xor(v, k);\n"
    "    out[t, 4] = shfl_xor(v, k, 16);\n"
    "    out[t, 5] = shfl_xor(v, k, 4);\n"
    "    out[t, 6] = shfl_up(v, k);\n"
    "    out[t, 7] = shfl_up(v, k, 16);\n"
    "    out[t, 8] = shfl_up(v, k, 8);\n"
    "    out[t, 9] = shfl_down(v, k);\n"
    "    out[t, 10] = shfl_down(v, k, 16);\n"
    "    out[t, 11] = shfl_down(v, k, 2);\n"
    "}\n"
    "\n"
    "kernel wide(x: i64[T], y: f64[T], out: i64[T], outf: f64[T]) grid(1) threads(32)\n"
    "{\n"
    "    out[thread.x] = shfl_xor(x[thread.x], 5);\n"
    "    outf[thread.x] = shfl_down(y[thread.x], 3);\n"
    "}\n"
    "\n"
    "kernel votes(x: i32[T], f: f32[T], out: u32[T, 3], red: f32[T, 3], ired: i32[T]) grid(1) threads(64)\n"
    "{\n"
    "    let t = thread.x;\n"
    "    out[t, 0] = ballot(x[t] > 0);\n"
    "    out[t, 1] = match_any(x[t]);\n"
    "    out[t, 2] = u32(popc(ballot(x[t] % 3 == 0)));\n"
    "    red[t, 0] = warp_sum(f[t]);\n"
    "    red[t, 1] = warp_max(f[t]);\n"
    "    red[t, 2] = warp_min(f[t]);\n"
    "    ired[t] = warp_max(x[t]);\n"
    "}\n"
    "\n"
    "kernel reverse(x: f32[T], out: f32[T]) grid(1) threads(256)\n"
    "{\n"
    "    shared s: f32[256];\n"
    "    s[thread.x] = x[thread.x];\n"
    "    sync_threads();\n"
    "    out[thread.x] = s[255 - thread.x];\n"
    "}\n"
    "\n"
    "kernel partial(x: f32[T], out: f32[T]) grid(1) threads(128)\n"
    "{\n"
    "    shared s: f32[128];\n"
    "    s[thread.x] = x[thread.x];\n"
    "    if thread.x >= 100 {\n"
    "        return;\n"
    "    }\n"
    "    sync_threads();\n"
    "    out[thread.x] = s[thread.x + 1] * 2.0;\n"
    "}\n";

static int compile(const char *kernel, EhKernel *k) { return eh_compile("warp.tl", src, kernel, NULL, 0, k); }

/* shfl.sync's source lane as the PTX ISA defines it, and the clamp value codegen passes */
static int ref_src(int lane, int mode, int b, int width)
{
    int seg = 32 - width, c = mode == 0 ? 0 : 31;
    int maxl = (lane & seg) | (c & ~seg), minl = lane & seg;
    int j;
    int ok;
    b &= 31;
    switch (mode) {
    case 0: j = lane - b; ok = j >= maxl; break;           /* up */
    case 1: j = lane + b; ok = j <= maxl; break;           /* down */
    case 2: j = lane ^ b; ok = j <= maxl; break;           /* xor */
    default: j = minl | (b & ~seg); ok = j <= maxl; break; /* idx */
    }
    return ok ? j : lane;
}

static void test_ids(void)
{
    EhKernel k;
    if (!compile("ids", &k)) {
        eh_failures++;
        return;
    }
    int32_t out[3 * 96 * 4];
    int64_t shape[3] = {3, 96, 4};
    EhArg a = eh_tensor(out, 3, shape, NULL);
    char err[1024];
    tl_emu_options o = {.workers = 2, .racecheck = 1};
    tl_emu_status st = eh_run(&k, &a, 1, &o, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "ids: %s", err);
    for (int b = 0; b < 3; b++)
        for (int t = 0; t < 96; t++) {
            int32_t *r = &out[(b * 96 + t) * 4];
            EH_CHECK(r[0] == t && r[1] == t % 32 && r[2] == t / 32 && r[3] == 96 * 1000 + 3,
                     "ids: block %d thread %d: %d %d %d %d", b, t, r[0], r[1], r[2], r[3]);
        }
    eh_free(&k);
}

static void test_shuffles(void)
{
    EhKernel k;
    if (!compile("shuffles", &k)) {
        eh_failures++;
        return;
    }
    int32_t x[64], d[64], out[64 * 12];
    uint64_t seed = 7;
    for (int t = 0; t < 64; t++) {
        x[t] = (int32_t)(eh_rand(&seed) & 0xFFFFFF) - 0x800000;
        d[t] = (int32_t)(eh_rand(&seed) % 40); /* offsets past 31 wrap to 5 bits */
    }
    int64_t n1[1] = {64}, n2[2] = {64, 12};
    EhArg a[3] = {eh_tensor(x, 1, n1, NULL), eh_tensor(d, 1, n1, NULL), eh_tensor(out, 2, n2, NULL)};
    char err[1024];
    tl_emu_status st = eh_run(&k, a, 3, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "shuffles: %s", err);
    static const int modes[12] = {3, 3, 3, 2, 2, 2, 0, 0, 0, 1, 1, 1};
    static const int widths[12] = {32, 16, 8, 32, 16, 4, 32, 16, 8, 32, 16, 2};
    for (int t = 0; t < 64 && st == TL_EMU_OK; t++)
        for (int j = 0; j < 12; j++) {
            int w0 = t / 32 * 32;
            int want = x[w0 + ref_src(t % 32, modes[j], d[t], widths[j])];
            EH_CHECK(out[t * 12 + j] == want, "shuffle %d (mode %d, width %d) in thread %d (offset %d): got %d, want %d", j,
                     modes[j], widths[j], t, d[t], out[t * 12 + j], want);
        }
    eh_free(&k);
}

static void test_wide(void)
{
    EhKernel k;
    if (!compile("wide", &k)) {
        eh_failures++;
        return;
    }
    int64_t x[32], out[32];
    double y[32], outf[32];
    for (int t = 0; t < 32; t++) {
        x[t] = (int64_t)0x123456789abcdefll * (t + 1);
        y[t] = 1.0 / (t + 3);
    }
    int64_t n[1] = {32};
    EhArg a[4] = {eh_tensor(x, 1, n, NULL), eh_tensor(y, 1, n, NULL), eh_tensor(out, 1, n, NULL),
                  eh_tensor(outf, 1, n, NULL)};
    char err[1024];
    tl_emu_status st = eh_run(&k, a, 4, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "wide: %s", err);
    for (int t = 0; t < 32; t++) {
        EH_CHECK(out[t] == x[t ^ 5], "64-bit shfl_xor lane %d", t);
        EH_CHECK(outf[t] == y[t + 3 < 32 ? t + 3 : t], "f64 shfl_down lane %d", t);
    }
    eh_free(&k);
}

static void test_votes(void)
{
    EhKernel k;
    if (!compile("votes", &k)) {
        eh_failures++;
        return;
    }
    int32_t x[64], ired[64];
    float f[64], red[64 * 3];
    uint32_t out[64 * 3];
    uint64_t seed = 99;
    for (int t = 0; t < 64; t++) {
        x[t] = (int32_t)(eh_rand(&seed) % 7) - 3;
        f[t] = eh_randn(&seed);
    }
    int64_t n1[1] = {64}, n3[2] = {64, 3};
    EhArg a[5] = {eh_tensor(x, 1, n1, NULL), eh_tensor(f, 1, n1, NULL), eh_tensor(out, 2, n3, NULL),
                  eh_tensor(red, 2, n3, NULL), eh_tensor(ired, 1, n1, NULL)};
    char err[1024];
    tl_emu_status st = eh_run(&k, a, 5, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "votes: %s", err);
    for (int t = 0; t < 64 && st == TL_EMU_OK; t++) {
        int w0 = t / 32 * 32;
        uint32_t ballot = 0, same = 0, div3 = 0;
        int imax = x[w0];
        for (int l = 0; l < 32; l++) {
            ballot |= (uint32_t)(x[w0 + l] > 0) << l;
            same |= (uint32_t)(x[w0 + l] == x[t]) << l;
            div3 += x[w0 + l] % 3 == 0;
            if (x[w0 + l] > imax)
                imax = x[w0 + l];
        }
        EH_CHECK(out[t * 3] == ballot, "ballot thread %d: 0x%08x, want 0x%08x", t, out[t * 3], ballot);
        EH_CHECK(out[t * 3 + 1] == same, "match_any thread %d: 0x%08x, want 0x%08x", t, out[t * 3 + 1], same);
        EH_CHECK(out[t * 3 + 2] == div3, "popc(ballot) thread %d", t);
        EH_CHECK(ired[t] == imax, "warp_max (i32) thread %d", t);
        /* the xor butterfly: lane l adds lane l ^ 16, then ^ 8, ... in that order */
        float v[32], mx[32], mn[32];
        for (int l = 0; l < 32; l++)
            v[l] = mx[l] = mn[l] = f[w0 + l];
        for (int off = 16; off >= 1; off /= 2) {
            float nv[32], nx[32], nn[32];
            for (int l = 0; l < 32; l++) {
                nv[l] = v[l] + v[l ^ off];
                nx[l] = mx[l] > mx[l ^ off] ? mx[l] : mx[l ^ off];
                nn[l] = mn[l] < mn[l ^ off] ? mn[l] : mn[l ^ off];
            }
            memcpy(v, nv, sizeof v);
            memcpy(mx, nx, sizeof mx);
            memcpy(mn, nn, sizeof mn);
        }
        EH_CHECK(memcmp(&red[t * 3], &v[t % 32], 4) == 0, "warp_sum thread %d: %a, want %a", t, red[t * 3], v[t % 32]);
        EH_CHECK(red[t * 3 + 1] == mx[t % 32] && red[t * 3 + 2] == mn[t % 32], "warp_max / warp_min thread %d", t);
    }
    eh_free(&k);
}

static void test_barriers(void)
{
    EhKernel k;
    if (!compile("reverse", &k)) {
        eh_failures++;
        return;
    }
    float x[256], out[256];
    for (int i = 0; i < 256; i++)
        x[i] = (float)i * 0.5f;
    int64_t n[1] = {256};
    EhArg a[2] = {eh_tensor(x, 1, n, NULL), eh_tensor(out, 1, n, NULL)};
    char err[2048];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "reverse: %s", err);
    for (int i = 0; i < 256; i++)
        EH_CHECK(out[i] == x[255 - i], "reverse element %d", i);
    eh_free(&k);

    /* threads 100..127 return before the barrier: it must not wait for them */
    if (!compile("partial", &k)) {
        eh_failures++;
        return;
    }
    float y[128], o2[128];
    for (int i = 0; i < 128; i++)
        y[i] = (float)i, o2[i] = -1.0f;
    int64_t m[1] = {128};
    EhArg b[2] = {eh_tensor(y, 1, m, NULL), eh_tensor(o2, 1, m, NULL)};
    st = eh_run(&k, b, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "partial: %s", err);
    for (int i = 0; i < 128; i++)
        EH_CHECK(o2[i] == (i < 100 ? 2.0f * (float)(i + 1) : -1.0f), "partial element %d: %g", i, o2[i]);
    eh_free(&k);
}

int main(void)
{
    test_ids();
    test_shuffles();
    test_wide();
    test_votes();
    test_barriers();
    return eh_finish("emu_warp");
}
