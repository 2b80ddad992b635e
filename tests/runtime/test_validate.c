/* test_validate.c — launch validation against signatures, with the exact messages users see, and
 * what reaches the (fake) driver: packed parameters, grid, launch attributes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_test.h"

static const char *const program =
    "@kernel transpose\n"
    "@default T bf16\n"
    "@sig\n"
    "tilec-sig 1\n"
    "kernel transpose\n"
    "entry transpose_$T\n"
    "key transpose<T=$T>\n"
    "arch $ARCH\n"
    "threads 256\n"
    "smem 0\n"
    "flags\n"
    "nparams 2\n"
    "tensor 0 x $T 3 16\n"
    "dim 0 0 (bind B)\n"
    "dim 0 1 (bind M)\n"
    "dim 0 2 (bind N)\n"
    "stride 0 0 (* M sx)\n"
    "stride 0 1 (bind sx)\n"
    "stride 0 2 1\n"
    "tensor 1 out $T 3 16 written\n"
    "dim 1 0 B\n"
    "dim 1 1 N\n"
    "dim 1 2 M\n"
    "grid (cdiv N 64) (cdiv M 64) B\n"
    "require (== (% M 64) 0) \"M must be a multiple of 64\"\n"
    "require (== (% N 64) 0) \"N must be a multiple of 64\"\n"
    "require (== (% sx 4) 0) \"the row stride of x must be a multiple of 4\"\n"
    "end\n"
    "@kernel scalars\n"
    "@sig\n"
    "tilec-sig 1\n"
    "kernel scalars\n"
    "entry scalars\n"
    "key scalars<>\n"
    "arch $ARCH\n"
    "threads 32\n"
    "flags\n"
    "nparams 14\n"
    "scalar 0 b bool\n"
    "scalar 1 c i8\n"
    "scalar 2 s i16\n"
    "scalar 3 i i32\n"
    "scalar 4 l i64\n"
    "scalar 5 ub u8\n"
    "scalar 6 us u16\n"
    "scalar 7 ui u32\n"
    "scalar 8 ul u64\n"
    "scalar 9 h f16\n"
    "scalar 10 bf bf16\n"
    "scalar 11 f f32\n"
    "scalar 12 d f64\n"
    "scalar 13 q e4m3\n"
    "grid 1\n"
    "end\n"
    "@kernel rows\n"
    "@sig\n"
    "tilec-sig 1\n"
    "kernel rows\n"
    "entry rows\n"
    "key rows<>\n"
    "arch $ARCH\n"
    "threads 128\n"
    "flags\n"
    "nparams 5\n"
    "tensor 0 x f32 2 4\n"
    "dim 0 0 (* 2 n)\n"
    "dim 0 1 (bind C)\n"
    "tensor 1 y f32 2 4 written\n"
    "dim 1 0 (bind R)\n"
    "dim 1 1 C\n"
    "stride 1 0 any\n"
    "stride 1 1 any\n"
    "tensor 2 bias f32 1 4 optional absent\n"
    "dim 2 0 C\n"
    "scalar 3 n i32\n"
    "scalar 4 alpha f32\n"
    "grid (cdiv (* R C) 128)\n"
    "require (> alpha 0.5) \"alpha too small\"\n"
    "require (== (% C n) 0) \"C must be a multiple of n\"\n"
    "end\n"
    "@kernel fancy\n"
    "@sig\n"
    "tilec-sig 1\n"
    "kernel fancy\n"
    "entry fancy\n"
    "key fancy<>\n"
    "arch $ARCH\n"
    "threads 384\n"
    "smem 100000\n"
    "cluster 2 1 1\n"
    "flags cooperative pdl\n"
    "nparams 1\n"
    "tensor 0 x u8 1 1\n"
    "dim 0 0 (bind L)\n"
    "grid num_sms\n"
    "end\n"
    "@kernel layers\n"
    "@sig\n"
    "tilec-sig 1\n"
    "kernel layers\n"
    "entry layers\n"
    "key layers<>\n"
    "arch $ARCH\n"
    "threads 64\n"
    "flags\n"
    "nparams 4\n"
    "tensor 0 r bf16 2 16\n"
    "dim 0 0 (bind N)\n"
    "dim 0 1 (bind H)\n"
    "list 1 xs bf16 2 16 4\n"
    "len 1 (bind L)\n"
    "dim 1 0 N\n"
    "dim 1 1 H\n"
    "list 2 outs f32 2 16 3 written\n"
    "len 2 (bind P)\n"
    "dim 2 0 (* 2 N)\n"
    "dim 2 1 (bind W)\n"
    "stride 2 0 (bind so)\n"
    "stride 2 1 1\n"
    "scalar 3 eps f32\n"
    "grid N\n"
    "require (|| (== P L) (== P (- L 1))) \"P is L or L - 1\"\n"
    "end\n"
    "@kernel big\n"
    "@sig\n"
    "tilec-sig 1\n"
    "kernel big\n"
    "entry big\n"
    "key big<>\n"
    "arch $ARCH\n"
    "threads 32\n"
    "flags\n"
    "nparams 1\n"
    "list 0 xs u8 1 16 4000\n"
    "len 0 (bind L)\n"
    "dim 0 0 (bind N)\n"
    "grid L\n"
    "end\n"
    "@kernel wide\n"
    "@sig\n"
    "tilec-sig 1\n"
    "kernel wide\n"
    "entry wide\n"
    "arch $ARCH\n"
    "threads 128\n"
    "cluster 16 1 1\n"
    "flags\n"
    "nparams 0\n"
    "grid 32\n"
    "end\n";

static tilec_rt *rt;
static tilec_rt_library *lib;

static void setup(void)
{
    rt = test_rt(TILEC_RT_NO_DISK_CACHE, NULL);
    lib = test_lib(rt, "kernels.fake", program);
}

static void teardown(void)
{
    tilec_rt_destroy(rt);
    CHECK(fake_live() == 0);
}

/* x: (B, M, N) with row stride sx; out: (B, N, M) contiguous */
static void transpose_args(tilec_rt_arg a[2], int64_t B, int64_t M, int64_t N, int64_t sx)
{
    int64_t xs[3] = {B, M, N}, xst[3] = {M * sx, sx, 1}, os[3] = {B, N, M};
    a[0] = tilec_rt_arg_tensor((void *)0x10000, TILEC_RT_BF16, 3, xs, xst);
    a[1] = tilec_rt_arg_tensor((void *)0x20000, TILEC_RT_BF16, 3, os, NULL);
}

