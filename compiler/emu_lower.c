/* emu_lower.c — the host target. The kernel's module is built once, by cg_build_module, for
 * NVPTX; this pass rewrites it into a module the x86-64 back end compiles for the CPU emulator
 * (runtime/emu), so that the emulator runs the very code the GPU runs:
 *   - every GPU intrinsic (thread ids, barriers, shuffles, votes, fp8/fp4 conversions, fma.rm,
 *     MUFU ex2 / rsqrt, cp.async, ldmatrix, mma.sync, trap) and every inline-asm `cvt` becomes a
 *     call to the emulator's ABI (runtime/emu/include/tilec/tl_emu_abi.h), which reads the
 *     current fiber;
 *   - conversions that involve f16, bf16 or f64, min/max, and f32 atomic adds go through the
 *     emulator's bit-exact versions, and float arithmetic results that are NaN (negation and
 *     abs included) become the GPU's NaN: the canonical one for f32, where x86 keeps payloads;
 *     for f64 the payload of the operand the GPU picks, in its order (gpu_nan_rule);
 *   - shared memory (the extern array tl_smem) becomes the current block's buffer, and every
 *     shared-memory access reports itself first (bounds check and racecheck);
 *   - after LLVM's optimiser, every global-memory access through a tensor parameter is checked
 *     first against the range the launch gave for that tensor, inline; only a miss calls the
 *     emulator, which reports it; an access through a tensor of a tensor list is checked against
 *     the range of the element whose pointer it was read from, and those reads stay inside the
 *     list's parameter whatever the index;
 *   - f16 / bf16 values that are only moved become i16, since x86 would move them through f32
 *     registers and change subnormals and NaNs;
 *   - signed division guards INT_MIN / -1, which traps on x86;
 *   - the kernel gets the C calling convention, loses `noalias` (other fibers write through
 *     other copies of the pointers between barriers) and `byval` (a tensor list's pointers are
 *     read where the launch put them), and a wrapper `__tl_emu_ENTRY(void **)` takes the
 *     parameters as cuLaunchKernel does.
 * Address spaces 1 and 3 stay: on x86-64 they are plain 64-bit pointers. The object also
 * carries two strings for the emulator's reports: the sites (what each barrier / warp
 * operation / memory access is) and the map of the shared buffers. */
#include "emu_lower.h"

#include "tilec/tl_emu_abi.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/DebugInfo.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct GLimit {
    int tensor;
    uint64_t size;
    LLVMValueRef lim;
} GLimit;

typedef struct EL {
    TKernel *k;
    LLVMModuleRef m;
    LLVMContextRef ctx;
    LLVMBuilderRef b;
    LLVMTargetDataRef td;
    LLVMValueRef fn;
    LLVMTypeRef i1, i8, i16, i32, i64, f16, bf16, f32, f64, v, p0, p1, p3;
    StrBuf sites;
    int nsites;
    LLVMValueRef canon32, dnan64; /* the f32 canonical NaN and the f64 default NaN, opaque to LLVM */
    LLVMValueRef tc_regs;         /* mma / ldmatrix: the lane's registers, i32[10] on its stack */
    /* global memory: the tensor and tensor-list parameters (their data pointers, the arrays of a
     * list's), the first range of each and a list's max (0 for a tensor), the range of each
     * tensor as read at the top of the kernel (made on first use), and the inline check */
    LLVMValueRef *tensors, *gbase, *gsize, granges, gtop;
    int *slot, *cap;
    int ntensors, nslots;
    LLVMValueRef *elem_loads; /* the reads of a list's tensor pointers that accesses go through */
    int nelem_loads;
    GLimit glims[32]; /* the limits for accesses of constant sizes */
    int nglims;
    LLVMValueRef gcheck;
    LLVMTypeRef gcheck_ty;
    bool ok;
} EL;

static void el_error(EL *el, const char *fmt, const char *what)
{
    if (el->ok)
        diag_error(el->k->diag, el->k->item ? el->k->item->name.loc : loc_none(), fmt, what, el->k->key);
    el->ok = false;
}

/* ---------------- helpers ---------------- */

static unsigned attr_kind(const char *name) { return LLVMGetEnumAttributeKindForName(name, strlen(name)); }

/* the emulator function `name`, declared once; flags: 1 nounwind, 2 memory(none), 4 noreturn */
static LLVMValueRef abi_fn(EL *el, const char *name, LLVMTypeRef ret, LLVMTypeRef *args, int n, int flags,
                           LLVMTypeRef *fty)
{
    *fty = LLVMFunctionType(ret, args, (unsigned)n, 0);
    LLVMValueRef f = LLVMGetNamedFunction(el->m, name);
    if (!f) {
        f = LLVMAddFunction(el->m, name, *fty);
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(el->ctx, attr_kind("nounwind"), 0));
        if (flags & 2) {
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(el->ctx, attr_kind("memory"), 0));
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(el->ctx, attr_kind("willreturn"), 0));
        }
        if (flags & 4)
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(el->ctx, attr_kind("noreturn"), 0));
    }
    return f;
}

static LLVMValueRef call_abi(EL *el, const char *name, LLVMTypeRef ret, LLVMTypeRef *at, LLVMValueRef *args, int n,
                             int flags)
{
    LLVMTypeRef fty;
    LLVMValueRef f = abi_fn(el, name, ret, at, n, flags, &fty);
    return LLVMBuildCall2(el->b, fty, f, args, (unsigned)n, "");
}

static LLVMValueRef c32(EL *el, uint64_t v) { return LLVMConstInt(el->i32, v, 0); }


/* a site: one line of the object's site table, for the emulator's reports: what the
 * instruction does and, when codegen gave it a source line, where it comes from */
static LLVMValueRef site(EL *el, const char *what, LLVMValueRef inst)
{
    sb_puts(&el->sites, what);
    LLVMMetadataRef loc = inst ? LLVMInstructionGetDebugLoc(inst) : NULL;
    if (loc) {
        LLVMMetadataRef file = LLVMDIScopeGetFile(LLVMDILocationGetScope(loc));
        unsigned dl = 0, fl = 0;
        const char *dir = file ? LLVMDIFileGetDirectory(file, &dl) : "";
        const char *name = file ? LLVMDIFileGetFilename(file, &fl) : "?";
        if (dl && !(dl == 1 && dir[0] == '.'))
            sb_printf(&el->sites, " at %.*s/%.*s", (int)dl, dir, (int)fl, name);
        else
            sb_printf(&el->sites, " at %.*s", (int)fl, name);
        sb_printf(&el->sites, ":%u:%u", LLVMDILocationGetLine(loc), LLVMDILocationGetColumn(loc));
    }
    sb_puts(&el->sites, "\n");
    return c32(el, (uint64_t)el->nsites++);
}

static void replace(LLVMValueRef old, LLVMValueRef nw)
{
    if (nw)
        LLVMReplaceAllUsesWith(old, nw);
    LLVMInstructionEraseFromParent(old);
}

static const char *callee_name(LLVMValueRef call)
{
    LLVMValueRef f = LLVMGetCalledValue(call);
    if (!f || !LLVMIsAFunction(f))
        return NULL;
    size_t n;
    return LLVMGetValueName2(f, &n);
}

static LLVMValueRef arg(LLVMValueRef call, unsigned i) { return LLVMGetOperand(call, i); }

