/* codegen_llvm.c — thread-level tile IR to LLVM IR for the NVPTX backend.
 *
 * Numeric rules (spec §0.3): fdiv stays IEEE (no fast-math flags anywhere), fma only where the
 * program wrote fma(), no flush-to-zero, exp is CUDA's accurate expf sequence written out
 * inline, conversions to fp8/fp4 saturate and round to nearest even (hardware cvt where the
 * target has it, exact integer code where it has not: FP4 on sm_90a). Variables live in
 * allocas that mem2reg turns into registers; register arrays are indexed by constants only. */
#include "codegen.h"

#include <llvm-c/DebugInfo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct CG {
    TKernel *k;
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMValueRef fn;
    LLVMBasicBlockRef entry;
    LLVMValueRef *tensor_ptr;   /* per kernel param; a tensor list's: its array of pointers */
    LLVMValueRef *list_len;     /* per tensor list param: its length */
    LLVMValueRef (*tensor_dim)[TL_MAX_RANK];
    LLVMValueRef (*tensor_stride)[TL_MAX_RANK];
    LLVMValueRef *scalar;
    LLVMValueRef smem;
    LLVMBasicBlockRef brk[64], cont[64];
    int nloops;
    struct { int label; LLVMBasicBlockRef exit; } labels[64];
    int nlabels;
    LLVMBasicBlockRef ret_bb;
    bool ok;
    LLVMTypeRef t_i1, t_i8, t_i16, t_i32, t_i64, t_f16, t_bf16, t_f32, t_f64, t_void, t_ptr0, t_ptr1, t_ptr3;
    /* host target only: line tables, for the emulator's reports and for debuggers */
    LLVMDIBuilderRef dib;
    LLVMMetadataRef dsub, dscope[TL_MAX_FILES];
} CG;

/* ---------------- source lines (host target) ---------------- */

static LLVMMetadataRef debug_file(CG *g, int file)
{
    const char *path = g->k->diag->files[file]->path;
    const char *slash = strrchr(path, '/');
    const char *dir = slash ? path : ".";
    size_t dlen = slash ? (size_t)(slash - path) : 1;
    const char *base = slash ? slash + 1 : path;
    return LLVMDIBuilderCreateFile(g->dib, base, strlen(base), dir, dlen);
}

static void debug_begin(CG *g)
{
    TKernel *k = g->k;
    Loc at = k->item ? k->item->name.loc : loc_none();
    if (at.file < 0 || at.file >= k->diag->nfiles)
        return;
    g->dib = LLVMCreateDIBuilder(g->mod);
    LLVMMetadataRef file = debug_file(g, at.file);
    LLVMDIBuilderCreateCompileUnit(g->dib, LLVMDWARFSourceLanguageC, file, "tilec", 5, 1, "", 0, 0, "", 0,
                                   LLVMDWARFEmissionLineTablesOnly, 0, 0, 0, "", 0, "", 0);
    int line, col;
    diag_line_col(k->diag, at, &line, &col);
    LLVMMetadataRef ty = LLVMDIBuilderCreateSubroutineType(g->dib, file, NULL, 0, LLVMDIFlagZero);
    g->dsub = LLVMDIBuilderCreateFunction(g->dib, file, k->key, strlen(k->key), k->entry, strlen(k->entry), file,
                                          (unsigned)line, ty, 0, 1, (unsigned)line, LLVMDIFlagZero, 1);
    g->dscope[at.file] = g->dsub;
    LLVMSetSubprogram(g->fn, g->dsub);
    LLVMAddModuleFlag(g->mod, LLVMModuleFlagBehaviorWarning, "Debug Info Version", 18,
                      LLVMValueAsMetadata(LLVMConstInt(g->t_i32, LLVMDebugMetadataVersion(), 0)));
}

/* later instructions carry loc (code inlined from other files gets a scope of its file) */
static void debug_loc(CG *g, Loc loc)
{
    if (!g->dib || loc.file < 0 || loc.file >= g->k->diag->nfiles)
        return;
    if (!g->dscope[loc.file])
        g->dscope[loc.file] = LLVMDIBuilderCreateLexicalBlockFile(g->dib, g->dsub, debug_file(g, loc.file), 0);
    int line, col;
    diag_line_col(g->k->diag, loc, &line, &col);
    LLVMSetCurrentDebugLocation2(g->b, LLVMDIBuilderCreateDebugLocation(g->ctx, (unsigned)line, (unsigned)col,
                                                                        g->dscope[loc.file], NULL));
}

static void cg_error(CG *g, Loc loc, const char *msg)
{
    if (g->ok)
        diag_error(g->k->diag, loc, "%s", msg);
    g->ok = false;
}

static LLVMTypeRef ty_of(CG *g, DType dt)
{
    switch (dt) {
    case DT_BOOL: return g->t_i1;
    case DT_I8: case DT_U8: case DT_E4M3: case DT_E5M2: case DT_E2M1: case DT_UE8M0: return g->t_i8;
    case DT_I16: case DT_U16: return g->t_i16;
    case DT_I32: case DT_U32: return g->t_i32;
    case DT_I64: case DT_U64: return g->t_i64;
    case DT_F16: return g->t_f16;
    case DT_BF16: return g->t_bf16;
    case DT_F32: return g->t_f32;
    case DT_F64: return g->t_f64;
    default: return g->t_i32;
    }
}

/* memory type of an element (bool is a byte in memory) */
static LLVMTypeRef mem_ty(CG *g, DType dt) { return dt == DT_BOOL ? g->t_i8 : ty_of(g, dt); }

static LLVMValueRef ci(CG *g, LLVMTypeRef t, int64_t v) { return LLVMConstInt(t, (unsigned long long)v, 1); }
static LLVMValueRef c32(CG *g, int64_t v) { return ci(g, g->t_i32, v); }
static LLVMValueRef cf32(CG *g, float v) { return LLVMConstReal(g->t_f32, v); }
static LLVMValueRef cf32_bits(CG *g, uint32_t bits)
{
    float f;
    memcpy(&f, &bits, 4);
    return LLVMConstReal(g->t_f32, f);
}

static LLVMValueRef call_intrinsic(CG *g, const char *name, LLVMTypeRef ret, LLVMTypeRef *argt, int n, LLVMValueRef *args)
{
    LLVMTypeRef ft = LLVMFunctionType(ret, argt, (unsigned)n, 0);
    LLVMValueRef f = LLVMGetNamedFunction(g->mod, name);
    if (!f)
        f = LLVMAddFunction(g->mod, name, ft);
    return LLVMBuildCall2(g->b, ft, f, args, (unsigned)n, "");
}

/* an overloaded LLVM intrinsic (llvm.fma, llvm.minnum, ...) by id */
static LLVMValueRef call_overloaded(CG *g, const char *name, LLVMTypeRef *over, int nover, LLVMValueRef *args, int n)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->mod, id, over, (size_t)nover);
    LLVMTypeRef ft = LLVMIntrinsicGetType(g->ctx, id, over, (size_t)nover);
    return LLVMBuildCall2(g->b, ft, f, args, (unsigned)n, "");
}

static LLVMValueRef inline_asm(CG *g, LLVMTypeRef ret, const char *code, const char *cons, LLVMValueRef *args, int n,
                               LLVMTypeRef *argt)
{
    LLVMTypeRef ft = LLVMFunctionType(ret, argt, (unsigned)n, 0);
    LLVMValueRef asmv = LLVMGetInlineAsm(ft, (char *)code, strlen(code), (char *)cons, strlen(cons), 0, 0,
                                         LLVMInlineAsmDialectATT, 0);
    return LLVMBuildCall2(g->b, ft, asmv, args, (unsigned)n, "");
}

/* ---------------- conversions ---------------- */

static LLVMValueRef to_f32(CG *g, LLVMValueRef v, DType from);

/* f32 -> e2m1 code (low nibble), RNE with saturation to ±6; NaN -> +6. Mostly f32 arithmetic,
 * which the GPU issues at twice the rate of integer, compare and select instructions (this runs
 * once per element of every FP4 store). For a = |x|, adding 2^22, 2^23 and 2^24 rounds a to
 * nearest-even multiples of 0.5, 1 and 2 (the e2m1 spacings below 2, in [2, 4) and from 4 up);
 * the code is then the smallest of the three lines 2 r0, r1 + 2 and r2 / 2 + 4 and of 7 (checked
 * against the threshold encoder on every non-negative f32). The lines are computed with 2^23
 * added, exactly, so that the result's low mantissa bits are the code; min ignores NaNs, so a
 * NaN gives 7. The sign comes from the bits, except on NaNs. */
static LLVMValueRef f32_to_e2m1_code32(CG *g, LLVMValueRef x)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef f = g->t_f32;
    LLVMValueRef bits = LLVMBuildBitCast(b, x, g->t_i32, "");
    LLVMValueRef a = call_overloaded(g, "llvm.fabs", &f, 1, &x, 1);
    LLVMValueRef s0 = LLVMBuildFAdd(b, a, cf32(g, 0x1p22f), "");
    LLVMValueRef s1 = LLVMBuildFAdd(b, a, cf32(g, 0x1p23f), "");
    LLVMValueRef s2 = LLVMBuildFAdd(b, a, cf32(g, 0x1p24f), "");
    LLVMValueRef l0 = LLVMBuildFMul(b, s0, cf32(g, 2.0f), "");      /* 2^23 + 2 r0 */
    LLVMValueRef l1 = LLVMBuildFAdd(b, s1, cf32(g, 2.0f), "");      /* 2^23 + r1 + 2 */
    LLVMValueRef a2[3] = {s2, cf32(g, 0.5f), cf32(g, 4.0f)};
    LLVMValueRef l2 = call_overloaded(g, "llvm.fma", &f, 1, a2, 3); /* 2^23 + r2 / 2 + 4 */
    LLVMValueRef m01[2] = {l0, l1}, m2[2] = {l2, cf32(g, 0x1p23f + 7.0f)};
    LLVMValueRef m[2] = {call_overloaded(g, "llvm.minnum", &f, 1, m01, 2), call_overloaded(g, "llvm.minnum", &f, 1, m2, 2)};
    LLVMValueRef low = LLVMBuildBitCast(b, call_overloaded(g, "llvm.minnum", &f, 1, m, 2), g->t_i32, "");
    LLVMValueRef code = LLVMBuildAnd(b, low, c32(g, 7), "");
    /* as signed integers the negative non-NaN encodings (-0 and -inf included) are exactly those
     * <= bits(-inf) */
    LLVMValueRef neg = LLVMBuildICmp(b, LLVMIntSLE, bits, c32(g, (int32_t)0xFF800000u), "");
    LLVMValueRef sign = LLVMBuildSelect(b, neg, c32(g, 8), c32(g, 0), "");
    return LLVMBuildOr(b, code, sign, "");
}

/* the f16x2 of two f16 values (where they are roundings of f32 values, pair_roundings.c makes
 * them one cvt.rn.f16x2.f32 after optimisation) */
static LLVMValueRef f16_pair(CG *g, LLVMValueRef lo, LLVMValueRef hi)
{
    LLVMTypeRef v2h = LLVMVectorType(g->t_f16, 2);
    LLVMValueRef h2 = LLVMBuildInsertElement(g->b, LLVMGetUndef(v2h), lo, c32(g, 0), "");
    return LLVMBuildInsertElement(g->b, h2, hi, c32(g, 1), "");
}

/* two f16 -> two e2m1 codes at bits 0-3 and 16-19 of an i32, with f16x2 instructions (each
 * covers two elements). For a = |x|, the three lines of f32_to_e2m1_code32 come from one
 * instruction each, with 2^10 added (where the f16 spacing is 1, so the low mantissa bits are the
 * code): fma(a, 2, 1024) = 1024 + 2 r0, a + 1026 = 1024 + r1 + 2 and fma(a, 0.5, 1028) =
 * 1024 + r2 / 2 + 4, r0, r1, r2 being a rounded to nearest-even multiples of 0.5, 1 and 2 (the
 * added constants are even, so ties go the same way); the code is the smallest of them and 7.
 * Exact for every f16 (checked exhaustively in tests/emu/test_emu_numerics.c); a kernel converts
 * f32 to f16 first only where that is exact. NaN gives +7: a half whose magnitude bits exceed
 * 0x7C00 carries into bit 15 when 0x3FF is added, and that clears its sign. */
static LLVMValueRef f16x2_to_e2m1_codes(CG *g, LLVMValueRef h2)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef v2h = LLVMVectorType(g->t_f16, 2);
    LLVMValueRef bits = LLVMBuildBitCast(b, h2, g->t_i32, "");
    LLVMValueRef mag = LLVMBuildAnd(b, bits, c32(g, 0x7FFF7FFF), "");
    LLVMValueRef a = LLVMBuildBitCast(b, mag, v2h, "");
#define SPLAT_H(v) LLVMConstVector((LLVMValueRef[]){LLVMConstReal(g->t_f16, v), LLVMConstReal(g->t_f16, v)}, 2)
    LLVMValueRef f0[3] = {a, SPLAT_H(2.0), SPLAT_H(1024.0)}, f2[3] = {a, SPLAT_H(0.5), SPLAT_H(1028.0)};
    LLVMValueRef l0 = call_overloaded(g, "llvm.fma", &v2h, 1, f0, 3);
    LLVMValueRef l1 = LLVMBuildFAdd(b, a, SPLAT_H(1026.0), "");
    LLVMValueRef l2 = call_overloaded(g, "llvm.fma", &v2h, 1, f2, 3);
    LLVMValueRef m01[2] = {l0, l1}, m2[2] = {l2, SPLAT_H(1031.0)};