static tilec_status launch(tilec_rt_kernel *k, const tilec_rt_arg *a, int n)
{
    tilec_rt_launch_options lo = {(void *)0x1234, 0};
    return tilec_rt_launch(k, a, n, &lo);
}

static void test_packing(void)
{
    setup();
    tilec_rt_kernel *k = test_kernel(lib, "transpose", "T=bf16", NULL);
    tilec_rt_arg a[2];
    transpose_args(a, 2, 128, 64, 80);
    CHECK_OK(launch(k, a, 2));
    char *log = fake_log_text();
    CHECK_CONTAINS(log, "cuLaunchKernel transpose_bf16 grid=1,2,2 block=256,1,1 smem=0 stream=0x1234 "
                        "params=0x10000,2,128,64,10240,80,1,0x20000,2,64,128,8192,128,1\n");
    free(log);
    tilec_rt_launch_config cfg;
    CHECK_OK(tilec_rt_check(k, a, 2, NULL, &cfg));
    CHECK(cfg.grid[0] == 1 && cfg.grid[1] == 2 && cfg.grid[2] == 2 && cfg.block[0] == 256 && cfg.smem == 0);
    CHECK(cfg.param_bytes == 8 + 12 + 4 + 24 + 8 + 12 + 4 + 24);
    CHECK(fake_calls("cuLaunchKernel") == 1); /* check does not launch */
    teardown();
}

static void test_dtype_rank_kind_count(void)
{
    setup();
    tilec_rt_kernel *k = test_kernel(lib, "transpose", NULL, NULL);
    tilec_rt_arg a[3];
    transpose_args(a, 2, 128, 64, 80);
    a[0].u.tensor.dtype = TILEC_RT_F32;
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH, "argument 'x': expected dtype bf16, got f32");
    a[0].u.tensor.dtype = (tilec_rt_dtype)77;
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH, "argument 'x': expected dtype bf16, got an invalid dtype");
    transpose_args(a, 2, 128, 64, 80);
    a[1].u.tensor.rank = 2;
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH, "argument 'out': expected rank 3, got 2");
    transpose_args(a, 2, 128, 64, 80);
    a[0] = tilec_rt_arg_int(TILEC_RT_I32, 5);
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH, "argument 'x': expected a tensor, got a scalar");
    a[0] = tilec_rt_arg_absent();
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH, "argument 'x': expected a tensor, got an absent tensor");
    transpose_args(a, 2, 128, 64, 80);
    CHECK_ERR(launch(k, a, 1), TILEC_ERROR_LAUNCH, "expected 2 arguments, got 1 (missing 'out')");
    CHECK_ERR(launch(k, a, 0), TILEC_ERROR_LAUNCH, "expected 2 arguments, got 0 (missing 'x')");
    a[2] = a[1];
    CHECK_ERR(launch(k, a, 3), TILEC_ERROR_LAUNCH, "expected 2 arguments, got 3");
    CHECK_ERR(tilec_rt_launch(NULL, a, 2, NULL), TILEC_ERROR_INVALID_ARGUMENT,
              "tilec_rt_launch: NULL kernel or arguments");
    CHECK_ERR(tilec_rt_launch(k, NULL, 2, NULL), TILEC_ERROR_INVALID_ARGUMENT,
              "tilec_rt_launch: NULL kernel or arguments");
    tilec_rt_launch_options bad = {NULL, -3};
    CHECK_ERR(tilec_rt_launch(k, a, 2, &bad), TILEC_ERROR_INVALID_ARGUMENT, "tilec_rt_launch: num_sms -3 is negative");
    CHECK(fake_calls("cuLaunchKernel") == 0);
    teardown();
}

