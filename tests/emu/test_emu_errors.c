/* test_emu_errors.c — what the emulator reports instead of hanging or crashing: deadlocks,
 * shared-memory races, warp operations that exited lanes take part in, shared- and global-memory
 * accesses out of bounds, trap() and failed asserts with their source location; and printf
 * output. */
#include "emu_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *src =
    "kernel deadlock(x: f32[T], out: f32[T]) grid(1) threads(64)\n"        /* line 1 */
    "{\n"
    "    var v = x[thread.x];\n"
    "    if lane < 16 {\n"
    "        v = shfl_xor(v, 1);\n"                                         /* line 5 */
    "    }\n"
    "    sync_threads();\n"
    "    out[thread.x] = v;\n"
    "}\n"
    "\n"                                                                    /* line 10 */
    "kernel exited(x: f32[T], out: f32[T]) grid(1) threads(32)\n"
    "{\n"
    "    if thread.x >= 16 {\n"
    "        return;\n"
    "    }\n"
    "    out[thread.x] = shfl_xor(x[thread.x], 1);\n"
    "}\n"
    "\n"
    "kernel race(x: f32[T], out: f32[B, 64]) grid(2) threads(64)\n"
    "{\n"                                                                   /* line 20 */
    "    shared stage: f32[64];\n"
    "    stage[thread.x] = x[thread.x];\n"
    "    out[block.x, thread.x] = stage[63 - thread.x];\n"
    "}\n"
    "\n"
    "kernel oob(idx: i32[T], out: f32[T]) grid(1) threads(32)\n"
    "{\n"
    "    shared s: f32[32];\n"
    "    s[thread.x] = 1.0;\n"
    "    sync_threads();\n"                                                 /* line 30 */
    "    out[thread.x] = s[idx[thread.x]];\n"
    "}\n"
    "\n"
    "kernel trapper(x: f32[T]) grid(1) threads(32)\n"
    "{\n"
    "    if x[thread.x] < 0.0 {\n"
    "        trap();\n"
    "    }\n"
    "}\n"
    "\n"                                                                    /* line 40 */
    "kernel checked(x: f32[T], out: f32[T]) grid(2) threads(32)\n"
    "{\n"
    "    let i = block.x * 32 + thread.x;\n"
    "    assert(x[i] >= 0.0);\n"
    "    assert(x[i] < 100.0, \"x too large\");\n"                         /* line 45 */
    "    out[i] = x[i];\n"
    "}\n"
    "\n"
    "kernel talk(x: f32[T], n: i64[T]) grid(1) threads(32)\n"
    "{\n"                                                                   /* line 50 */
    "    if thread.x < 3 {\n"
    "        printf(\"t=%d x=%.3f n=%lld big=%d u=%u h=%g%%\\n\", thread.x, x[thread.x], n[thread.x], x[thread.x] > 1.0,\n"
    "               u32(7), bf16(x[thread.x]));\n"
    "    }\n"
    "    if thread.x == 31 {\n"
    "        printf(\"done\\n\");\n"
    "    }\n"
    "}\n"
    "\n"
    "kernel wild(addr: u64[N], out: f32[N]) grid(1) threads(32)\n"               /* line 60 */
    "{\n"
    "    let v = view<f32>(addr[0], [32]);\n"
    "    out[thread.x] = v[thread.x];\n"
    "}\n"
    "\n"
    "kernel past(x: f32[N], out: f32[N]) grid(1) threads(32)\n"                  /* line 66 */
    "{\n"
    "    out[thread.x + 1] = x[thread.x];\n"
    "}\n"
    "\n"
    "kernel before(x: f32[N], out: f32[N]) grid(1) threads(32)\n"                /* line 71 */
    "{\n"
    "    out[thread.x] = x[i32(thread.x) - 1];\n"
    "}\n"
    "\n"
    "kernel bump(idx: i32[N], s: f32, hist: i32[B]) grid(1) threads(32)\n"       /* line 76 */
    "{\n"
    "    atomic_add(hist[idx[thread.x]], 1);\n"
    "}\n"
    "\n"
    "kernel ends(x: f32[R, C] strides(SX, 1), out: f32[R, C], e: f32[M], shift: i32, touch: bool)\n"
    "    grid(1) threads(32)\n"                                                /* line 82 */
    "{\n"
    "    let r = i32(thread.x) / C;\n"
    "    let c = i32(thread.x) % C;\n"
    "    out[R - 1 - r, C - 1 - c] = x[r, c + shift];\n"                      /* line 86 */
    "    if touch {\n"
    "        e[0] = 1.0;\n"
    "    }\n"
    "}\n"
    "\n"
    "kernel fbump(idx: i32[N], hist: f32[B]) grid(1) threads(32)\n"             /* line 92 */
    "{\n"
    "    atomic_add(hist[idx[thread.x]], 0.5);\n"
    "}\n";