static bool starts(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static bool is_shared(LLVMValueRef p)
{
    LLVMTypeRef t = LLVMTypeOf(p);
    return LLVMGetTypeKind(t) == LLVMPointerTypeKind && LLVMGetPointerAddressSpace(t) == 3;
}

/* value <-> i64 bits */
static LLVMValueRef to_bits64(EL *el, LLVMValueRef v, bool sign)
{
    LLVMTypeRef t = LLVMTypeOf(v);
    LLVMTypeKind tk = LLVMGetTypeKind(t);
    if (tk != LLVMIntegerTypeKind) {
        unsigned w = tk == LLVMDoubleTypeKind ? 64 : tk == LLVMFloatTypeKind ? 32 : 16;
        v = LLVMBuildBitCast(el->b, v, LLVMIntTypeInContext(el->ctx, w), "");
        sign = false;
    }
    if (LLVMGetIntTypeWidth(LLVMTypeOf(v)) == 64)
        return v;
    return sign ? LLVMBuildSExt(el->b, v, el->i64, "") : LLVMBuildZExt(el->b, v, el->i64, "");
}

static LLVMValueRef from_bits64(EL *el, LLVMValueRef bits, LLVMTypeRef t)
{
    LLVMTypeKind tk = LLVMGetTypeKind(t);
    unsigned w = tk == LLVMIntegerTypeKind ? LLVMGetIntTypeWidth(t)
                 : tk == LLVMDoubleTypeKind ? 64
                 : tk == LLVMFloatTypeKind  ? 32
                                            : 16;
    LLVMValueRef v = w == 64 ? bits : LLVMBuildTrunc(el->b, bits, LLVMIntTypeInContext(el->ctx, w), "");
    return tk == LLVMIntegerTypeKind ? v : LLVMBuildBitCast(el->b, v, t, "");
}

/* the tl_emu_cvt type code of an LLVM scalar type; -1 if none */
static int type_code(LLVMTypeRef t, bool sign)
{
    switch (LLVMGetTypeKind(t)) {
    case LLVMHalfTypeKind: return TL_EMU_F16;
    case LLVMBFloatTypeKind: return TL_EMU_BF16;
    case LLVMFloatTypeKind: return TL_EMU_F32;
    case LLVMDoubleTypeKind: return TL_EMU_F64;
    case LLVMIntegerTypeKind:
        switch (LLVMGetIntTypeWidth(t)) {
        case 8: return sign ? TL_EMU_S8 : TL_EMU_U8;
        case 16: return sign ? TL_EMU_S16 : TL_EMU_U16;
        case 32: return sign ? TL_EMU_S32 : TL_EMU_U32;
        case 64: return sign ? TL_EMU_S64 : TL_EMU_U64;
        default: return -1;
        }
    default: return -1;
    }
}

static LLVMValueRef emu_cvt(EL *el, LLVMValueRef v, int from, int to, int rnd, LLVMTypeRef result)
{
    LLVMTypeRef at[4] = {el->i64, el->i32, el->i32, el->i32};
    LLVMValueRef args[4] = {to_bits64(el, v, false), c32(el, (uint64_t)from), c32(el, (uint64_t)to), c32(el, (uint64_t)rnd)};
    LLVMValueRef r = call_abi(el, "tl_emu_cvt", el->i64, at, args, 4, 3);
    return from_bits64(el, r, result);
}

/* ---------------- intrinsic calls ---------------- */

static void lower_sreg(EL *el, LLVMValueRef call, const char *name)
{
    static const char *const regs[TL_EMU_SREG_COUNT] = {
        [TL_EMU_SREG_TID_X] = "tid.x",     [TL_EMU_SREG_TID_Y] = "tid.y",       [TL_EMU_SREG_TID_Z] = "tid.z",
        [TL_EMU_SREG_CTAID_X] = "ctaid.x", [TL_EMU_SREG_CTAID_Y] = "ctaid.y",   [TL_EMU_SREG_CTAID_Z] = "ctaid.z",
        [TL_EMU_SREG_NTID_X] = "ntid.x",   [TL_EMU_SREG_NTID_Y] = "ntid.y",     [TL_EMU_SREG_NTID_Z] = "ntid.z",
        [TL_EMU_SREG_NCTAID_X] = "nctaid.x", [TL_EMU_SREG_NCTAID_Y] = "nctaid.y", [TL_EMU_SREG_NCTAID_Z] = "nctaid.z"};
    const char *r = name + strlen("llvm.nvvm.read.ptx.sreg.");
    for (unsigned i = 0; i < TL_EMU_SREG_COUNT; i++)
        if (!strcmp(r, regs[i])) {
            /* within one fiber's run of the kernel these never change: readnone lets LLVM reuse them */
            LLVMValueRef a = c32(el, i);
            replace(call, call_abi(el, "tl_emu_sreg", el->i32, &el->i32, &a, 1, 3));
            return;
        }
    el_error(el, "the emulator does not implement the special register '%s' (kernel %s)", name);
}

static void lower_shfl(EL *el, LLVMValueRef call, const char *name)
{
    /* llvm.nvvm.shfl.sync.MODE.TYPE(membermask, value, b, c) */
    const char *mode = name + strlen("llvm.nvvm.shfl.sync.");
    int m = starts(mode, "up.")     ? TL_EMU_SHFL_UP
            : starts(mode, "down.") ? TL_EMU_SHFL_DOWN
            : starts(mode, "bfly.") ? TL_EMU_SHFL_BFLY
            : starts(mode, "idx.")  ? TL_EMU_SHFL_IDX
                                    : -1;
    LLVMTypeRef rt = LLVMTypeOf(call);
    if (m < 0 || LLVMGetTypeKind(rt) == LLVMStructTypeKind) {
        el_error(el, "the emulator does not implement '%s' (kernel %s)", name);
        return;
    }
    static const char *what[] = {"shfl_up", "shfl_down", "shfl_xor", "shfl"};
    LLVMValueRef val = arg(call, 1);
    if (LLVMTypeOf(val) != el->i32)
        val = LLVMBuildBitCast(el->b, val, el->i32, "");
    LLVMTypeRef at[6] = {el->i32, el->i32, el->i32, el->i32, el->i32, el->i32};
    LLVMValueRef args[6] = {c32(el, (uint64_t)m), arg(call, 0), val, arg(call, 2), arg(call, 3), site(el, what[m], call)};
    LLVMValueRef r = call_abi(el, "tl_emu_shfl", el->i32, at, args, 6, 1);
    if (rt != el->i32)
        r = LLVMBuildBitCast(el->b, r, rt, "");
    replace(call, r);
}

static void lower_vote(EL *el, LLVMValueRef call, const char *name)
{
    const char *mode = name + strlen("llvm.nvvm.vote.");
    int m = starts(mode, "ballot") ? TL_EMU_VOTE_BALLOT
            : starts(mode, "all")  ? TL_EMU_VOTE_ALL
            : starts(mode, "any")  ? TL_EMU_VOTE_ANY
            : starts(mode, "uni")  ? TL_EMU_VOTE_UNI
                                   : -1;
    if (m < 0 || !strstr(mode, ".sync")) {
        el_error(el, "the emulator does not implement '%s' (kernel %s)", name);
        return;
    }
    static const char *what[] = {"ballot", "vote.all", "vote.any", "vote.uni"};
    LLVMTypeRef at[4] = {el->i32, el->i32, el->i32, el->i32};
    LLVMValueRef args[4] = {c32(el, (uint64_t)m), arg(call, 0), LLVMBuildZExt(el->b, arg(call, 1), el->i32, ""),
                            site(el, what[m], call)};
    LLVMValueRef r = call_abi(el, "tl_emu_vote", el->i32, at, args, 4, 1);
    if (LLVMTypeOf(call) == el->i1)
        r = LLVMBuildICmp(el->b, LLVMIntNE, r, c32(el, 0), "");
    replace(call, r);
}

static void lower_cvt_pair(EL *el, LLVMValueRef call, const char *name)
{
    LLVMTypeRef at[3] = {el->i32, el->i32, el->i32};
    int op = -1;
    bool unpack = false;
    if (!strcmp(name, "llvm.nvvm.ff.to.e4m3x2.rn"))
        op = TL_EMU_X2_E4M3_FROM_F32;
    else if (!strcmp(name, "llvm.nvvm.ff.to.e5m2x2.rn"))
        op = TL_EMU_X2_E5M2_FROM_F32;
    else if (!strcmp(name, "llvm.nvvm.ff.to.e2m1x2.rn.satfinite"))
        op = TL_EMU_X2_E2M1_FROM_F32;
    else if (!strcmp(name, "llvm.nvvm.e4m3x2.to.f16x2.rn"))
        op = TL_EMU_X2_F16_FROM_E4M3, unpack = true;
    else if (!strcmp(name, "llvm.nvvm.e5m2x2.to.f16x2.rn"))
        op = TL_EMU_X2_F16_FROM_E5M2, unpack = true;
    else if (!strcmp(name, "llvm.nvvm.e2m1x2.to.f16x2.rn"))
        op = TL_EMU_X2_F16_FROM_E2M1, unpack = true;
    if (op < 0) {
        el_error(el, "the emulator does not implement the conversion '%s' (kernel %s)", name);
        return;
    }
    LLVMValueRef args[3] = {c32(el, (uint64_t)op), c32(el, 0), c32(el, 0)};
    if (unpack) {
        args[1] = LLVMBuildZExt(el->b, arg(call, 0), el->i32, "");
    } else {
        args[1] = LLVMBuildBitCast(el->b, arg(call, 0), el->i32, "");
        args[2] = LLVMBuildBitCast(el->b, arg(call, 1), el->i32, "");
    }
    LLVMValueRef r = call_abi(el, "tl_emu_cvt_x2", el->i32, at, args, 3, 3);
    LLVMTypeRef rt = LLVMTypeOf(call);
    if (LLVMGetTypeKind(rt) == LLVMVectorTypeKind)
        r = LLVMBuildBitCast(el->b, r, rt, "");
    else
        r = LLVMBuildTrunc(el->b, r, rt, "");
    replace(call, r);
}

static void lower_cp_async(EL *el, LLVMValueRef call, const char *name)
{
    /* llvm.nvvm.cp.async.{ca,cg}.shared.global.N[.s](dst, src[, src_size]) */
    const char *p = strstr(name, ".global.");
    int n = p ? atoi(p + 8) : 0;
    if (n != 4 && n != 8 && n != 16) {
        el_error(el, "the emulator does not implement '%s' (kernel %s)", name);
        return;
    }
    bool sized = LLVMGetNumArgOperands(call) >= 3;
    LLVMTypeRef at[5] = {el->p3, el->p1, el->i32, el->i32, el->i32};
    LLVMValueRef args[5] = {arg(call, 0), arg(call, 1), c32(el, (uint64_t)n), sized ? arg(call, 2) : c32(el, (uint64_t)n),
                            site(el, "cp.async into shared memory", call)};
    if (LLVMTypeOf(args[0]) != el->p3 || LLVMTypeOf(args[1]) != el->p1) {
        el_error(el, "unexpected operands of '%s' (kernel %s)", name);
        return;
    }
    call_abi(el, "tl_emu_cp_async", el->v, at, args, 5, 1);
    replace(call, NULL);
}

/* the i32[10] in the kernel's entry block that mma.sync and ldmatrix pass their registers in
 * (one for all of them: a thread runs one at a time); the builder stays before `call` */
static LLVMValueRef tc_regs(EL *el, LLVMValueRef call)
{
    if (!el->tc_regs) {
        LLVMMetadataRef loc = LLVMGetCurrentDebugLocation2(el->b);
        LLVMPositionBuilderBefore(el->b, LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(el->fn)));
        LLVMSetCurrentDebugLocation2(el->b, NULL);
        el->tc_regs = LLVMBuildAlloca(el->b, LLVMArrayType2(el->i32, 10), "tc.regs");
        LLVMSetCurrentDebugLocation2(el->b, loc);
        LLVMPositionBuilderBefore(el->b, call);
    }
    return el->tc_regs;
}

static LLVMValueRef tc_slot(EL *el, LLVMValueRef regs, unsigned i)
{
    LLVMValueRef idx[2] = {c32(el, 0), c32(el, i)};
    return LLVMBuildInBoundsGEP2(el->b, LLVMArrayType2(el->i32, 10), regs, idx, 2, "");
}

/* llvm.nvvm.mma.m16n8kK.row.col.*(a0..a3, b0, b1, c0..c3) -> {d0..d3}: the ten operands as i32 in
 * tc_regs, tl_emu_mma, the four results back out; the forms are those codegen_mma.c emits */
static void lower_mma(EL *el, LLVMValueRef call, const char *name)
{
    static const struct {
        const char *name;
        int form;
    } forms[] = {
        {"llvm.nvvm.mma.m16n8k16.row.col.f32.f32", TL_EMU_MMA_F16},
        {"llvm.nvvm.mma.m16n8k16.row.col.bf16", TL_EMU_MMA_BF16},
        {"llvm.nvvm.mma.m16n8k8.row.col.tf32", TL_EMU_MMA_TF32},
        {"llvm.nvvm.mma.m16n8k32.row.col.f32.e4m3.e4m3.f32", TL_EMU_MMA_E4M3},
        {"llvm.nvvm.mma.m16n8k32.row.col.f32.e5m2.e5m2.f32", TL_EMU_MMA_E5M2},
    };
    int form = -1;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        if (!strcmp(name, forms[i].name))
            form = forms[i].form;
    LLVMTypeRef rt = LLVMTypeOf(call);
    if (form < 0 || LLVMGetNumArgOperands(call) != 10 || LLVMGetTypeKind(rt) != LLVMStructTypeKind ||
        LLVMCountStructElementTypes(rt) != 4) {
        el_error(el, "the emulator does not implement '%s' (kernel %s)", name);
        return;
    }
    LLVMValueRef regs = tc_regs(el, call);
    for (unsigned i = 0; i < 10; i++) {
        LLVMValueRef v = arg(call, i); /* i32, <2 x half> or float: 32 bits each */
        if (LLVMTypeOf(v) != el->i32)
            v = LLVMBuildBitCast(el->b, v, el->i32, "");
        LLVMBuildStore(el->b, v, tc_slot(el, regs, i));
    }
    LLVMTypeRef at[3] = {el->i32, el->p0, el->i32};
    LLVMValueRef args[3] = {c32(el, (uint64_t)form), regs, site(el, "mma.sync", call)};
    call_abi(el, "tl_emu_mma", el->v, at, args, 3, 1);
    LLVMValueRef r = LLVMGetUndef(rt);
    for (unsigned i = 0; i < 4; i++) {
        LLVMValueRef d = LLVMBuildLoad2(el->b, el->i32, tc_slot(el, regs, 6 + i), "");
        LLVMTypeRef et = LLVMStructGetTypeAtIndex(rt, i);
        if (et != el->i32)
            d = LLVMBuildBitCast(el->b, d, et, "");
        r = LLVMBuildInsertValue(el->b, r, d, i, "");
    }
    replace(call, r);
}

/* llvm.nvvm.ldmatrix.sync.aligned.m8n8.xN[.trans].b16(row) -> i32 or {i32 x N} */
static void lower_ldmatrix(EL *el, LLVMValueRef call, const char *name)
{
    const char *p = name + strlen("llvm.nvvm.ldmatrix.sync.aligned.m8n8.x");
    int num = *p - '0';
    bool trans = strstr(p, ".trans.") != NULL;
    LLVMTypeRef rt = LLVMTypeOf(call);
    bool agg = LLVMGetTypeKind(rt) == LLVMStructTypeKind;
    if ((num != 1 && num != 2 && num != 4) || !strstr(p, ".b16") || LLVMGetNumArgOperands(call) != 1 ||
        !is_shared(arg(call, 0)) || agg != (num > 1) || (agg && (int)LLVMCountStructElementTypes(rt) != num)) {
        el_error(el, "the emulator does not implement '%s' (kernel %s)", name);
        return;
    }
    LLVMValueRef regs = tc_regs(el, call);
    LLVMTypeRef at[4] = {el->i32, el->p3, el->p0, el->i32};
    LLVMValueRef args[4] = {c32(el, (uint64_t)(num | (trans ? 8 : 0))), arg(call, 0), regs, site(el, "ldmatrix", call)};
    call_abi(el, "tl_emu_ldmatrix", el->v, at, args, 4, 1);
    LLVMValueRef r = agg ? LLVMGetUndef(rt) : NULL;
    for (unsigned i = 0; i < (unsigned)num; i++) {
        LLVMValueRef d = LLVMBuildLoad2(el->b, el->i32, tc_slot(el, regs, i), "");
        r = agg ? LLVMBuildInsertValue(el->b, r, d, i, "") : d;
    }
    replace(call, r);
}