static void test_shapes_and_strides(void)
{
    setup();
    tilec_rt_kernel *k = test_kernel(lib, "transpose", NULL, NULL);
    tilec_rt_arg a[2];
    transpose_args(a, 2, 128, 64, 80);
    a[1].u.tensor.shape[2] = 64;
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH,
              "argument 'out': dimension 2 is 64 but M = 128 (bound by 'x' dimension 1)");
    transpose_args(a, 2, 128, 64, 80);
    a[1].u.tensor.shape[0] = 3;
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH, "argument 'out': dimension 0 is 3 but B = 2 (bound by 'x' dimension 0)");
    transpose_args(a, 2, 128, 64, 80);
    a[0].u.tensor.strides[2] = 2;
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH, "argument 'x': stride 2 is 2 but 1");
    transpose_args(a, 2, 128, 64, 80);
    a[0].u.tensor.strides[0] = 999;
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH,
              "argument 'x': stride 0 is 999 but M * sx = 10240 (M = 128, sx = 80)");
    transpose_args(a, 2, 128, 64, 80);
    a[1].u.tensor.strides[1] = 1;
    a[1].u.tensor.strides[2] = 64;
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH,
              "argument 'out': expected a contiguous tensor, but stride 2 is 64 (contiguous: 1)");
    /* extent-1 axes may have any stride, as in PyTorch */
    transpose_args(a, 1, 128, 64, 80);
    a[1].u.tensor.strides[0] = 12345;
    CHECK_OK(launch(k, a, 2));
    transpose_args(a, 2, 128, 64, 80);
    a[0].u.tensor.shape[1] = -1;
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH, "argument 'x': dimension 1 is -1, outside 0..2147483647");
    a[0].u.tensor.shape[1] = 3000000000;
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH, "argument 'x': dimension 1 is 3000000000, outside 0..2147483647");
    transpose_args(a, 2, 128, 64, 80);
    a[0].u.tensor.data = (void *)0x10008;
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH, "argument 'x': data pointer 0x10008 is not aligned to 16 bytes");
    a[0].u.tensor.data = NULL;
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH, "argument 'x': data pointer is NULL");
    CHECK(fake_calls("cuLaunchKernel") == 1);
    teardown();
}

static void test_requirements_and_grid(void)
{
    setup();
    tilec_rt_kernel *k = test_kernel(lib, "transpose", NULL, NULL);
    tilec_rt_arg a[2];
    transpose_args(a, 2, 100, 64, 80);
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH,
              "requirement failed: M % 64 == 0 (M = 100): M must be a multiple of 64");
    transpose_args(a, 2, 128, 64, 66);
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH,
              "requirement failed: sx % 4 == 0 (sx = 66): the row stride of x must be a multiple of 4");
    transpose_args(a, 1, 64 * 70000, 64, 64);
    CHECK_ERR(launch(k, a, 2), TILEC_ERROR_LAUNCH,
              "grid dimension y: cdiv(M, 64) = 70000 (M = 4480000) is more than 65535");
    /* an empty batch: valid, nothing launched */
    transpose_args(a, 0, 128, 64, 80);
    CHECK_OK(launch(k, a, 2));
    transpose_args(a, 2, 0, 64, 80);
    CHECK_OK(launch(k, a, 2));
    CHECK(fake_calls("cuLaunchKernel") == 0);
    teardown();
}