#undef SPLAT_H
    LLVMValueRef m[2] = {call_overloaded(g, "llvm.minnum", &v2h, 1, m01, 2), call_overloaded(g, "llvm.minnum", &v2h, 1, m2, 2)};
    LLVMValueRef low = LLVMBuildBitCast(b, call_overloaded(g, "llvm.minnum", &v2h, 1, m, 2), g->t_i32, "");
    LLVMValueRef code = LLVMBuildAnd(b, low, c32(g, 0x00070007), "");
    LLVMValueRef nan = LLVMBuildAdd(b, mag, c32(g, 0x03FF03FF), "");
    LLVMValueRef sign = LLVMBuildAnd(b, LLVMBuildAnd(b, bits, LLVMBuildNot(b, nan, ""), ""), c32(g, (int32_t)0x80008000u), "");
    return LLVMBuildOr(b, code, LLVMBuildLShr(b, sign, c32(g, 12), ""), "");
}

/* the code as the i8 of an e2m1 register element */
static LLVMValueRef f32_to_e2m1_soft(CG *g, LLVMValueRef x)
{
    return LLVMBuildTrunc(g->b, f32_to_e2m1_code32(g, x), g->t_i8, "");
}

/* e2m1 code -> f32, exact: 0, 0.5, 1, 1.5, 2, 3, 4, 6 with the sign in bit 3. The magnitude
 * bits shifted to f32 bit 22 form the f32 2^-127 * (0, 1, ..., 12) (subnormal below code 2,
 * the same exponent/mantissa split above), so one multiplication by 2^126 gives the value. */
static LLVMValueRef e2m1_to_f32(CG *g, LLVMValueRef c8)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef c = LLVMBuildZExt(b, c8, g->t_i32, "");
    LLVMValueRef mag = LLVMBuildShl(b, LLVMBuildAnd(b, c, c32(g, 7), ""), c32(g, 22), "");
    LLVMValueRef sign = LLVMBuildShl(b, LLVMBuildAnd(b, c, c32(g, 8), ""), c32(g, 28), "");
    LLVMValueRef tiny = LLVMBuildBitCast(b, LLVMBuildOr(b, mag, sign, ""), g->t_f32, "");
    return LLVMBuildFMul(b, tiny, cf32(g, 0x1p126f), "");
}

/* f32 -> ue8m0, rounding up to a power of two: the exponent byte of the smallest power of two
 * >= x; NaN -> 0xFF, x <= 2^-127 (and non-positive) -> 0, overflow -> 0xFE (satfinite) */
static LLVMValueRef f32_to_ue8m0_soft(CG *g, LLVMValueRef x)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef bits = LLVMBuildBitCast(b, x, g->t_i32, "");
    LLVMValueRef up = LLVMBuildLShr(b, LLVMBuildAdd(b, bits, c32(g, 0x7FFFFF), ""), c32(g, 23), "");
    LLVMValueRef e = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, up, c32(g, 254), ""), c32(g, 254), up, "");
    LLVMValueRef nonpos = LLVMBuildFCmp(b, LLVMRealOLE, x, cf32(g, 0), "");
    e = LLVMBuildSelect(b, nonpos, c32(g, 0), e, "");
    LLVMValueRef isnan = LLVMBuildFCmp(b, LLVMRealUNO, x, x, "");
    e = LLVMBuildSelect(b, isnan, c32(g, 255), e, "");
    return LLVMBuildTrunc(b, e, g->t_i8, "");
}

static LLVMValueRef fp8_to_f16(CG *g, LLVMValueRef v8, DType from)
{
    LLVMTypeRef v2h = LLVMVectorType(g->t_f16, 2);
    LLVMValueRef w = LLVMBuildZExt(g->b, v8, g->t_i16, "");
    LLVMValueRef pair = call_intrinsic(g, from == DT_E4M3 ? "llvm.nvvm.e4m3x2.to.f16x2.rn" : "llvm.nvvm.e5m2x2.to.f16x2.rn",
                                       v2h, &g->t_i16, 1, &w);
    return LLVMBuildExtractElement(g->b, pair, c32(g, 0), "");
}

static LLVMValueRef to_f32(CG *g, LLVMValueRef v, DType from)
{
    switch (from) {
    case DT_F32: return v;
    case DT_F16:
    case DT_BF16: return LLVMBuildFPExt(g->b, v, g->t_f32, "");
    case DT_F64: return LLVMBuildFPTrunc(g->b, v, g->t_f32, "");
    case DT_E4M3:
    case DT_E5M2: return LLVMBuildFPExt(g->b, fp8_to_f16(g, v, from), g->t_f32, "");
    case DT_E2M1: return e2m1_to_f32(g, v);
    case DT_UE8M0:
        return LLVMBuildBitCast(g->b, LLVMBuildShl(g->b, LLVMBuildZExt(g->b, v, g->t_i32, ""), c32(g, 23), ""), g->t_f32, "");
    default:
        if (dtype_is_signed(from))
            return LLVMBuildSIToFP(g->b, v, g->t_f32, "");
        return LLVMBuildUIToFP(g->b, v, g->t_f32, "");
    }
}

static const char *ptx_type(DType dt)
{
    switch (dt) {
    case DT_I8: return "s8";
    case DT_I16: return "s16";
    case DT_I32: return "s32";
    case DT_I64: return "s64";
    case DT_U8: return "u8";
    case DT_U16: return "u16";
    case DT_U32: return "u32";
    case DT_U64: return "u64";
    case DT_F16: return "f16";
    case DT_BF16: return "bf16";
    case DT_F32: return "f32";
    case DT_F64: return "f64";
    default: return "b32";
    }
}

static const char *reg_constraint(DType dt)
{
    switch (dtype_bits(dt)) {
    case 16: return "h";
    case 64: return dtype_is_float(dt) ? "d" : "l";
    default: return dtype_is_float(dt) && dt != DT_F16 && dt != DT_BF16 ? "f" : "r";
    }
}

/* conversion with an explicit rounding mode, as one PTX cvt instruction */
static LLVMValueRef cvt_asm(CG *g, LLVMValueRef v, DType from, DType to, Rounding r)
{
    static const char *fr[] = {"", ".rn", ".rz", ".rm", ".rp"};
    static const char *ir[] = {"", ".rni", ".rzi", ".rmi", ".rpi"};
    bool to_int = dtype_is_int(to), from_int = dtype_is_int(from);
    const char *rnd = (to_int && !from_int) ? ir[r] : fr[r];
    char code[96], cons[16];
    /* 8-bit integers use 16-bit registers in PTX */
    DType f2 = from, t2 = to;
    if (dtype_bits(f2) == 8)
        f2 = dtype_is_signed(f2) ? DT_I16 : DT_U16;
    if (dtype_bits(t2) == 8)
        t2 = dtype_is_signed(t2) ? DT_I16 : DT_U16;
    snprintf(code, sizeof code, "cvt%s%s.%s.%s $0, $1;", rnd, to_int && !from_int ? ".sat" : "", ptx_type(to), ptx_type(from));
    snprintf(cons, sizeof cons, "=%s,%s", reg_constraint(t2), reg_constraint(f2));
    LLVMValueRef in = v;
    if (f2 != from)
        in = dtype_is_signed(from) ? LLVMBuildSExt(g->b, v, g->t_i16, "") : LLVMBuildZExt(g->b, v, g->t_i16, "");
    LLVMTypeRef it = LLVMTypeOf(in);
    LLVMValueRef out = inline_asm(g, t2 != to ? g->t_i16 : ty_of(g, to), code, cons, &in, 1, &it);
    if (t2 != to)
        out = LLVMBuildTrunc(g->b, out, g->t_i8, "");
    return out;
}

