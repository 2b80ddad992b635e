/* emit_ptx.c — the LLVM side of the back end: NVPTX target machines for sm_90a / sm_100a, the
 * new pass manager's default<O3> pipeline, and PTX text. */
#include "codegen.h"
#include "cuda_tools.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t llvm_once = PTHREAD_ONCE_INIT;

static void init_once(void)
{
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    /* SimplifyCFG would merge the identical vector accesses of a copy's two versions (tiles wholly
     * inside / tiles at the edges, lower_copy.c) into shared blocks, and the merged code cost up
     * to a quarter of the bandwidth on the H200 (per_channel_cast 59 % -> 45 % of the copy
     * ceiling, per_block_cast 87 % -> 75 %). The options are those of this library's own
     * statically linked LLVM, not of any other LLVM in the process. */
    const char *argv[] = {"tilec", "-simplifycfg-sink-common=false", "-simplifycfg-hoist-common=false"};
    LLVMParseCommandLineOptions(3, argv, NULL);
}

void cg_init_llvm(void) { pthread_once(&llvm_once, init_once); }

static LLVMTargetMachineRef make_tm(TKernel *k, int opt)
{
    cg_init_llvm();
    LLVMTargetRef target;
    char *err = NULL;
    if (LLVMGetTargetFromTriple("nvptx64-nvidia-cuda", &target, &err)) {
        diag_ice(k->diag, "codegen", "no NVPTX target in this LLVM: %s", err ? err : "?");
        LLVMDisposeMessage(err);
        return NULL;
    }
    const char *cpu = k->sm >= 100 ? "sm_100a" : "sm_90a";
    LLVMCodeGenOptLevel lvl = opt <= 0 ? LLVMCodeGenLevelNone : opt == 1 ? LLVMCodeGenLevelLess :
                              opt == 2 ? LLVMCodeGenLevelDefault : LLVMCodeGenLevelAggressive;
    return LLVMCreateTargetMachine(target, "nvptx64-nvidia-cuda", cpu, "+ptx86", lvl, LLVMRelocDefault, LLVMCodeModelDefault);
}

static bool optimise(TKernel *k, LLVMModuleRef m, LLVMTargetMachineRef tm, int opt)
{
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    char *dl = LLVMCopyStringRepOfTargetData(td);
    LLVMSetDataLayout(m, dl);
    LLVMDisposeMessage(dl);
    LLVMDisposeTargetData(td);
    char *msg = NULL;
    if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
        diag_ice(k->diag, "codegen", "invalid LLVM IR for %s: %s", k->key, msg ? msg : "?");
        LLVMDisposeMessage(msg);
        return false;
    }
    LLVMDisposeMessage(msg);
    char pipeline[32];
    snprintf(pipeline, sizeof pipeline, "default<O%d>", opt < 0 ? 0 : opt > 3 ? 3 : opt);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(m, pipeline, tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (e) {
        char *em = LLVMGetErrorMessage(e);
        diag_ice(k->diag, "codegen", "LLVM passes failed: %s", em);
        LLVMDisposeErrorMessage(em);
        return false;
    }
    cg_pair_roundings(m);
    cg_widen_bf16(m);
    /* the peepholes move and replace instructions: check that they kept the module valid */
    if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
        diag_ice(k->diag, "codegen", "invalid LLVM IR after the peepholes for %s: %s", k->key, msg ? msg : "?");
        LLVMDisposeMessage(msg);
        return false;
    }
    LLVMDisposeMessage(msg);
    return true;
}

char *cg_emit_ptx(TKernel *k, LLVMModuleRef m, int opt_level, size_t *size)
{
    double t = tool_ms_now();
    LLVMTargetMachineRef tm = make_tm(k, opt_level);
    tool_phase("  target", &t);
    if (!tm)
        return NULL;
    char *out = NULL;
    if (optimise(k, m, tm, opt_level)) {
        tool_phase("  optimise", &t);
        LLVMMemoryBufferRef buf = NULL;
        char *err = NULL;
        if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMAssemblyFile, &err, &buf)) {
            diag_ice(k->diag, "codegen", "PTX emission failed: %s", err ? err : "?");
            LLVMDisposeMessage(err);
        } else {
            size_t n = LLVMGetBufferSize(buf);
            out = tl_xmalloc(n + 1);
            memcpy(out, LLVMGetBufferStart(buf), n);
            out[n] = 0;
            /* the buffer may carry a trailing NUL */
            while (n > 0 && out[n - 1] == 0)
                n--;
            *size = n;
            LLVMDisposeMemoryBuffer(buf);
        }
    }
    /* one target machine per module: a reused one numbers call sequences on from the modules
     * before (the PTX's "callseq N" comments), and the same request must give the same bytes */
    LLVMDisposeTargetMachine(tm);
    return out;
}

char *cg_emit_llvm_text(TKernel *k, LLVMModuleRef m, int opt_level)
{
    LLVMTargetMachineRef tm = make_tm(k, opt_level);
    if (!tm)
        return NULL;
    char *out = NULL;
    if (optimise(k, m, tm, opt_level)) {
        char *s = LLVMPrintModuleToString(m);
        out = tl_xmalloc(strlen(s) + 1);
        strcpy(out, s);
        LLVMDisposeMessage(s);
    }
    LLVMDisposeTargetMachine(tm);
    return out;
}