/* the `cvt` instructions codegen writes as inline PTX (explicit rounding modes) */
static void lower_asm(EL *el, LLVMValueRef call)
{
    size_t len;
    const char *code = LLVMGetInlineAsmAsmString(LLVMGetCalledValue(call), &len);
    char s[128];
    snprintf(s, sizeof s, "%.*s", (int)(len < sizeof s - 1 ? len : sizeof s - 1), code);
    char *sp = strchr(s, ' ');
    if (!starts(s, "cvt.") || !sp || LLVMGetNumArgOperands(call) != 1) {
        el_error(el, "the emulator does not understand the inline PTX '%s' (kernel %s)", s);
        return;
    }
    *sp = 0;
    int rnd = TL_EMU_RN, from = -1, to = -1, ntypes = 0;
    static const char *types[] = {"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64"};
    for (char *tok = strtok(s + 4, "."); tok; tok = strtok(NULL, ".")) {
        if (!strcmp(tok, "rn") || !strcmp(tok, "rni"))
            rnd = TL_EMU_RN;
        else if (!strcmp(tok, "rz") || !strcmp(tok, "rzi"))
            rnd = TL_EMU_RZ;
        else if (!strcmp(tok, "rm") || !strcmp(tok, "rmi"))
            rnd = TL_EMU_RM;
        else if (!strcmp(tok, "rp") || !strcmp(tok, "rpi"))
            rnd = TL_EMU_RP;
        else if (!strcmp(tok, "sat"))
            continue; /* float -> int saturates anyway */
        else {
            int t = -1;
            for (int i = 0; i < 12; i++)
                if (!strcmp(tok, types[i]))
                    t = i;
            if (t < 0 || ntypes >= 2) {
                el_error(el, "the emulator does not understand the cvt modifier '%s' (kernel %s)", tok);
                return;
            }
            if (ntypes++ == 0)
                to = t;
            else
                from = t;
        }
    }
    if (from < 0 || to < 0) {
        el_error(el, "the emulator does not understand the inline PTX '%s' (kernel %s)", s);
        return;
    }
    replace(call, emu_cvt(el, arg(call, 0), from, to, rnd, LLVMTypeOf(call)));
}

static bool is_f16_type(EL *el, LLVMTypeRef t)
{
    return t == el->f16 || (LLVMGetTypeKind(t) == LLVMVectorTypeKind && LLVMGetElementType(t) == el->f16);
}

/* f16 (and f16x2) add, sub, mul, fma ('f'), minnum ('n') and maxnum ('x'), which codegen writes
 * only in encoders: lane by lane in f64, which holds every f16, their sums and products exactly,
 * so the one rounding back to f16 is the GPU's (an fma's sum is exact too whenever its f16
 * result is finite: the addends' bits span at most 40 places); min / max follow the f64 rules,
 * and a NaN comes back as the GPU's 0x7FFF */
static void lower_f16_arith(EL *el, LLVMValueRef inst, char op)
{
    LLVMTypeRef t = LLVMTypeOf(inst);
    unsigned n = t == el->f16 ? 0 : LLVMGetVectorSize(t);
    unsigned nops = op == 'f' ? 3 : 2;
    LLVMValueRef r = n ? LLVMGetPoison(t) : NULL;
    LLVMValueRef canon = LLVMConstBitCast(LLVMConstInt(el->i16, 0x7FFF, 0), el->f16);
    LLVMPositionBuilderBefore(el->b, inst);
    for (unsigned i = 0; i < (n ? n : 1); i++) {
        LLVMValueRef x[3];
        for (unsigned j = 0; j < nops; j++) {
            LLVMValueRef o = LLVMGetOperand(inst, j);
            LLVMValueRef e = n ? LLVMBuildExtractElement(el->b, o, c32(el, i), "") : o;
            x[j] = emu_cvt(el, e, TL_EMU_F16, TL_EMU_F64, TL_EMU_RN, el->f64);
        }
        LLVMValueRef v;
        if (op == 'n' || op == 'x') {
            LLVMTypeRef at[2] = {el->f64, el->f64};
            v = call_abi(el, op == 'n' ? "tl_emu_fmin" : "tl_emu_fmax", el->f64, at, x, 2, 3);
        } else if (op == 'f') {
            v = LLVMBuildFAdd(el->b, LLVMBuildFMul(el->b, x[0], x[1], ""), x[2], "");
        } else {
            v = op == 'a' ? LLVMBuildFAdd(el->b, x[0], x[1], "") : op == 's' ? LLVMBuildFSub(el->b, x[0], x[1], "")
                                                                               : LLVMBuildFMul(el->b, x[0], x[1], "");
        }
        LLVMValueRef h = emu_cvt(el, v, TL_EMU_F64, TL_EMU_F16, TL_EMU_RN, el->f16);
        h = LLVMBuildSelect(el->b, LLVMBuildFCmp(el->b, LLVMRealUNO, v, v, ""), canon, h, "");
        r = n ? LLVMBuildInsertElement(el->b, r, h, c32(el, i), "") : h;
    }
    replace(inst, r);
}

static void lower_call(EL *el, LLVMValueRef call)
{
    LLVMValueRef callee = LLVMGetCalledValue(call);
    if (callee && LLVMIsAInlineAsm(callee)) {
        lower_asm(el, call);
        return;
    }
    const char *name = callee_name(call);
    if (!name) {
        el_error(el, "an indirect call%s in kernel %s", "");
        return;
    }
    LLVMTypeRef at[6];
    LLVMValueRef args[6];
    if (starts(name, "llvm.nvvm.read.ptx.sreg.")) {
        lower_sreg(el, call, name);
    } else if (!strcmp(name, "llvm.nvvm.barrier.cta.sync.aligned.all") || !strcmp(name, "llvm.nvvm.barrier.cta.sync.all") ||
               !strcmp(name, "llvm.nvvm.barrier0") || !strcmp(name, "llvm.nvvm.barrier.sync")) {
        if (LLVMGetNumArgOperands(call) > 0 && !(LLVMIsAConstantInt(arg(call, 0)) && LLVMConstIntGetZExtValue(arg(call, 0)) == 0)) {
            el_error(el, "the emulator implements barrier 0 only ('%s', kernel %s)", name);
            return;
        }
        args[0] = site(el, "sync_threads", call);
        call_abi(el, "tl_emu_barrier", el->v, &el->i32, args, 1, 1);
        replace(call, NULL);
    } else if (!strcmp(name, "llvm.nvvm.bar.warp.sync")) {
        at[0] = at[1] = el->i32;
        args[0] = arg(call, 0);
        args[1] = site(el, "sync_warp", call);
        call_abi(el, "tl_emu_warp_sync", el->v, at, args, 2, 1);
        replace(call, NULL);
    } else if (starts(name, "llvm.nvvm.shfl.sync.")) {
        lower_shfl(el, call, name);
    } else if (starts(name, "llvm.nvvm.vote.")) {
        lower_vote(el, call, name);
    } else if (starts(name, "llvm.nvvm.match.any.sync.")) {
        at[0] = el->i32, at[1] = el->i64, at[2] = el->i32;
        args[0] = arg(call, 0);
        args[1] = to_bits64(el, arg(call, 1), false);
        args[2] = site(el, "match_any", call);
        replace(call, call_abi(el, "tl_emu_match_any", el->i32, at, args, 3, 1));
    } else if (starts(name, "llvm.nvvm.griddepcontrol.") || starts(name, "llvm.nvvm.membar") ||
               starts(name, "llvm.nvvm.fence.") || !strcmp(name, "llvm.nvvm.cp.async.commit.group") ||
               starts(name, "llvm.nvvm.cp.async.wait.")) {
        /* launches are synchronous and a block's fibers share one OS thread: nothing to wait for */
        replace(call, NULL);
    } else if (starts(name, "llvm.nvvm.cp.async.") && strstr(name, ".shared.global.")) {
        lower_cp_async(el, call, name);
    } else if (starts(name, "llvm.nvvm.mma.")) {
        lower_mma(el, call, name);
    } else if (starts(name, "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x")) {
        lower_ldmatrix(el, call, name);
    } else if (!strcmp(name, "tilec.grid_sync")) {
        args[0] = site(el, "grid_sync", call);
        call_abi(el, "tl_emu_grid_sync", el->v, &el->i32, args, 1, 1);
        replace(call, NULL);
    } else if (!strcmp(name, "llvm.trap")) {
        args[0] = site(el, "trap()", call);
        call_abi(el, "tl_emu_trap", el->v, &el->i32, args, 1, 5);
        replace(call, NULL);
    } else if (!strcmp(name, "vprintf")) {
        at[0] = at[1] = el->p0;
        args[0] = arg(call, 0);
        args[1] = arg(call, 1);
        replace(call, call_abi(el, "tl_emu_vprintf", el->i32, at, args, 2, 1));
    } else if (!strcmp(name, "__assertfail")) {
        at[0] = at[1] = at[3] = el->p0, at[2] = el->i32, at[4] = el->i64;
        for (unsigned i = 0; i < 5; i++)
            args[i] = arg(call, i);
        call_abi(el, "tl_emu_assertfail", el->v, at, args, 5, 5);
        replace(call, NULL);
    } else if (starts(name, "llvm.nvvm.ff.to.") || (starts(name, "llvm.nvvm.") && strstr(name, "x2.to."))) {
        lower_cvt_pair(el, call, name);
    } else if (!strcmp(name, "llvm.nvvm.prmt")) {
        at[0] = at[1] = at[2] = el->i32;
        for (unsigned i = 0; i < 3; i++)
            args[i] = arg(call, i);
        replace(call, call_abi(el, "tl_emu_prmt", el->i32, at, args, 3, 3));
    } else if (!strcmp(name, "llvm.nvvm.saturate.f")) {
        args[0] = arg(call, 0);
        replace(call, call_abi(el, "tl_emu_sat", el->f32, &el->f32, args, 1, 3));
    } else if (!strcmp(name, "llvm.nvvm.fma.rm.f")) {
        at[0] = at[1] = at[2] = el->f32;
        for (unsigned i = 0; i < 3; i++)
            args[i] = arg(call, i);
        replace(call, call_abi(el, "tl_emu_fma_rm", el->f32, at, args, 3, 3));
    } else if (starts(name, "llvm.nvvm.ex2.approx.") && LLVMTypeOf(call) == el->f32) {
        at[0] = el->f32, at[1] = el->i32;
        args[0] = arg(call, 0);
        args[1] = c32(el, strstr(name, ".ftz") != NULL);
        replace(call, call_abi(el, "tl_emu_ex2", el->f32, at, args, 2, 3));
    } else if (!strcmp(name, "llvm.nvvm.rsqrt.approx.f")) {
        args[0] = arg(call, 0);
        replace(call, call_abi(el, "tl_emu_rsqrt", el->f32, &el->f32, args, 1, 3));
    } else if (starts(name, "llvm.minnum.") || starts(name, "llvm.maxnum.")) {
        LLVMTypeRef t = LLVMTypeOf(call);
        bool mn = starts(name, "llvm.minnum.");
        if (is_f16_type(el, t)) {
            lower_f16_arith(el, call, mn ? 'n' : 'x');
            return;
        }
        if (t != el->f32 && t != el->f64) {
            el_error(el, "the emulator does not implement '%s' on vectors (kernel %s)", name);
            return;
        }
        at[0] = at[1] = t;
        args[0] = arg(call, 0);
        args[1] = arg(call, 1);
        const char *f = t == el->f32 ? (mn ? "tl_emu_fminf" : "tl_emu_fmaxf") : (mn ? "tl_emu_fmin" : "tl_emu_fmax");
        replace(call, call_abi(el, f, t, at, args, 2, 3));
    } else if (starts(name, "llvm.nvvm.")) {
        el_error(el, "the emulator does not implement the intrinsic '%s' (kernel %s)", name);
    } else if (!starts(name, "llvm.")) {
        el_error(el, "the emulator cannot call the external function '%s' (kernel %s)", name);
    }
}