static LLVMValueRef cvt(CG *g, LLVMValueRef v, DType from, DType to, Rounding r, Loc loc)
{
    LLVMBuilderRef b = g->b;
    if (from == to)
        return v;
    if (r == RND_RN && !(dtype_is_int(to) && !dtype_is_int(from)))
        r = RND_DEFAULT;
    if (to == DT_BOOL)
        return dtype_is_float(from) ? LLVMBuildFCmp(b, LLVMRealUNE, to_f32(g, v, from), cf32(g, 0), "")
                                    : LLVMBuildICmp(b, LLVMIntNE, v, ci(g, LLVMTypeOf(v), 0), "");
    if (from == DT_BOOL) {
        if (dtype_is_int(to))
            return LLVMBuildZExt(b, v, ty_of(g, to), "");
        return cvt(g, LLVMBuildZExt(b, v, g->t_i32, ""), DT_I32, to, r, loc);
    }
    bool fi = dtype_is_int(from), ti = dtype_is_int(to);
    if (fi && ti) {
        int fb = dtype_bits(from), tb = dtype_bits(to);
        if (tb < fb)
            return LLVMBuildTrunc(b, v, ty_of(g, to), "");
        if (tb > fb)
            return dtype_is_signed(from) ? LLVMBuildSExt(b, v, ty_of(g, to), "") : LLVMBuildZExt(b, v, ty_of(g, to), "");
        return v;
    }
    if (r != RND_DEFAULT && (dtype_kind(to) == DK_FP8 || to == DT_E2M1 || dtype_kind(from) == DK_FP8 || from == DT_E2M1 ||
                             dtype_kind(to) == DK_SCALE || dtype_kind(from) == DK_SCALE)) {
        if (r != RND_RN && r != RND_RP) {
            cg_error(g, loc, "this rounding mode is not available for fp8, fp4 or ue8m0 conversions");
            return LLVMGetUndef(ty_of(g, to));
        }
        r = RND_DEFAULT;
    }
    if (r != RND_DEFAULT)
        return cvt_asm(g, v, from, to, r);
    if (fi) { /* int -> float */
        if (to == DT_F16 || to == DT_BF16 || to == DT_F32 || to == DT_F64)
            return dtype_is_signed(from) ? LLVMBuildSIToFP(b, v, ty_of(g, to), "") : LLVMBuildUIToFP(b, v, ty_of(g, to), "");
        return cvt(g, to_f32(g, v, from), DT_F32, to, r, loc);
    }
    if (ti) { /* float -> int: toward zero, saturating, NaN -> 0 */
        LLVMValueRef f = (from == DT_F32 || from == DT_F64) ? v : to_f32(g, v, from);
        LLVMTypeRef over[2] = {ty_of(g, to), LLVMTypeOf(f)};
        return call_overloaded(g, dtype_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", over, 2, &f, 1);
    }
    /* float -> float */
    switch (to) {
    case DT_F32: return to_f32(g, v, from);
    case DT_F64:
        return LLVMBuildFPExt(b, from == DT_F32 || from == DT_F16 || from == DT_BF16 ? v : to_f32(g, v, from), g->t_f64, "");
    case DT_F16:
    case DT_BF16:
        if (from == DT_F32 || from == DT_F64)
            return LLVMBuildFPTrunc(b, v, ty_of(g, to), "");
        if (from == DT_F16 || from == DT_BF16) /* via f32: exact, then one rounding */
            return LLVMBuildFPTrunc(b, LLVMBuildFPExt(b, v, g->t_f32, ""), ty_of(g, to), "");
        if ((from == DT_E4M3 || from == DT_E5M2) && to == DT_F16)
            return fp8_to_f16(g, v, from);
        return LLVMBuildFPTrunc(b, to_f32(g, v, from), ty_of(g, to), "");
    case DT_E4M3:
    case DT_E5M2: {
        LLVMValueRef f = to_f32(g, v, from);
        LLVMValueRef args[2] = {cf32(g, 0), f};
        LLVMTypeRef at[2] = {g->t_f32, g->t_f32};
        LLVMValueRef pair = call_intrinsic(g, to == DT_E4M3 ? "llvm.nvvm.ff.to.e4m3x2.rn" : "llvm.nvvm.ff.to.e5m2x2.rn",
                                           g->t_i16, at, 2, args);
        return LLVMBuildTrunc(b, pair, g->t_i8, "");
    }
    case DT_E2M1: {
        LLVMValueRef f = to_f32(g, v, from);
        if (g->k->sm >= 100) {
            LLVMValueRef args[2] = {cf32(g, 0), f};
            LLVMTypeRef at[2] = {g->t_f32, g->t_f32};
            LLVMValueRef pair = call_intrinsic(g, "llvm.nvvm.ff.to.e2m1x2.rn.satfinite", g->t_i16, at, 2, args);
            return LLVMBuildTrunc(b, LLVMBuildAnd(b, pair, ci(g, g->t_i16, 0xF), ""), g->t_i8, "");
        }
        return f32_to_e2m1_soft(g, f);
    }
    case DT_UE8M0: return f32_to_ue8m0_soft(g, to_f32(g, v, from));
    default: break;
    }
    cg_error(g, loc, "unsupported conversion");
    return LLVMGetUndef(ty_of(g, to));
}

/* ---------------- variables, buffers, addresses ---------------- */

static LLVMValueRef var_slot(CG *g, TVar *v)
{
    if (!v->cg) {
        LLVMBuilderRef eb = LLVMCreateBuilderInContext(g->ctx);
        LLVMValueRef first = LLVMGetFirstInstruction(g->entry);
        if (first)
            LLVMPositionBuilderBefore(eb, first);
        else
            LLVMPositionBuilderAtEnd(eb, g->entry);
        v->cg = LLVMBuildAlloca(eb, ty_of(g, v->dt), v->name);
        LLVMDisposeBuilder(eb);
    }
    return v->cg;
}

static LLVMValueRef local_array(CG *g, TBuf *buf)
{
    if (!buf->cg) {
        LLVMBuilderRef eb = LLVMCreateBuilderInContext(g->ctx);
        LLVMValueRef first = LLVMGetFirstInstruction(g->entry);
        if (first)
            LLVMPositionBuilderBefore(eb, first);
        else
            LLVMPositionBuilderAtEnd(eb, g->entry);
        int64_t n = 1;
        for (int d = 0; d < buf->rank; d++)
            n *= buf->shape[d];
        buf->cg = LLVMBuildAlloca(eb, LLVMArrayType2(mem_ty(g, buf->dt), (uint64_t)n), buf->name);
        LLVMDisposeBuilder(eb);
    }
    return buf->cg;
}

static LLVMValueRef cg_expr(CG *g, TExpr *e);

static LLVMValueRef as_i64(CG *g, LLVMValueRef v, DType dt)
{
    if (dtype_bits(dt) == 64)
        return v;
    return dtype_is_signed(dt) ? LLVMBuildSExt(g->b, v, g->t_i64, "") : LLVMBuildZExt(g->b, v, g->t_i64, "");
}

static LLVMValueRef buf_base(CG *g, TBuf *buf)
{
    if (buf->scope == SC_SHARED)
        return LLVMBuildGEP2(g->b, g->t_i8, g->smem, (LLVMValueRef[]){c32(g, (int32_t)buf->smem_offset)}, 1, "");
    if (buf->scope == SC_LOCAL || buf->scope == SC_FRAG)
        return local_array(g, buf);
    if (buf->param >= 0)
        return g->tensor_ptr[buf->param];
    if (buf->list) {
        /* an element of a tensor list: its pointer, read from the list's parameter where it is
         * used (a run-time index may change between uses) */
        LLVMValueRef ix[2] = {c32(g, 0), cg_expr(g, buf->list_index)};
        LLVMTypeRef at = LLVMArrayType2(g->t_i64, (uint64_t)buf->list->list_cap);
        LLVMValueRef p = LLVMBuildGEP2(g->b, at, g->tensor_ptr[buf->list->param], ix, 2, "");
        LLVMValueRef v = LLVMBuildLoad2(g->b, g->t_ptr1, p, buf->name);
        LLVMSetAlignment(v, 8);
        return v;
    }
    /* a view: its address is a variable set where the view is made (lower_ast), so the cast is
     * rebuilt at each use rather than kept from the first, which may sit in a branch (a split
     * copy's checked version) that does not dominate the others */
    return LLVMBuildIntToPtr(g->b, cg_expr(g, buf->addr), g->t_ptr1, "view");
}

static LLVMValueRef stride_val(CG *g, TBuf *b, int d)
{
    if (b->scope == SC_GLOBAL)
        return as_i64(g, cg_expr(g, b->gstride[d]), b->gstride[d]->dt);
    int64_t s = 1;
    for (int i = b->rank - 1; i > d; i--)
        s *= b->shape[i] + (i == b->rank - 1 ? b->row_pad : 0);
    return ci(g, g->t_i64, s);
}

/* linear element index of buf[idx...] */
static LLVMValueRef linear_index(CG *g, TBuf *b, TExpr **idx)
{
    if (b->scope != SC_GLOBAL) {
        /* shared / local: 32-bit arithmetic on compile-time strides */
        LLVMValueRef lin = c32(g, 0);
        LLVMValueRef xs[TL_MAX_RANK];
        for (int d = 0; d < b->rank; d++) {
            int64_t s = 1;
            for (int i = b->rank - 1; i > d; i--)
                s *= b->shape[i] + (i == b->rank - 1 ? b->row_pad : 0);
            LLVMValueRef x = cg_expr(g, idx[d]);
            if (dtype_bits(idx[d]->dt) == 64)
                x = LLVMBuildTrunc(g->b, x, g->t_i32, "");
            else if (dtype_bits(idx[d]->dt) < 32)
                x = LLVMBuildSExt(g->b, x, g->t_i32, "");
            xs[d] = x;
            lin = LLVMBuildAdd(g->b, lin, LLVMBuildMul(g->b, x, c32(g, s), ""), "");
        }
        if (b->swizzle && b->rank >= 2) {
            /* XOR the 16-byte chunk within the row with key((row / swizzle) % 8) */
            int per_chunk = 16 / dtype_storage_bytes(b->dt);
            LLVMValueRef row = xs[b->rank - 2];
            LLVMValueRef key = LLVMBuildAnd(g->b, LLVMBuildUDiv(g->b, row, c32(g, b->swizzle), ""), c32(g, 7), "");
            if (b->swizzle_gemm) /* 2 (x % 4) + x / 4 */
                key = LLVMBuildOr(g->b, LLVMBuildShl(g->b, LLVMBuildAnd(g->b, key, c32(g, 3), ""), c32(g, 1), ""),
                                  LLVMBuildLShr(g->b, key, c32(g, 2), ""), "");
            lin = LLVMBuildXor(g->b, lin, LLVMBuildMul(g->b, key, c32(g, per_chunk), ""), "");
        }
        return lin;
    }
    LLVMValueRef lin = ci(g, g->t_i64, 0);
    for (int d = 0; d < b->rank; d++) {
        LLVMValueRef x = as_i64(g, cg_expr(g, idx[d]), idx[d]->dt);
        int64_t sv;
        if (tx_is_const(b->gstride[d], &sv) && sv == 1)
            lin = LLVMBuildAdd(g->b, lin, x, "");
        else
            lin = LLVMBuildAdd(g->b, lin, LLVMBuildMul(g->b, x, stride_val(g, b, d), ""), "");
    }
    return lin;
}

/* address of the byte holding element `lin` (e2m1: two elements per byte) */
static LLVMValueRef elem_addr(CG *g, TBuf *b, LLVMValueRef lin)
{
    LLVMValueRef base = buf_base(g, b);
    if (b->dt == DT_E2M1) {
        LLVMValueRef byte = LLVMBuildAShr(g->b, lin, ci(g, LLVMTypeOf(lin), 1), "");
        return LLVMBuildGEP2(g->b, g->t_i8, base, &byte, 1, "");
    }
    if (b->scope == SC_LOCAL || b->scope == SC_FRAG) {
        LLVMValueRef ix[2] = {c32(g, 0), lin};
        int64_t n = 1;
        for (int d = 0; d < b->rank; d++)
            n *= b->shape[d];
        return LLVMBuildGEP2(g->b, LLVMArrayType2(mem_ty(g, b->dt), (uint64_t)n), base, ix, 2, "");
    }
    return LLVMBuildGEP2(g->b, mem_ty(g, b->dt), base, &lin, 1, "");
}

static LLVMValueRef load_elem(CG *g, TBuf *b, TExpr **idx, int align)
{
    LLVMValueRef lin = linear_index(g, b, idx);
    LLVMValueRef p = elem_addr(g, b, lin);
    LLVMValueRef v = LLVMBuildLoad2(g->b, mem_ty(g, b->dt), p, "");
    int es = dtype_storage_bytes(b->dt);
    LLVMSetAlignment(v, (unsigned)(align > es ? align : es));
    if (b->dt == DT_E2M1) {
        LLVMValueRef sh = LLVMBuildTrunc(g->b, LLVMBuildShl(g->b, LLVMBuildAnd(g->b, lin, ci(g, LLVMTypeOf(lin), 1), ""),
                                                            ci(g, LLVMTypeOf(lin), 2), ""), g->t_i8, "");
        v = LLVMBuildAnd(g->b, LLVMBuildLShr(g->b, v, sh, ""), ci(g, g->t_i8, 0xF), "");
    }
    if (b->dt == DT_BOOL)
        v = LLVMBuildICmp(g->b, LLVMIntNE, v, ci(g, g->t_i8, 0), "");
    return v;
}

static void store_elem(CG *g, TBuf *b, TExpr **idx, LLVMValueRef v, int align, Loc loc)
{
    LLVMValueRef lin = linear_index(g, b, idx);
    if (b->dt == DT_E2M1 && b->scope != SC_LOCAL && b->scope != SC_FRAG) { /* sema has said so already */
        cg_error(g, loc, "a single e2m1 element cannot be stored to memory (two share a byte); store pairs with a tile copy");
        return;
    }
    LLVMValueRef p = elem_addr(g, b, lin);
    if (b->dt == DT_BOOL)
        v = LLVMBuildZExt(g->b, v, g->t_i8, "");
    if (b->dt == DT_E2M1) /* register arrays hold one element per byte */
        p = LLVMBuildGEP2(g->b, g->t_i8, buf_base(g, b), &lin, 1, "");
    LLVMValueRef st = LLVMBuildStore(g->b, v, p);
    int es = dtype_storage_bytes(b->dt);
    LLVMSetAlignment(st, (unsigned)(align > es ? align : es));
}

/* register arrays hold e2m1 one element per byte: their addresses are plain byte offsets */
static LLVMValueRef reg_addr(CG *g, TBuf *regs, int r)
{
    LLVMValueRef ix[2] = {c32(g, 0), c32(g, r)};
    return LLVMBuildGEP2(g->b, LLVMArrayType2(mem_ty(g, regs->dt), (uint64_t)regs->shape[0]), local_array(g, regs), ix, 2, "");
}

static LLVMValueRef reg_get(CG *g, TBuf *regs, int r)
{
    LLVMValueRef v = LLVMBuildLoad2(g->b, mem_ty(g, regs->dt), reg_addr(g, regs, r), "");
    if (regs->dt == DT_BOOL)
        v = LLVMBuildICmp(g->b, LLVMIntNE, v, ci(g, g->t_i8, 0), "");
    return v;
}

static void reg_set(CG *g, TBuf *regs, int r, LLVMValueRef v)
{
    if (regs->dt == DT_BOOL)
        v = LLVMBuildZExt(g->b, v, g->t_i8, "");
    LLVMBuildStore(g->b, v, reg_addr(g, regs, r));
}

/* ---- vector accesses: VLOAD / VSTORE ---- */
static LLVMValueRef prmt(CG *g, LLVMValueRef a, LLVMValueRef b, LLVMValueRef sel)
{
    LLVMValueRef args[3] = {a, b, sel};
    LLVMTypeRef at[3] = {g->t_i32, g->t_i32, g->t_i32};
    return call_intrinsic(g, "llvm.nvvm.prmt", g->t_i32, at, 3, args);
}

/* eight packed e2m1 codes (a 32-bit word, element 2k in the low nibble of byte k) -> four f16x2
 * pairs, exact. The f16 of every e2m1 magnitude has a zero low byte, so one byte permute with
 * the magnitude bits as selectors looks up four high bytes in a table (0, 0.5, 1, 1.5 | 2, 3, 4,
 * 6); a second places two of them as the high bytes of a pair, a third copies the sign bits
 * (bit 7 of the byte of w << 4 for the even element, of w for the odd one) to whole bytes, of
 * which bits 15 and 31 are kept. About 2 instructions per element against 7 through f32. */
static void e2m1x8_to_f16x2(CG *g, LLVMValueRef w, LLVMValueRef out[4])
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef tlo = c32(g, 0x3E3C3800), thi = c32(g, 0x46444240), zero = c32(g, 0);
    LLVMValueRef sel = LLVMBuildAnd(b, w, c32(g, 0x77777777), "");
    LLVMValueRef w4 = LLVMBuildShl(b, w, c32(g, 4), "");
    for (int h = 0; h < 2; h++) {
        /* high bytes of elements 4h .. 4h + 3 */
        LLVMValueRef hs = h ? LLVMBuildLShr(b, sel, c32(g, 16), "") : sel;
        LLVMValueRef mag = prmt(g, tlo, thi, hs);
        for (int q = 0; q < 2; q++) {
            int k = 2 * h + q; /* the byte of w holding elements 2k, 2k + 1 */
            LLVMValueRef pair = prmt(g, mag, zero, c32(g, q ? 0x3424 : 0x1404));
            LLVMValueRef sgn = prmt(g, w4, w, c32(g, 0xC080 | k << 12 | k << 4));
            sgn = LLVMBuildAnd(b, sgn, c32(g, (int32_t)0x80008000u), "");
            out[k] = LLVMBuildOr(b, pair, sgn, "");
        }
    }
}

