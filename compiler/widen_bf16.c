/* widen_bf16.c — a peephole after LLVM's optimisation pipeline: bf16 values widened to f32 that
 * sit in one 32-bit word (two loads of neighbouring elements, the first 4-byte aligned; the two
 * halves of a pair) become integer arithmetic on the word: the low half shifted up 16 bits, the
 * high half masked with 0xffff0000. The instruction selector widens a high half by moving it
 * down first and shifting it back (H200 SASS: PRMT then IMAD.U32 for every odd element, one
 * instruction more than the mask). The bits are the same: a bf16 value widened is its 16 bits
 * followed by 16 zero bits. Done after optimisation, not when the loads are generated, so that
 * LLVM still sees the bf16 values where it can work on them narrow (maxima of |x| in bf16). */
#include "codegen.h"

#include <llvm-c/DebugInfo.h>

#include <stdbool.h>
#include <string.h>

static bool only_widened(LLVMValueRef v, LLVMTypeRef f32)
{
    LLVMUseRef u = LLVMGetFirstUse(v);
    if (!u)
        return false;
    for (; u; u = LLVMGetNextUse(u)) {
        LLVMValueRef user = LLVMGetUser(u);
        if (!LLVMIsAFPExtInst(user) || LLVMTypeOf(user) != f32)
            return false;
    }
    return true;
}

/* may `i` write memory (so that a load cannot move across it)? */
static bool may_write(LLVMValueRef i)
{
    if (LLVMIsAStoreInst(i) || LLVMIsAAtomicRMWInst(i) || LLVMIsAAtomicCmpXchgInst(i) || LLVMIsAFenceInst(i))
        return true;
    if (!LLVMIsACallInst(i))
        return false;
    LLVMValueRef callee = LLVMGetCalledValue(i);
    if (!LLVMIsAFunction(callee) || !LLVMGetIntrinsicID(callee))
        return true;
    size_t len;
    const char *name = LLVMGetValueName2(callee, &len);
    /* math intrinsics read nothing; barriers, fences and everything else are kept in place */
    static const char *const pure[] = {"llvm.fma.", "llvm.fabs.", "llvm.minnum.", "llvm.maxnum.", "llvm.nvvm.ex2.",
                                       "llvm.nvvm.rcp.", "llvm.nvvm.fma.", "llvm.nvvm.saturate.", "llvm.nvvm.ff"};
    for (size_t k = 0; k < sizeof pure / sizeof pure[0]; k++)
        if (!strncmp(name, pure[k], strlen(pure[k])))
            return false;
    return true;
}

/* the f32 bits of the bf16 in the low (high = false) or high half of the 32-bit word w */
static LLVMValueRef half_bits(LLVMBuilderRef b, LLVMValueRef w, bool high)
{
    LLVMTypeRef i32 = LLVMTypeOf(w);
    return high ? LLVMBuildAnd(b, w, LLVMConstInt(i32, 0xffff0000u, 0), "")
                : LLVMBuildShl(b, w, LLVMConstInt(i32, 16, 0), "");
}

/* every widening of `v` becomes `bits` seen as f32 */
static void replace_widenings(LLVMBuilderRef b, LLVMValueRef v, LLVMValueRef bits, LLVMTypeRef f32)
{
    LLVMValueRef f = LLVMBuildBitCast(b, bits, f32, "");
    LLVMUseRef u;
    while ((u = LLVMGetFirstUse(v))) {
        LLVMValueRef user = LLVMGetUser(u);
        LLVMReplaceAllUsesWith(user, f);
        LLVMInstructionEraseFromParent(user);
    }
}

/* p as base + constant bytes (a byte GEP with a constant index), or p + 0 */
static LLVMValueRef base_offset(LLVMValueRef p, long long *off)
{
    *off = 0;
    if (LLVMIsAGetElementPtrInst(p) && LLVMGetNumOperands(p) == 2 &&
        LLVMGetTypeKind(LLVMGetGEPSourceElementType(p)) == LLVMIntegerTypeKind &&
        LLVMGetIntTypeWidth(LLVMGetGEPSourceElementType(p)) == 8 && LLVMIsAConstantInt(LLVMGetOperand(p, 1))) {
        *off = LLVMConstIntGetSExtValue(LLVMGetOperand(p, 1));
        return LLVMGetOperand(p, 0);
    }
    return p;
}

/* The alignment known for address `p` in block `bb`: that of a load from it in the block, or
 * for p = base + C bytes, min(alignment of base, largest power of two dividing C). After
 * optimisation a vector load has become element loads of which only the first keeps the
 * vector's alignment. */
static unsigned known_align(LLVMValueRef p, LLVMBasicBlockRef bb, int depth)
{
    unsigned a = 1;
    for (LLVMUseRef u = LLVMGetFirstUse(p); u; u = LLVMGetNextUse(u)) {
        LLVMValueRef user = LLVMGetUser(u);
        if (LLVMIsALoadInst(user) && LLVMGetInstructionParent(user) == bb && LLVMGetAlignment(user) > a)
            a = LLVMGetAlignment(user);
    }
    long long c;
    LLVMValueRef basep = base_offset(p, &c);
    if (depth < 4 && basep != p) {
        unsigned base = known_align(basep, bb, depth + 1);
        unsigned low = c ? (unsigned)(c & -c) : base;
        unsigned via = base < low ? base : low;
        if (via > a)
            a = via;
    }
    return a;
}