static void test_deferred_and_optional(void)
{
    setup();
    tilec_rt_kernel *k = test_kernel(lib, "rows", NULL, NULL);
    int64_t xs[2] = {8, 16}, ys[2] = {5, 16}, yst[2] = {32, 1};
    tilec_rt_arg a[5] = {
        tilec_rt_arg_tensor((void *)0x1000, TILEC_RT_F32, 2, xs, NULL),
        tilec_rt_arg_tensor((void *)0x2000, TILEC_RT_F32, 2, ys, yst),
        tilec_rt_arg_absent(),
        tilec_rt_arg_int(TILEC_RT_I64, 4),
        tilec_rt_arg_float(TILEC_RT_F64, 1.5),
    };
    CHECK_OK(launch(k, a, 5));
    char *log = fake_log_text();
    CHECK_CONTAINS(log, "cuLaunchKernel rows grid=1,1,1 block=128,1,1 smem=0 stream=0x1234 "
                        "params=0x1000,8,16,16,1,0x2000,5,16,32,1,0x0,0,0,4,1.5\n");
    free(log);
    /* x's first dimension depends on the scalar n (argument 3): it is checked when n is known, so a
     * bad y (argument 1) is reported first */
    a[0].u.tensor.shape[0] = 7;
    a[0].u.tensor.strides[0] = 16;
    a[1].u.tensor.dtype = TILEC_RT_F16;
    CHECK_ERR(launch(k, a, 5), TILEC_ERROR_LAUNCH, "argument 'y': expected dtype f32, got f16");
    a[1].u.tensor.dtype = TILEC_RT_F32;
    CHECK_ERR(launch(k, a, 5), TILEC_ERROR_LAUNCH, "argument 'x': dimension 0 is 7 but 2 * n = 8 (n = 4)");
    a[0].u.tensor.shape[0] = 8;
    /* written tensor with a zero stride on a real axis */
    a[1].u.tensor.strides[0] = 0;
    CHECK_ERR(launch(k, a, 5), TILEC_ERROR_LAUNCH,
              "argument 'y': stride 0 is 0 on a dimension of extent 5, but the kernel writes 'y' (its elements would "
              "overlap)");
    a[1].u.tensor.shape[0] = 1; /* extent 1: a zero stride is harmless */
    CHECK_OK(launch(k, a, 5));
    a[1].u.tensor.shape[0] = 5;
    a[1].u.tensor.strides[0] = 32;
    int64_t bs[1] = {16};
    a[2] = tilec_rt_arg_tensor((void *)0x3000, TILEC_RT_F32, 1, bs, NULL);
    CHECK_ERR(launch(k, a, 5), TILEC_ERROR_LAUNCH,
              "argument 'bias': the kernel was specialised without this optional tensor (bias=absent); pass an absent "
              "argument");
    a[2] = tilec_rt_arg_absent();
    a[4] = tilec_rt_arg_float(TILEC_RT_F32, 0.25);
    CHECK_ERR(launch(k, a, 5), TILEC_ERROR_LAUNCH, "requirement failed: alpha > 0.5 (alpha = 0.25): alpha too small");
    a[4] = tilec_rt_arg_int(TILEC_RT_I32, 3);
    a[3] = tilec_rt_arg_int(TILEC_RT_I32, 0);
    a[0].u.tensor.shape[0] = 0;
    CHECK_ERR(launch(k, a, 5), TILEC_ERROR_LAUNCH,
              "cannot evaluate requirement C % n == 0 (C = 16, n = 0): division by zero");
    a[3] = tilec_rt_arg_int(TILEC_RT_I32, 5);
    a[0].u.tensor.shape[0] = 10;
    CHECK_ERR(launch(k, a, 5), TILEC_ERROR_LAUNCH,
              "requirement failed: C % n == 0 (C = 16, n = 5): C must be a multiple of n");
    a[3] = tilec_rt_arg_tensor((void *)0x3000, TILEC_RT_F32, 1, bs, NULL);
    CHECK_ERR(launch(k, a, 5), TILEC_ERROR_LAUNCH, "argument 'n': expected a scalar, got a tensor");
    tilec_rt_param_info pi;
    CHECK(tilec_rt_kernel_num_params(k) == 5);
    CHECK_OK(tilec_rt_kernel_param(k, 2, &pi));
    CHECK(!strcmp(pi.name, "bias") && pi.kind == TILEC_RT_PARAM_TENSOR && pi.dtype == TILEC_RT_F32 && pi.rank == 1 &&
          pi.align == 4 && pi.flags == (TILEC_RT_PARAM_OPTIONAL | TILEC_RT_PARAM_ABSENT));
    CHECK_OK(tilec_rt_kernel_param(k, 4, &pi));
    CHECK(!strcmp(pi.name, "alpha") && pi.kind == TILEC_RT_PARAM_SCALAR && pi.dtype == TILEC_RT_F32);
    CHECK_ERR(tilec_rt_kernel_param(k, 5, &pi), TILEC_ERROR_INVALID_ARGUMENT,
              "tilec_rt_kernel_param: index 5 outside 0..4");
    teardown();
}