static bool compile(const char *kernel, EhKernel *k)
{
    if (eh_compile("errors.tl", src, kernel, NULL, 0, k))
        return true;
    eh_failures++;
    return false;
}

#define HAS(s, sub) EH_CHECK(strstr((s), (sub)) != NULL, "the message lacks \"%s\":\n%s", (sub), (s))

static void test_deadlock(void)
{
    EhKernel k;
    if (!compile("deadlock", &k))
        return;
    float x[64] = {0}, out[64];
    int64_t n[1] = {64};
    EhArg a[2] = {eh_tensor(x, 1, n, NULL), eh_tensor(out, 1, n, NULL)};
    char err[4096];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_DEADLOCK, "deadlock: status %s: %s", tl_emu_status_name(st), err);
    HAS(err, "deadlock in kernel deadlock<>, block (0,0,0): no thread can continue");
    HAS(err, "threads 0-15: wait at shfl_xor");
    HAS(err, "threads 16-31, 48-63: wait at sync_threads");
    HAS(err, "threads 32-47: wait at shfl_xor");
    HAS(err, "warp 1");
    eh_free(&k);
}

static void test_exited_lanes(void)
{
    EhKernel k;
    if (!compile("exited", &k))
        return;
    float x[32] = {0}, out[32];
    int64_t n[1] = {32};
    EhArg a[2] = {eh_tensor(x, 1, n, NULL), eh_tensor(out, 1, n, NULL)};
    char err[2048];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_WARP, "exited lanes: status %s: %s", tl_emu_status_name(st), err);
    HAS(err, "kernel exited<>, block (0,0,0): thread 16 exited while lane 0 of its warp waits for it at shfl_xor");
    eh_free(&k);
}

static void test_race(void)
{
    EhKernel k;
    if (!compile("race", &k))
        return;
    float x[64], out[128];
    for (int i = 0; i < 64; i++)
        x[i] = (float)i;
    int64_t n[1] = {64}, m[2] = {2, 64};
    EhArg a[2] = {eh_tensor(x, 1, n, NULL), eh_tensor(out, 2, m, NULL)};
    char err[4096];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_RACE, "race: status %s: %s", tl_emu_status_name(st), err);
    HAS(err, "race on shared memory in kernel race<>, block (0,0,0): thread 32 (warp 1, lane 0) reads 4 bytes at stage[31]");
    HAS(err, "which thread 31 (warp 0, lane 31) wrote");
    HAS(err, "with no barrier in between");
    /* the write after the read is a race too; each pair of accesses is reported once, not once per
     * element or block */
    HAS(err, "thread 32 (warp 1, lane 0) writes 4 bytes at stage[32] (shared offset 0x80)");
    const char *second = strstr(strstr(err, "race on") + 1, "race on");
    EH_CHECK(second && !strstr(second + 1, "race on"), "race: not exactly two reports:\n%s", err);
    /* the kernel still ran to completion */
    EH_CHECK(out[64 + 63] == 0.0f && out[64 + 32] == 31.0f, "race: the kernel did not finish");
    /* without the racecheck, no report */
    tl_emu_options o = {.workers = 1, .racecheck = 0};
    st = eh_run(&k, a, 2, &o, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "race with racecheck off: %s", err);
    eh_free(&k);
}

static void test_oob(void)
{
    EhKernel k;
    if (!compile("oob", &k))
        return;
    int32_t idx[32];
    float out[32];
    for (int i = 0; i < 32; i++)
        idx[i] = i == 5 ? 40 : 31 - i;
    int64_t n[1] = {32};
    EhArg a[2] = {eh_tensor(idx, 1, n, NULL), eh_tensor(out, 1, n, NULL)};
    char err[2048];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_MEMORY, "oob: status %s: %s", tl_emu_status_name(st), err);
    HAS(err, "kernel oob<>, block (0,0,0), thread 5 reads 4 bytes at shared offset 160");
    HAS(err, "outside the block's 128 bytes of shared memory");
    eh_free(&k);
}

static void test_trap(void)
{
    EhKernel k;
    if (!compile("trapper", &k))
        return;
    float x[32] = {0};
    x[7] = -1.0f;
    int64_t n[1] = {32};
    EhArg a = eh_tensor(x, 1, n, NULL);
    char err[1024];
    tl_emu_status st = eh_run(&k, &a, 1, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_TRAP, "trap: status %s: %s", tl_emu_status_name(st), err);
    HAS(err, "kernel trapper<> trapped");
    HAS(err, "in block (0,0,0), thread 7");
    x[7] = 0.0f;
    st = eh_run(&k, &a, 1, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "no trap: %s", err);
    eh_free(&k);
}