/* ---------------- instructions ---------------- */

/* the bits of the f32 canonical NaN (w 32) or the f64 default NaN (w 64), as a value LLVM cannot
 * look into: made once, by an empty inline asm at the top of the kernel */
static LLVMValueRef opaque_canon(EL *el, unsigned w)
{
    LLVMValueRef *slot = w == 32 ? &el->canon32 : &el->dnan64;
    if (!*slot) {
        LLVMTypeRef it = w == 32 ? el->i32 : el->i64;
        LLVMTypeRef fty = LLVMFunctionType(it, &it, 1, 0);
        LLVMValueRef as = LLVMGetInlineAsm(fty, "", 0, "=r,0", 4, 0, 0, LLVMInlineAsmDialectATT, 0);
        LLVMMetadataRef loc = LLVMGetCurrentDebugLocation2(el->b);
        LLVMPositionBuilderBefore(el->b, LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(el->fn)));
        LLVMSetCurrentDebugLocation2(el->b, NULL);
        LLVMValueRef c = LLVMConstInt(it, w == 32 ? 0x7FFFFFFFull : 0xFFF8000000000000ull, 0);
        *slot = LLVMBuildCall2(el->b, fty, as, &c, 1, "");
        static const char *const attrs[] = {"nounwind", "willreturn", "nosync", "nofree", "memory"};
        for (unsigned i = 0; i < 5; i++) { /* memory(none): 0 */
            LLVMAttributeRef a = LLVMCreateEnumAttribute(el->ctx, attr_kind(attrs[i]), 0);
            LLVMAddCallSiteAttribute(*slot, LLVMAttributeFunctionIndex, a);
        }
        LLVMSetCurrentDebugLocation2(el->b, loc);
    }
    return *slot;
}

/* c as a constant of integer type it, or of the vector type of n of them */
static LLVMValueRef splat_const(LLVMTypeRef it, unsigned n, uint64_t c)
{
    LLVMValueRef k = LLVMConstInt(it, c, 0);
    if (!n)
        return k;
    LLVMValueRef *m = tl_xmalloc(n * sizeof *m);
    for (unsigned i = 0; i < n; i++)
        m[i] = k;
    LLVMValueRef v = LLVMConstVector(m, n);
    free(m);
    return v;
}

/* v (a scalar) in every lane of a vector of n, or v itself when n is 0 */
static LLVMValueRef splat_value(EL *el, LLVMValueRef v, unsigned n)
{
    if (!n)
        return v;
    LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(v), n);
    LLVMValueRef one = LLVMBuildInsertElement(el->b, LLVMGetPoison(vt), v, c32(el, 0), "");
    return LLVMBuildShuffleVector(el->b, one, LLVMGetPoison(vt), LLVMConstNull(LLVMVectorType(el->i32, n)), "");
}

/* is the float whose bits are `bits` (width w) a NaN: |bits| > the bits of inf */
static LLVMValueRef bits_isnan(EL *el, LLVMValueRef bits, unsigned w, unsigned n)
{
    LLVMTypeRef it = w == 32 ? el->i32 : el->i64;
    LLVMValueRef mag = splat_const(it, n, ~0ull >> (65 - w));
    LLVMValueRef inf = splat_const(it, n, w == 32 ? 0x7F800000u : 0x7FF0000000000000ull);
    return LLVMBuildICmp(el->b, LLVMIntUGT, LLVMBuildAnd(el->b, bits, mag, ""), inf, "");
}

/* NaN results of float arithmetic as the H200 makes them. f32 (w 32, no order): always the
 * canonical 0x7FFFFFFF. f64 (w 64): the double-precision unit keeps payloads: the first NaN
 * operand in the order `order` gives the result, with its sign and payload and the quiet bit set;
 * a NaN made from numbers (0 * inf, sqrt(-1)) is 0xFFF8000000000000. The orders are measured
 * (tests/gpu/emu_probe.tl probe_f64 and probe_f64_order, tests/gpu/recorded/): add, sub and mul
 * take the second operand's NaN before the first's, div (a software sequence on the GPU) the
 * first's, fma(a, b, c) b's, then c's, then a's; neg, abs, sqrt and floor of a NaN return it
 * quieted, sign unchanged.
 * LLVM takes NaN payloads as unspecified: it folded select(x < 0, NaN, sqrt(x)) into sqrt(x),
 * which left x86's 0xFFC00000. So the NaN made here is a value it cannot see to be a NaN. */
static void gpu_nan_rule(EL *el, LLVMValueRef inst, unsigned w, const unsigned *order, unsigned norder)
{
    LLVMTypeRef t = LLVMTypeOf(inst);
    bool vec = LLVMGetTypeKind(t) == LLVMVectorTypeKind;
    unsigned n = vec ? LLVMGetVectorSize(t) : 0;
    LLVMTypeRef et = w == 32 ? el->i32 : el->i64;
    LLVMTypeRef it = vec ? LLVMVectorType(et, n) : et;
    LLVMValueRef made = opaque_canon(el, w);
    LLVMPositionBuilderBefore(el->b, LLVMGetNextInstruction(inst));
    LLVMValueRef v = splat_value(el, made, n);
    if (norder) {
        LLVMValueRef quiet = splat_const(et, n, 0x0008000000000000ull);
        for (unsigned k = norder; k-- > 0;) {
            LLVMValueRef ob = LLVMBuildBitCast(el->b, LLVMGetOperand(inst, order[k]), it, "");
            v = LLVMBuildSelect(el->b, bits_isnan(el, ob, w, n), LLVMBuildOr(el->b, ob, quiet, ""), v, "");
        }
    }
    LLVMValueRef bits = LLVMBuildBitCast(el->b, inst, it, "");
    LLVMValueRef sel = LLVMBuildBitCast(el->b, LLVMBuildSelect(el->b, bits_isnan(el, bits, w, n), v, bits, ""), t, "");
    LLVMReplaceAllUsesWith(inst, sel);
    LLVMSetOperand(bits, 0, inst);
}

/* the operand orders of gpu_nan_rule (f64) */
static const unsigned NAN_UNARY[] = {0}, NAN_SECOND_FIRST[] = {1, 0}, NAN_FIRST_SECOND[] = {0, 1}, NAN_FMA[] = {1, 2, 0};

/* the GPU's NaN for the float result of inst, whose first nops operands are its float inputs,
 * looked at in the order `order` (f64 only) */
static void gpu_nan(EL *el, LLVMValueRef inst, const unsigned *order, unsigned nops)
{
    LLVMTypeRef t = LLVMTypeOf(inst);
    LLVMTypeRef et = LLVMGetTypeKind(t) == LLVMVectorTypeKind ? LLVMGetElementType(t) : t;
    if (et == el->f32)
        gpu_nan_rule(el, inst, 32, NULL, 0);
    else if (et == el->f64)
        gpu_nan_rule(el, inst, 64, order, nops);
}

/* conversions that involve f16, bf16 or f64 (and every fpext / fptrunc), scalarised */
static void lower_conversion(EL *el, LLVMValueRef inst, LLVMOpcode op)
{
    LLVMValueRef src = LLVMGetOperand(inst, 0);
    LLVMTypeRef st = LLVMTypeOf(src), dt = LLVMTypeOf(inst);
    bool vec = LLVMGetTypeKind(dt) == LLVMVectorTypeKind;
    LLVMTypeRef se = vec ? LLVMGetElementType(st) : st, de = vec ? LLVMGetElementType(dt) : dt;
    bool sign = op == LLVMSIToFP;
    int from = type_code(se, sign), to = type_code(de, sign);
    if (op == LLVMSIToFP || op == LLVMUIToFP) {
        LLVMTypeKind k = LLVMGetTypeKind(de);
        if (k != LLVMHalfTypeKind && k != LLVMBFloatTypeKind)
            return; /* int -> f32 / f64: x86 rounds to nearest even like the GPU */
    }
    if (from < 0 || to < 0) {
        el_error(el, "the emulator does not implement a conversion%s of kernel %s", "");
        return;
    }
    LLVMPositionBuilderBefore(el->b, inst);
    LLVMValueRef r;
    if (vec) {
        unsigned n = LLVMGetVectorSize(dt);
        r = LLVMGetPoison(dt);
        for (unsigned i = 0; i < n; i++) {
            LLVMValueRef e = LLVMBuildExtractElement(el->b, src, c32(el, i), "");
            r = LLVMBuildInsertElement(el->b, r, emu_cvt(el, e, from, to, TL_EMU_RN, de), c32(el, i), "");
        }
    } else {
        r = emu_cvt(el, src, from, to, TL_EMU_RN, de);
    }
    replace(inst, r);
}

/* x86 traps on INT_MIN / -1 (and on a zero divisor); the GPU does not */
static void guard_division(EL *el, LLVMValueRef inst, bool sign)
{
    LLVMValueRef x = LLVMGetOperand(inst, 0), y = LLVMGetOperand(inst, 1);
    LLVMTypeRef t = LLVMTypeOf(y);
    if (LLVMGetTypeKind(t) != LLVMIntegerTypeKind)
        return;
    if (LLVMIsAConstantInt(y)) {
        long long c = LLVMConstIntGetSExtValue(y);
        if (c != 0 && (!sign || c != -1))
            return;
    }
    unsigned w = LLVMGetIntTypeWidth(t);
    LLVMPositionBuilderBefore(el->b, inst);
    LLVMValueRef bad = LLVMBuildICmp(el->b, LLVMIntEQ, y, LLVMConstInt(t, 0, 0), "");
    if (sign) {
        LLVMValueRef min = LLVMConstInt(t, 1ull << (w - 1), 0);
        LLVMValueRef ov = LLVMBuildAnd(el->b, LLVMBuildICmp(el->b, LLVMIntEQ, x, min, ""),
                                       LLVMBuildICmp(el->b, LLVMIntEQ, y, LLVMConstAllOnes(t), ""), "");
        bad = LLVMBuildOr(el->b, bad, ov, "");
    }
    /* x / 1 and x % 1 are what the wrapped results are: INT_MIN and 0 */
    LLVMSetOperand(inst, 1, LLVMBuildSelect(el->b, bad, LLVMConstInt(t, 1, 0), y, ""));
}

static LLVMValueRef pointer_operand(LLVMValueRef inst, LLVMOpcode op)
{
    return LLVMGetOperand(inst, op == LLVMStore ? 1 : 0);
}

/* "shared-memory load", "global store", ...; without a source line, a number tells the sites apart */
static LLVMValueRef access_site(EL *el, LLVMValueRef inst, const char *space, int kind)
{
    char what[64];
    const char *op = kind == TL_EMU_READ ? "load" : kind == TL_EMU_WRITE ? "store" : "atomic";
    int len = snprintf(what, sizeof what, "%s %s", space, op);
    if (!LLVMInstructionGetDebugLoc(inst))
        snprintf(what + len, sizeof what - (size_t)len, " #%d", el->nsites);
    return site(el, what, inst);
}

static int access_kind(LLVMOpcode op)
{
    return op == LLVMLoad ? TL_EMU_READ : op == LLVMStore ? TL_EMU_WRITE : TL_EMU_ATOMIC;
}