static void test_scalars(void)
{
    setup();
    tilec_rt_kernel *k = test_kernel(lib, "scalars", NULL, NULL);
    tilec_rt_arg a[14] = {
        tilec_rt_arg_int(TILEC_RT_BOOL, 1),
        tilec_rt_arg_int(TILEC_RT_I64, -5),
        tilec_rt_arg_int(TILEC_RT_I16, -300),
        tilec_rt_arg_int(TILEC_RT_I32, 70000),
        tilec_rt_arg_int(TILEC_RT_I64, -(INT64_C(1) << 40)),
        tilec_rt_arg_int(TILEC_RT_U8, 255),
        tilec_rt_arg_int(TILEC_RT_I64, 65535),
        tilec_rt_arg_int(TILEC_RT_U32, 4000000000),
        tilec_rt_arg_bits(TILEC_RT_U64, UINT64_MAX),
        tilec_rt_arg_float(TILEC_RT_F64, 1.0),
        tilec_rt_arg_float(TILEC_RT_F32, -2.0),
        tilec_rt_arg_int(TILEC_RT_I64, 3),
        tilec_rt_arg_float(TILEC_RT_F64, 0.1),
        tilec_rt_arg_bits(TILEC_RT_E4M3, 0x38),
    };
    a[8].u.scalar.v.u = UINT64_MAX;
    CHECK_OK(launch(k, a, 14));
    char *log = fake_log_text();
    CHECK_CONTAINS(log, "params=0x01,-5,-300,70000,-1099511627776,0xff,0xffff,4000000000,0xffffffffffffffff,0x3c00,"
                        "0xc000,3,0.1,0x38\n");
    free(log);
    /* float -> half rounding: 65520 rounds up to infinity in f16; 1 + 2^-11 ties to even (1.0) */
    a[9] = tilec_rt_arg_float(TILEC_RT_F64, 65520.0);
    a[10] = tilec_rt_arg_float(TILEC_RT_F64, 1.0 + 1.0 / 256);
    fake_log_clear();
    CHECK_OK(launch(k, a, 14));
    log = fake_log_text();
    CHECK_CONTAINS(log, ",0x7c00,0x3f80,");
    free(log);
    a[9] = tilec_rt_arg_float(TILEC_RT_F64, 1.0 + 1.0 / 2048);
    a[10] = tilec_rt_arg_bits(TILEC_RT_BF16, 0x3f81);
    fake_log_clear();
    CHECK_OK(launch(k, a, 14));
    log = fake_log_text();
    CHECK_CONTAINS(log, ",0x3c00,0x3f81,");
    free(log);
    a[1] = tilec_rt_arg_int(TILEC_RT_I32, 300);
    CHECK_ERR(launch(k, a, 14), TILEC_ERROR_LAUNCH, "argument 'c': value 300 does not fit i8");
    a[1] = tilec_rt_arg_int(TILEC_RT_I32, -129);
    CHECK_ERR(launch(k, a, 14), TILEC_ERROR_LAUNCH, "argument 'c': value -129 does not fit i8");
    a[1] = tilec_rt_arg_int(TILEC_RT_I32, -128);
    a[0] = tilec_rt_arg_int(TILEC_RT_I32, 2);
    CHECK_ERR(launch(k, a, 14), TILEC_ERROR_LAUNCH, "argument 'b': value 2 does not fit bool");
    a[0] = tilec_rt_arg_int(TILEC_RT_BOOL, 0);
    a[5] = tilec_rt_arg_int(TILEC_RT_I32, -1);
    CHECK_ERR(launch(k, a, 14), TILEC_ERROR_LAUNCH, "argument 'ub': value -1 does not fit u8");
    a[5] = tilec_rt_arg_int(TILEC_RT_U8, 0);
    a[4] = a[8];
    CHECK_ERR(launch(k, a, 14), TILEC_ERROR_LAUNCH, "argument 'l': value 18446744073709551615 does not fit i64");
    a[4] = tilec_rt_arg_int(TILEC_RT_I64, 0);
    a[3] = tilec_rt_arg_float(TILEC_RT_F32, 1.0);
    CHECK_ERR(launch(k, a, 14), TILEC_ERROR_LAUNCH, "argument 'i': expected an integer for i32, got f32");
    a[3] = tilec_rt_arg_int(TILEC_RT_I32, 0);
    a[11] = tilec_rt_arg_bits(TILEC_RT_E4M3, 1);
    CHECK_ERR(launch(k, a, 14), TILEC_ERROR_LAUNCH, "argument 'f': expected f32, got e4m3");
    a[11] = tilec_rt_arg_float(TILEC_RT_F32, 1);
    a[13] = tilec_rt_arg_float(TILEC_RT_F32, 1.0);
    CHECK_ERR(launch(k, a, 14), TILEC_ERROR_LAUNCH, "argument 'q': expected e4m3, got f32");
    a[13] = tilec_rt_arg_bits(TILEC_RT_E4M3, 0x100);
    CHECK_ERR(launch(k, a, 14), TILEC_ERROR_LAUNCH, "argument 'q': encoding 0x100 does not fit e4m3");
    teardown();
}

static void test_launch_attributes(void)
{
    setup();
    tilec_rt_kernel *k = test_kernel(lib, "fancy", NULL, NULL);
    char *log = fake_log_text();
    CHECK_CONTAINS(log, "cuFuncSetAttribute fancy attr=8 value=100000\n");
    free(log);
    int64_t n[1] = {10};
    tilec_rt_arg a[1] = {tilec_rt_arg_tensor((void *)0x1001, TILEC_RT_U8, 1, n, NULL)};
    fake_log_clear();
    CHECK_OK(launch(k, a, 1));
    tilec_rt_launch_options lo = {NULL, 8};
    CHECK_OK(tilec_rt_launch(k, a, 1, &lo));
    log = fake_log_text();
    CHECK_CONTAINS(log, "cuLaunchKernelEx fancy grid=132,1,1 block=384,1,1 smem=100000 cluster=2,1,1 cooperative=1 "
                        "pdl=1 stream=0x1234 params=0x1001,10,1\n");
    CHECK_CONTAINS(log, "cuLaunchKernelEx fancy grid=8,1,1 block=384,1,1 smem=100000 cluster=2,1,1 cooperative=1 "
                        "pdl=1 stream=(nil) params=0x1001,10,1\n");
    free(log);
    lo.num_sms = 7;
    CHECK_ERR(tilec_rt_launch(k, a, 1, &lo), TILEC_ERROR_LAUNCH,
              "grid (7, 1, 1) is not a multiple of the cluster (2, 1, 1)");
    CHECK(fake_calls("cuLaunchKernel") == 0 && fake_calls("cuLaunchKernelEx") == 2);
    tilec_rt_kernel *w = test_kernel(lib, "wide", NULL, NULL);
    log = fake_log_text();
    CHECK_CONTAINS(log, "cuFuncSetAttribute wide attr=14 value=1\n");
    free(log);
    CHECK_OK(tilec_rt_launch(w, NULL, 0, NULL));
    teardown();
}

