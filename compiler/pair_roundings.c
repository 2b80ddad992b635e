/* pair_roundings.c — a peephole after LLVM's optimisation pipeline: two f32 -> f16 (or bf16)
 * roundings become one rounding of an f32 pair (cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32, one
 * instruction for both halves). First where the two meet in one 16-bit pair: the instruction
 * selector pairs them only when both roundings sit in the block that builds the pair; a tile's
 * conversions are written in one block and its stores (the e2m1 encoder's f16x2 inputs) in others,
 * and ptxas does not pair them either (H200 SASS: one F2FP and half a PRMT per element). Then any
 * two roundings left alone in a block, such as the bf16 round trips f32(bf16(x)) of a tile
 * computed in registers: one F2FP per two elements instead of one per element. Rounding the pair
 * at once gives the same two halves. */
#include "codegen.h"

#include <llvm-c/DebugInfo.h>

#include <stdbool.h>
#include <string.h>

static bool is_f32_to_f16(LLVMValueRef v, LLVMTypeRef f32, LLVMTypeRef f16)
{
    return v && LLVMIsAFPTruncInst(v) && LLVMTypeOf(v) == f16 && LLVMTypeOf(LLVMGetOperand(v, 0)) == f32;
}

/* does instruction `i` use `v`? */
static bool uses(LLVMValueRef i, LLVMValueRef v)
{
    for (int k = 0, n = LLVMGetNumOperands(i); k < n; k++)
        if (LLVMGetOperand(i, k) == v)
            return true;
    return false;
}

static bool const_index(LLVMValueRef v, unsigned long long i)
{
    return LLVMIsAConstantInt(v) && LLVMConstIntGetZExtValue(v) == i;
}

/* the roundings (lo, hi) when `ins` is insertelement(insertelement(poison, lo, 0), hi, 1) */
static bool pair_of(LLVMValueRef ins, LLVMTypeRef f32, LLVMTypeRef f16, LLVMValueRef *lo, LLVMValueRef *hi)
{
    if (!LLVMIsAInsertElementInst(ins) || !const_index(LLVMGetOperand(ins, 2), 1))
        return false;
    LLVMValueRef first = LLVMGetOperand(ins, 0);
    if (!LLVMIsAInsertElementInst(first) || !const_index(LLVMGetOperand(first, 2), 0) ||
        !(LLVMIsUndef(LLVMGetOperand(first, 0)) || LLVMIsPoison(LLVMGetOperand(first, 0))))
        return false;
    *lo = LLVMGetOperand(first, 1);
    *hi = LLVMGetOperand(ins, 1);
    return is_f32_to_f16(*lo, f32, f16) && is_f32_to_f16(*hi, f32, f16);
}

static void erase_if_unused(LLVMValueRef v)
{
    if (v && LLVMIsAInstruction(v) && !LLVMGetFirstUse(v))
        LLVMInstructionEraseFromParent(v);
}

/* an f16x2 / bf16x2 built from two roundings: round the f32 pair instead */
static void pair_built_pairs(LLVMBuilderRef b, LLVMBasicBlockRef bb, LLVMTypeRef f32, LLVMTypeRef h)
{
    LLVMContextRef ctx = LLVMGetTypeContext(f32);
    LLVMTypeRef v2f = LLVMVectorType(f32, 2), v2h = LLVMVectorType(h, 2), i32 = LLVMInt32TypeInContext(ctx);
    LLVMValueRef next;
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = next) {
        next = LLVMGetNextInstruction(i);
        LLVMValueRef lo, hi;
        if (LLVMTypeOf(i) != v2h || !pair_of(i, f32, h, &lo, &hi))
            continue;
        LLVMValueRef first = LLVMGetOperand(i, 0);
        LLVMPositionBuilderBefore(b, i);
        LLVMSetCurrentDebugLocation2(b, LLVMInstructionGetDebugLoc(i));
        LLVMValueRef f2 = LLVMBuildInsertElement(b, LLVMGetPoison(v2f), LLVMGetOperand(lo, 0),
                                                 LLVMConstInt(i32, 0, 0), "");
        f2 = LLVMBuildInsertElement(b, f2, LLVMGetOperand(hi, 0), LLVMConstInt(i32, 1, 0), "");
        LLVMReplaceAllUsesWith(i, LLVMBuildFPTrunc(b, f2, v2h, ""));
        LLVMInstructionEraseFromParent(i);
        erase_if_unused(first);
        erase_if_unused(lo);
        if (hi != lo)
            erase_if_unused(hi);
    }
}