static uint64_t access_size(EL *el, LLVMValueRef inst, LLVMOpcode op)
{
    LLVMTypeRef vt = op == LLVMLoad ? LLVMTypeOf(inst) : op == LLVMStore ? LLVMTypeOf(LLVMGetOperand(inst, 0))
                                                                         : LLVMTypeOf(LLVMGetOperand(inst, 1));
    return LLVMStoreSizeOfType(el->td, vt);
}

static void instrument_shared(EL *el, LLVMValueRef inst, LLVMOpcode op)
{
    int kind = access_kind(op);
    LLVMPositionBuilderBefore(el->b, inst);
    LLVMTypeRef at[4] = {el->p3, el->i32, el->i32, el->i32};
    LLVMValueRef args[4] = {pointer_operand(inst, op), c32(el, access_size(el, inst, op)), c32(el, (uint64_t)kind),
                            access_site(el, inst, "shared-memory", kind)};
    call_abi(el, "tl_emu_shared_access", el->v, at, args, 4, 1);
}

/* ---------------- global memory ----------------
 * The emulator knows the range of each tensor argument; an access is checked against the tensor
 * its pointer comes from, inline, so that the common case costs a subtraction and a compare.
 * Pointers that come from a view<T>(addr, ...) (inttoptr) are not checked: the emulator does not
 * know what memory they name. This runs after LLVM's optimiser (check_globals). */

/* where a pointer comes from: the range slot of a tensor parameter (>= 0) or one of these: inside
 * the pointer array of tensor list j (G_TABLE - j), the pointer read by elem_loads[e] (G_ELEM - e:
 * a tensor of a list, whose slot depends on where it was read) */
enum { G_NONE = -1, G_UNKNOWN = -2, G_OTHER = -3 /* a view, a global of the module, the stack */,
       G_TABLE = -16, G_ELEM = -(1 << 20) };

static bool g_is_table(int o) { return o <= G_TABLE && o > G_ELEM; }
static bool g_is_elem(int o) { return o <= G_ELEM; }

static int g_join(int a, int b)
{
    if (a == G_NONE || b == G_NONE)
        return a == G_NONE ? b : a;
    if (a == G_OTHER || b == G_OTHER)
        return G_OTHER;
    return a == b ? a : G_UNKNOWN;
}

/* through GEPs, casts, selects and phis (each phi once: `seen`) */
static int g_origin(EL *el, LLVMValueRef p, LLVMValueRef *seen, int *nseen, int depth)
{
    if (depth > 64)
        return G_UNKNOWN;
    if (LLVMIsAArgument(p)) {
        for (int j = 0; j < el->ntensors; j++)
            if (el->tensors[j] == p)
                return el->cap[j] ? G_TABLE - j : el->slot[j];
        return G_UNKNOWN;
    }
    if (LLVMIsALoadInst(p)) { /* a tensor's pointer read from a list's array */
        if (!g_is_table(g_origin(el, LLVMGetOperand(p, 0), seen, nseen, depth + 1)))
            return G_UNKNOWN;
        for (int e = 0; e < el->nelem_loads; e++)
            if (el->elem_loads[e] == p)
                return G_ELEM - e;
        if (el->nelem_loads % 64 == 0)
            el->elem_loads = tl_xrealloc(el->elem_loads, sizeof(LLVMValueRef) * (size_t)(el->nelem_loads + 64));
        el->elem_loads[el->nelem_loads] = p;
        return G_ELEM - el->nelem_loads++;
    }
    if (LLVMIsAGlobalValue(p) || LLVMIsAAllocaInst(p))
        return G_OTHER;
    if (!LLVMIsAInstruction(p) && !LLVMIsAConstantExpr(p))
        return G_UNKNOWN;
    LLVMOpcode op = LLVMIsAInstruction(p) ? LLVMGetInstructionOpcode(p) : LLVMGetConstOpcode(p);
    switch (op) {
    case LLVMGetElementPtr:
    case LLVMBitCast:
    case LLVMAddrSpaceCast: return g_origin(el, LLVMGetOperand(p, 0), seen, nseen, depth + 1);
    case LLVMIntToPtr: return G_OTHER;
    case LLVMSelect:
        return g_join(g_origin(el, LLVMGetOperand(p, 1), seen, nseen, depth + 1),
                      g_origin(el, LLVMGetOperand(p, 2), seen, nseen, depth + 1));
    case LLVMPHI: {
        for (int i = 0; i < *nseen; i++)
            if (seen[i] == p)
                return G_NONE;
        if (*nseen == 64)
            return G_UNKNOWN;
        seen[(*nseen)++] = p;
        int r = G_NONE;
        for (unsigned i = 0; i < LLVMCountIncoming(p); i++)
            r = g_join(r, g_origin(el, LLVMGetIncomingValue(p, i), seen, nseen, depth + 1));
        return r;
    }
    default: return G_UNKNOWN;
    }
}

/* a builder at the top of the kernel, below what was put there before: values every thread
 * computes once */
static LLVMBuilderRef g_entry_builder(EL *el)
{
    if (!el->gtop)
        el->gtop = LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(el->fn));
    LLVMBuilderRef eb = LLVMCreateBuilderInContext(el->ctx);
    LLVMPositionBuilderBefore(eb, el->gtop);
    return eb;
}

/* `size` bytes at an address `off` bytes into tensor j's range lie within it iff off < lim, with
 * lim = span - size + 1, or 0 (nothing fits) when span < size: one compare per access */
static LLVMValueRef g_limit(LLVMBuilderRef b, LLVMValueRef span, LLVMValueRef size)
{
    LLVMTypeRef t = LLVMTypeOf(span);
    LLVMValueRef fits = LLVMBuildICmp(b, LLVMIntUGE, span, size, "");
    LLVMValueRef lim = LLVMBuildSub(b, span, LLVMBuildSub(b, size, LLVMConstInt(t, 1, 0), ""), "");
    return LLVMBuildSelect(b, fits, lim, LLVMConstInt(t, 0, 0), "");
}

/* tensor j's base and the limit for accesses of `size` bytes (a constant: computed once per
 * thread, from the emulator's table read at the top of the kernel); for a tensor that is not
 * known, base 0 and limit 0: every access calls out */
static void g_range(EL *el, int j, LLVMValueRef size, LLVMValueRef *base, LLVMValueRef *lim)
{
    if (j < 0 || j >= TL_EMU_MAX_RANGES) {
        *base = *lim = LLVMConstInt(el->i64, 0, 0);
        return;
    }
    bool fixed = LLVMIsAConstantInt(size);
    uint64_t n = fixed ? LLVMConstIntGetZExtValue(size) : 0;
    for (int i = 0; fixed && i < el->nglims; i++)
        if (el->glims[i].tensor == j && el->glims[i].size == n) {
            *base = el->gbase[j];
            *lim = el->glims[i].lim;
            return;
        }
    LLVMBuilderRef eb = g_entry_builder(el);
    if (!el->gbase[j]) {
        if (!el->granges) {
            LLVMTypeRef fty;
            LLVMValueRef f = abi_fn(el, "tl_emu_global_ranges", el->p0, NULL, 0, 3, &fty);
            el->granges = LLVMBuildCall2(eb, fty, f, NULL, 0, "");
        }
        for (int k = 0; k < 2; k++) {
            LLVMValueRef idx = LLVMConstInt(el->i64, 2 * (uint64_t)j + (uint64_t)k, 0);
            LLVMValueRef v = LLVMBuildLoad2(eb, el->i64, LLVMBuildGEP2(eb, el->i64, el->granges, &idx, 1, ""), "");
            *(k ? &el->gsize[j] : &el->gbase[j]) = v;
        }
    }
    *base = el->gbase[j];
    if (fixed) {
        *lim = g_limit(eb, el->gsize[j], size);
        if (el->nglims < (int)(sizeof el->glims / sizeof el->glims[0]))
            el->glims[el->nglims++] = (GLimit){j, n, *lim};
    } else {
        *lim = g_limit(el->b, el->gsize[j], size);
    }
    LLVMDisposeBuilder(eb);
}

/* The list whose array the pointer read by `load` comes from, and the element's index there. */
static int g_table_of(EL *el, LLVMValueRef load)
{
    LLVMValueRef seen[64];
    int nseen = 0;
    return G_TABLE - g_origin(el, LLVMGetOperand(load, 0), seen, &nseen, 0);
}

/* An access through the tensor whose pointer `load` read from list j's array: its range slot is
 * the list's first plus the element's index, read from where the pointer was (an index past the
 * list's max takes the slot after its elements, which has no memory); base and limit from the
 * emulator's table at that slot, here, since the slot is known only at run time. Returns the
 * slot (i32). */
static LLVMValueRef g_elem_range(EL *el, LLVMValueRef load, LLVMValueRef size, LLVMValueRef *base, LLVMValueRef *lim)
{
    int j = g_table_of(el, load);
    LLVMBuilderRef b = el->b;
    if (!el->granges) {
        LLVMBuilderRef eb = g_entry_builder(el);
        LLVMTypeRef fty;
        LLVMValueRef f = abi_fn(el, "tl_emu_global_ranges", el->p0, NULL, 0, 3, &fty);
        el->granges = LLVMBuildCall2(eb, fty, f, NULL, 0, "");
        LLVMDisposeBuilder(eb);
    }
    LLVMValueRef off = LLVMBuildSub(b, LLVMBuildPtrToInt(b, LLVMGetOperand(load, 0), el->i64, ""),
                                    LLVMBuildPtrToInt(b, el->tensors[j], el->i64, ""), "");
    LLVMValueRef ix = LLVMBuildLShr(b, off, LLVMConstInt(el->i64, 3, 0), "");
    LLVMValueRef max = LLVMConstInt(el->i64, (uint64_t)el->cap[j], 0);
    ix = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntULT, ix, max, ""), ix, max, "");
    LLVMValueRef slot = LLVMBuildAdd(b, ix, LLVMConstInt(el->i64, (uint64_t)el->slot[j], 0), "");
    LLVMValueRef two = LLVMBuildShl(b, slot, LLVMConstInt(el->i64, 1, 0), "");
    LLVMValueRef two1 = LLVMBuildAdd(b, two, LLVMConstInt(el->i64, 1, 0), "");
    *base = LLVMBuildLoad2(b, el->i64, LLVMBuildGEP2(b, el->i64, el->granges, &two, 1, ""), "");
    LLVMValueRef span = LLVMBuildLoad2(b, el->i64, LLVMBuildGEP2(b, el->i64, el->granges, &two1, 1, ""), "");
    *lim = g_limit(b, span, size);
    return LLVMBuildTrunc(b, slot, el->i32, "");
}

/* A read of a tensor list's pointer array stays inside it: an index past the max reads the last
 * pointer instead (the access through it is reported all the same: its slot is the one past the
 * list's elements). On the GPU such an index reads other parameters; here it would read the
 * caller's memory. */
static void clamp_table_load(EL *el, LLVMValueRef load)
{
    int j = g_table_of(el, load);
    LLVMValueRef p = LLVMGetOperand(load, 0);
    uint64_t size = LLVMStoreSizeOfType(el->td, LLVMTypeOf(load));
    uint64_t bytes = 8 * (uint64_t)el->cap[j];
    if (size > bytes)
        return;
    LLVMPositionBuilderBefore(el->b, load);
    LLVMValueRef off = LLVMBuildSub(el->b, LLVMBuildPtrToInt(el->b, p, el->i64, ""),
                                    LLVMBuildPtrToInt(el->b, el->tensors[j], el->i64, ""), "");
    LLVMValueRef last = LLVMConstInt(el->i64, bytes - size, 0);
    off = LLVMBuildSelect(el->b, LLVMBuildICmp(el->b, LLVMIntULE, off, last, ""), off, last, "");
    LLVMSetOperand(load, 0, LLVMBuildGEP2(el->b, el->i8, el->tensors[j], &off, 1, ""));
}

