/* codegen.h — tile IR (thread level) to LLVM IR, and LLVM IR to PTX / host objects. */
#ifndef TILEC_CODEGEN_H
#define TILEC_CODEGEN_H

#include "tir.h"

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

/* Builds the kernel's LLVM module in ctx. Returns NULL (after a diagnostic) on errors. */
LLVMModuleRef cg_build_module(TKernel *k, LLVMContextRef ctx);

/* Optimises the module (default<On>) and prints PTX (NUL-terminated, malloc'd). */
char *cg_emit_ptx(TKernel *k, LLVMModuleRef m, int opt_level, size_t *size);
/* Optimises and returns the LLVM IR text (malloc'd), for --stage=llvm. */
char *cg_emit_llvm_text(TKernel *k, LLVMModuleRef m, int opt_level);

/* pair_roundings.c: after optimisation, two f32 -> f16 / bf16 roundings of one block (first those
 * that build a 16-bit pair) become one rounding of the f32 pair (cvt.rn.f16x2.f32, cvt.rn.bf16x2.f32). */
void cg_pair_roundings(LLVMModuleRef m);
/* widen_bf16.c: after optimisation, a bf16 vector element widened to f32 becomes a shift or a mask
 * of the 32-bit word holding it. */
void cg_widen_bf16(LLVMModuleRef m);

/* codegen_mma.c: the TI_* target instructions of tir.h (tensor cores, ldmatrix, cp.async). */
typedef struct CgxEnv {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    int sm;
} CgxEnv;
/* a TI_* call with one result (TI_PACK); NULL if `call` is not one of these */
LLVMValueRef cgx_value(const CgxEnv *env, const TExpr *call, LLVMValueRef *args);
/* the instruction of a TS_INTRIN statement: args evaluated, outs receives nouts results */
bool cgx_intrin(const CgxEnv *env, const TExpr *call, LLVMValueRef *args, LLVMValueRef *outs, int nouts);

/* One-time LLVM initialisation (thread-safe). */
void cg_init_llvm(void);

#endif