static void cg_vload(CG *g, TStmt *s)
{
    TBuf *b = s->buf;
    LLVMValueRef lin = linear_index(g, b, s->idx);
    LLVMValueRef p = elem_addr(g, b, lin);
    int n = s->vec;
    if (b->dt == DT_E2M1 && n % 8 == 0 && (s->regs->dt == DT_F32 || s->regs->dt == DT_F16)) {
        /* whole 32-bit words: four f16x2 pairs per word through byte permutes */
        int words = n / 8;
        LLVMTypeRef vt = words == 1 ? g->t_i32 : LLVMVectorType(g->t_i32, (unsigned)words);
        LLVMValueRef v = LLVMBuildLoad2(g->b, vt, p, "");
        LLVMSetAlignment(v, (unsigned)(s->align > 1 ? s->align : 1));
        LLVMTypeRef v2h = LLVMVectorType(g->t_f16, 2);
        for (int w = 0; w < words; w++) {
            LLVMValueRef pairs[4];
            e2m1x8_to_f16x2(g, words == 1 ? v : LLVMBuildExtractElement(g->b, v, c32(g, w), ""), pairs);
            for (int k = 0; k < 4; k++) {
                LLVMValueRef h2 = LLVMBuildBitCast(g->b, pairs[k], v2h, "");
                for (int j = 0; j < 2; j++) {
                    LLVMValueRef h = LLVMBuildExtractElement(g->b, h2, c32(g, j), "");
                    reg_set(g, s->regs, s->roff + 8 * w + 2 * k + j,
                            s->regs->dt == DT_F16 ? h : LLVMBuildFPExt(g->b, h, g->t_f32, ""));
                }
            }
        }
        return;
    }
    if (b->dt == DT_E2M1) {
        int bytes = n / 2;
        LLVMTypeRef vt = bytes == 1 ? g->t_i8 : LLVMVectorType(g->t_i8, (unsigned)bytes);
        LLVMValueRef v = LLVMBuildLoad2(g->b, vt, p, "");
        LLVMSetAlignment(v, (unsigned)(s->align > 1 ? s->align : 1));
        for (int i = 0; i < bytes; i++) {
            LLVMValueRef byte = bytes == 1 ? v : LLVMBuildExtractElement(g->b, v, c32(g, i), "");
            LLVMValueRef lo = LLVMBuildAnd(g->b, byte, ci(g, g->t_i8, 0xF), "");
            LLVMValueRef hi = LLVMBuildLShr(g->b, byte, ci(g, g->t_i8, 4), "");
            reg_set(g, s->regs, s->roff + 2 * i, cvt(g, lo, DT_E2M1, s->regs->dt, RND_DEFAULT, s->loc));
            reg_set(g, s->regs, s->roff + 2 * i + 1, cvt(g, hi, DT_E2M1, s->regs->dt, RND_DEFAULT, s->loc));
        }
        return;
    }
    LLVMTypeRef et = mem_ty(g, b->dt);
    LLVMTypeRef vt = n == 1 ? et : LLVMVectorType(et, (unsigned)n);
    LLVMValueRef v = LLVMBuildLoad2(g->b, vt, p, "");
    int es = dtype_storage_bytes(b->dt);
    LLVMSetAlignment(v, (unsigned)(s->align > es ? s->align : es));
    DType md = b->dt == DT_BOOL ? DT_U8 : b->dt;
    for (int i = 0; i < n; i++) {
        LLVMValueRef x = n == 1 ? v : LLVMBuildExtractElement(g->b, v, c32(g, i), "");
        if ((md == DT_E4M3 || md == DT_E5M2) && (s->regs->dt == DT_F32 || s->regs->dt == DT_F16) && i + 1 < n && i % 2 == 0) {
            /* pairs through one cvt.f16x2 */
            LLVMValueRef y = LLVMBuildExtractElement(g->b, v, c32(g, i + 1), "");
            LLVMValueRef w = LLVMBuildOr(g->b, LLVMBuildZExt(g->b, x, g->t_i16, ""),
                                         LLVMBuildShl(g->b, LLVMBuildZExt(g->b, y, g->t_i16, ""), ci(g, g->t_i16, 8), ""), "");
            LLVMTypeRef v2h = LLVMVectorType(g->t_f16, 2);
            LLVMValueRef pair = call_intrinsic(g, md == DT_E4M3 ? "llvm.nvvm.e4m3x2.to.f16x2.rn" : "llvm.nvvm.e5m2x2.to.f16x2.rn",
                                               v2h, &g->t_i16, 1, &w);
            for (int j = 0; j < 2; j++) {
                LLVMValueRef h = LLVMBuildExtractElement(g->b, pair, c32(g, j), "");
                reg_set(g, s->regs, s->roff + i + j, s->regs->dt == DT_F16 ? h : LLVMBuildFPExt(g->b, h, g->t_f32, ""));
            }
            i++;
            continue;
        }
        if (b->dt == DT_BOOL) {
            x = LLVMBuildICmp(g->b, LLVMIntNE, x, ci(g, g->t_i8, 0), "");
            md = DT_BOOL;
        }
        reg_set(g, s->regs, s->roff + i, cvt(g, x, md, s->regs->dt, RND_DEFAULT, s->loc));
    }
}

/* the e2m1 codes of registers off .. off + 7 as one 32-bit word (element e at bits 4e): f32
 * registers one code at a time, shifted into place (one shift-or per element instead of byte
 * assembly); f16 registers two per f16x2 encoding, elements e and e + 4, whose codes land at
 * bits 4e and 4e + 16 once shifted by 4e */
static LLVMValueRef e2m1_code_word(CG *g, TBuf *regs, int off)
{
    bool half = regs->dt == DT_F16;
    LLVMValueRef acc = NULL;
    for (int e = 0; e < (half ? 4 : 8); e++) {
        LLVMValueRef c = half ? f16x2_to_e2m1_codes(g, f16_pair(g, reg_get(g, regs, off + e), reg_get(g, regs, off + e + 4)))
                              : f32_to_e2m1_code32(g, reg_get(g, regs, off + e));
        acc = e == 0 ? c : LLVMBuildOr(g->b, acc, LLVMBuildShl(g->b, c, c32(g, 4 * e), ""), "");
    }
    return acc;
}

static void cg_vstore(CG *g, TStmt *s)
{
    TBuf *b = s->buf;
    LLVMValueRef lin = linear_index(g, b, s->idx);
    LLVMValueRef p = elem_addr(g, b, lin);
    int n = s->vec;
    if (b->dt == DT_E2M1 && g->k->sm < 100 && (s->regs->dt == DT_F32 || s->regs->dt == DT_F16) && n % 8 == 0) {
        /* software encoding straight into 32-bit words of eight codes */
        int words = n / 8;
        LLVMTypeRef vt = words == 1 ? g->t_i32 : LLVMVectorType(g->t_i32, (unsigned)words);
        LLVMValueRef v = LLVMGetUndef(vt);
        for (int w = 0; w < words; w++) {
            LLVMValueRef acc = e2m1_code_word(g, s->regs, s->roff + 8 * w);
            v = words == 1 ? acc : LLVMBuildInsertElement(g->b, v, acc, c32(g, w), "");
        }
        LLVMValueRef st = LLVMBuildStore(g->b, v, p);
        LLVMSetAlignment(st, (unsigned)(s->align > 1 ? s->align : 1));
        return;
    }
    if (b->dt == DT_E2M1) {
        int bytes = n / 2;
        LLVMTypeRef vt = bytes == 1 ? g->t_i8 : LLVMVectorType(g->t_i8, (unsigned)bytes);
        LLVMValueRef v = LLVMGetUndef(vt);
        for (int i = 0; i < bytes; i++) {
            LLVMValueRef lo, hi;
            if (g->k->sm >= 100 && (s->regs->dt == DT_F32 || s->regs->dt == DT_F16)) {
                LLVMValueRef args[2] = {to_f32(g, reg_get(g, s->regs, s->roff + 2 * i + 1), s->regs->dt),
                                        to_f32(g, reg_get(g, s->regs, s->roff + 2 * i), s->regs->dt)};
                LLVMTypeRef at[2] = {g->t_f32, g->t_f32};
                LLVMValueRef pair = call_intrinsic(g, "llvm.nvvm.ff.to.e2m1x2.rn.satfinite", g->t_i16, at, 2, args);
                LLVMValueRef byte = LLVMBuildTrunc(g->b, pair, g->t_i8, "");
                v = bytes == 1 ? byte : LLVMBuildInsertElement(g->b, v, byte, c32(g, i), "");
                continue;
            }
            if (s->regs->dt == DT_F16) { /* sm_90a: one f16x2 encoding per byte */
                LLVMValueRef h2 = f16_pair(g, reg_get(g, s->regs, s->roff + 2 * i), reg_get(g, s->regs, s->roff + 2 * i + 1));
                LLVMValueRef c = f16x2_to_e2m1_codes(g, h2);
                LLVMValueRef w = LLVMBuildOr(g->b, c, LLVMBuildLShr(g->b, c, c32(g, 12), ""), "");
                LLVMValueRef byte = LLVMBuildTrunc(g->b, w, g->t_i8, "");
                v = bytes == 1 ? byte : LLVMBuildInsertElement(g->b, v, byte, c32(g, i), "");
                continue;
            }
            lo = cvt(g, reg_get(g, s->regs, s->roff + 2 * i), s->regs->dt, DT_E2M1, RND_DEFAULT, s->loc);
            hi = cvt(g, reg_get(g, s->regs, s->roff + 2 * i + 1), s->regs->dt, DT_E2M1, RND_DEFAULT, s->loc);
            LLVMValueRef byte = LLVMBuildOr(g->b, LLVMBuildAnd(g->b, lo, ci(g, g->t_i8, 0xF), ""),
                                            LLVMBuildShl(g->b, hi, ci(g, g->t_i8, 4), ""), "");
            v = bytes == 1 ? byte : LLVMBuildInsertElement(g->b, v, byte, c32(g, i), "");
        }
        LLVMValueRef st = LLVMBuildStore(g->b, v, p);
        LLVMSetAlignment(st, (unsigned)(s->align > 1 ? s->align : 1));
        return;
    }
    LLVMTypeRef et = mem_ty(g, b->dt);
    LLVMValueRef v;
    if ((b->dt == DT_E4M3 || b->dt == DT_E5M2) && s->regs->dt == DT_F32 && n % 2 == 0) {
        /* pairs through one cvt.rn.satfinite.e4m3x2.f32: element 2i in the low byte */
        LLVMTypeRef v16 = LLVMVectorType(g->t_i16, (unsigned)(n / 2));
        LLVMValueRef w = LLVMGetUndef(v16);
        for (int i = 0; i < n; i += 2) {
            LLVMValueRef args[2] = {reg_get(g, s->regs, s->roff + i + 1), reg_get(g, s->regs, s->roff + i)};
            LLVMTypeRef at[2] = {g->t_f32, g->t_f32};
            LLVMValueRef pair = call_intrinsic(g, b->dt == DT_E4M3 ? "llvm.nvvm.ff.to.e4m3x2.rn" : "llvm.nvvm.ff.to.e5m2x2.rn",
                                               g->t_i16, at, 2, args);
            w = LLVMBuildInsertElement(g->b, w, pair, c32(g, i / 2), "");
        }
        v = LLVMBuildBitCast(g->b, w, LLVMVectorType(g->t_i8, (unsigned)n), "");
        if (n == 2)
            v = LLVMBuildBitCast(g->b, w, LLVMVectorType(g->t_i8, 2), "");
    } else {
        LLVMTypeRef vt = n == 1 ? et : LLVMVectorType(et, (unsigned)n);
        v = LLVMGetUndef(vt);
        for (int i = 0; i < n; i++) {
            LLVMValueRef x = cvt(g, reg_get(g, s->regs, s->roff + i), s->regs->dt, b->dt, RND_DEFAULT, s->loc);
            if (b->dt == DT_BOOL)
                x = LLVMBuildZExt(g->b, x, g->t_i8, "");
            v = n == 1 ? x : LLVMBuildInsertElement(g->b, v, x, c32(g, i), "");
        }
    }
    LLVMValueRef st = LLVMBuildStore(g->b, v, p);
    int es = dtype_storage_bytes(b->dt);
    LLVMSetAlignment(st, (unsigned)(s->align > es ? s->align : es));
}

/* ---------------- expressions ---------------- */

static LLVMValueRef special(CG *g, Special sp)
{
    static const char *names[] = {
        "llvm.nvvm.read.ptx.sreg.tid.x", "llvm.nvvm.read.ptx.sreg.tid.y", "llvm.nvvm.read.ptx.sreg.tid.z",
        "llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y", "llvm.nvvm.read.ptx.sreg.ctaid.z",
        "llvm.nvvm.read.ptx.sreg.ntid.x", "llvm.nvvm.read.ptx.sreg.ntid.y", "llvm.nvvm.read.ptx.sreg.ntid.z",
        "llvm.nvvm.read.ptx.sreg.nctaid.x", "llvm.nvvm.read.ptx.sreg.nctaid.y", "llvm.nvvm.read.ptx.sreg.nctaid.z"};
    if (sp == SP_LANE)
        return LLVMBuildAnd(g->b, special(g, SP_TID_X), c32(g, 31), "");
    if (sp == SP_WARP)
        return LLVMBuildLShr(g->b, special(g, SP_TID_X), c32(g, 5), "");
    return call_intrinsic(g, names[sp], g->t_i32, NULL, 0, NULL);
}

/* CUDA's accurate expf (spec §0.3), so that exp() is bit-identical to torch.exp */
static LLVMValueRef expf_accurate(CG *g, LLVMValueRef x)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef f = g->t_f32;
    LLVMValueRef a1[3] = {x, cf32_bits(g, 0x3BBB989D), cf32(g, 0.5f)};
    LLVMValueRef t = call_overloaded(g, "llvm.fma", &f, 1, a1, 3);
    t = call_intrinsic(g, "llvm.nvvm.saturate.f", f, &f, 1, &t);
    LLVMValueRef a2[3] = {t, cf32(g, 252.0f), cf32(g, 12582913.0f)};
    LLVMTypeRef ft3[3] = {f, f, f};
    LLVMValueRef j = call_intrinsic(g, "llvm.nvvm.fma.rm.f", f, ft3, 3, a2);
    LLVMValueRef k = LLVMBuildFSub(b, j, cf32(g, 12583039.0f), "");
    LLVMValueRef a3[3] = {x, cf32_bits(g, 0x3FB8AA3B), LLVMBuildFNeg(b, k, "")};
    LLVMValueRef r = call_overloaded(g, "llvm.fma", &f, 1, a3, 3);
    LLVMValueRef a4[3] = {x, cf32_bits(g, 0x32A57060), r};
    r = call_overloaded(g, "llvm.fma", &f, 1, a4, 3);
    LLVMValueRef p = call_overloaded(g, "llvm.nvvm.ex2.approx.ftz", &f, 1, &r, 1);
    LLVMValueRef sb = LLVMBuildShl(b, LLVMBuildBitCast(b, j, g->t_i32, ""), c32(g, 23), "");
    LLVMValueRef s = LLVMBuildBitCast(b, sb, f, "");
    return LLVMBuildFMul(b, p, s, "");
}

/* n / d for the denominators of sigmoid and silu, d = 1 + exp(-x) in [1, inf] (or NaN), with the
 * result of the IEEE division (div.rn.f32) but without its branch: ptxas puts every div.rn in a
 * region of its own (a range check and a call of the slow path), which keeps it from interleaving
 * the divisions of a thread's elements. Here the fast path runs always: a refined reciprocal, a
 * quotient and one correction with the exact residual. Denominators from 2^64 up are scaled by
 * 2^-64 first (so that the reciprocal stays normal), with the numerator: n is 1 or x, and x lies
 * in [-89, -44] there, so both products are exact. Where the residual is zero or NaN (exact
 * quotients, n = +-0 or +-inf, d = inf) the first quotient is already the answer, signed zeros
 * included. Checked against div.rn on all 2^32 inputs x on an H200 (tests/gpu/test_math_exhaustive.py).
 * The CPU emulator divides (the same numbers, by that check). */