/* void __tl_emu_gcheck(i64 addr, i64 size, i32 kind, i32 site, i32 tensor, i64 base, i64 lim),
 * always inlined: addr - base < lim, or a call to tl_emu_global_access. That call is cold and
 * touches only the emulator's memory (when it reports, it does not return), so that the kernel's
 * values stay in registers across the check. */
static void g_check_fn(EL *el)
{
    LLVMTypeRef pt[7] = {el->i64, el->i64, el->i32, el->i32, el->i32, el->i64, el->i64};
    el->gcheck_ty = LLVMFunctionType(el->v, pt, 7, 0);
    LLVMValueRef f = el->gcheck = LLVMAddFunction(el->m, "__tl_emu_gcheck", el->gcheck_ty);
    LLVMSetLinkage(f, LLVMInternalLinkage);
    LLVMAttributeRef inl = LLVMCreateEnumAttribute(el->ctx, attr_kind("alwaysinline"), 0);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, inl);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(el->ctx, attr_kind("nounwind"), 0));
    LLVMTypeRef at[5] = {el->p0, el->i64, el->i32, el->i32, el->i32}, fty;
    LLVMValueRef slow = abi_fn(el, "tl_emu_global_access", el->v, at, 5, 1, &fty);
    LLVMAddAttributeAtIndex(slow, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(el->ctx, attr_kind("cold"), 0));
    /* memory(inaccessiblemem: readwrite): read-write (3) at location 1, two bits per location */
    LLVMAttributeRef mem = LLVMCreateEnumAttribute(el->ctx, attr_kind("memory"), 3 << 2);
    LLVMAddAttributeAtIndex(slow, LLVMAttributeFunctionIndex, mem);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(el->ctx, f, "entry");
    LLVMBasicBlockRef miss = LLVMAppendBasicBlockInContext(el->ctx, f, "miss");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(el->ctx, f, "done");
    LLVMBuilderRef b = LLVMCreateBuilderInContext(el->ctx);
    LLVMPositionBuilderAtEnd(b, entry);
    LLVMValueRef addr = LLVMGetParam(f, 0);
    LLVMValueRef off = LLVMBuildSub(b, addr, LLVMGetParam(f, 5), "");
    LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, off, LLVMGetParam(f, 6), ""), done, miss);
    LLVMPositionBuilderAtEnd(b, miss);
    LLVMValueRef args[5] = {LLVMBuildIntToPtr(b, addr, el->p0, ""), LLVMGetParam(f, 1), LLVMGetParam(f, 2),
                            LLVMGetParam(f, 3), LLVMGetParam(f, 4)};
    LLVMBuildCall2(b, fty, slow, args, 5, "");
    LLVMBuildBr(b, done);
    LLVMPositionBuilderAtEnd(b, done);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
}

/* checks `size` bytes (an i64 or i32 value) at p before inst, when p is global memory of a
 * tensor parameter: address space 1 (unless it is a view's), or a generic pointer made from one */
static void instrument_global(EL *el, LLVMValueRef inst, LLVMValueRef p, LLVMValueRef size, int kind,
                              LLVMValueRef site_id)
{
    LLVMValueRef seen[64];
    int nseen = 0;
    int o = g_origin(el, p, seen, &nseen, 0);
    if (o == G_NONE)
        o = G_UNKNOWN;
    if (o == G_OTHER || g_is_table(o) || (LLVMGetPointerAddressSpace(LLVMTypeOf(p)) != 1 && o < 0 && !g_is_elem(o)))
        return;
    if (!el->gcheck)
        g_check_fn(el);
    LLVMPositionBuilderBefore(el->b, inst);
    if (LLVMTypeOf(size) != el->i64)
        size = LLVMBuildZExt(el->b, size, el->i64, "");
    LLVMValueRef base, lim, tensor;
    if (g_is_elem(o)) {
        tensor = g_elem_range(el, el->elem_loads[G_ELEM - o], size, &base, &lim);
    } else {
        g_range(el, o, size, &base, &lim);
        tensor = c32(el, o >= 0 ? (uint64_t)o : 0xFFFFFFFFu);
    }
    LLVMValueRef args[7] = {LLVMBuildPtrToInt(el->b, p, el->i64, ""), size, c32(el, (uint64_t)kind),
                            site_id ? site_id : access_site(el, inst, "global", kind), tensor, base, lim};
    LLVMBuildCall2(el->b, el->gcheck_ty, el->gcheck, args, 7, "");
}

/* The kernel's instructions, in order, collected first because the rewrites add and remove
 * instructions; free() the array. */
static LLVMValueRef *collect_instructions(EL *el, size_t *count)
{
    size_t n = 0, cap = 256;
    LLVMValueRef *v = tl_xmalloc(cap * sizeof *v);
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(el->fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
            if (n == cap) {
                cap *= 2;
                v = tl_xrealloc(v, cap * sizeof *v);
            }
            v[n++] = i;
        }
    *count = n;
    return v;
}

/* After the optimiser (which so sees the code the GPU build sees, and merges neighbouring
 * accesses into vector ones): every access to global memory through a tensor parameter is
 * checked first. Loads, stores and atomics; the emulator's calls for f32 atomic adds and for
 * cp.async (its source: the src_size bytes it reads, none for a masked-off copy); the memcpy /
 * memset that LLVM may make of loops. */
static void check_globals(EL *el)
{
    size_t n;
    LLVMValueRef *v = collect_instructions(el, &n);
    for (size_t j = 0; j < n && el->ok; j++) {
        LLVMValueRef i = v[j];
        LLVMOpcode op = LLVMGetInstructionOpcode(i);
        LLVMSetCurrentDebugLocation2(el->b, LLVMInstructionGetDebugLoc(i));
        if (op == LLVMLoad || op == LLVMStore || op == LLVMAtomicCmpXchg || op == LLVMAtomicRMW) {
            LLVMValueRef p = pointer_operand(i, op);
            if (!is_shared(p))
                instrument_global(el, i, p, LLVMConstInt(el->i64, access_size(el, i, op), 0), access_kind(op), NULL);
            continue;
        }
        const char *name = op == LLVMCall ? callee_name(i) : NULL;
        if (!name)
            continue;
        if (!strcmp(name, "tl_emu_cp_async")) {
            instrument_global(el, i, arg(i, 1), arg(i, 3), TL_EMU_READ, arg(i, 4));
        } else if (!strcmp(name, "tl_emu_atomic_add_f32")) {
            instrument_global(el, i, arg(i, 0), LLVMConstInt(el->i64, 4, 0), TL_EMU_ATOMIC, NULL);
        } else if (starts(name, "llvm.memcpy.") || starts(name, "llvm.memmove.") || starts(name, "llvm.memset.")) {
            instrument_global(el, i, arg(i, 0), arg(i, 2), TL_EMU_WRITE, NULL);
            if (!starts(name, "llvm.memset."))
                instrument_global(el, i, arg(i, 1), arg(i, 2), TL_EMU_READ, NULL);
        } else if (starts(name, "llvm.masked.") || starts(name, "llvm.vp.")) {
            /* x86-64-v2 has no masked memory instructions for the vectoriser to use */
            el_error(el, "the emulator cannot check the global accesses of '%s' (kernel %s)", name);
        }
    }
    /* after the checks, which read the elements' indices from the unclamped addresses */
    for (size_t j = 0; j < n && el->ok; j++) {
        if (LLVMGetInstructionOpcode(v[j]) != LLVMLoad)
            continue;
        LLVMValueRef seen[64];
        int nseen = 0;
        if (g_is_table(g_origin(el, LLVMGetOperand(v[j], 0), seen, &nseen, 0)))
            clamp_table_load(el, v[j]);
    }
    free(v);
}

/* f32 atomic adds flush subnormals on global memory and keep them on shared memory (H200) */
static void lower_atomic_fadd(EL *el, LLVMValueRef inst)
{
    LLVMValueRef p = LLVMGetOperand(inst, 0), v = LLVMGetOperand(inst, 1);
    if (LLVMTypeOf(v) != el->f32)
        return; /* f64 atomic add has no flush; x86's compare-exchange loop matches */
    LLVMPositionBuilderBefore(el->b, inst);
    LLVMTypeRef at[2] = {el->p0, el->f32};
    LLVMValueRef args[2] = {LLVMBuildAddrSpaceCast(el->b, p, el->p0, ""), v};
    const char *f = is_shared(p) ? "tl_emu_atomic_add_f32_shared" : "tl_emu_atomic_add_f32";
    replace(inst, call_abi(el, f, el->f32, at, args, 2, 1));
}

static void lower_instructions(EL *el)
{
    size_t n;
    LLVMValueRef *v = collect_instructions(el, &n);
    for (size_t j = 0; j < n && el->ok; j++) {
        LLVMValueRef i = v[j];
        LLVMOpcode op = LLVMGetInstructionOpcode(i);
        /* what replaces an instruction keeps its source line */
        LLVMSetCurrentDebugLocation2(el->b, LLVMInstructionGetDebugLoc(i));
        switch (op) {
        case LLVMCall: {
            const char *name = callee_name(i);
            bool keep = name && (starts(name, "llvm.fma.") || starts(name, "llvm.sqrt.") || starts(name, "llvm.floor.") ||
                                 starts(name, "llvm.ceil.") || starts(name, "llvm.trunc.") || starts(name, "llvm.rint.") ||
                                 starts(name, "llvm.fabs."));
            if (keep && is_f16_type(el, LLVMTypeOf(i)) && starts(name, "llvm.fma.")) {
                lower_f16_arith(el, i, 'f');
            } else if (keep) {
                /* the H200 gives 0x7FFFFFFF for abs(x) of an f32 NaN, x quieted for an f64 one */
                unsigned nargs = (unsigned)LLVMGetNumArgOperands(i);
                gpu_nan(el, i, nargs == 3 ? NAN_FMA : NAN_UNARY, nargs == 3 ? 3 : 1);
            } else {
                LLVMPositionBuilderBefore(el->b, i);
                lower_call(el, i);
            }
            break;
        }
        case LLVMFAdd:
        case LLVMFSub:
        case LLVMFMul:
            if (is_f16_type(el, LLVMTypeOf(i))) {
                lower_f16_arith(el, i, op == LLVMFAdd ? 'a' : op == LLVMFSub ? 's' : 'm');
                break;
            }
            /* fallthrough */
        case LLVMFRem: gpu_nan(el, i, NAN_SECOND_FIRST, 2); break; /* frem: f64 not measured */
        case LLVMFDiv: gpu_nan(el, i, NAN_FIRST_SECOND, 2); break;
        case LLVMFNeg:
            /* the H200 gives 0x7FFFFFFF for -x of an f32 NaN, x quieted (sign unchanged) for f64 */
            gpu_nan(el, i, NAN_UNARY, 1);
            break;
        case LLVMFPTrunc:
        case LLVMFPExt:
        case LLVMSIToFP:
        case LLVMUIToFP: lower_conversion(el, i, op); break;
        case LLVMSDiv:
        case LLVMSRem: guard_division(el, i, true); break;
        case LLVMUDiv:
        case LLVMURem: guard_division(el, i, false); break;
        case LLVMLoad:
        case LLVMStore:
        case LLVMAtomicCmpXchg:
            if (is_shared(pointer_operand(i, op)))
                instrument_shared(el, i, op);
            break;
        case LLVMAtomicRMW:
            if (is_shared(pointer_operand(i, op)))
                instrument_shared(el, i, op);
            if (LLVMGetAtomicRMWBinOp(i) == LLVMAtomicRMWBinOpFAdd)
                lower_atomic_fadd(el, i);
            break;
        default: break;
        }
    }
    free(v);
}

/* ---------------- 16-bit floats as integers ----------------
 * x86 keeps f16 / bf16 values in f32 registers and converts on the way in and out (with
 * AVX512-BF16 flushing subnormals and quieting NaNs), so a plain copy of a bf16 tile would not
 * be a bit copy as on the GPU. Once every conversion is a call on bit patterns, the 16-bit float
 * values left are only moved (loads, stores, vector element moves, selects): they become i16. */