/* is hi_ptr the address lo_ptr + 2 bytes? */
static bool is_next_half(LLVMValueRef hi_ptr, LLVMValueRef lo_ptr)
{
    long long ho, lo;
    LLVMValueRef hb = base_offset(hi_ptr, &ho), lb = base_offset(lo_ptr, &lo);
    return (hb == lb && ho == lo + 2) || (hb == lo_ptr && ho == 2);
}

/* Two bf16 loads of one block, from a 4-byte aligned address (known_align) and the next element,
 * used only widened, with nothing between them that may write memory: one 32-bit load. */
static void widen_load_pairs(LLVMBuilderRef b, LLVMBasicBlockRef bb, LLVMTypeRef bf, LLVMTypeRef f32, LLVMTypeRef i32)
{
    LLVMValueRef next;
    for (LLVMValueRef lo = LLVMGetFirstInstruction(bb); lo; lo = next) {
        next = LLVMGetNextInstruction(lo);
        if (!LLVMIsALoadInst(lo) || LLVMTypeOf(lo) != bf || LLVMGetVolatile(lo) || !only_widened(lo, f32))
            continue;
        unsigned align = known_align(LLVMGetOperand(lo, 0), bb, 0);
        if (align < 4)
            continue;
        LLVMValueRef ptr = LLVMGetOperand(lo, 0), hi = NULL;
        bool hi_first = false;
        /* the partner, before or after `lo`, with no memory write between */
        for (int dir = 0; dir < 2 && !hi; dir++)
            for (LLVMValueRef j = dir ? LLVMGetNextInstruction(lo) : LLVMGetPreviousInstruction(lo); j;
                 j = dir ? LLVMGetNextInstruction(j) : LLVMGetPreviousInstruction(j)) {
                if (LLVMIsALoadInst(j) && LLVMTypeOf(j) == bf && !LLVMGetVolatile(j) &&
                    is_next_half(LLVMGetOperand(j, 0), ptr) && only_widened(j, f32)) {
                    hi = j;
                    hi_first = dir == 0;
                    break;
                }
                if (may_write(j))
                    break;
            }
        if (!hi)
            continue;
        /* the word is loaded where the first of the two stood; when that is `hi`, `ptr` must not
         * be computed between the two (an address computed just before `lo`) */
        LLVMValueRef first = hi_first ? hi : lo;
        bool ok = true;
        for (LLVMValueRef j = hi; hi_first && j != lo && ok; j = LLVMGetNextInstruction(j))
            ok = j != ptr;
        if (!ok)
            continue;
        LLVMPositionBuilderBefore(b, first);
        LLVMSetCurrentDebugLocation2(b, LLVMInstructionGetDebugLoc(first));
        LLVMValueRef w = LLVMBuildLoad2(b, i32, ptr, "");
        LLVMSetAlignment(w, align);
        replace_widenings(b, lo, half_bits(b, w, false), f32);
        replace_widenings(b, hi, half_bits(b, w, true), f32);
        LLVMInstructionEraseFromParent(lo);
        LLVMInstructionEraseFromParent(hi);
        next = LLVMGetNextInstruction(w); /* the old `next` may have been a widening, now erased */
    }
}

/* fpext(extractelement <2k x bfloat> v, i): the word of v holding element i */
static void widen_vector_elements(LLVMBuilderRef b, LLVMBasicBlockRef bb, LLVMTypeRef bf, LLVMTypeRef f32, LLVMTypeRef i32)
{
    LLVMValueRef next;
    for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = next) {
        next = LLVMGetNextInstruction(i);
        if (!LLVMIsAFPExtInst(i) || LLVMTypeOf(i) != f32)
            continue;
        LLVMValueRef e = LLVMGetOperand(i, 0);
        if (!LLVMIsAExtractElementInst(e) || LLVMTypeOf(e) != bf)
            continue;
        LLVMValueRef vec = LLVMGetOperand(e, 0), idx = LLVMGetOperand(e, 1);
        unsigned n = LLVMGetVectorSize(LLVMTypeOf(vec));
        if (!LLVMIsAConstantInt(idx) || n % 2 != 0)
            continue;
        unsigned long long k = LLVMConstIntGetZExtValue(idx);
        LLVMPositionBuilderBefore(b, i);
        LLVMSetCurrentDebugLocation2(b, LLVMInstructionGetDebugLoc(i));
        LLVMValueRef words = LLVMBuildBitCast(b, vec, LLVMVectorType(i32, n / 2), "");
        LLVMValueRef w = LLVMBuildExtractElement(b, words, LLVMConstInt(i32, k / 2, 0), "");
        LLVMReplaceAllUsesWith(i, LLVMBuildBitCast(b, half_bits(b, w, k % 2), f32, ""));
        LLVMInstructionEraseFromParent(i);
        if (!LLVMGetFirstUse(e))
            LLVMInstructionEraseFromParent(e);
    }
}

void cg_widen_bf16(LLVMModuleRef m)
{
    LLVMContextRef ctx = LLVMGetModuleContext(m);
    LLVMTypeRef bf = LLVMBFloatTypeInContext(ctx), f32 = LLVMFloatTypeInContext(ctx);
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    for (LLVMValueRef fn = LLVMGetFirstFunction(m); fn; fn = LLVMGetNextFunction(fn))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
            widen_load_pairs(b, bb, bf, f32, i32);
            widen_vector_elements(b, bb, bf, f32, i32);
        }
    LLVMDisposeBuilder(b);
}