static LLVMValueRef div_by_one_plus_exp(CG *g, LLVMValueRef n, LLVMValueRef d)
{
    LLVMBuilderRef b = g->b;
    if (g->k->host)
        return LLVMBuildFDiv(b, n, d, "");
    LLVMTypeRef f = g->t_f32;
    LLVMValueRef big = LLVMBuildFCmp(b, LLVMRealOGE, d, cf32_bits(g, 0x5F800000u) /* 2^64 */, "");
    LLVMValueRef sc = LLVMBuildSelect(b, big, cf32_bits(g, 0x1F800000u) /* 2^-64 */, cf32(g, 1.0f), "");
    LLVMValueRef ds = LLVMBuildFMul(b, d, sc, "");
    LLVMValueRef ns = LLVMBuildFMul(b, n, sc, "");
    LLVMValueRef r0 = call_intrinsic(g, "llvm.nvvm.rcp.approx.ftz.f", f, &f, 1, &ds);
    /* d = inf: rcp gives 0, and the refinement must keep it 0 (inf * 0 would be NaN) */
    LLVMValueRef m[2] = {ds, cf32_bits(g, 0x7F7FFFFFu)};
    LLVMValueRef dc = call_overloaded(g, "llvm.minnum", &f, 1, m, 2);
    LLVMValueRef a1[3] = {LLVMBuildFNeg(b, dc, ""), r0, cf32(g, 1.0f)};
    LLVMValueRef t = call_overloaded(g, "llvm.fma", &f, 1, a1, 3);
    LLVMValueRef a2[3] = {r0, t, r0};
    LLVMValueRef r = call_overloaded(g, "llvm.fma", &f, 1, a2, 3);
    LLVMValueRef q0 = LLVMBuildFMul(b, ns, r, "");
    LLVMValueRef a3[3] = {LLVMBuildFNeg(b, ds, ""), q0, ns};
    LLVMValueRef res = call_overloaded(g, "llvm.fma", &f, 1, a3, 3);
    LLVMValueRef a4[3] = {r, res, q0};
    LLVMValueRef q1 = call_overloaded(g, "llvm.fma", &f, 1, a4, 3);
    return LLVMBuildSelect(b, LLVMBuildFCmp(b, LLVMRealONE, res, cf32(g, 0.0f), ""), q1, q0, "");
}

/* CUDA's log1pf (libdevice __nv_log1pf without flush to zero), step for step, so that log1p() is
 * bit-identical to torch.log1p on the GPU: the argument is split as 1 + a = 2^i * (1 + m) with
 * the exponent taken from a round-toward-zero sum, a degree-9 polynomial in m, then i * ln2.
 * Non-finite sums (a = inf or NaN) take the special-value path below, whatever the exponent. */
static LLVMValueRef log1pf_accurate(CG *g, LLVMValueRef a)
{
    LLVMBuilderRef b = g->b;
    LLVMTypeRef f = g->t_f32;
    /* a + 1 rounded toward zero: the nearest sum, one ulp back toward zero when its exact error
     * (TwoSum) shows that it was rounded away from zero (plain IEEE operations, which the CPU
     * emulator runs too; the same value as add.rz.f32) */
    LLVMValueRef one = cf32(g, 1.0f);
    LLVMValueRef s = LLVMBuildFAdd(b, a, one, "");
    LLVMValueRef bb = LLVMBuildFSub(b, s, a, "");
    LLVMValueRef err = LLVMBuildFAdd(b, LLVMBuildFSub(b, a, LLVMBuildFSub(b, s, bb, ""), ""), LLVMBuildFSub(b, one, bb, ""), "");
    LLVMValueRef away = LLVMBuildAnd(b, LLVMBuildFCmp(b, LLVMRealONE, err, cf32(g, 0.0f), ""),
                                     LLVMBuildXor(b, LLVMBuildFCmp(b, LLVMRealOLT, err, cf32(g, 0.0f), ""),
                                                  LLVMBuildFCmp(b, LLVMRealOLT, s, cf32(g, 0.0f), ""), ""), "");
    LLVMValueRef sb = LLVMBuildBitCast(b, s, g->t_i32, "");
    LLVMValueRef ub = LLVMBuildSelect(b, away, LLVMBuildSub(b, sb, c32(g, 1), ""), sb, "");
    LLVMValueRef e = LLVMBuildAnd(b, LLVMBuildSub(b, ub, c32(g, 0x3F400000), ""), c32(g, (int32_t)0xFF800000u), "");
    LLVMValueRef ab = LLVMBuildBitCast(b, a, g->t_i32, "");
    LLVMValueRef m = LLVMBuildBitCast(b, LLVMBuildSub(b, ab, e, ""), f, "");
    LLVMValueRef sc = LLVMBuildBitCast(b, LLVMBuildSub(b, c32(g, 0x40800000), e, ""), f, "");
    LLVMValueRef a1[3] = {cf32(g, 0.25f), sc, cf32(g, -1.0f)};
    m = LLVMBuildFAdd(b, m, call_overloaded(g, "llvm.fma", &f, 1, a1, 3), "");
    LLVMValueRef ie = LLVMBuildFMul(b, LLVMBuildSIToFP(b, e, f, ""), cf32_bits(g, 0x34000000), "");
    static const uint32_t coef[] = {0xBD39BF78, 0x3DD80012, 0xBE0778E0, 0x3E146475, 0xBE2A68DD,
                                    0x3E4CAF9E, 0xBE800042, 0x3EAAAAE6, 0xBF000000};
    LLVMValueRef p = cf32_bits(g, coef[0]);
    for (int i = 1; i < 9; i++) {
        LLVMValueRef ar[3] = {p, m, cf32_bits(g, coef[i])};
        p = call_overloaded(g, "llvm.fma", &f, 1, ar, 3);
    }
    LLVMValueRef q = LLVMBuildFMul(b, p, m, "");
    LLVMValueRef a2[3] = {q, m, m};
    q = call_overloaded(g, "llvm.fma", &f, 1, a2, 3);
    LLVMValueRef a3[3] = {ie, cf32_bits(g, 0x3F317218), q};
    LLVMValueRef r = call_overloaded(g, "llvm.fma", &f, 1, a3, 3);
    /* +inf, NaN and a < -1 go through fma(a, inf, inf) (inf, NaN, NaN); -0 stays -0 */
    LLVMValueRef special = LLVMBuildICmp(b, LLVMIntUGE, ab, c32(g, 0x7F800000), "");
    LLVMValueRef big = LLVMBuildICmp(b, LLVMIntSGT, ab, c32(g, (int32_t)0xBF800000u), "");
    LLVMValueRef a4[3] = {a, cf32_bits(g, 0x7F800000), cf32_bits(g, 0x7F800000)};
    LLVMValueRef rs = LLVMBuildSelect(b, big, call_overloaded(g, "llvm.fma", &f, 1, a4, 3), r, "");
    LLVMValueRef zero = LLVMBuildFCmp(b, LLVMRealOEQ, a, cf32(g, 0.0f), "");
    rs = LLVMBuildSelect(b, zero, cf32_bits(g, 0x80000000), rs, "");
    return LLVMBuildSelect(b, special, rs, r, "");
}

static LLVMValueRef shfl(CG *g, const char *mode, LLVMValueRef v, DType dt, LLVMValueRef lane, int width)
{
    /* 32-bit pieces through shfl.sync; 64-bit values as two halves */
    char name[64];
    snprintf(name, sizeof name, "llvm.nvvm.shfl.sync.%s.i32", mode);
    int clampbits = (!strcmp(mode, "up") ? 0 : 0x1f) | ((32 - width) << 8);
    LLVMTypeRef at[4] = {g->t_i32, g->t_i32, g->t_i32, g->t_i32};
    if (dtype_bits(dt) == 64) {
        LLVMValueRef w = dtype_is_float(dt) ? LLVMBuildBitCast(g->b, v, g->t_i64, "") : v;
        LLVMValueRef lo = LLVMBuildTrunc(g->b, w, g->t_i32, "");
        LLVMValueRef hi = LLVMBuildTrunc(g->b, LLVMBuildLShr(g->b, w, ci(g, g->t_i64, 32), ""), g->t_i32, "");
        LLVMValueRef a1[4] = {c32(g, -1), lo, lane, c32(g, clampbits)};
        LLVMValueRef a2[4] = {c32(g, -1), hi, lane, c32(g, clampbits)};
        lo = call_intrinsic(g, name, g->t_i32, at, 4, a1);
        hi = call_intrinsic(g, name, g->t_i32, at, 4, a2);
        LLVMValueRef r = LLVMBuildOr(g->b, LLVMBuildZExt(g->b, lo, g->t_i64, ""),
                                     LLVMBuildShl(g->b, LLVMBuildZExt(g->b, hi, g->t_i64, ""), ci(g, g->t_i64, 32), ""), "");
        return dtype_is_float(dt) ? LLVMBuildBitCast(g->b, r, g->t_f64, "") : r;
    }
    LLVMValueRef w = dtype_is_float(dt) ? LLVMBuildBitCast(g->b, v, g->t_i32, "") : v;
    LLVMValueRef a[4] = {c32(g, -1), w, lane, c32(g, clampbits)};
    LLVMValueRef r = call_intrinsic(g, name, g->t_i32, at, 4, a);
    return dtype_is_float(dt) ? LLVMBuildBitCast(g->b, r, g->t_f32, "") : r;
}

static LLVMValueRef minmax(CG *g, bool is_min, LLVMValueRef a, LLVMValueRef b, DType dt)
{
    if (dtype_is_float(dt)) {
        LLVMTypeRef t = LLVMTypeOf(a);
        LLVMValueRef args[2] = {a, b};
        return call_overloaded(g, is_min ? "llvm.minnum" : "llvm.maxnum", &t, 1, args, 2);
    }
    bool s = dtype_is_signed(dt);
    LLVMIntPredicate p = is_min ? (s ? LLVMIntSLT : LLVMIntULT) : (s ? LLVMIntSGT : LLVMIntUGT);
    return LLVMBuildSelect(g->b, LLVMBuildICmp(g->b, p, a, b, ""), a, b, "");
}

static LLVMValueRef warp_reduce(CG *g, int op, LLVMValueRef v, DType dt)
{
    for (int off = 16; off >= 1; off /= 2) {
        LLVMValueRef o = shfl(g, "bfly", v, dt, c32(g, off), 32);
        if (op == BI_WARP_SUM)
            v = dtype_is_float(dt) ? LLVMBuildFAdd(g->b, v, o, "") : LLVMBuildAdd(g->b, v, o, "");
        else
            v = minmax(g, op == BI_WARP_MIN, v, o, dt);
    }
    return v;
}