typedef struct VMap {
    LLVMValueRef *key, *val;
    size_t cap, n;
} VMap;

static size_t vmap_slot(const VMap *m, LLVMValueRef k)
{
    size_t h = ((uintptr_t)k >> 4) * 0x9E3779B97F4A7C15ull;
    size_t i = h & (m->cap - 1);
    while (m->key[i] && m->key[i] != k)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static void vmap_put(VMap *m, LLVMValueRef k, LLVMValueRef v)
{
    if (2 * (m->n + 1) > m->cap) {
        VMap g = {tl_xcalloc(m->cap ? 2 * m->cap : 256, sizeof(LLVMValueRef)),
                  tl_xcalloc(m->cap ? 2 * m->cap : 256, sizeof(LLVMValueRef)), m->cap ? 2 * m->cap : 256, 0};
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i])
                vmap_put(&g, m->key[i], m->val[i]);
        free(m->key);
        free(m->val);
        *m = g;
    }
    size_t i = vmap_slot(m, k);
    if (!m->key[i])
        m->n++;
    m->key[i] = k;
    m->val[i] = v;
}

static LLVMValueRef vmap_get(const VMap *m, LLVMValueRef k)
{
    if (!m->cap)
        return NULL;
    size_t i = vmap_slot(m, k);
    return m->key[i] ? m->val[i] : NULL;
}

static bool is_f16ish(LLVMTypeRef t)
{
    LLVMTypeKind k = LLVMGetTypeKind(t);
    if (k == LLVMVectorTypeKind)
        k = LLVMGetTypeKind(LLVMGetElementType(t));
    return k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind;
}

static LLVMTypeRef int16_type(EL *el, LLVMTypeRef t)
{
    if (LLVMGetTypeKind(t) == LLVMVectorTypeKind)
        return LLVMVectorType(el->i16, LLVMGetVectorSize(t));
    return el->i16;
}

/* the integer form of a 16-bit float value, or NULL when it is not known yet */
static LLVMValueRef as_int16(EL *el, VMap *m, LLVMValueRef v)
{
    LLVMValueRef r = vmap_get(m, v);
    if (r)
        return r;
    if (LLVMIsAConstant(v))
        return LLVMConstBitCast(v, int16_type(el, LLVMTypeOf(v)));
    return NULL;
}

static bool touches_f16(LLVMValueRef i)
{
    if (is_f16ish(LLVMTypeOf(i)))
        return true;
    int n = LLVMGetNumOperands(i);
    for (int k = 0; k < n; k++) {
        LLVMValueRef o = LLVMGetOperand(i, (unsigned)k);
        if (o && !LLVMIsABasicBlock(o) && is_f16ish(LLVMTypeOf(o)))
            return true;
    }
    return false;
}

/* builds the integer form of i; false when an operand is not mapped yet */
static bool rewrite_f16(EL *el, VMap *m, LLVMValueRef i, bool *done)
{
    LLVMOpcode op = LLVMGetInstructionOpcode(i);
    LLVMTypeRef t = LLVMTypeOf(i);
    LLVMValueRef nw = NULL;
    LLVMPositionBuilderBefore(el->b, i);
    LLVMSetCurrentDebugLocation2(el->b, LLVMInstructionGetDebugLoc(i));
    switch (op) {
    case LLVMLoad: {
        nw = LLVMBuildLoad2(el->b, int16_type(el, t), LLVMGetOperand(i, 0), "");
        LLVMSetAlignment(nw, LLVMGetAlignment(i));
        LLVMSetVolatile(nw, LLVMGetVolatile(i));
        break;
    }
    case LLVMStore: {
        LLVMValueRef v = as_int16(el, m, LLVMGetOperand(i, 0));
        if (!v)
            return false;
        LLVMValueRef s = LLVMBuildStore(el->b, v, LLVMGetOperand(i, 1));
        LLVMSetAlignment(s, LLVMGetAlignment(i));
        LLVMSetVolatile(s, LLVMGetVolatile(i));
        *done = true;
        return true;
    }
    case LLVMExtractElement: {
        LLVMValueRef v = as_int16(el, m, LLVMGetOperand(i, 0));
        if (!v)
            return false;
        nw = LLVMBuildExtractElement(el->b, v, LLVMGetOperand(i, 1), "");
        break;
    }
    case LLVMInsertElement: {
        LLVMValueRef v = as_int16(el, m, LLVMGetOperand(i, 0)), e = as_int16(el, m, LLVMGetOperand(i, 1));
        if (!v || !e)
            return false;
        nw = LLVMBuildInsertElement(el->b, v, e, LLVMGetOperand(i, 2), "");
        break;
    }
    case LLVMSelect: {
        LLVMValueRef a = as_int16(el, m, LLVMGetOperand(i, 1)), b = as_int16(el, m, LLVMGetOperand(i, 2));
        if (!a || !b)
            return false;
        nw = LLVMBuildSelect(el->b, LLVMGetOperand(i, 0), a, b, "");
        break;
    }
    case LLVMBitCast: {
        LLVMValueRef src = LLVMGetOperand(i, 0);
        if (is_f16ish(LLVMTypeOf(src))) { /* 16-bit float -> integer bits */
            LLVMValueRef a = as_int16(el, m, src);
            if (!a)
                return false;
            LLVMValueRef r = LLVMTypeOf(a) == t ? a : LLVMBuildBitCast(el->b, a, t, "");
            LLVMReplaceAllUsesWith(i, r);
            *done = true;
            return true;
        }
        LLVMTypeRef it = int16_type(el, t); /* integer bits -> 16-bit float */
        nw = LLVMTypeOf(src) == it ? src : LLVMBuildBitCast(el->b, src, it, "");
        break;
    }
    default: {
        char what[64];
        snprintf(what, sizeof what, "opcode %d", (int)op);
        el_error(el, "the emulator cannot move 16-bit float values through %s (kernel %s)", what);
        *done = true;
        return true;
    }
    }
    vmap_put(m, i, nw);
    *done = true;
    return true;
}

static void legalize_f16(EL *el)
{
    size_t n = 0, cap = 64;
    LLVMValueRef *v = tl_xmalloc(cap * sizeof *v);
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(el->fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
            if (LLVMGetInstructionOpcode(i) != LLVMCall && touches_f16(i)) {
                if (n == cap) {
                    cap *= 2;
                    v = tl_xrealloc(v, cap * sizeof *v);
                }
                v[n++] = i;
            }
    bool *done = tl_xcalloc(n + 1, sizeof(bool));
    VMap m = {0};
    /* definitions may come after their uses in the block order: repeat until nothing is left */
    for (bool progress = true; progress && el->ok;) {
        progress = false;
        for (size_t j = 0; j < n && el->ok; j++)
            if (!done[j] && rewrite_f16(el, &m, v[j], &done[j]))
                progress = true;
    }
    for (size_t j = 0; j < n && el->ok; j++)
        if (!done[j])
            el_error(el, "a 16-bit float value%s of kernel %s has no integer form", "");
    /* the old instructions go, users first */
    for (size_t j = n; j-- > 0 && el->ok;) {
        LLVMValueRef i = v[j];
        if (LLVMTypeOf(i) != el->v && LLVMGetFirstUse(i)) {
            LLVMValueRef nw = vmap_get(&m, i);
            LLVMPositionBuilderBefore(el->b, i);
            LLVMReplaceAllUsesWith(i, nw ? LLVMBuildBitCast(el->b, nw, LLVMTypeOf(i), "") : LLVMGetPoison(LLVMTypeOf(i)));
        }
        LLVMInstructionEraseFromParent(i);
    }
    free(v);
    free(done);
    free(m.key);
    free(m.val);
}

/* ---------------- shared memory ---------------- */

/* the instruction form of constant c (tl_smem or a constant expression over it), before `at` */
static LLVMValueRef rebuild(EL *el, LLVMValueRef c, LLVMValueRef g, LLVMValueRef base, LLVMValueRef at)
{
    if (c == g)
        return base;
    if (!LLVMIsAConstantExpr(c))
        return c;
    LLVMValueRef p = rebuild(el, LLVMGetOperand(c, 0), g, base, at);
    LLVMPositionBuilderBefore(el->b, at);
    LLVMSetCurrentDebugLocation2(el->b, LLVMInstructionGetDebugLoc(at));
    switch (LLVMGetConstOpcode(c)) {
    case LLVMGetElementPtr: {
        int n = LLVMGetNumOperands(c);
        LLVMValueRef idx[16];
        if (n - 1 > 16)
            break;
        for (int i = 1; i < n; i++)
            idx[i - 1] = LLVMGetOperand(c, (unsigned)i);
        return LLVMBuildGEP2(el->b, LLVMGetGEPSourceElementType(c), p, idx, (unsigned)(n - 1), "");
    }
    case LLVMAddrSpaceCast: return LLVMBuildAddrSpaceCast(el->b, p, LLVMTypeOf(c), "");
    case LLVMPtrToInt: return LLVMBuildPtrToInt(el->b, p, LLVMTypeOf(c), "");
    default: break;
    }
    el_error(el, "an unexpected constant expression over shared memory%s in kernel %s", "");
    return c;
}

static bool uses(LLVMValueRef c, LLVMValueRef g)
{
    if (c == g)
        return true;
    if (!LLVMIsAConstantExpr(c))
        return false;
    for (int i = 0; i < LLVMGetNumOperands(c); i++)
        if (uses(LLVMGetOperand(c, (unsigned)i), g))
            return true;
    return false;
}

static void replace_smem(EL *el)
{
    LLVMValueRef g = LLVMGetNamedGlobal(el->m, "tl_smem");
    if (!g)
        return;
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(el->fn);
    LLVMPositionBuilderBefore(el->b, LLVMGetFirstInstruction(entry));
    LLVMSetCurrentDebugLocation2(el->b, NULL);
    LLVMValueRef base = call_abi(el, "tl_emu_smem", el->p3, NULL, NULL, 0, 3);
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(el->fn); bb; bb = LLVMGetNextBasicBlock(bb))
        for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i)) {
            if (i == base)
                continue;
            int n = LLVMGetNumOperands(i);
            for (int k = 0; k < n; k++) {
                LLVMValueRef o = LLVMGetOperand(i, (unsigned)k);
                if (!uses(o, g))
                    continue;
                LLVMValueRef at = i;
                if (LLVMGetInstructionOpcode(i) == LLVMPHI)
                    at = LLVMGetBasicBlockTerminator(LLVMGetIncomingBlock(i, (unsigned)k));
                LLVMSetOperand(i, (unsigned)k, rebuild(el, o, g, base, at));
            }
        }
    LLVMReplaceAllUsesWith(g, LLVMConstPointerNull(el->p3));
    LLVMDeleteGlobal(g);
}

/* ---------------- the entry and the metadata ---------------- */

static void make_wrapper(EL *el)
{
    LLVMTypeRef kt = LLVMGlobalGetValueType(el->fn);
    unsigned n = LLVMCountParamTypes(kt);
    LLVMTypeRef *pts = tl_xmalloc(sizeof(LLVMTypeRef) * (n + 1));
    LLVMValueRef *args = tl_xmalloc(sizeof(LLVMValueRef) * (n + 1));
    LLVMGetParamTypes(kt, pts);
    char name[512];
    snprintf(name, sizeof name, "__tl_emu_%s", el->k->entry);
    LLVMTypeRef wt = LLVMFunctionType(el->v, &el->p0, 1, 0);
    LLVMValueRef w = LLVMAddFunction(el->m, name, wt);
    LLVMSetCurrentDebugLocation2(el->b, NULL);
    LLVMPositionBuilderAtEnd(el->b, LLVMAppendBasicBlockInContext(el->ctx, w, "entry"));
    LLVMValueRef params = LLVMGetParam(w, 0);
    for (unsigned i = 0; i < n; i++) {
        LLVMValueRef slot = LLVMBuildGEP2(el->b, el->p0, params, (LLVMValueRef[]){LLVMConstInt(el->i64, i, 0)}, 1, "");
        LLVMValueRef p = LLVMBuildLoad2(el->b, el->p0, slot, "");
        bool list = false; /* a tensor list's pointer array: passed where it lies */
        for (int j = 0; j < el->ntensors; j++)
            list |= el->cap[j] && el->tensors[j] == LLVMGetParam(el->fn, i);
        if (list) {
            args[i] = p;
            continue;
        }
        LLVMValueRef a = LLVMBuildLoad2(el->b, pts[i], p, "");
        LLVMSetAlignment(a, 1);
        args[i] = a;
    }
    LLVMBuildCall2(el->b, kt, el->fn, args, n, "");
    LLVMBuildRetVoid(el->b);
    free(pts);
    free(args);
}

