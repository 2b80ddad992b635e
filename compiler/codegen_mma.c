/* codegen_mma.c — LLVM code for the target instructions that lower_gemm.c and pipeline.c put in
 * the tile IR (the TI_* calls of tir.h): mma.sync, ldmatrix, cp.async and register packing.
 *
 * Every one of them is an NVVM intrinsic in LLVM 22, so no inline PTX is needed and LLVM still
 * schedules around them. The intrinsics are looked up by name and their signatures taken from
 * LLVM, so an operand only has to be bit-cast to the parameter type (an i32 holding two f16 is a
 * <2 x half> for the f16 mma). */
#include "codegen.h"

#include <stdio.h>
#include <string.h>

/* Calls the intrinsic `name` (overloaded ones on the type of their first operand, the address of
 * ldmatrix); NULL if LLVM does not know it. Operands of the same width as the parameter are
 * bit-cast to its type. */
static LLVMValueRef call_named(const CgxEnv *env, const char *name, LLVMValueRef *args, int n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    if (!id)
        return NULL;
    LLVMTypeRef over[1];
    size_t nover = 0;
    if (LLVMIntrinsicIsOverloaded(id)) {
        if (n < 1)
            return NULL;
        over[nover++] = LLVMTypeOf(args[0]);
    }
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(env->mod, id, over, nover);
    LLVMTypeRef ft = LLVMIntrinsicGetType(env->ctx, id, over, nover);
    if ((int)LLVMCountParamTypes(ft) != n)
        return NULL;
    LLVMTypeRef pt[32];
    LLVMGetParamTypes(ft, pt);
    LLVMValueRef conv[32];
    for (int i = 0; i < n; i++) {
        conv[i] = args[i];
        if (LLVMTypeOf(args[i]) != pt[i])
            conv[i] = LLVMBuildBitCast(env->b, args[i], pt[i], "");
    }
    return LLVMBuildCall2(env->b, ft, f, conv, (unsigned)n, "");
}

/* x as an integer of its own width, zero-extended to i32 */
static LLVMValueRef bits32(const CgxEnv *env, LLVMValueRef x)
{
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(env->ctx);
    if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind) {
        unsigned bits = LLVMGetTypeKind(t) == LLVMFloatTypeKind ? 32 : 16;
        x = LLVMBuildBitCast(env->b, x, LLVMIntTypeInContext(env->ctx, bits), "");
        t = LLVMTypeOf(x);
    }
    if (LLVMGetIntTypeWidth(t) < 32)
        x = LLVMBuildZExt(env->b, x, i32, "");
    return x;
}

LLVMValueRef cgx_value(const CgxEnv *env, const TExpr *call, LLVMValueRef *args)
{
    if (call->builtin != TI_PACK)
        return NULL;
    /* element i of the register sits at bit i * width: the order mma and ldmatrix use */
    int width = 32 / call->nargs;
    LLVMTypeRef i32 = LLVMInt32TypeInContext(env->ctx);
    LLVMValueRef r = NULL;
    for (int i = 0; i < call->nargs; i++) {
        LLVMValueRef x = bits32(env, args[i]);
        if (width < 32)
            x = LLVMBuildAnd(env->b, x, LLVMConstInt(i32, (1ull << width) - 1, 0), "");
        if (i)
            x = LLVMBuildShl(env->b, x, LLVMConstInt(i32, (unsigned long long)(i * width), 0), "");
        r = r ? LLVMBuildOr(env->b, r, x, "") : x;
    }
    return r;
}

static const char *mma_name(DType dt)
{
    switch (dt) {
    case DT_BF16: return "llvm.nvvm.mma.m16n8k16.row.col.bf16";
    case DT_F16: return "llvm.nvvm.mma.m16n8k16.row.col.f32.f32";
    case DT_F32: return "llvm.nvvm.mma.m16n8k8.row.col.tf32";
    case DT_E4M3: return "llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32";
    case DT_E5M2: return "llvm.nvvm.mma.m16n8k32.row.col.f32.e5m2.e5m2.f32";
    default: return NULL;
    }
}

bool cgx_intrin(const CgxEnv *env, const TExpr *call, LLVMValueRef *args, LLVMValueRef *outs, int nouts)
{
    char name[96];
    switch (call->builtin) {
    case TI_MMA: {
        const char *n = mma_name((DType)call->ival);
        if (!n || call->nargs != 10 || nouts != 4)
            return false;
        LLVMValueRef r = call_named(env, n, args, 10);
        if (!r)
            return false;
        for (int i = 0; i < 4; i++)
            outs[i] = LLVMBuildExtractValue(env->b, r, (unsigned)i, "");
        return true;
    }
    case TI_LDMATRIX: {
        int num = (int)(call->ival >> 1);
        if ((num != 1 && num != 2 && num != 4) || nouts != num)
            return false;
        snprintf(name, sizeof name, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x%d%s.b16", num, call->ival & 1 ? ".trans" : "");
        LLVMValueRef r = call_named(env, name, args, 1);
        if (!r)
            return false;
        if (num == 1)
            outs[0] = r;
        else
            for (int i = 0; i < num; i++)
                outs[i] = LLVMBuildExtractValue(env->b, r, (unsigned)i, "");
        return true;
    }
    case TI_CP_ASYNC: {
        int bytes = (int)call->ival;
        if (bytes != 4 && bytes != 8 && bytes != 16)
            return false;
        /* .cg (L2 only) exists for 16 bytes; smaller pieces go through L1 (.ca) */
        snprintf(name, sizeof name, "llvm.nvvm.cp.async.%s.shared.global.%d.s", bytes == 16 ? "cg" : "ca", bytes);
        return call_named(env, name, args, 3) != NULL;
    }
    case TI_CP_COMMIT: return call_named(env, "llvm.nvvm.cp.async.commit.group", NULL, 0) != NULL;
    case TI_CP_WAIT: {
        LLVMValueRef n = LLVMConstInt(LLVMInt32TypeInContext(env->ctx), (unsigned long long)call->ival, 0);
        return call_named(env, "llvm.nvvm.cp.async.wait.group", &n, 1) != NULL;
    }
    default: return false;
    }
}
