/* compile.c — the pipeline for one specialisation:
 *   sema(kernel, generics) -> lower_ast -> layout -> pipeline -> lower_tiles -> smem_plan -> LLVM -> PTX
 * with the IR verifier between passes (the programs of the CUDA toolkit are cuda_tools.c's). */
#include "compile.h"

#include "codegen.h"
#include "cuda_tools.h"
#include "emu_lower.h"
#include "signature.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool dump_wanted(const CompileRequest *rq, const char *pass)
{
    return rq->dump && rq->dump_after && (!strcmp(rq->dump_after, "all") || !strcmp(rq->dump_after, pass));
}

/* a pass, the verifier of the stage it leaves, the dump; false when this specialisation has
 * errors (errs: the count before it began, so that one failing specialisation does not stop the
 * next) */
static bool run_pass(Compilation *c, const CompileRequest *rq, TKernel *k, TirStage after, bool (*pass)(TKernel *),
                     int errs)
{
    if (pass && !pass(k))
        return false;
    if (!tir_verify(k, after))
        return false;
    const char *name = tir_stage_name(after);
    if (dump_wanted(rq, name)) {
        sb_printf(rq->dump, "// ---- after %s ----\n", name);
        tir_print(rq->dump, k);
    }
    return c->diag.nerrors == errs;
}

/* The largest basic block of the module before optimisation, in instructions. The tile-IR bound
 * (TL_MAX_CODE_SIZE) counts a scalar operation once, but exp, a division or a conversion becomes
 * tens of LLVM instructions, and the time of LLVM's optimisation and instruction selection grows
 * faster than linearly in the length of a block (4096 unrolled lines with an exp: one block of
 * 82 000 instructions, 142 s and 1.3 GB at -O3), while many short blocks cost little (a table
 * copy of 65 000 instructions in short blocks: 1.7 s). */
static bool llvm_size_ok(TKernel *k, LLVMModuleRef m, Loc loc)
{
    int64_t total = 0, largest = 0;
    for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b; b = LLVMGetNextBasicBlock(b)) {
            int64_t n = 0;
            for (LLVMValueRef i = LLVMGetFirstInstruction(b); i; i = LLVMGetNextInstruction(i))
                n++;
            total += n;
            if (n > largest)
                largest = n;
        }
    if (getenv("TILEC_TIMING"))
        fprintf(stderr, "tilec: %-12s %7lld (largest block %lld)\n", "llvm instrs", (long long)total,
                (long long)largest);
    if (largest <= TL_MAX_LLVM_BLOCK)
        return true;
    diag_error(k->diag, loc, "a straight run of this kernel's code is %lld LLVM instructions before optimisation, "
               "more than the limit of %d (LLVM's time and memory grow faster than the run): unroll fewer "
               "iterations or split the kernel", (long long)largest, TL_MAX_LLVM_BLOCK);
    return false;
}

bool compile_specialization(Compilation *c, const CompileRequest *rq, CompileResult *out)
{
    memset(out, 0, sizeof *out);
    double t = tool_ms_now();
    int errs = c->diag.nerrors;
    if (!sema_kernel(c, rq->kernel, &rq->args))
        return false;
    tool_phase("sema", &t);
    TKernel *k;
    if (!lower_ast(c, rq->kernel, &rq->args, rq->sm, rq->host, &k))
        return false;
    if (!run_pass(c, rq, k, TIR_AFTER_LOWER_AST, NULL, errs) || !run_pass(c, rq, k, TIR_AFTER_LAYOUT, pass_layout, errs) ||
        !run_pass(c, rq, k, TIR_AFTER_PIPELINE, pass_pipeline, errs) ||
        !run_pass(c, rq, k, TIR_AFTER_LOWER_TILES, pass_lower_tiles, errs) ||
        !run_pass(c, rq, k, TIR_AFTER_SMEM_PLAN, pass_smem_plan, errs))
        return false;
    tool_phase("tir passes", &t);
    if (tir_code_size(k->body, TL_MAX_CODE_SIZE) > TL_MAX_CODE_SIZE) {
        const TStmt *at = tir_code_size_culprit(k->body, TL_MAX_CODE_SIZE);
        tir_code_size_error(k, at ? at->loc : rq->kernel->name.loc);
        return false;
    }
    StrBuf sig = {0};
    if (!signature_write(&sig, k, &c->diag)) {
        sb_free(&sig);
        return false;
    }
    out->signature = sb_take(&sig);
    out->entry = strdup(k->entry);
    if (rq->stage == STAGE_TIR) {
        StrBuf text = {0};
        tir_print(&text, k);
        out->size = text.len;
        out->text = sb_take(&text);
        return true;
    }
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef m = cg_build_module(k, ctx);
    tool_phase("llvm ir", &t);
    bool ok = false;
    if (m && !llvm_size_ok(k, m, rq->kernel->name.loc)) {
        LLVMDisposeModule(m);
        m = NULL;
    }
    if (m) {
        if (rq->host) { /* host target: the same module, lowered for the CPU emulator */
            out->text = emu_emit_host(k, m, rq->opt_level, rq->stage != STAGE_LLVM, &out->size);
        } else if (rq->stage == STAGE_LLVM) {
            out->text = cg_emit_llvm_text(k, m, rq->opt_level);
            if (out->text)
                out->size = strlen(out->text);
        } else {
            out->text = cg_emit_ptx(k, m, rq->opt_level, &out->size);
        }
        ok = out->text != NULL;
        tool_phase("llvm->ptx", &t);
        LLVMDisposeModule(m);
    }
    LLVMContextDispose(ctx);
    if (!ok) {
        compile_result_free(out);
        return false;
    }
    return true;
}

void compile_result_free(CompileResult *r)
{
    free(r->text);
    free(r->signature);
    free(r->entry);
    memset(r, 0, sizeof *r);
}
