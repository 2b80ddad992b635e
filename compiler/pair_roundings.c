/* pair_roundings.c — a peephole after LLVM's optimisation pipeline: an f16x2 built from two
 * f32 -> f16 roundings becomes one rounding of an f32 pair (cvt.rn.f16x2.f32, one instruction
 * for both halves). The instruction selector pairs them only when both roundings sit in the block
 * that builds the pair; a tile's conversions are written in one block and its stores (the e2m1
 * encoder's f16x2 inputs) in others, and ptxas does not pair them either (H200 SASS: one F2FP
 * and half a PRMT per element). Rounding the pair at once gives the same two halves. */
#include "codegen.h"

#include <llvm-c/DebugInfo.h>

#include <stdbool.h>

static bool is_f32_to_f16(LLVMValueRef v, LLVMTypeRef f32, LLVMTypeRef f16)
{
    return v && LLVMIsAFPTruncInst(v) && LLVMTypeOf(v) == f16 && LLVMTypeOf(LLVMGetOperand(v, 0)) == f32;
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

void cg_pair_f16_roundings(LLVMModuleRef m)
{
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx), f16 = LLVMHalfTypeInContext(ctx);
    LLVMTypeRef v2f = LLVMVectorType(f32, 2), v2h = LLVMVectorType(f16, 2), i32 = LLVMInt32TypeInContext(ctx);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    for (LLVMValueRef fn = LLVMGetFirstFunction(m); fn; fn = LLVMGetNextFunction(fn))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
            LLVMValueRef next;
            for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = next) {
                next = LLVMGetNextInstruction(i);
                LLVMValueRef lo, hi;
                if (LLVMTypeOf(i) != v2h || !pair_of(i, f32, f16, &lo, &hi))
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
    LLVMDisposeBuilder(b);
}
