/* emu_lower.h — the host target: the kernel's module, built once by cg_build_module, turned into
 * x86-64 code for the CPU emulator (runtime/emu). */
#ifndef TILEC_EMU_LOWER_H
#define TILEC_EMU_LOWER_H

#include "tir.h"

#include <llvm-c/Core.h>

/* Lowers m for the host (see emu_lower.c), optimises it and returns an x86-64 ELF object
 * (object = true) or the LLVM IR text (NUL-terminated), malloc'd, with its size. NULL after a
 * diagnostic. m is modified either way. */
char *emu_emit_host(TKernel *k, LLVMModuleRef m, int opt_level, bool object, size_t *size);

#endif
