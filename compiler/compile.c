/* compile.c — the pipeline for one specialisation:
 *   sema(kernel, generics) -> lower_ast -> layout -> pipeline -> lower_tiles -> smem_plan -> LLVM -> PTX
 * with the IR verifier between passes (the programs of the CUDA toolkit are cuda_tools.c's). */
#include "compile.h"

#include "codegen.h"
#include "cuda_tools.h"
#include "emu_lower.h"
#include "signature.h"

#include <stdlib.h>
#include <string.h>

static bool dump_wanted(const CompileRequest *rq, const char *pass)
{
    return rq->dump && rq->dump_after && (!strcmp(rq->dump_after, "all") || !strcmp(rq->dump_after, pass));
}

/* a pass, the verifier, the dump; false when this specialisation has errors (errs: the count
 * before it began, so that one failing specialisation does not stop the next) */
static bool run_pass(Compilation *c, const CompileRequest *rq, TKernel *k, const char *name, bool (*pass)(TKernel *),
                     int errs)
{
    if (pass && !pass(k))
        return false;
    if (!tir_verify(k, name))
        return false;
    if (dump_wanted(rq, name)) {
        sb_printf(rq->dump, "// ---- after %s ----\n", name);
        tir_print(rq->dump, k);
    }
    return c->diag.nerrors == errs;
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
    if (!run_pass(c, rq, k, "lower_ast", NULL, errs) || !run_pass(c, rq, k, "layout", pass_layout, errs) ||
        !run_pass(c, rq, k, "pipeline", pass_pipeline, errs) || !run_pass(c, rq, k, "lower_tiles", pass_lower_tiles, errs) ||
        !run_pass(c, rq, k, "smem_plan", pass_smem_plan, errs))
        return false;
    tool_phase("tir passes", &t);
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