static void add_string(EL *el, const char *name, const char *text)
{
    size_t n = strlen(text) + 1;
    LLVMValueRef g = LLVMAddGlobal(el->m, LLVMArrayType2(el->i8, n), name);
    LLVMSetInitializer(g, LLVMConstStringInContext2(el->ctx, text, n - 1, 0));
    LLVMSetGlobalConstant(g, 1);
    LLVMSetLinkage(g, LLVMExternalLinkage);
}

/* "name dtype offset bytes elem_bytes row_pad rank extents..." per shared buffer */
static void add_smem_map(EL *el)
{
    StrBuf s = {0};
    for (int i = 0; i < el->k->nbufs; i++) {
        TBuf *b = el->k->bufs[i];
        if (b->scope != SC_SHARED)
            continue;
        int64_t n = 1;
        for (int d = 0; d < b->rank; d++)
            n *= b->shape[d] + (d == b->rank - 1 ? b->row_pad : 0);
        int64_t bytes = b->dt == DT_E2M1 ? (n + 1) / 2 : n * dtype_storage_bytes(b->dt);
        sb_printf(&s, "%s %s %lld %lld %d %lld %d", b->name, dtype_name(b->dt), (long long)b->smem_offset,
                  (long long)bytes, b->dt == DT_E2M1 ? 0 : dtype_storage_bytes(b->dt), (long long)b->row_pad, b->rank);
        for (int d = 0; d < b->rank; d++)
            sb_printf(&s, " %lld", (long long)b->shape[d]);
        sb_puts(&s, "\n");
    }
    add_string(el, "__tl_emu_smem", s.data ? s.data : "");
    sb_free(&s);
}

static void fix_kernel_attributes(EL *el)
{
    LLVMValueRef f = el->fn;
    LLVMSetFunctionCallConv(f, LLVMCCallConv);
    LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "nvvm.maxntid", 12);
    LLVMRemoveStringAttributeAtIndex(f, LLVMAttributeFunctionIndex, "nvvm.minctasm", 13);
    unsigned noalias = attr_kind("noalias"), byval = attr_kind("byval");
    unsigned n = LLVMCountParams(f);
    for (unsigned i = 0; i < n; i++) {
        LLVMRemoveEnumAttributeAtIndex(f, i + 1, noalias);
        LLVMRemoveEnumAttributeAtIndex(f, i + 1, byval);
    }
    /* a frame of its own, with a frame pointer, so that a debugger shows the kernel in backtraces */
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(el->ctx, attr_kind("noinline"), 0));
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateStringAttribute(el->ctx, "frame-pointer", 13, "all", 3));
}

/* ---------------- target machine, passes, emission ---------------- */

static pthread_once_t x86_once = PTHREAD_ONCE_INIT;

static void init_x86(void)
{
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
}

static LLVMTargetMachineRef host_tm(TKernel *k, int opt)
{
    pthread_once(&x86_once, init_x86);
    char *triple = LLVMGetDefaultTargetTriple();
    if (!starts(triple, "x86_64") || !strstr(triple, "linux")) {
        diag_error(k->diag, loc_none(), "the host (emulator) target needs an x86-64 Linux machine; this one is %s", triple);
        LLVMDisposeMessage(triple);
        return NULL;
    }
    LLVMTargetRef target;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(triple, &target, &err)) {
        diag_ice(k->diag, "emu_lower", "no x86-64 target in this LLVM: %s", err ? err : "?");
        LLVMDisposeMessage(err);
        LLVMDisposeMessage(triple);
        return NULL;
    }
    /* a baseline level of the x86-64 ISA rather than the machine's own CPU: objects stay usable
     * on other machines (a shared cache); and no AVX, because gdb 13 steps over breakpoints on
     * VEX-encoded RIP-relative instructions wrongly (a conditional breakpoint changed results).
     * Results do not depend on the choice: IEEE arithmetic, no contraction, fma from libm when
     * the instruction is missing. */
    char *host = LLVMGetHostCPUFeatures();
    const char *cpu = strstr(host, "+sse4.2") && strstr(host, "+popcnt") ? "x86-64-v2" : "x86-64";
    LLVMDisposeMessage(host);
    LLVMCodeGenOptLevel lvl = opt <= 0 ? LLVMCodeGenLevelNone : opt == 1 ? LLVMCodeGenLevelLess : LLVMCodeGenLevelDefault;
    LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, cpu, "", lvl, LLVMRelocPIC, LLVMCodeModelSmall);
    LLVMDisposeMessage(triple);
    return tm;
}

/* the rewrites before LLVM's optimiser; el is set up for check_globals and el_dispose either way */
static bool lower(EL *el, TKernel *k, LLVMModuleRef m, LLVMTargetMachineRef tm)
{
    memset(el, 0, sizeof *el);
    el->k = k;
    el->m = m;
    el->ctx = LLVMGetModuleContext(m);
    el->ok = true;
    el->i1 = LLVMInt1TypeInContext(el->ctx);
    el->i8 = LLVMInt8TypeInContext(el->ctx);
    el->i16 = LLVMInt16TypeInContext(el->ctx);
    el->i32 = LLVMInt32TypeInContext(el->ctx);
    el->i64 = LLVMInt64TypeInContext(el->ctx);
    el->f16 = LLVMHalfTypeInContext(el->ctx);
    el->bf16 = LLVMBFloatTypeInContext(el->ctx);
    el->f32 = LLVMFloatTypeInContext(el->ctx);
    el->f64 = LLVMDoubleTypeInContext(el->ctx);
    el->v = LLVMVoidTypeInContext(el->ctx);
    el->p0 = LLVMPointerTypeInContext(el->ctx, 0);
    el->p1 = LLVMPointerTypeInContext(el->ctx, 1);
    el->p3 = LLVMPointerTypeInContext(el->ctx, 3);
    char *triple = LLVMGetTargetMachineTriple(tm);
    LLVMSetTarget(m, triple);
    LLVMDisposeMessage(triple);
    el->td = LLVMCreateTargetDataLayout(tm);
    char *dl = LLVMCopyStringRepOfTargetData(el->td);
    LLVMSetDataLayout(m, dl);
    LLVMDisposeMessage(dl);
    el->b = LLVMCreateBuilderInContext(el->ctx);
    el->fn = LLVMGetNamedFunction(m, k->entry);
    if (!el->fn) {
        diag_ice(k->diag, "emu_lower", "no kernel function '%s' in the module", k->entry);
        return false;
    }
    /* the tensor and tensor-list parameters, as codegen lays them out (a tensor: ptr, extents,
     * strides; a list: its pointer array, length, extents, strides), and their range slots: one
     * per tensor, max + 1 per list (tl_emu_abi.h) */
    unsigned np = LLVMCountParams(el->fn), pi = 0;
    el->tensors = tl_xcalloc(np + 1, sizeof(LLVMValueRef));
    el->slot = tl_xcalloc(np + 1, sizeof(int));
    el->cap = tl_xcalloc(np + 1, sizeof(int));
    for (int i = 0; i < k->nparams && pi < np; i++) {
        TBuf *t = k->params[i];
        if (!t) {
            pi++;
            continue;
        }
        el->tensors[el->ntensors] = LLVMGetParam(el->fn, pi);
        el->slot[el->ntensors] = el->nslots;
        el->cap[el->ntensors++] = t->list_cap;
        el->nslots += t->list_cap ? t->list_cap + 1 : 1;
        pi += (t->list_cap ? 2u : 1u) + 2u * (unsigned)t->rank;
    }
    if (pi != np) {
        diag_ice(k->diag, "emu_lower", "kernel %s has %u parameters, not the %u of its signature", k->key, np, pi);
        return false;
    }
    el->gbase = tl_xcalloc((size_t)el->nslots + 1, sizeof(LLVMValueRef));
    el->gsize = tl_xcalloc((size_t)el->nslots + 1, sizeof(LLVMValueRef));
    lower_instructions(el);
    if (el->ok)
        legalize_f16(el);
    if (el->ok)
        replace_smem(el);
    if (el->ok) {
        fix_kernel_attributes(el);
        make_wrapper(el);
        add_smem_map(el);
    }
    return el->ok;
}

static void el_dispose(EL *el)
{
    sb_free(&el->sites);
    free(el->tensors);
    free(el->slot);
    free(el->cap);
    free(el->elem_loads);
    free(el->gbase);
    free(el->gsize);
    if (el->b)
        LLVMDisposeBuilder(el->b);
    if (el->td)
        LLVMDisposeTargetData(el->td);
}

static LLVMErrorRef run_passes(LLVMModuleRef m, const char *pipeline, LLVMTargetMachineRef tm)
{
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(m, pipeline, tm, po);
    LLVMDisposePassBuilderOptions(po);
    return e;
}

char *emu_emit_host(TKernel *k, LLVMModuleRef m, int opt_level, bool object, size_t *size)
{
    LLVMTargetMachineRef tm = host_tm(k, opt_level);
    if (!tm)
        return NULL;
    char *out = NULL;
    char *msg = NULL;
    EL el;
    if (!lower(&el, k, m, tm)) {
        /* reported */
    } else if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
        diag_ice(k->diag, "emu_lower", "invalid LLVM IR for %s: %s", k->key, msg ? msg : "?");
    } else {
        char pipeline[32];
        int o = opt_level < 0 ? 0 : opt_level > 2 ? 2 : opt_level;
        snprintf(pipeline, sizeof pipeline, "default<O%d>", o);
        LLVMErrorRef e = run_passes(m, pipeline, tm);
        if (!e) {
            check_globals(&el);
            add_string(&el, "__tl_emu_sites", el.sites.data ? el.sites.data : "");
            if (el.ok && el.gcheck) /* the checks inline; nothing else changes */
                e = run_passes(m, "always-inline", tm);
        }
        if (e) {
            char *em = LLVMGetErrorMessage(e);
            diag_ice(k->diag, "emu_lower", "LLVM passes failed: %s", em);
            LLVMDisposeErrorMessage(em);
        } else if (!el.ok) {
            /* reported */
        } else if (object) {
            LLVMMemoryBufferRef buf = NULL;
            char *err = NULL;
            if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile, &err, &buf)) {
                diag_ice(k->diag, "emu_lower", "x86-64 code generation failed: %s", err ? err : "?");
                LLVMDisposeMessage(err);
            } else {
                *size = LLVMGetBufferSize(buf);
                out = tl_xmalloc(*size + 1);
                memcpy(out, LLVMGetBufferStart(buf), *size);
                out[*size] = 0;
                LLVMDisposeMemoryBuffer(buf);
            }
        } else {
            char *s = LLVMPrintModuleToString(m);
            *size = strlen(s);
            out = tl_xmalloc(*size + 1);
            memcpy(out, s, *size + 1);
            LLVMDisposeMessage(s);
        }
    }
    el_dispose(&el);
    LLVMDisposeMessage(msg);
    LLVMDisposeTargetMachine(tm);
    return out;
}