/* layers: r (N, H); xs up to 4 tensors (N, H); outs up to 3 tensors (2N, W) with row stride so */
static tilec_rt_tensor xs_t[5], outs_t[4];
static void layers_args(tilec_rt_arg a[4], int L, int P, int64_t N, int64_t H, int64_t W, int64_t so)
{
    int64_t rs[2] = {N, H}, os[2] = {2 * N, W}, ost[2] = {so, 1};
    a[0] = tilec_rt_arg_tensor((void *)0x1000, TILEC_RT_BF16, 2, rs, NULL);
    for (int i = 0; i < L; i++)
        xs_t[i] = tilec_rt_tensor_make((void *)(uintptr_t)(0x10000 * (i + 1)), TILEC_RT_BF16, 2, rs, NULL);
    for (int i = 0; i < P; i++)
        outs_t[i] = tilec_rt_tensor_make((void *)(uintptr_t)(0x100000 * (i + 1)), TILEC_RT_F32, 2, os, ost);
    a[1] = tilec_rt_arg_list(xs_t, L);
    a[2] = tilec_rt_arg_list(outs_t, P);
    a[3] = tilec_rt_arg_float(TILEC_RT_F32, 0.5);
}

/* a list's pointers are one parameter of 8 * max bytes (the tensors' first, zeros after), then
 * its length, then the extents and strides the tensors share */
static void test_list_packing(void)
{
    setup();
    tilec_rt_kernel *k = test_kernel(lib, "layers", NULL, NULL);
    tilec_rt_arg a[4];
    layers_args(a, 3, 2, 5, 64, 32, 48);
    CHECK_OK(launch(k, a, 4));
    char *log = fake_log_text();
    CHECK_CONTAINS(log, "cuLaunchKernel layers grid=5,1,1 block=64,1,1 smem=0 stream=0x1234 "
                        "params=0x1000,5,64,64,1,[0x10000 0x20000 0x30000 +1 zero],3,5,64,64,1,"
                        "[0x100000 0x200000 +1 zero],2,10,32,48,1,0.5\n");
    free(log);
    tilec_rt_launch_config cfg;
    CHECK_OK(tilec_rt_check(k, a, 4, NULL, &cfg));
    /* r 32; xs at 32: 32 + 4 + 8, strides at 80: 96; outs at 96: 24 + 4 + 8, strides at 136: 152; eps */
    CHECK(cfg.param_bytes == 156);
    /* P = L: fine too; an empty list of outputs binds P = 0 but not W and so */
    layers_args(a, 1, 1, 5, 64, 32, 48);
    CHECK_OK(launch(k, a, 4));
    layers_args(a, 1, 0, 5, 64, 32, 48);
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH,
              "argument 'outs': an empty list gives 'W' no value (its tensors' dimension 1); bind the name with an "
              "earlier parameter");
    tilec_rt_param_info pi;
    CHECK_OK(tilec_rt_kernel_param(k, 1, &pi));
    CHECK(!strcmp(pi.name, "xs") && pi.kind == TILEC_RT_PARAM_LIST && pi.dtype == TILEC_RT_BF16 && pi.rank == 2 &&
          pi.align == 16 && pi.max_length == 4 && pi.flags == 0);
    CHECK_OK(tilec_rt_kernel_param(k, 2, &pi));
    CHECK(pi.kind == TILEC_RT_PARAM_LIST && pi.max_length == 3 && pi.flags == TILEC_RT_PARAM_WRITTEN);
    CHECK_OK(tilec_rt_kernel_param(k, 0, &pi));
    CHECK(pi.kind == TILEC_RT_PARAM_TENSOR && pi.max_length == 0);
    teardown();
}