static void test_assert(void)
{
    EhKernel k;
    if (!compile("checked", &k))
        return;
    float x[64], out[64];
    for (int i = 0; i < 64; i++)
        x[i] = (float)i;
    int64_t n[1] = {64};
    EhArg a[2] = {eh_tensor(x, 1, n, NULL), eh_tensor(out, 1, n, NULL)};
    char err[1024];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "assert holds: %s", err);
    x[40] = 200.0f;
    st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_TRAP, "assert with a message: status %s: %s", tl_emu_status_name(st), err);
    HAS(err, "errors.tl:45: assertion failed in kernel checked<>, block (1,0,0), thread 8: x too large");
    x[40] = 1.0f;
    x[3] = -2.0f;
    st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_TRAP, "assert without a message: status %s: %s", tl_emu_status_name(st), err);
    HAS(err, "errors.tl:44: assertion failed in kernel checked<>, block (0,0,0), thread 3: assert(x[i] >= 0.0)");
    eh_free(&k);
}

typedef struct Out {
    char buf[1024];
    size_t len;
    int calls;
} Out;

static void capture(void *ctx, const char *text, size_t n)
{
    Out *o = ctx;
    if (o->len + n < sizeof o->buf) {
        memcpy(o->buf + o->len, text, n);
        o->len += n;
        o->buf[o->len] = 0;
    }
    o->calls++;
}

static void test_printf(void)
{
    EhKernel k;
    if (!compile("talk", &k))
        return;
    float x[32] = {0.5f, 1.25f, -3.0f};
    int64_t nn[32] = {-1, 1ll << 40, 42};
    int64_t n[1] = {32};
    EhArg a[2] = {eh_tensor(x, 1, n, NULL), eh_tensor(nn, 1, n, NULL)};
    Out o = {{0}, 0, 0};
    tl_emu_options opt = {.workers = 1, .racecheck = 1, .output = capture, .output_ctx = &o};
    char err[1024];
    tl_emu_status st = eh_run(&k, a, 2, &opt, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK, "printf: %s", err);
    const char *want = "t=0 x=0.500 n=-1 big=0 u=7 h=0.5%\n"
                       "t=1 x=1.250 n=1099511627776 big=1 u=7 h=1.25%\n"
                       "t=2 x=-3.000 n=42 big=0 u=7 h=-3%\n"
                       "done\n";
    EH_CHECK(!strcmp(o.buf, want), "printf output:\n%s\nwant:\n%s", o.buf, want);
    EH_CHECK(o.calls == 4, "printf: %d output calls, want one per printf (4)", o.calls);
    eh_free(&k);
}

static void test_wild_access(void)
{
    EhKernel k;
    if (!compile("wild", &k))
        return;
    float data[32], out[32];
    for (int i = 0; i < 32; i++)
        data[i] = (float)i;
    uint64_t addr[32] = {16};
    int64_t n[1] = {32};
    EhArg a[2] = {eh_tensor(addr, 1, n, NULL), eh_tensor(out, 1, n, NULL)};
    char err[1024];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_MEMORY, "wild access: status %s: %s", tl_emu_status_name(st), err);
    HAS(err, "kernel wild<>, block (0,0,0), thread 0: invalid memory access at address 0x10 (segmentation fault)");
    /* the process is intact and the next launch works */
    addr[0] = (uint64_t)(uintptr_t)data;
    st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK && out[31] == 31.0f, "after a fault: %s", err);
    eh_free(&k);
}

/* One buffer holds the tensors of the bounds tests, so that an overrun of one lands in the next
 * (mapped memory that a crash would not reveal): the check is against the tensor an access goes
 * through. The address in each report varies; the rest is compared. */
static void has_global_report(const char *err, const char *head, const char *tail)
{
    HAS(err, head);
    HAS(err, " bytes at 0x");
    HAS(err, tail);
}

static void test_global_past_end(void)
{
    EhKernel k;
    if (!compile("past", &k))
        return;
    float mem[64];
    for (int i = 0; i < 64; i++)
        mem[i] = (float)i;
    int64_t n[1] = {32};
    EhArg a[2] = {eh_tensor(mem + 32, 1, n, NULL), eh_tensor(mem, 1, n, NULL)}; /* out[32] is x[0] */
    char err[1024];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_MEMORY, "past the end: status %s: %s", tl_emu_status_name(st), err);
    has_global_report(err, "kernel past<>, block (0,0,0), thread 31 writes 4 bytes at 0x",
                      " [global store at errors.tl:68:5], offset 128 of 'out', 4 bytes past the end of its 128 bytes");
    EH_CHECK(mem[32] == 32.0f, "past the end: x[0] was overwritten (%g)", mem[32]);
    eh_free(&k);
}

