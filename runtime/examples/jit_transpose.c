/* jit_transpose.c — JIT-compiles batched_transpose from kernels.tl with the tilec runtime, runs it on
 * a bf16 tensor and checks every element on the host. It needs a GPU and a runtime built with the
 * compiler (TILEC_RUNTIME_WITH_COMPILER=ON); CI only compiles it. Build and run:
 *   cc jit_transpose.c -I$PREFIX/include -I/usr/local/cuda/include -L$PREFIX/lib -ltilec_runtime -lcuda
 *   ./a.out $PREFIX/share/tilec/kernels.tl
 * (tilec's own build compiles it with runtime/cuda_abi.h where the toolkit, and so cuda.h, is missing.) */
#ifdef TILEC_NO_CUDA_H
#include "cuda_abi.h"
#else
#include <cuda.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tilec/runtime.h"

#define RT_CHECK(call)                                                                                                \
    do {                                                                                                              \
        tilec_status s_ = (call);                                                                                     \
        if (s_ != TILEC_OK) {                                                                                         \
            fprintf(stderr, "%s failed: %s: %s\n", #call, tilec_rt_status_name(s_), tilec_rt_last_error());         \
            return 1;                                                                                                 \
        }                                                                                                             \
    } while (0)

#define CU_CHECK(call)                                                                                                \
    do {                                                                                                              \
        CUresult r_ = (call);                                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                                     \
            const char *name_ = "?";                                                                                  \
            cuGetErrorName(r_, &name_);                                                                               \
            fprintf(stderr, "%s failed: %s\n", #call, name_);                                                         \
            return 1;                                                                                                 \
        }                                                                                                             \
    } while (0)

int main(int argc, char **argv)
{
    const char *source = argc > 1 ? argv[1] : "kernels.tl";
    const int64_t B = 4, M = 4096, N = 7168; /* M and N multiples of 64, as the kernel requires */
    const size_t count = (size_t)(B * M * N), bytes = count * sizeof(uint16_t);

    /* the runtime retains device 0's primary context and makes it current (none is current yet) */
    tilec_rt *rt;
    RT_CHECK(tilec_rt_create(NULL, &rt));
    tilec_rt_library_options lo = {0};
    lo.source = source;
    tilec_rt_library *lib;
    RT_CHECK(tilec_rt_library_open(rt, &lo, &lib));
    const char *generics[] = {"T=bf16"};
    tilec_rt_kernel *k;
    RT_CHECK(tilec_rt_get_kernel(lib, "batched_transpose", generics, 1, &k)); /* compiled, or from the cache */

    /* random bit patterns: a transpose copies bits, so every pattern must come back unchanged */
    uint16_t *x = malloc(bytes), *y = malloc(bytes);
    if (!x || !y)
        return 1;
    uint32_t seed = 12345;
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        x[i] = (uint16_t)(seed >> 16);
    }
    CUdeviceptr dx, dy;
    CUstream stream;
    CU_CHECK(cuMemAlloc(&dx, bytes));
    CU_CHECK(cuMemAlloc(&dy, bytes));
    CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CU_CHECK(cuMemcpyHtoD(dx, x, bytes));
    CU_CHECK(cuMemsetD8(dy, 0xff, bytes)); /* poison: unwritten elements show up as mismatches */

    int64_t x_shape[3] = {B, M, N}, y_shape[3] = {B, N, M};
    tilec_rt_arg args[2] = {
        tilec_rt_arg_tensor((void *)(uintptr_t)dx, TILEC_RT_BF16, 3, x_shape, NULL), /* NULL strides: contiguous */
        tilec_rt_arg_tensor((void *)(uintptr_t)dy, TILEC_RT_BF16, 3, y_shape, NULL),
    };
    tilec_rt_launch_options opts = {stream, 0};
    RT_CHECK(tilec_rt_launch(k, args, 2, &opts));
    CU_CHECK(cuStreamSynchronize(stream));
    CU_CHECK(cuMemcpyDtoH(y, dy, bytes));

    size_t bad = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                bad += y[(b * N + j) * M + i] != x[(b * M + i) * N + j];
    printf("batched_transpose bf16 [%lld, %lld, %lld]: %zu of %zu elements wrong\n", (long long)B, (long long)M,
           (long long)N, bad, count);

    cuMemFree(dx);
    cuMemFree(dy);
    cuStreamDestroy(stream);
    free(x);
    free(y);
    tilec_rt_destroy(rt); /* closes the library too */
    return bad != 0;
}