/* is `v` put into a vector (a pair the instruction selector may build from the roundings)? */
static bool feeds_vector(LLVMValueRef v)
{
    for (LLVMUseRef u = LLVMGetFirstUse(v); u; u = LLVMGetNextUse(u))
        if (LLVMIsAInsertElementInst(LLVMGetUser(u)))
            return true;
    return false;
}

/* How far apart (in instructions) two lone roundings may be and still be paired: the first
 * one's input stays live until the second, so a pair must not stretch across a whole tile. */
enum { PAIR_WINDOW = 96 };

/* Lone roundings of one block, two at a time in program order: the pair is rounded where the
 * second stands, by the NVVM intrinsic `cvt2` (a vector fptrunc would be split again by the
 * instruction selector, whose pattern for the paired instruction wants a 16-bit pair). Between
 * the two, the first may be used only by widenings back to f32 (a round trip f32(bf16(x))),
 * which move down behind the pair; any other use keeps it alone. */
static void pair_lone_roundings(LLVMBuilderRef b, LLVMBasicBlockRef bb, LLVMTypeRef f32, LLVMTypeRef h,
                                LLVMValueRef cvt2, LLVMTypeRef cvt2_type)
{
    LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(f32));
    enum { MAX_WIDEN = 4 };
    LLVMValueRef pending = NULL, widen[MAX_WIDEN], next;
    int nwiden = 0, since = 0;
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = next) {
        next = LLVMGetNextInstruction(i);
        if (pending) {
            bool keep = ++since <= PAIR_WINDOW;
            for (int w = 0; w < nwiden && keep; w++)
                keep = !uses(i, widen[w]);
            if (keep && uses(i, pending)) {
                if (LLVMIsAFPExtInst(i) && LLVMTypeOf(i) == f32 && nwiden < MAX_WIDEN) {
                    widen[nwiden++] = i;
                    continue;
                }
                keep = false;
            }
            if (!keep)
                pending = NULL;
        }
        if (!is_f32_to_f16(i, f32, h) || feeds_vector(i))
            continue;
        if (!pending) {
            pending = i;
            nwiden = since = 0;
            continue;
        }
        LLVMPositionBuilderBefore(b, i);
        LLVMSetCurrentDebugLocation2(b, LLVMInstructionGetDebugLoc(i));
        /* cvt.rn.{b,}f16x2.f32 d, hi, lo */
        LLVMValueRef args[2] = {LLVMGetOperand(i, 0), LLVMGetOperand(pending, 0)};
        LLVMValueRef h2 = LLVMBuildCall2(b, cvt2_type, cvt2, args, 2, "");
        LLVMReplaceAllUsesWith(pending, LLVMBuildExtractElement(b, h2, LLVMConstInt(i32, 0, 0), ""));
        LLVMReplaceAllUsesWith(i, LLVMBuildExtractElement(b, h2, LLVMConstInt(i32, 1, 0), ""));
        for (int w = 0; w < nwiden; w++) {
            LLVMInstructionRemoveFromParent(widen[w]);
            LLVMInsertIntoBuilder(b, widen[w]);
        }
        LLVMInstructionEraseFromParent(pending);
        LLVMInstructionEraseFromParent(i);
        pending = NULL;
    }
}

void cg_pair_roundings(LLVMModuleRef m)
{
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx);
    LLVMTypeRef halves[2] = {LLVMHalfTypeInContext(ctx), LLVMBFloatTypeInContext(ctx)};
    static const char *const cvt2_names[2] = {"llvm.nvvm.ff2f16x2.rn", "llvm.nvvm.ff2bf16x2.rn"};
    LLVMValueRef cvt2[2];
    LLVMTypeRef cvt2_type[2];
    for (int t = 0; t < 2; t++) {
        unsigned id = LLVMLookupIntrinsicID(cvt2_names[t], strlen(cvt2_names[t]));
        cvt2[t] = LLVMGetIntrinsicDeclaration(m, id, NULL, 0);
        cvt2_type[t] = LLVMIntrinsicGetType(ctx, id, NULL, 0);
    }
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    /* every built pair first: a rounding may feed pairs in other blocks (two versions of a copy) */
    for (LLVMValueRef fn = LLVMGetFirstFunction(m); fn; fn = LLVMGetNextFunction(fn))
        for (int t = 0; t < 2; t++)
            for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
                pair_built_pairs(b, bb, f32, halves[t]);
    for (LLVMValueRef fn = LLVMGetFirstFunction(m); fn; fn = LLVMGetNextFunction(fn))
        for (int t = 0; t < 2; t++)
            for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb))
                pair_lone_roundings(b, bb, f32, halves[t], cvt2[t], cvt2_type[t]);
    LLVMDisposeBuilder(b);
}