/* a NUL-terminated string constant in global memory, as a generic pointer */
static LLVMValueRef cstring(CG *g, const char *s, const char *name)
{
    size_t n = strlen(s) + 1;
    LLVMValueRef init = LLVMConstStringInContext2(g->ctx, s, n - 1, 0);
    LLVMValueRef gv = LLVMAddGlobalInAddressSpace(g->mod, LLVMArrayType2(g->t_i8, n), name, 1);
    LLVMSetInitializer(gv, init);
    LLVMSetGlobalConstant(gv, 1);
    LLVMSetLinkage(gv, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
    LLVMSetAlignment(gv, 1);
    return LLVMConstAddrSpaceCast(gv, g->t_ptr0);
}

/* printf through the PTX system call vprintf(format, args): the arguments are packed into a
 * local buffer, each at an offset aligned to its size, after C's default promotions (integers
 * narrower than 32 bits to i32, every float to f64), as the driver's formatter reads them */
static void cg_printf(CG *g, TExpr *e, LLVMValueRef *a, int n)
{
    LLVMBuilderRef b = g->b;
    LLVMValueRef vals[32];
    int off[32], size = 0;
    for (int i = 0; i < n; i++) {
        DType dt = e->args[i]->dt;
        LLVMValueRef v = a[i];
        if (dtype_is_float(dt))
            v = dt == DT_F64 ? v : LLVMBuildFPExt(b, to_f32(g, v, dt), g->t_f64, "");
        else if (dt == DT_BOOL)
            v = LLVMBuildZExt(b, v, g->t_i32, "");
        else if (dtype_bits(dt) < 32)
            v = dtype_is_signed(dt) ? LLVMBuildSExt(b, v, g->t_i32, "") : LLVMBuildZExt(b, v, g->t_i32, "");
        int sz = LLVMTypeOf(v) == g->t_i32 ? 4 : 8;
        size = (size + sz - 1) / sz * sz;
        off[i] = size;
        size += sz;
        vals[i] = v;
    }
    LLVMValueRef buf = LLVMConstPointerNull(g->t_ptr0);
    if (n > 0) {
        LLVMBuilderRef eb = LLVMCreateBuilderInContext(g->ctx);
        LLVMPositionBuilderBefore(eb, LLVMGetFirstInstruction(g->entry));
        buf = LLVMBuildAlloca(eb, LLVMArrayType2(g->t_i8, (uint64_t)size), "printf.args");
        LLVMSetAlignment(buf, 8);
        LLVMDisposeBuilder(eb);
        for (int i = 0; i < n; i++) {
            LLVMValueRef p = LLVMBuildGEP2(b, g->t_i8, buf, (LLVMValueRef[]){c32(g, off[i])}, 1, "");
            LLVMSetAlignment(LLVMBuildStore(b, vals[i], p), off[i] % 8 == 0 ? 8 : 4);
        }
    }
    LLVMValueRef args[2] = {cstring(g, e->str ? e->str : "", "printf.fmt"), buf};
    LLVMTypeRef at[2] = {g->t_ptr0, g->t_ptr0};
    call_intrinsic(g, "vprintf", g->t_i32, at, 2, args);
}

/* a failed assert: the PTX system call __assertfail(message, file, line, function, char size)
 * prints the message with its source location, then the kernel traps */
static void cg_assert_fail(CG *g, TExpr *e)
{
    DiagEngine *d = g->k->diag;
    const char *file = "?";
    int line = 0, col = 0;
    StrBuf msg = {0};
    if (e->loc.file >= 0 && e->loc.file < d->nfiles) {
        SourceFile *f = d->files[e->loc.file];
        file = f->path;
        diag_line_col(d, e->loc, &line, &col);
        /* without a message, the source text of the call, `assert(cond)`, says what failed */
        if (!e->str && e->loc.end > e->loc.begin && e->loc.end <= f->len)
            sb_append(&msg, f->text + e->loc.begin, e->loc.end - e->loc.begin);
    }
    if (e->str)
        sb_puts(&msg, e->str);
    if (!msg.len)
        sb_puts(&msg, "assert");
    LLVMValueRef args[5] = {cstring(g, msg.data, "assert.msg"), cstring(g, file, "assert.file"), c32(g, line),
                            cstring(g, g->k->key, "assert.func"), ci(g, g->t_i64, 1)};
    LLVMTypeRef at[5] = {g->t_ptr0, g->t_ptr0, g->t_i32, g->t_ptr0, g->t_i64};
    call_intrinsic(g, "__assertfail", g->t_void, at, 5, args);
    sb_free(&msg);
}

/* address of the element an atomic updates */
static LLVMValueRef atomic_addr(CG *g, TExpr *target)
{
    TBuf *b = target->buf;
    LLVMValueRef lin = linear_index(g, b, target->args);
    return elem_addr(g, b, lin);
}

static LLVMValueRef cg_call(CG *g, TExpr *e)
{
    LLVMBuilderRef b = g->b;
    int n = e->nargs;
    LLVMValueRef a[32];
    if (e->builtin == TI_ADDR) /* an address for an instruction operand, not a load */
        return elem_addr(g, e->args[0]->buf, linear_index(g, e->args[0]->buf, e->args[0]->args));
    bool atomic = e->builtin >= BI_ATOMIC_ADD && e->builtin <= BI_ATOMIC_CAS;
    for (int i = atomic ? 1 : 0; i < n && i < 32; i++)
        a[i] = cg_expr(g, e->args[i]);
    debug_loc(g, e->loc);
    DType dt = e->dt;
    DType at = n > 0 ? e->args[n > 1 ? 1 : 0]->dt : DT_NONE;
    if (n > 0)
        at = e->args[0]->dt;
    LLVMTypeRef t = n > 0 ? LLVMTypeOf(a[atomic ? (n > 1 ? 1 : 0) : 0]) : g->t_i32;
    if (e->builtin > TI_FIRST) {
        CgxEnv env = {g->ctx, g->mod, g->b, g->k->sm};
        LLVMValueRef v = cgx_value(&env, e, a);
        if (v)
            return v;
    }
    switch (e->builtin) {
    case BI_EXP:
        if (at == DT_F32)
            return expf_accurate(g, a[0]);
        break;
    case BI_EXP2:
        if (at == DT_F32)
            return call_overloaded(g, "llvm.nvvm.ex2.approx", &t, 1, a, 1);
        break;
    case BI_LOG1P:
        if (at == DT_F32)
            return log1pf_accurate(g, a[0]);
        break;
    case BI_SQRT: return call_overloaded(g, "llvm.sqrt", &t, 1, a, 1);
    case BI_RSQRT:
        if (at == DT_F32)
            return call_intrinsic(g, "llvm.nvvm.rsqrt.approx.f", g->t_f32, &g->t_f32, 1, a);
        break;
    case BI_SIGMOID:
    case BI_SILU:
        if (at == DT_F32) {
            LLVMValueRef ex = expf_accurate(g, LLVMBuildFNeg(b, a[0], ""));
            LLVMValueRef d = LLVMBuildFAdd(b, cf32(g, 1.0f), ex, "");
            return div_by_one_plus_exp(g, e->builtin == BI_SILU ? a[0] : cf32(g, 1.0f), d);
        }
        break;
    case BI_ABS:
        if (dtype_is_float(at))
            return call_overloaded(g, "llvm.fabs", &t, 1, a, 1);
        return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, a[0], ci(g, t, 0), ""), LLVMBuildSub(b, ci(g, t, 0), a[0], ""),
                               a[0], "");
    case BI_MIN:
    case BI_MAX: return minmax(g, e->builtin == BI_MIN, a[0], a[1], at);
    case BI_CLAMP: return minmax(g, true, minmax(g, false, a[0], a[1], at), a[2], at);
    case BI_FMA: return call_overloaded(g, "llvm.fma", &t, 1, a, 3);
    case BI_SELECT: return LLVMBuildSelect(b, a[0], a[1], a[2], "");
    case BI_FLOOR: return call_overloaded(g, "llvm.floor", &t, 1, a, 1);
    case BI_CEIL: return call_overloaded(g, "llvm.ceil", &t, 1, a, 1);
    case BI_TRUNC: return call_overloaded(g, "llvm.trunc", &t, 1, a, 1);
    case BI_RINT: return call_overloaded(g, "llvm.rint", &t, 1, a, 1);
    case BI_COPYSIGN: return call_overloaded(g, "llvm.copysign", &t, 1, a, 2);
    case BI_ISFINITE: {
        LLVMValueRef ab = call_overloaded(g, "llvm.fabs", &t, 1, a, 1);
        return LLVMBuildFCmp(b, LLVMRealOLT, ab, LLVMConstReal(t, INFINITY), "");
    }
    case BI_ISNAN: return LLVMBuildFCmp(b, LLVMRealUNO, a[0], a[0], "");
    case BI_CDIV:
    case BI_ALIGN:
    case BI_FLOORDIV:
    case BI_FLOORMOD: {
        bool s = dtype_is_signed(at);
        LLVMValueRef zero = ci(g, t, 0), one = ci(g, t, 1);
        LLVMValueRef den = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, a[1], zero, ""), one, a[1], "");
        LLVMValueRef q = s ? LLVMBuildSDiv(b, a[0], den, "") : LLVMBuildUDiv(b, a[0], den, "");
        LLVMValueRef r = s ? LLVMBuildSRem(b, a[0], den, "") : LLVMBuildURem(b, a[0], den, "");
        LLVMValueRef rnz = LLVMBuildICmp(b, LLVMIntNE, r, zero, "");
        if (e->builtin == BI_CDIV || e->builtin == BI_ALIGN) {
            LLVMValueRef same = s ? LLVMBuildICmp(b, LLVMIntEQ, LLVMBuildICmp(b, LLVMIntSGT, r, zero, ""),
                                                  LLVMBuildICmp(b, LLVMIntSGT, den, zero, ""), "")
                                  : ci(g, g->t_i1, 1);
            LLVMValueRef inc = LLVMBuildZExt(b, LLVMBuildAnd(b, rnz, same, ""), t, "");
            LLVMValueRef c = LLVMBuildAdd(b, q, inc, "");
            return e->builtin == BI_CDIV ? c : LLVMBuildMul(b, c, den, "");
        }
        LLVMValueRef diff = s ? LLVMBuildICmp(b, LLVMIntNE, LLVMBuildICmp(b, LLVMIntSLT, r, zero, ""),
                                              LLVMBuildICmp(b, LLVMIntSLT, den, zero, ""), "")
                              : ci(g, g->t_i1, 0);
        LLVMValueRef adj = LLVMBuildAnd(b, rnz, diff, "");
        if (e->builtin == BI_FLOORDIV)
            return LLVMBuildSub(b, q, LLVMBuildZExt(b, adj, t, ""), "");
        return LLVMBuildAdd(b, r, LLVMBuildSelect(b, adj, den, zero, ""), "");
    }
    case BI_POPC: {
        LLVMValueRef p = call_overloaded(g, "llvm.ctpop", &t, 1, a, 1);
        return dtype_bits(at) == 64 ? LLVMBuildTrunc(b, p, g->t_i32, "") : p;
    }
    case BI_CLZ: {
        LLVMValueRef args[2] = {a[0], ci(g, g->t_i1, 0)};
        LLVMValueRef p = call_overloaded(g, "llvm.ctlz", &t, 1, args, 2);
        return dtype_bits(at) == 64 ? LLVMBuildTrunc(b, p, g->t_i32, "") : p;
    }
    case BI_SYNC_THREADS: {
        LLVMValueRef z = c32(g, 0);
        call_intrinsic(g, "llvm.nvvm.barrier.cta.sync.aligned.all", g->t_void, &g->t_i32, 1, &z);
        return NULL;
    }
    case BI_SYNC_WARP: {
        LLVMValueRef m = n ? a[0] : c32(g, -1);
        call_intrinsic(g, "llvm.nvvm.bar.warp.sync", g->t_void, &g->t_i32, 1, &m);
        return NULL;
    }
    case BI_SHFL:
    case BI_SHFL_XOR:
    case BI_SHFL_UP:
    case BI_SHFL_DOWN: {
        static const char *modes[] = {"idx", "bfly", "up", "down"};
        int w = 32;
        int64_t wv;
        if (n == 3 && tx_is_const(e->args[2], &wv))
            w = (int)wv;
        if (n == 3 && !tx_is_const(e->args[2], &wv)) {
            cg_error(g, e->loc, "the width of a shuffle must be a compile-time constant");
            return LLVMGetUndef(t);
        }
        return shfl(g, modes[e->builtin - BI_SHFL], a[0], at, a[1], w);
    }
    case BI_WARP_SUM:
    case BI_WARP_MAX:
    case BI_WARP_MIN: return warp_reduce(g, e->builtin, a[0], at);
    case BI_BALLOT: {
        LLVMValueRef args[2] = {c32(g, -1), a[0]};
        LLVMTypeRef ts[2] = {g->t_i32, g->t_i1};
        return call_intrinsic(g, "llvm.nvvm.vote.ballot.sync", g->t_i32, ts, 2, args);
    }
    case BI_MATCH_ANY: {
        LLVMValueRef args[2] = {c32(g, -1), a[0]};
        bool w64 = dtype_bits(at) == 64;
        LLVMTypeRef ts[2] = {g->t_i32, w64 ? g->t_i64 : g->t_i32};
        return call_intrinsic(g, w64 ? "llvm.nvvm.match.any.sync.i64" : "llvm.nvvm.match.any.sync.i32", g->t_i32, ts, 2, args);
    }
    case BI_PDL_WAIT: call_intrinsic(g, "llvm.nvvm.griddepcontrol.wait", g->t_void, NULL, 0, NULL); return NULL;
    case BI_PDL_TRIGGER: call_intrinsic(g, "llvm.nvvm.griddepcontrol.launch.dependents", g->t_void, NULL, 0, NULL); return NULL;
    case BI_PRINTF: cg_printf(g, e, a, n); return NULL;
    case BI_TRAP: call_intrinsic(g, "llvm.trap", g->t_void, NULL, 0, NULL); return NULL;
    case BI_ASSERT: {
        LLVMBasicBlockRef fail = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "assert.fail");
        LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "assert.ok");
        LLVMBuildCondBr(b, a[0], cont, fail);
        LLVMPositionBuilderAtEnd(b, fail);
        cg_assert_fail(g, e);
        call_intrinsic(g, "llvm.trap", g->t_void, NULL, 0, NULL);
        LLVMBuildUnreachable(b);
        LLVMPositionBuilderAtEnd(b, cont);
        return NULL;
    }
    case BI_ATOMIC_ADD:
    case BI_ATOMIC_MAX:
    case BI_ATOMIC_MIN:
    case BI_ATOMIC_AND:
    case BI_ATOMIC_OR:
    case BI_ATOMIC_XOR:
    case BI_ATOMIC_EXCH: {
        LLVMValueRef p = atomic_addr(g, e->args[0]);
        bool fl = dtype_is_float(dt), s = dtype_is_signed(dt);
        LLVMAtomicRMWBinOp op;
        switch (e->builtin) {
        case BI_ATOMIC_ADD: op = fl ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd; break;
        case BI_ATOMIC_MAX: op = s ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax; break;
        case BI_ATOMIC_MIN: op = s ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin; break;
        case BI_ATOMIC_AND: op = LLVMAtomicRMWBinOpAnd; break;
        case BI_ATOMIC_OR: op = LLVMAtomicRMWBinOpOr; break;
        case BI_ATOMIC_XOR: op = LLVMAtomicRMWBinOpXor; break;
        default: op = LLVMAtomicRMWBinOpXchg; break;
        }
        return LLVMBuildAtomicRMW(b, op, p, a[1], LLVMAtomicOrderingMonotonic, 0);
    }
    case BI_ATOMIC_CAS: {
        LLVMValueRef p = atomic_addr(g, e->args[0]);
        LLVMValueRef r = LLVMBuildAtomicCmpXchg(b, p, a[1], a[2], LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, 0);
        return LLVMBuildExtractValue(b, r, 0, "");
    }
    default: break;
    }
    char msg[160];
    snprintf(msg, sizeof msg, "'%s' is not supported by the code generator yet%s",
             e->builtin > 0 && e->builtin < BI_COUNT ? builtin_info((BuiltinId)e->builtin)->name : "this operation",
             dt == DT_F64 ? " for f64" : "");
    cg_error(g, e->loc, msg);
    return dt == DT_NONE ? NULL : LLVMGetUndef(ty_of(g, dt));
}

static bool may_trap(const TExpr *e)
{
    if (!e)
        return false;
    if (e->kind == TX_LOAD || e->kind == TX_CALL)
        return true;
    return may_trap(e->a) || may_trap(e->b) || may_trap(e->c);
}