/* every tensor of a list is checked, and named by its index */
static void test_list_validation(void)
{
    setup();
    tilec_rt_kernel *k = test_kernel(lib, "layers", NULL, NULL);
    tilec_rt_arg a[4];
    layers_args(a, 5, 2, 5, 64, 32, 48);
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH,
              "argument 'xs': 5 tensors, more than the 4 the kernel takes (its list's max)");
    layers_args(a, 3, 4, 5, 64, 32, 48);
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH,
              "argument 'outs': 4 tensors, more than the 3 the kernel takes (its list's max)");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    a[1].u.list.count = -1;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH, "argument 'xs': a list of -1 tensors");
    a[1].u.list.count = 3;
    a[1].u.list.tensors = NULL;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH, "argument 'xs': 3 tensors at a NULL array");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    a[1] = a[0];
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH, "argument 'xs': expected a list of tensors, got a tensor");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    a[0] = a[1];
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH, "argument 'r': expected a tensor, got a list of tensors");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    xs_t[2].dtype = TILEC_RT_F16;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH, "argument 'xs[2]': expected dtype bf16, got f16");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    xs_t[1].rank = 3;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH, "argument 'xs[1]': expected rank 2, got 3");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    xs_t[1].shape[1] = 32;
    xs_t[1].strides[0] = 32;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH,
              "argument 'xs[1]': dimension 1 is 32 but H = 64 (bound by 'r' dimension 1)");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    xs_t[2].strides[0] = 128;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH,
              "argument 'xs[2]': expected a contiguous tensor, but stride 0 is 128 (contiguous: 64)");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    xs_t[0].data = (void *)0x10008;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH,
              "argument 'xs[0]': data pointer 0x10008 is not aligned to 16 bytes");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    xs_t[2].data = NULL;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH, "argument 'xs[2]': data pointer is NULL");
    /* names bound by a list come from its first tensor; the others must agree */
    layers_args(a, 3, 2, 5, 64, 32, 48);
    outs_t[1].shape[1] = 16;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH,
              "argument 'outs[1]': dimension 1 is 16 but W = 32 (bound by 'outs[0]' dimension 1)");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    outs_t[1].strides[0] = 64;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH,
              "argument 'outs[1]': stride 0 is 64 but 'outs[0]' has 48 (the tensors of a list share their strides)");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    outs_t[0].shape[0] = 9;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH, "argument 'outs[0]': dimension 0 is 9 but 2 * N = 10 (N = 5)");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    outs_t[1].strides[1] = 2;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH, "argument 'outs[1]': stride 1 is 2 but 1");
    layers_args(a, 3, 2, 5, 64, 32, 48);
    outs_t[1].strides[0] = 0;
    outs_t[1].shape[0] = 10;
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH,
              "argument 'outs[1]': stride 0 is 0 but 'outs[0]' has 48 (the tensors of a list share their strides)");
    /* the length relation: a requirement over the bound lengths */
    layers_args(a, 3, 1, 5, 64, 32, 48);
    CHECK_ERR(launch(k, a, 4), TILEC_ERROR_LAUNCH,
              "requirement failed: P == L || P == L - 1 (P = 1, L = 3): P is L or L - 1");
    CHECK(fake_calls("cuLaunchKernel") == 0);
    teardown();
}

/* a list of 4000 tensors: 32000 pointer bytes, past the 4 KiB of drivers before CUDA 12.1 */
static void test_list_large(void)
{
    setup();
    tilec_rt_kernel *k = test_kernel(lib, "big", NULL, NULL);
    static tilec_rt_tensor ts[4001];
    int64_t n[1] = {7};
    for (int i = 0; i < 4001; i++)
        ts[i] = tilec_rt_tensor_make((void *)(uintptr_t)(0x1000 * (i + 1)), TILEC_RT_U8, 1, n, NULL);
    tilec_rt_arg a[1] = {tilec_rt_arg_list(ts, 4000)};
    tilec_rt_launch_config cfg;
    CHECK_OK(tilec_rt_check(k, a, 1, NULL, &cfg));
    CHECK(cfg.param_bytes == 32000 + 4 + 4 + 8 && cfg.grid[0] == 4000);
    fake_log_clear();
    CHECK_OK(launch(k, a, 1));
    char *log = fake_log_text();
    CHECK_CONTAINS(log, "cuLaunchKernel big grid=4000,1,1 block=32,1,1 smem=0 stream=0x1234 params=[0x1000 0x2000 ");
    free(log);
    /* the buffer the driver gets, in full */
    _Alignas(16) unsigned char buf[RT_MAX_PARAM_BYTES];
    void *ptrs[RT_MAX_PTX_PARAMS];
    CHECK_OK(rt_bind(k->sig, a, 1, 132, &cfg, buf, ptrs));
    CHECK(ptrs[0] == buf && ptrs[1] == buf + 32000 && ptrs[2] == buf + 32004 && ptrs[3] == buf + 32008);
    uint64_t first, last;
    int32_t len, ext;
    int64_t stride;
    memcpy(&first, buf, 8);
    memcpy(&last, buf + 8 * 3999, 8);
    memcpy(&len, buf + 32000, 4);
    memcpy(&ext, buf + 32004, 4);
    memcpy(&stride, buf + 32008, 8);
    CHECK(first == 0x1000 && last == 0xfa0000 && len == 4000 && ext == 7 && stride == 1);
    a[0] = tilec_rt_arg_list(ts, 4001);
    CHECK_ERR(launch(k, a, 1), TILEC_ERROR_LAUNCH,
              "argument 'xs': 4001 tensors, more than the 4000 the kernel takes (its list's max)");
    teardown();
    /* a driver before CUDA 12.1 cannot take the parameters: refused when the kernel loads */
    fake_set("TILEC_FAKE_DRIVER_VERSION", "12000");
    setup();
    tilec_rt_kernel *old = NULL;
    CHECK_ERR(tilec_rt_get_kernel(lib, "big", NULL, 0, &old), TILEC_ERROR_UNSUPPORTED,
              "entry 'big' takes 32016 bytes of parameters; more than 4096 needs a CUDA 12.1 or newer driver (this one "
              "is 12.0)");
    CHECK(tilec_rt_get_kernel(lib, "layers", NULL, 0, &old) == TILEC_OK);
    teardown();
}

