/* test_libdevice.c — the numerics library against CUDA's own algorithms: libdevice (the bitcode
 * of CUDA's math functions that nvcc links) is loaded, its NVVM intrinsics are given their PTX
 * meaning on the host (fma.rn.f: a fused multiply-add; add.rz.f: an addition rounded toward
 * zero, here with the FPU's rounding mode, independently of numerics.c's TwoSum; fabs: the
 * absolute value; __nvvm_reflect("__CUDA_FTZ") = 0, the no-flush path tilec compiles), and the
 * functions are JIT-compiled and compared bit for bit:
 *   __nv_log1pf   with tl_num_log1pf (log1p of f32: what codegen emits and the emulator runs)
 *   __nv_copysignf with the bit rule of language.md §12 (magnitude of a, sign of b)
 *   __nv_finitef  with isfinite's rule (|x| < inf)
 * Every 61st f32 input and dense ranges around 0, -1 and the powers of two; with
 * TILEC_TEST_ALL_F32=1 every f32 input. NaN results compare as NaN (the GPU returns the canonical
 * NaN, which numerics.c gives; the host's NaNs have other payloads).
 * libdevice: $TILEC_LIBDEVICE, else the CUDA toolkit's; without it the test is skipped (77). */
#include "numerics.h"

#include <fenv.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

/* add.rz.f32: the FPU rounds toward zero for this one addition */
static float host_add_rz(float a, float b)
{
    volatile float x = a, y = b;
    fesetround(FE_TOWARDZERO);
    volatile float r = x + y;
    fesetround(FE_TONEAREST);
    return r;
}

static void die_llvm(const char *what, LLVMErrorRef e)
{
    char *m = LLVMGetErrorMessage(e);
    fprintf(stderr, "%s: %s\n", what, m);
    LLVMDisposeErrorMessage(m);
    exit(1);
}

static const char *callee_name(LLVMValueRef call, size_t *n)
{
    LLVMValueRef f = LLVMGetCalledValue(call);
    return f && LLVMIsAFunction(f) ? LLVMGetValueName2(f, n) : NULL;
}

/* Gives every NVVM intrinsic call in f its host meaning. */
static void lower_nvvm(LLVMModuleRef m, LLVMValueRef f)
{
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx), i32 = LLVMInt32TypeInContext(ctx);
    LLVMTypeRef t3[3] = {f32, f32, f32};
    LLVMTypeRef fma_ty = LLVMFunctionType(f32, t3, 3, 0), add_ty = LLVMFunctionType(f32, t3, 2, 0),
                abs_ty = LLVMFunctionType(f32, t3, 1, 0);
    LLVMValueRef fma = LLVMGetNamedFunction(m, "llvm.fma.f32");
    if (!fma)
        fma = LLVMAddFunction(m, "llvm.fma.f32", fma_ty);
    LLVMValueRef fabs_ = LLVMGetNamedFunction(m, "llvm.fabs.f32");
    if (!fabs_)
        fabs_ = LLVMAddFunction(m, "llvm.fabs.f32", abs_ty);
    LLVMValueRef addrz = LLVMGetNamedFunction(m, "tl_test_add_rz");
    if (!addrz)
        addrz = LLVMAddFunction(m, "tl_test_add_rz", add_ty);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
        LLVMValueRef next;
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = next) {
            next = LLVMGetNextInstruction(i);
            size_t n;
            const char *name = LLVMIsACallInst(i) ? callee_name(i, &n) : NULL;
            if (!name)
                continue;
            LLVMValueRef repl = NULL;
            LLVMValueRef a[3] = {NULL, NULL, NULL};
            for (unsigned k = 0; k + 1 < (unsigned)LLVMGetNumOperands(i) && k < 3; k++)
                a[k] = LLVMGetOperand(i, k);
            LLVMPositionBuilderBefore(b, i);
            if (!strcmp(name, "__nvvm_reflect"))
                repl = LLVMConstInt(i32, 0, 0); /* "__CUDA_FTZ": 0, no flush to zero */
            else if (!strncmp(name, "llvm.nvvm.fma.rn.", 17))
                repl = LLVMBuildCall2(b, fma_ty, fma, a, 3, "");
            else if (!strncmp(name, "llvm.nvvm.add.rz.", 17))
                repl = LLVMBuildCall2(b, add_ty, addrz, a, 2, "");
            else if (!strncmp(name, "llvm.nvvm.fabs.", 15))
                repl = LLVMBuildCall2(b, abs_ty, fabs_, a, 1, "");
            else if (!strncmp(name, "llvm.nvvm.", 10)) {
                fprintf(stderr, "test_libdevice: the program uses libdevice function %s, which has no host replacement\n", name);
                exit(1);
            }
            if (repl) {
                LLVMReplaceAllUsesWith(i, repl);
                LLVMInstructionEraseFromParent(i);
            }
        }
    }
    LLVMDisposeBuilder(b);
}

typedef float (*f1)(float);
typedef float (*f2)(float, float);
typedef int (*i1)(float);

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static int same(uint32_t got, uint32_t want)
{
    int gn = (got & 0x7fffffffu) > 0x7f800000u, wn = (want & 0x7fffffffu) > 0x7f800000u;
    return gn || wn ? gn == wn : got == want;
}

static void report(const char *what, uint32_t x, uint32_t y, uint32_t got, uint32_t want, long *bad)
{
    if ((*bad)++ < 8)
        fprintf(stderr, "  %s(0x%08x, 0x%08x): 0x%08x, libdevice 0x%08x\n", what, x, y, got, want);
}