static void test_global_before_start(void)
{
    EhKernel k;
    if (!compile("before", &k))
        return;
    float mem[96] = {0};
    int64_t n[1] = {32};
    EhArg a[2] = {eh_tensor(mem + 48, 1, n, NULL), eh_tensor(mem, 1, n, NULL)};
    char err[1024];
    tl_emu_status st = eh_run(&k, a, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_MEMORY, "before the start: status %s: %s", tl_emu_status_name(st), err);
    has_global_report(err, "kernel before<>, block (0,0,0), thread 0 reads 4 bytes at 0x",
                      " [global load at errors.tl:73:5], offset -4 of 'x', 4 bytes before its start");
    eh_free(&k);
}

static void test_global_atomic(void)
{
    EhKernel k;
    if (!compile("bump", &k))
        return;
    int32_t mem[64] = {0};
    for (int i = 0; i < 32; i++)
        mem[i] = i % 16;
    mem[5] = 16;
    int64_t n[1] = {32}, b[1] = {16};
    EhArg a[3] = {eh_tensor(mem, 1, n, NULL), eh_f32(1.0f), eh_tensor(mem + 40, 1, b, NULL)};
    char err[1024];
    tl_emu_status st = eh_run(&k, a, 3, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_MEMORY, "atomic: status %s: %s", tl_emu_status_name(st), err);
    has_global_report(err, "kernel bump<>, block (0,0,0), thread 5 atomically updates 4 bytes at 0x",
                      " [global atomic at errors.tl:78:5], offset 64 of 'hist', 4 bytes past the end of its 64 bytes");
    mem[5] = 15;
    memset(mem + 40, 0, 16 * sizeof(int32_t));
    st = eh_run(&k, a, 3, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK && mem[40 + 15] == 3, "atomic within bounds: %s", err);
    eh_free(&k);
    /* f32 atomic adds go through the emulator (tl_emu_atomic_add_f32): checked as well */
    if (!compile("fbump", &k))
        return;
    float fh[16];
    mem[5] = -1;
    EhArg fa[2] = {eh_tensor(mem, 1, n, NULL), eh_tensor(fh, 1, b, NULL)};
    st = eh_run(&k, fa, 2, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_MEMORY, "f32 atomic: status %s: %s", tl_emu_status_name(st), err);
    has_global_report(err, "kernel fbump<>, block (0,0,0), thread 5 atomically updates 4 bytes at 0x",
                      " [global atomic at errors.tl:94:5], offset -4 of 'hist', 4 bytes before its start");
    eh_free(&k);
}

/* a strided tensor spans 4 * (1 + 3 * 16 + 7) bytes of its 4 x 16 buffer; an empty one none */
static void test_global_extents(void)
{
    EhKernel k;
    if (!compile("ends", &k))
        return;
    float x[64 + 8], out[32], e[1] = {0};
    for (int i = 0; i < 64 + 8; i++)
        x[i] = (float)i;
    int64_t xs[2] = {4, 8}, xst[2] = {16, 1}, os[2] = {4, 8}, es[1] = {0};
    EhArg a[5] = {eh_tensor(x, 2, xs, xst), eh_tensor(out, 2, os, NULL), eh_tensor(e, 1, es, NULL), eh_i32(0),
                  eh_bool(false)};
    char err[1024];
    /* every first and last element, and an empty tensor, within bounds */
    tl_emu_status st = eh_run(&k, a, 5, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_OK && out[0] == 55.0f && out[31] == 0.0f, "the last elements: %s", err);
    /* x[3, 8] is in the buffer but past the tensor's last element */
    a[3] = eh_i32(1);
    st = eh_run(&k, a, 5, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_MEMORY, "strided: status %s: %s", tl_emu_status_name(st), err);
    has_global_report(err, "kernel ends<>, block (0,0,0), thread 31 reads 4 bytes at 0x",
                      " [global load at errors.tl:86:5], offset 224 of 'x', 4 bytes past the end of its 224 bytes");
    a[3] = eh_i32(0);
    a[4] = eh_bool(true);
    st = eh_run(&k, a, 5, NULL, err, sizeof err);
    EH_CHECK(st == TL_EMU_ERROR_MEMORY, "empty: status %s: %s", tl_emu_status_name(st), err);
    has_global_report(err, "kernel ends<>, block (0,0,0), thread 0 writes 4 bytes at 0x",
                      " [global store at errors.tl:88:9], offset 0 of 'e', 4 bytes past the end of its 0 bytes");
    EH_CHECK(e[0] == 0.0f, "empty: the element was written");
    eh_free(&k);
}

int main(void)
{
    test_deadlock();
    test_exited_lanes();
    test_race();
    test_oob();
    test_trap();
    test_assert();
    test_printf();
    test_wild_access();
    test_global_past_end();
    test_global_before_start();
    test_global_atomic();
    test_global_extents();
    return eh_finish("emu_errors");
}