static LLVMValueRef cg_expr(CG *g, TExpr *e)
{
    LLVMBuilderRef b = g->b;
    switch (e->kind) {
    case TX_CONST:
        if (dtype_is_float(e->dt) && e->dt != DT_E4M3 && e->dt != DT_E5M2 && e->dt != DT_E2M1)
            return LLVMConstReal(ty_of(g, e->dt), e->fval);
        return ci(g, ty_of(g, e->dt), e->ival);
    case TX_VAR:
        if (!e->var->mutable_ && e->var->cg_val)
            return e->var->cg_val; /* an immutable variable is its SSA value */
        return LLVMBuildLoad2(b, ty_of(g, e->dt), var_slot(g, e->var), "");
    case TX_PARAM: return g->scalar[e->param];
    case TX_DIM: return g->tensor_dim[e->param][e->axis];
    case TX_LEN: return g->list_len[e->param];
    case TX_STRIDE: return g->tensor_stride[e->param][e->axis];
    case TX_SPECIAL: return special(g, e->special);
    case TX_UN: {
        LLVMValueRef a = cg_expr(g, e->a);
        if (e->op == OP_NEG)
            return dtype_is_float(e->dt) ? LLVMBuildFNeg(b, a, "") : LLVMBuildNeg(b, a, "");
        return LLVMBuildNot(b, a, "");
    }
    case TX_BIN: {
        DType dt = e->a->dt;
        if ((e->op == OP_LAND || e->op == OP_LOR) && may_trap(e->b)) {
            /* short-circuit: the right side may read memory the left side guards */
            LLVMValueRef l = cg_expr(g, e->a);
            LLVMBasicBlockRef from = LLVMGetInsertBlock(b);
            LLVMBasicBlockRef rhs = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "sc.rhs");
            LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "sc.done");
            if (e->op == OP_LAND)
                LLVMBuildCondBr(b, l, rhs, done);
            else
                LLVMBuildCondBr(b, l, done, rhs);
            LLVMPositionBuilderAtEnd(b, rhs);
            LLVMValueRef r = cg_expr(g, e->b);
            LLVMBasicBlockRef rhs_end = LLVMGetInsertBlock(b);
            LLVMBuildBr(b, done);
            LLVMPositionBuilderAtEnd(b, done);
            LLVMValueRef phi = LLVMBuildPhi(b, g->t_i1, "");
            LLVMValueRef vals[2] = {ci(g, g->t_i1, e->op == OP_LOR), r};
            LLVMBasicBlockRef bbs[2] = {from, rhs_end};
            LLVMAddIncoming(phi, vals, bbs, 2);
            return phi;
        }
        LLVMValueRef x = cg_expr(g, e->a), y = cg_expr(g, e->b);
        if (dtype_is_float(dt)) {
            switch (e->op) {
            case OP_ADD: return LLVMBuildFAdd(b, x, y, "");
            case OP_SUB: return LLVMBuildFSub(b, x, y, "");
            case OP_MUL: return LLVMBuildFMul(b, x, y, "");
            case OP_DIV: return LLVMBuildFDiv(b, x, y, "");
            case OP_EQ: return LLVMBuildFCmp(b, LLVMRealOEQ, x, y, "");
            case OP_NE: return LLVMBuildFCmp(b, LLVMRealUNE, x, y, "");
            case OP_LT: return LLVMBuildFCmp(b, LLVMRealOLT, x, y, "");
            case OP_LE: return LLVMBuildFCmp(b, LLVMRealOLE, x, y, "");
            case OP_GT: return LLVMBuildFCmp(b, LLVMRealOGT, x, y, "");
            case OP_GE: return LLVMBuildFCmp(b, LLVMRealOGE, x, y, "");
            default: break;
            }
            cg_error(g, e->loc, "unsupported float operation");
            return x;
        }
        bool s = dtype_is_signed(dt);
        LLVMTypeRef t = LLVMTypeOf(x);
        switch (e->op) {
        case OP_ADD: return LLVMBuildAdd(b, x, y, "");
        case OP_SUB: return LLVMBuildSub(b, x, y, "");
        case OP_MUL: return LLVMBuildMul(b, x, y, "");
        case OP_DIV:
        case OP_MOD: {
            int64_t cv;
            bool known = tx_is_const(e->b, &cv);
            /* division by zero is unspecified, never undefined; signed MIN / -1 wraps to MIN
             * (remainder 0), where LLVM's sdiv/srem are undefined: divide by 1 instead and
             * negate (or give 0) for a divisor of -1 */
            LLVMValueRef minus1 = NULL;
            if (s && (!known || cv == -1)) {
                minus1 = LLVMBuildICmp(b, LLVMIntEQ, y, LLVMConstAllOnes(t), "");
                y = LLVMBuildSelect(b, minus1, ci(g, t, 1), y, "");
            }
            if (!known || cv == 0)
                y = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, y, ci(g, t, 0), ""), ci(g, t, 1), y, "");
            LLVMValueRef r;
            if (e->op == OP_DIV)
                r = s ? LLVMBuildSDiv(b, x, y, "") : LLVMBuildUDiv(b, x, y, "");
            else
                r = s ? LLVMBuildSRem(b, x, y, "") : LLVMBuildURem(b, x, y, "");
            if (minus1)
                r = LLVMBuildSelect(b, minus1, e->op == OP_DIV ? LLVMBuildSub(b, ci(g, t, 0), x, "") : ci(g, t, 0), r, "");
            return r;
        }
        case OP_SHL:
        case OP_SHR: {
            int bits = dtype_bits(dt);
            int64_t cv;
            bool small = tx_is_const(e->b, &cv) && cv >= 0 && cv < bits;
            LLVMValueRef r = e->op == OP_SHL ? LLVMBuildShl(b, x, y, "") : s ? LLVMBuildAShr(b, x, y, "") : LLVMBuildLShr(b, x, y, "");
            if (small)
                return r;
            /* shifts by the width or more: 0, or the sign for arithmetic right shifts */
            LLVMValueRef big = LLVMBuildICmp(b, LLVMIntUGE, y, ci(g, t, bits), "");
            LLVMValueRef fill = (e->op == OP_SHR && s) ? LLVMBuildAShr(b, x, ci(g, t, bits - 1), "") : ci(g, t, 0);
            return LLVMBuildSelect(b, big, fill, r, "");
        }
        case OP_BAND:
        case OP_LAND: return LLVMBuildAnd(b, x, y, "");
        case OP_BOR:
        case OP_LOR: return LLVMBuildOr(b, x, y, "");
        case OP_BXOR: return LLVMBuildXor(b, x, y, "");
        case OP_EQ: return LLVMBuildICmp(b, LLVMIntEQ, x, y, "");
        case OP_NE: return LLVMBuildICmp(b, LLVMIntNE, x, y, "");
        case OP_LT: return LLVMBuildICmp(b, s ? LLVMIntSLT : LLVMIntULT, x, y, "");
        case OP_LE: return LLVMBuildICmp(b, s ? LLVMIntSLE : LLVMIntULE, x, y, "");
        case OP_GT: return LLVMBuildICmp(b, s ? LLVMIntSGT : LLVMIntUGT, x, y, "");
        case OP_GE: return LLVMBuildICmp(b, s ? LLVMIntSGE : LLVMIntUGE, x, y, "");
        default: break;
        }
        return x;
    }
    case TX_SELECT: return LLVMBuildSelect(b, cg_expr(g, e->a), cg_expr(g, e->b), cg_expr(g, e->c), "");
    case TX_CVT: return cvt(g, cg_expr(g, e->a), e->a->dt, e->dt, e->round, e->loc);
    case TX_BITCAST: {
        LLVMValueRef v = cg_expr(g, e->a);
        return LLVMBuildBitCast(b, v, ty_of(g, e->dt), "");
    }
    case TX_LOAD: {
        TBuf *buf = e->buf;
        if (buf->scope == SC_LOCAL && buf->rank == 1 && buf->shape[0] >= 0) {
            int64_t r;
            if (tx_is_const(e->args[0], &r) && r >= 0 && r < buf->shape[0])
                return reg_get(g, buf, (int)r);
        }
        return load_elem(g, buf, e->args, e->align);
    }
    case TX_CALL: {
        LLVMValueRef v = cg_call(g, e);
        return v ? v : ci(g, g->t_i32, 0);
    }
    }
    return ci(g, g->t_i32, 0);
}

/* ---------------- statements ---------------- */

static void cg_stmt(CG *g, TStmt *s);

static bool pure_expr(const TExpr *e)
{
    if (!e)
        return true;
    if (e->kind == TX_LOAD) /* register arrays only: memory reads stay guarded */
        return e->buf->scope == SC_LOCAL && pure_expr(e->args[0]);
    if (e->kind == TX_CALL)
        return false;
    if (e->kind == TX_BIN && (e->op == OP_DIV || e->op == OP_MOD))
        return false;
    return pure_expr(e->a) && pure_expr(e->b) && pure_expr(e->c);
}

/* an if whose branches only assign mutable variables, each at most once, from pure values */
static bool select_only(const TStmt *s)
{
    if (s->nbody + s->nels == 0 || s->nbody > 16 || s->nels > 16)
        return false;
    TStmt *const *lists[2] = {s->body, s->els};
    int ns[2] = {s->nbody, s->nels};
    for (int side = 0; side < 2; side++)
        for (int i = 0; i < ns[side]; i++) {
            const TStmt *a = lists[side][i];
            if (a->kind != TS_ASSIGN || !a->var->mutable_ || !pure_expr(a->e))
                return false;
            /* later assignments must not read earlier ones of the same branch */
            for (int j = 0; j < i; j++)
                if (lists[side][j]->var == a->var)
                    return false;
        }
    return true;
}

/* whether a loop body has a break or continue of its own loop (not of a nested one) */
static bool body_jumps(TStmt **v, int n)
{
    for (int i = 0; i < n; i++) {
        TStmt *s = v[i];
        if (s->kind == TS_BREAK || s->kind == TS_CONTINUE)
            return true;
        if (s->kind == TS_FOR || s->kind == TS_WHILE)
            continue;
        if (body_jumps(s->body, s->nbody) || body_jumps(s->els, s->nels))
            return true;
    }
    return false;
}

static void cg_list(CG *g, TStmt **v, int n)
{
    for (int i = 0; i < n && g->ok; i++)
        cg_stmt(g, v[i]);
}

/* after a jump the builder needs a fresh (unreachable) block */
static void fresh_block(CG *g)
{
    LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->ctx, g->fn, "dead"));
}