static void check_one(uint32_t x, f1 log1p_, f2 copysign_, i1 finite_, long *bad, long *checked)
{
    float xf = tl_num_float(x);
    uint32_t want = bits(log1p_(xf)), got = tl_num_log1pf(x);
    if (!same(got, want))
        report("log1pf", x, 0, got, want, &bad[0]);
    uint32_t y = x * 2654435761u; /* another input, its sign and NaNs included */
    uint32_t cs = (x & 0x7fffffffu) | (y & 0x80000000u);
    uint32_t lc = bits(copysign_(xf, tl_num_float(y)));
    if (cs != lc)
        report("copysignf", x, y, cs, lc, &bad[1]);
    int fin = (x & 0x7fffffffu) < 0x7f800000u;
    if (fin != (finite_(xf) != 0))
        report("finitef", x, 0, (uint32_t)fin, (uint32_t)finite_(xf), &bad[2]);
    (*checked)++;
}

int main(void)
{
    const char *path = getenv("TILEC_LIBDEVICE");
    if (!path || !*path)
        path = "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
    if (access(path, R_OK) != 0) {
        printf("no libdevice at %s (set TILEC_LIBDEVICE): skipped\n", path);
        return 77;
    }
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMMemoryBufferRef buf;
    char *msg = NULL;
    if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &msg)) {
        fprintf(stderr, "reading %s: %s\n", path, msg);
        return 1;
    }
    LLVMModuleRef m;
    if (LLVMParseBitcodeInContext2(ctx, buf, &m)) {
        fprintf(stderr, "%s is not LLVM bitcode\n", path);
        return 1;
    }
    LLVMDisposeMemoryBuffer(buf);
    /* keep the three functions (and what they call), for the host */
    static const char *const keep[] = {"__nv_log1pf", "__nv_copysignf", "__nv_finitef"};
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f)) {
        size_t n;
        const char *name = LLVMGetValueName2(f, &n);
        int wanted = 0;
        for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
            wanted |= !strcmp(name, keep[k]);
        if (LLVMIsDeclaration(f))
            continue;
        LLVMSetLinkage(f, wanted ? LLVMExternalLinkage : LLVMInternalLinkage);
        if (wanted)
            lower_nvvm(m, f);
    }
    for (LLVMValueRef g = LLVMGetFirstGlobal(m); g; g = LLVMGetNextGlobal(g))
        if (!LLVMIsDeclaration(g))
            LLVMSetLinkage(g, LLVMInternalLinkage);
    LLVMOrcLLJITRef jit;
    LLVMErrorRef e = LLVMOrcCreateLLJIT(&jit, NULL);
    if (e)
        die_llvm("creating the JIT", e);
    LLVMSetTarget(m, LLVMOrcLLJITGetTripleString(jit));
    LLVMSetDataLayout(m, LLVMOrcLLJITGetDataLayoutStr(jit));
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    /* the unused functions go; no optimisation that could change what an operation rounds to */
    if ((e = LLVMRunPasses(m, "globaldce", NULL, po)))
        die_llvm("globaldce", e);
    LLVMDisposePassBuilderOptions(po);
    LLVMOrcExecutionSessionRef es = LLVMOrcLLJITGetExecutionSession(jit);
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(jit);
    LLVMOrcCSymbolMapPair sym = {LLVMOrcExecutionSessionIntern(es, "tl_test_add_rz"),
                                 {(LLVMOrcExecutorAddress)(uintptr_t)host_add_rz,
                                  {LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable, 0}}};
    if ((e = LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(&sym, 1))))
        die_llvm("defining tl_test_add_rz", e);
    LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContextFromLLVMContext(ctx);
    e = LLVMOrcLLJITAddLLVMIRModule(jit, jd, LLVMOrcCreateNewThreadSafeModule(m, tsc));
    LLVMOrcDisposeThreadSafeContext(tsc);
    if (e)
        die_llvm("adding libdevice", e);
    LLVMOrcExecutorAddress a_log1p, a_copysign, a_finite;
    if ((e = LLVMOrcLLJITLookup(jit, &a_log1p, "__nv_log1pf")) || (e = LLVMOrcLLJITLookup(jit, &a_copysign, "__nv_copysignf")) ||
        (e = LLVMOrcLLJITLookup(jit, &a_finite, "__nv_finitef")))
        die_llvm("looking the functions up", e);
    f1 log1p_ = (f1)(uintptr_t)a_log1p;
    f2 copysign_ = (f2)(uintptr_t)a_copysign;
    i1 finite_ = (i1)(uintptr_t)a_finite;

    long bad[3] = {0, 0, 0}, checked = 0;
    const char *all = getenv("TILEC_TEST_ALL_F32");
    uint32_t step = all && !strcmp(all, "1") ? 1 : 61;
    for (uint64_t x = 0; x <= 0xffffffffu; x += step)
        check_one((uint32_t)x, log1p_, copysign_, finite_, bad, &checked);
    /* dense: around 0, -1, 1 and every power of two (the exponent the round-toward-zero sum picks) */
    for (int s = 0; s < 2; s++)
        for (uint32_t ex = 0; ex < 255; ex++)
            for (int32_t d = -512; d <= 512; d++)
                check_one((uint32_t)s << 31 | ((ex << 23) + (uint32_t)d), log1p_, copysign_, finite_, bad, &checked);
    for (uint32_t x = 0xbf7f0000u; x <= 0xbf800100u; x++) /* just above and below -1 */
        check_one(x, log1p_, copysign_, finite_, bad, &checked);
    printf("log1pf: %ld of %ld inputs differ from libdevice's __nv_log1pf\n", bad[0], checked);
    printf("copysign: %ld differ from __nv_copysignf; isfinite: %ld from __nv_finitef\n", bad[1], bad[2]);
    failures = bad[0] || bad[1] || bad[2];
    LLVMOrcDisposeLLJIT(jit);
    return failures;
}
