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

/* One-time LLVM initialisation (thread-safe). */
void cg_init_llvm(void);

#endif
