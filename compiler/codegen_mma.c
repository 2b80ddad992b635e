/* codegen_mma.c — LLVM code for the target instructions that lower_gemm.c and pipeline.c put in
 * the tile IR (the TI_* calls of tir.h): mma.sync, ldmatrix, cp.async, register packing, and
 * the byte transpose of lower_copy.c's transposing copies.
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

/* prmt(a, b, sel): byte i of the result is byte (sel >> 4 i) & 7 of b:a; NULL if LLVM lacks it */
static LLVMValueRef prmt(const CgxEnv *env, LLVMValueRef a, LLVMValueRef b, unsigned sel)
{
    LLVMValueRef p[3] = {a, b, LLVMConstInt(LLVMInt32TypeInContext(env->ctx), sel, 0)};
    return call_named(env, "llvm.nvvm.prmt", p, 3);
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
    case TI_TRANSPOSE_B8: {
        /* a 4 x 4 byte transpose, out[4 c + r] = in[4 r + c]: the rows as 32-bit words, then two
         * rounds of prmt on word pairs (interleave bytes, then 16-bit halves): half an
         * instruction per byte, where byte inserts and extracts cost about two. prmt, not
         * shufflevector: LLVM's combines spread vector shuffles over every byte of the
         * surrounding loads and stores (the u8 transpose's PTX grew by half) */
        if (call->nargs != 16 || nouts != 16)
            return false;
        LLVMTypeRef i8 = LLVMInt8TypeInContext(env->ctx), i32 = LLVMInt32TypeInContext(env->ctx);
        LLVMTypeRef v4 = LLVMVectorType(i8, 4);
        LLVMValueRef w[4];
        for (int r = 0; r < 4; r++) {
            LLVMValueRef v = LLVMGetUndef(v4);
            for (int c = 0; c < 4; c++)
                v = LLVMBuildInsertElement(env->b, v, args[4 * r + c], LLVMConstInt(i32, (unsigned)c, 0), "");
            w[r] = LLVMBuildBitCast(env->b, v, i32, "");
        }
        /* rows 0 and 1 interleaved byte by byte (t0: columns 0, 1; t1: 2, 3), rows 2 and 3 the same */
        LLVMValueRef t0 = prmt(env, w[0], w[1], 0x5140), t1 = prmt(env, w[0], w[1], 0x7362);
        LLVMValueRef t2 = prmt(env, w[2], w[3], 0x5140), t3 = prmt(env, w[2], w[3], 0x7362);
        if (!t0 || !t1 || !t2 || !t3)
            return false;
        LLVMValueRef col[4] = {prmt(env, t0, t2, 0x5410), prmt(env, t0, t2, 0x7632), prmt(env, t1, t3, 0x5410),
                               prmt(env, t1, t3, 0x7632)};
        for (int c = 0; c < 4; c++) {
            if (!col[c])
                return false;
            LLVMValueRef v = LLVMBuildBitCast(env->b, col[c], v4, "");
            for (int r = 0; r < 4; r++)
                outs[4 * c + r] = LLVMBuildExtractElement(env->b, v, LLVMConstInt(i32, (unsigned)r, 0), "");
        }
        return true;
    }
    default: return false;
    }
}