static void cg_stmt(CG *g, TStmt *s)
{
    LLVMBuilderRef b = g->b;
    debug_loc(g, s->loc);
    switch (s->kind) {
    case TS_SEQ: cg_list(g, s->body, s->nbody); break;
    case TS_DECL:
        if (!s->var->mutable_ && s->e) {
            s->var->cg_val = cg_expr(g, s->e);
            break;
        }
        if (s->e)
            LLVMBuildStore(b, cg_expr(g, s->e), var_slot(g, s->var));
        else
            var_slot(g, s->var);
        break;
    case TS_ASSIGN: LLVMBuildStore(b, cg_expr(g, s->e), var_slot(g, s->var)); break;
    case TS_STORE: {
        LLVMValueRef v = cg_expr(g, s->e);
        TBuf *buf = s->buf;
        int64_t r;
        if (buf->scope == SC_LOCAL && buf->rank == 1 && tx_is_const(s->idx[0], &r) && r >= 0 && r < buf->shape[0])
            reg_set(g, buf, (int)r, v);
        else
            store_elem(g, buf, s->idx, v, s->align, s->loc);
        break;
    }
    case TS_EVAL: cg_expr(g, s->e); break;
    case TS_IF: {
        LLVMValueRef c = cg_expr(g, s->e);
        if (select_only(s)) {
            /* an if that only assigns variables from plain values becomes selects: a smaller
             * CFG is much cheaper for LLVM to optimise */
            LLVMValueRef nv[16];
            TStmt **lists[2] = {s->body, s->els};
            int ns[2] = {s->nbody, s->nels};
            for (int side = 0; side < 2; side++)
                for (int i = 0; i < ns[side]; i++) {
                    TStmt *a = lists[side][i];
                    nv[i] = cg_expr(g, a->e);
                    LLVMValueRef cur = LLVMBuildLoad2(b, ty_of(g, a->var->dt), var_slot(g, a->var), "");
                    LLVMValueRef sel = side == 0 ? LLVMBuildSelect(b, c, nv[i], cur, "") : LLVMBuildSelect(b, c, cur, nv[i], "");
                    nv[i] = sel;
                    LLVMBuildStore(b, sel, var_slot(g, a->var));
                }
            break;
        }
        LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "then");
        LLVMBasicBlockRef els = s->nels ? LLVMAppendBasicBlockInContext(g->ctx, g->fn, "else") : NULL;
        LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "endif");
        LLVMBuildCondBr(b, c, then, els ? els : done);
        LLVMPositionBuilderAtEnd(b, then);
        cg_list(g, s->body, s->nbody);
        LLVMBuildBr(b, done);
        if (els) {
            LLVMPositionBuilderAtEnd(b, els);
            cg_list(g, s->els, s->nels);
            LLVMBuildBr(b, done);
        }
        LLVMPositionBuilderAtEnd(b, done);
        break;
    }
    case TS_FOR: {
        int64_t lo, hi, step;
        if (s->for_kind == FOR_UNROLL && tx_is_const(s->lo, &lo) && tx_is_const(s->hi, &hi) && tx_is_const(s->step, &step) &&
            step > 0) {
            /* unrolled here so that register-array indices are constants */
            bool jumps = body_jumps(s->body, s->nbody);
            LLVMBasicBlockRef done = jumps ? LLVMAppendBasicBlockInContext(g->ctx, g->fn, "unroll.end") : NULL;
            if (g->nloops >= 64) {
                cg_error(g, s->loc, "loops nest too deeply");
                return;
            }
            for (int64_t i = lo; i < hi && g->ok; i += step) {
                s->var->cg_val = ci(g, ty_of(g, s->var->dt), i);
                if (!jumps) {
                    cg_list(g, s->body, s->nbody);
                    continue;
                }
                LLVMBasicBlockRef next = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "unroll.next");
                g->brk[g->nloops] = done;
                g->cont[g->nloops] = next;
                g->nloops++;
                cg_list(g, s->body, s->nbody);
                g->nloops--;
                LLVMBuildBr(b, next);
                LLVMPositionBuilderAtEnd(b, next);
            }
            if (jumps) {
                LLVMBuildBr(b, done);
                LLVMPositionBuilderAtEnd(b, done);
            }
            s->var->cg_val = NULL;
            break;
        }
        LLVMValueRef slot = var_slot(g, s->var);
        LLVMValueRef hiv = cg_expr(g, s->hi);
        LLVMValueRef stepv = cg_expr(g, s->step);
        LLVMBuildStore(b, cg_expr(g, s->lo), slot);
        LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "for.head");
        LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "for.body");
        LLVMBasicBlockRef latch = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "for.latch");
        LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "for.end");
        LLVMBuildBr(b, head);
        LLVMPositionBuilderAtEnd(b, head);
        LLVMValueRef iv = LLVMBuildLoad2(b, ty_of(g, s->var->dt), slot, "");
        LLVMBuildCondBr(b, LLVMBuildICmp(b, dtype_is_signed(s->var->dt) ? LLVMIntSLT : LLVMIntULT, iv, hiv, ""), body, done);
        LLVMPositionBuilderAtEnd(b, body);
        if (g->nloops >= 64) {
            cg_error(g, s->loc, "loops nest too deeply");
            return;
        }
        g->brk[g->nloops] = done;
        g->cont[g->nloops] = latch;
        g->nloops++;
        cg_list(g, s->body, s->nbody);
        g->nloops--;
        LLVMBuildBr(b, latch);
        LLVMPositionBuilderAtEnd(b, latch);
        LLVMValueRef cur = LLVMBuildLoad2(b, ty_of(g, s->var->dt), slot, "");
        LLVMBuildStore(b, LLVMBuildAdd(b, cur, stepv, ""), slot);
        LLVMBuildBr(b, head);
        LLVMPositionBuilderAtEnd(b, done);
        break;
    }
    case TS_WHILE: {
        LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "while.head");
        LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "while.body");
        LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "while.end");
        LLVMBuildBr(b, head);
        LLVMPositionBuilderAtEnd(b, head);
        LLVMBuildCondBr(b, cg_expr(g, s->e), body, done);
        LLVMPositionBuilderAtEnd(b, body);
        if (g->nloops >= 64) {
            cg_error(g, s->loc, "loops nest too deeply");
            return;
        }
        g->brk[g->nloops] = done;
        g->cont[g->nloops] = head;
        g->nloops++;
        cg_list(g, s->body, s->nbody);
        g->nloops--;
        LLVMBuildBr(b, head);
        LLVMPositionBuilderAtEnd(b, done);
        break;
    }
    case TS_BREAK:
    case TS_CONTINUE:
        LLVMBuildBr(b, s->kind == TS_BREAK ? g->brk[g->nloops - 1] : g->cont[g->nloops - 1]);
        fresh_block(g);
        break;
    case TS_RETURN:
        LLVMBuildBr(b, g->ret_bb);
        fresh_block(g);
        break;
    case TS_BLOCK: {
        LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(g->ctx, g->fn, "block.end");
        if (g->nlabels >= 64) {
            cg_error(g, s->loc, "fn calls nest too deeply");
            return;
        }
        g->labels[g->nlabels].label = s->label;
        g->labels[g->nlabels].exit = exit;
        g->nlabels++;
        cg_list(g, s->body, s->nbody);
        g->nlabels--;
        LLVMBuildBr(b, exit);
        LLVMPositionBuilderAtEnd(b, exit);
        break;
    }
    case TS_EXIT:
        for (int i = g->nlabels - 1; i >= 0; i--)
            if (g->labels[i].label == s->label) {
                LLVMBuildBr(b, g->labels[i].exit);
                fresh_block(g);
                return;
            }
        cg_error(g, s->loc, "internal: exit without its block");
        break;
    case TS_BARRIER: {
        LLVMValueRef z = c32(g, 0);
        call_intrinsic(g, "llvm.nvvm.barrier.cta.sync.aligned.all", g->t_void, &g->t_i32, 1, &z);
        break;
    }
    case TS_VLOAD: cg_vload(g, s); break;
    case TS_VSTORE: cg_vstore(g, s); break;
    case TS_INTRIN: {
        LLVMValueRef in[32], out[16];
        if (s->e->nargs > 32 || s->nidx > 16) {
            diag_ice(g->k->diag, "codegen", "instruction with too many operands");
            g->ok = false;
            break;
        }
        for (int i = 0; i < s->e->nargs; i++)
            in[i] = cg_expr(g, s->e->args[i]);
        CgxEnv env = {g->ctx, g->mod, g->b, g->k->sm};
        if (!cgx_intrin(&env, s->e, in, out, s->nidx)) {
            cg_error(g, s->loc, "this tensor-core or asynchronous-copy instruction is not available for the target");
            break;
        }
        for (int i = 0; i < s->nidx; i++) /* results go to register-array elements */
            reg_set(g, s->idx[i]->buf, (int)s->idx[i]->args[0]->ival, out[i]);
        break;
    }
    default: diag_ice(g->k->diag, "codegen", "tile operation reached code generation"); g->ok = false; break;
    }
}

/* ---------------- the kernel function ---------------- */

LLVMModuleRef cg_build_module(TKernel *k, LLVMContextRef ctx)
{
    CG g = {0};
    g.k = k;
    g.ctx = ctx;
    g.ok = true;
    g.mod = LLVMModuleCreateWithNameInContext(k->entry, ctx);
    LLVMSetTarget(g.mod, "nvptx64-nvidia-cuda");
    g.b = LLVMCreateBuilderInContext(ctx);
    g.t_i1 = LLVMInt1TypeInContext(ctx);
    g.t_i8 = LLVMInt8TypeInContext(ctx);
    g.t_i16 = LLVMInt16TypeInContext(ctx);
    g.t_i32 = LLVMInt32TypeInContext(ctx);
    g.t_i64 = LLVMInt64TypeInContext(ctx);
    g.t_f16 = LLVMHalfTypeInContext(ctx);
    g.t_bf16 = LLVMBFloatTypeInContext(ctx);
    g.t_f32 = LLVMFloatTypeInContext(ctx);
    g.t_f64 = LLVMDoubleTypeInContext(ctx);
    g.t_void = LLVMVoidTypeInContext(ctx);
    g.t_ptr0 = LLVMPointerTypeInContext(ctx, 0);
    g.t_ptr1 = LLVMPointerTypeInContext(ctx, 1);
    g.t_ptr3 = LLVMPointerTypeInContext(ctx, 3);
    /* parameters per the ABI: tensor -> ptr, RANK i32 extents, RANK i64 strides; tensor list ->
     * its pointers (one .param array of max u64, taken by value), i32 length, RANK i32 extents,
     * RANK i64 strides; scalars by value */
    LLVMTypeRef pts[TL_MAX_PARAMS * (2 + 2 * TL_MAX_RANK)];
    int np = 0;
    for (int i = 0; i < k->nparams; i++) {
        TBuf *t = k->params[i];
        if (t) {
            pts[np++] = t->list_cap ? g.t_ptr0 : g.t_ptr1;
            if (t->list_cap)
                pts[np++] = g.t_i32;
            for (int d = 0; d < t->rank; d++)
                pts[np++] = g.t_i32;
            for (int d = 0; d < t->rank; d++)
                pts[np++] = g.t_i64;
        } else {
            pts[np++] = mem_ty(&g, k->param_dt[i]);
        }
    }
    LLVMTypeRef ft = LLVMFunctionType(g.t_void, pts, (unsigned)np, 0);
    g.fn = LLVMAddFunction(g.mod, k->entry, ft);
    LLVMSetFunctionCallConv(g.fn, LLVMPTXKernelCallConv);
    if (k->host) /* line tables for the emulator (the GPU build stays without debug info) */
        debug_begin(&g);
    char nt[16];
    snprintf(nt, sizeof nt, "%d", k->nthreads);
    LLVMAddAttributeAtIndex(g.fn, LLVMAttributeFunctionIndex,
                            LLVMCreateStringAttribute(ctx, "nvvm.maxntid", 12, nt, (unsigned)strlen(nt)));
    if (k->blocks_per_sm > 0) { /* .minnctapersm: ptxas limits the registers so that this many blocks fit */
        char mb[16];
        snprintf(mb, sizeof mb, "%d", k->blocks_per_sm);
        LLVMAddAttributeAtIndex(g.fn, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(ctx, "nvvm.minctasm", 13, mb, (unsigned)strlen(mb)));
    }
    unsigned noalias = LLVMGetEnumAttributeKindForName("noalias", 7);
    unsigned readonly = LLVMGetEnumAttributeKindForName("readonly", 8);
    g.tensor_ptr = ARENA_ARRAY(k->arena, LLVMValueRef, k->nparams + 1);
    g.tensor_dim = (LLVMValueRef(*)[TL_MAX_RANK])arena_alloc(k->arena, sizeof(LLVMValueRef) * TL_MAX_RANK * (size_t)(k->nparams + 1));
    g.tensor_stride = (LLVMValueRef(*)[TL_MAX_RANK])arena_alloc(k->arena, sizeof(LLVMValueRef) * TL_MAX_RANK * (size_t)(k->nparams + 1));
    g.scalar = ARENA_ARRAY(k->arena, LLVMValueRef, k->nparams + 1);
    g.list_len = ARENA_ARRAY(k->arena, LLVMValueRef, k->nparams + 1);
    unsigned byval = LLVMGetEnumAttributeKindForName("byval", 5);
    int pi = 0;
    for (int i = 0; i < k->nparams; i++) {
        TBuf *t = k->params[i];
        if (t && t->list_cap) {
            /* the pointers by value: NVPTX reads them from the parameter space (ld.param), with
             * run-time indices too */
            g.tensor_ptr[i] = LLVMGetParam(g.fn, (unsigned)pi);
            LLVMSetValueName2(g.tensor_ptr[i], t->name, strlen(t->name));
            LLVMTypeRef at = LLVMArrayType2(g.t_i64, (uint64_t)t->list_cap);
            LLVMAddAttributeAtIndex(g.fn, (unsigned)pi + 1, LLVMCreateTypeAttribute(ctx, byval, at));
            LLVMAddAttributeAtIndex(g.fn, (unsigned)pi + 1,
                                    LLVMCreateEnumAttribute(ctx, LLVMGetEnumAttributeKindForName("align", 5), 8));
            pi++;
            g.list_len[i] = LLVMGetParam(g.fn, (unsigned)pi++);
            for (int d = 0; d < t->rank; d++)
                g.tensor_dim[i][d] = LLVMGetParam(g.fn, (unsigned)pi++);
            for (int d = 0; d < t->rank; d++)
                g.tensor_stride[i][d] = LLVMGetParam(g.fn, (unsigned)pi++);
        } else if (t) {
            g.tensor_ptr[i] = LLVMGetParam(g.fn, (unsigned)pi);
            LLVMSetValueName2(g.tensor_ptr[i], t->name, strlen(t->name));
            LLVMAddAttributeAtIndex(g.fn, (unsigned)pi + 1, LLVMCreateEnumAttribute(ctx, noalias, 0));
            if (!t->written)
                LLVMAddAttributeAtIndex(g.fn, (unsigned)pi + 1, LLVMCreateEnumAttribute(ctx, readonly, 0));
            pi++;
            for (int d = 0; d < t->rank; d++)
                g.tensor_dim[i][d] = LLVMGetParam(g.fn, (unsigned)pi++);
            for (int d = 0; d < t->rank; d++)
                g.tensor_stride[i][d] = LLVMGetParam(g.fn, (unsigned)pi++);
        } else {
            g.scalar[i] = LLVMGetParam(g.fn, (unsigned)pi++);
        }
    }
    g.smem = LLVMAddGlobalInAddressSpace(g.mod, LLVMArrayType2(g.t_i8, 0), "tl_smem", 3);
    LLVMSetLinkage(g.smem, LLVMExternalLinkage);
    LLVMSetAlignment(g.smem, 16);
    g.entry = LLVMAppendBasicBlockInContext(ctx, g.fn, "entry");
    LLVMBasicBlockRef start = LLVMAppendBasicBlockInContext(ctx, g.fn, "start");
    g.ret_bb = LLVMAppendBasicBlockInContext(ctx, g.fn, "exit");
    LLVMPositionBuilderAtEnd(g.b, g.entry);
    LLVMBuildBr(g.b, start);
    LLVMPositionBuilderAtEnd(g.b, start);
    /* bool scalar parameters travel as bytes */
    for (int i = 0; i < k->nparams; i++)
        if (!k->params[i] && k->param_dt[i] == DT_BOOL)
            g.scalar[i] = LLVMBuildICmp(g.b, LLVMIntNE, g.scalar[i], ci(&g, g.t_i8, 0), "");
    cg_stmt(&g, k->body);
    LLVMBuildBr(g.b, g.ret_bb);
    LLVMPositionBuilderAtEnd(g.b, g.ret_bb);
    LLVMBuildRetVoid(g.b);
    LLVMDisposeBuilder(g.b);
    if (g.dib) {
        LLVMDIBuilderFinalize(g.dib);
        LLVMDisposeDIBuilder(g.dib);
    }
    /* variables and buffers point into this module: forget them for a later build */
    for (int i = 0; i < k->nbufs; i++)
        k->bufs[i]->cg = NULL;
    if (!g.ok) {
        LLVMDisposeModule(g.mod);
        return NULL;
    }
    return g.mod;
}
