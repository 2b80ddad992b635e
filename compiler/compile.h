/* compile.h — one specialisation from checked source to TIR, LLVM IR, PTX or a host object. */
#ifndef TILEC_COMPILE_H
#define TILEC_COMPILE_H

#include "sema.h"

typedef enum { STAGE_TIR, STAGE_LLVM, STAGE_PTX } CompileStage;

typedef struct CompileRequest {
    Item *kernel;
    GenericArgs args;
    int sm;                   /* 90 or 100 */
    int opt_level;
    CompileStage stage;       /* how far to go */
    bool host;                /* host target (CPU emulator): STAGE_PTX gives an x86-64 object */
    const char *dump_after;   /* print the TIR after this pass ("all" for every pass) */
    StrBuf *dump;             /* where dumps go */
} CompileRequest;

typedef struct CompileResult {
    char *text;               /* TIR / LLVM IR / PTX (malloc'd) */
    size_t size;
    char *signature;          /* malloc'd */
    char *entry;              /* malloc'd */
} CompileResult;

/* Runs sema for the specialisation, lowering, the passes and codegen. */
bool compile_specialization(Compilation *c, const CompileRequest *rq, CompileResult *out);
void compile_result_free(CompileResult *r);

#endif