#if !defined(__SANITIZE_ADDRESS__)
/* The launch path allocates nothing (so that a launch can be captured into a CUDA graph): the
 * heap functions of this process count while a test asks them to. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
static volatile int counting;
static volatile long allocations;
void *malloc(size_t n)
{
    allocations += counting;
    return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
    allocations += counting;
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
    allocations += counting;
    return __libc_realloc(p, n);
}
void *aligned_alloc(size_t a, size_t n)
{
    allocations += counting;
    return __libc_memalign(a, n);
}
int posix_memalign(void **p, size_t a, size_t n)
{
    allocations += counting;
    *p = __libc_memalign(a, n);
    return *p ? 0 : 12;
}
#endif

static void test_no_allocation(void)
{
#if defined(__SANITIZE_ADDRESS__)
    printf("the sanitizers own the heap functions: not counted\n");
#else
    setup();
    counting = 1; /* the counter counts: loading a kernel allocates */
    tilec_rt_kernel *k = test_kernel(lib, "layers", NULL, NULL);
    counting = 0;
    CHECK(allocations > 0);
    allocations = 0;
    tilec_rt_kernel *t = test_kernel(lib, "transpose", NULL, NULL);
    tilec_rt_arg a[4], b[2];
    layers_args(a, 3, 2, 5, 64, 32, 48);
    transpose_args(b, 2, 128, 64, 80);
    CHECK_OK(launch(k, a, 4)); /* the log file's buffer, and anything else done once */
    counting = 1;
    for (int i = 0; i < 100; i++) {
        CHECK_OK(launch(k, a, 4));
        CHECK_OK(launch(t, b, 2));
    }
    layers_args(a, 5, 2, 5, 64, 32, 48);
    CHECK(launch(k, a, 4) == TILEC_ERROR_LAUNCH); /* an error message is built in place too */
    counting = 0;
    CHECK(allocations == 0);
    printf("allocations during 201 launches: %ld\n", allocations);
    teardown();
#endif
}

static void test_introspection(void)
{
    setup();
    tilec_rt_kernel *k = test_kernel(lib, "transpose", "T=f32", NULL);
    CHECK_CONTAINS(tilec_rt_kernel_signature(k), "entry transpose_f32\n");
    tilec_rt_kernel *again = test_kernel(lib, "transpose", "T=f32", NULL);
    CHECK(k == again);
    tilec_rt_stats st;
    CHECK_OK(tilec_rt_get_stats(rt, &st));
    CHECK(st.compiles == 1 && st.memory_hits == 1 && st.disk_hits == 0);
    tilec_rt_dtype dt;
    CHECK_OK(tilec_rt_dtype_from_name("e2m1", &dt));
    CHECK(dt == TILEC_RT_E2M1 && tilec_rt_dtype_bits(dt) == 4 && tilec_rt_dtype_bits(TILEC_RT_BOOL) == 8);
    CHECK_STR(tilec_rt_dtype_name(TILEC_RT_UE8M0), "ue8m0");
    CHECK_ERR(tilec_rt_dtype_from_name("f8", &dt), TILEC_ERROR_NOT_FOUND, "unknown dtype 'f8'");
    CHECK_STR(tilec_rt_status_name(TILEC_ERROR_LAUNCH), "TILEC_ERROR_LAUNCH");
    teardown();
}

int main(int argc, char **argv)
{
    static const rt_test_case cases[] = {
        RT_TEST(test_packing),         RT_TEST(test_dtype_rank_kind_count), RT_TEST(test_shapes_and_strides),
        RT_TEST(test_requirements_and_grid), RT_TEST(test_deferred_and_optional), RT_TEST(test_scalars),
        RT_TEST(test_launch_attributes), RT_TEST(test_introspection), RT_TEST(test_list_packing),
        RT_TEST(test_list_validation), RT_TEST(test_list_large), RT_TEST(test_no_allocation),
    };
    return rt_test_main(argc, argv, cases, (int)(sizeof cases / sizeof cases[0]));
}
