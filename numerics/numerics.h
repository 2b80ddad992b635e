/* numerics.h — bit-exact software versions of the GPU's number conversions (PTX `cvt`),
 * TileKernels' scale-factor and E5M6 rules, CUDA's accurate expf built on a model of the MUFU
 * ex2 unit, and a model of the tensor core's mma.sync arithmetic. Used by the CPU emulator and
 * the tests (libtilec exports them too).
 *
 * Conventions shared by every function below:
 * - Values travel as bit patterns: f32 as uint32_t, f16 / bf16 as uint16_t, fp8 and ue8m0 as
 *   uint8_t, an e2m1 code as the low 4 bits of a uint8_t, an e5m6 code as the low 12 bits of
 *   a uint16_t. Functions are pure (no state) except where a MUFU table is installed.
 * - "NaN" in an input means any NaN pattern, whatever its sign and payload.
 * - Conversions that can produce a NaN produce a canonical one, named in each comment (f32
 *   0x7FFFFFFF, f16 / bf16 0x7FFF, fp8 0x7F); the one exception is bf16 -> f32, a plain
 *   shift. These choices follow the PTX ISA and the CUDA 13.0 headers' software fallbacks
 *   (cuda_fp16/bf16/fp8/fp4.hpp); tests/gpu/numerics/crosscheck.cu checks them on a GPU.
 * - Packed forms follow the PTX operand order: `cvt.*x2 d, a, b` puts a in the HIGH half
 *   (byte, nibble) of d and b in the LOW half.
 * - Arithmetic helpers (expf, the scale factor) use the host's float arithmetic, which must
 *   be IEEE binary32 with round-to-nearest and no flush-to-zero (the default environment on
 *   x86-64 and AArch64).
 */
#ifndef TILEC_NUMERICS_H
#define TILEC_NUMERICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {   /* the GPU test programs (CUDA C++) link numerics.c */
#endif

/* Rounding modes of `cvt`: .rn (nearest, ties to even), .rz (toward zero), .rm (toward -inf),
 * .rp (toward +inf). */
typedef enum TlNumRound { TL_NUM_RN, TL_NUM_RZ, TL_NUM_RM, TL_NUM_RP } TlNumRound;

static inline uint32_t tl_num_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float tl_num_float(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* ---- f32 <-> bf16 ---- */

/* f32 -> bf16 with the given rounding, as `cvt.{rn,rz,rm,rp}.bf16.f32` (no .satfinite, no
 * .relu): IEEE rounding of the exact value, f32 subnormals kept (bf16 has the same exponent
 * range), overflow as IEEE (RN -> inf; RZ -> max finite 0x7F7F; RM/RP -> inf on the side they
 * round toward, max finite on the other), ±inf kept, NaN -> 0x7FFF. */
uint16_t tl_num_f32_to_bf16(uint32_t f, TlNumRound rnd);
/* `cvt.{rn,rz}.bf16x2.f32 d, a, b`: a -> bits 31..16, b -> bits 15..0. */
uint32_t tl_num_bf16x2_from_f32(uint32_t a, uint32_t b, TlNumRound rnd);
/* bf16 -> f32, as `cvt.f32.bf16`: exact; the pattern is shifted left by 16, so a NaN keeps
 * its sign and payload (unlike f16 -> f32; the crosscheck verifies this). */
uint32_t tl_num_bf16_to_f32(uint16_t h);

/* ---- f32 <-> f16 ---- */

/* f32 -> f16, as `cvt.{rn,rz,rm,rp}.f16.f32` (no .ftz): IEEE rounding of the exact value
 * with f16 subnormals (f32 subnormals become ±0, or the smallest f16 subnormal when RM/RP
 * rounds away from zero), overflow as IEEE (RN -> ±inf, RZ -> ±65504 (0x7BFF / 0xFBFF),
 * RM/RP -> inf toward their direction, max finite on the other side), ±inf kept,
 * NaN -> 0x7FFF. */
uint16_t tl_num_f32_to_f16(uint32_t f, TlNumRound rnd);
/* `cvt.{rn,rz}.f16x2.f32 d, a, b`: a -> bits 31..16, b -> bits 15..0. */
uint32_t tl_num_f16x2_from_f32(uint32_t a, uint32_t b, TlNumRound rnd);
/* f16 -> f32, as `cvt.f32.f16`: exact for numbers (subnormals normalised); any NaN becomes
 * the canonical f32 NaN 0x7FFFFFFF (sign and payload dropped). */
uint32_t tl_num_f16_to_f32(uint16_t h);

/* ---- FP8: e4m3 (E4M3FN: bias 7, no inf, NaN = S.1111.111, max 448) and e5m2 (bias 15,
 *      IEEE-like with inf, max 57344) ---- */

/* f32 -> e4m3 as one lane of `cvt.rn.satfinite.e4m3x2.f32`: round to nearest even on the
 * exact value, |x| > 448 and ±inf -> ±448 (0x7E / 0xFE), signed zero kept (-tiny -> 0x80),
 * NaN -> 0x7F (positive, whatever the input sign). */
uint8_t tl_num_f32_to_e4m3(uint32_t f);
/* f32 -> e5m2 as one lane of `cvt.rn.satfinite.e5m2x2.f32`: RNE, overflow and ±inf ->
 * ±57344 (0x7B / 0xFB), signed zero kept, NaN -> 0x7F. */
uint8_t tl_num_f32_to_e5m2(uint32_t f);
/* `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 d, a, b`: a -> bits 15..8, b -> bits 7..0. */
uint16_t tl_num_e4m3x2_from_f32(uint32_t a, uint32_t b);
uint16_t tl_num_e5m2x2_from_f32(uint32_t a, uint32_t b);
/* f16 -> e4m3 / e5m2 as one lane of `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f16x2`: same rules as
 * from f32 applied to the (exactly representable) f16 value; NaN -> 0x7F. */
uint8_t tl_num_f16_to_e4m3(uint16_t h);
uint8_t tl_num_f16_to_e5m2(uint16_t h);
/* `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f16x2 d, a`: the f16 in bits 31..16 of a -> bits 15..8
 * of d, bits 15..0 -> bits 7..0. */
uint16_t tl_num_e4m3x2_from_f16x2(uint32_t a);
uint16_t tl_num_e5m2x2_from_f16x2(uint32_t a);
/* e4m3 / e5m2 -> f16 as one lane of `cvt.rn.f16x2.{e4m3x2,e5m2x2}`: exact; NaN codes
 * (e4m3 0x7F/0xFF, e5m2 0x7D-0x7F/0xFD-0xFF) -> 0x7FFF; e5m2 ±inf -> f16 ±inf. */
uint16_t tl_num_e4m3_to_f16(uint8_t q);
uint16_t tl_num_e5m2_to_f16(uint8_t q);
/* `cvt.rn.f16x2.{e4m3x2,e5m2x2} d, a`: bits 15..8 of a -> bits 31..16 of d. */
uint32_t tl_num_f16x2_from_e4m3x2(uint16_t a);
uint32_t tl_num_f16x2_from_e5m2x2(uint16_t a);
/* e4m3 / e5m2 -> f32: PTX has no direct instruction; this is `cvt.rn.f16x2.e4m3x2` followed
 * by `cvt.f32.f16` (exact; NaN -> 0x7FFFFFFF). */
uint32_t tl_num_e4m3_to_f32(uint8_t q);
uint32_t tl_num_e5m2_to_f32(uint8_t q);

/* ---- FP4 e2m1 (bias 1, no inf/NaN, values 0 0.5 1 1.5 2 3 4 6; bit 3 = sign) ---- */

/* f32 -> e2m1 as one lane of `cvt.rn.satfinite.e2m1x2.f32` (sm_100a+): RNE (ties to the even
 * code: 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4), |x| > 6 and ±inf -> ±6,
 * signed zero kept (-0.1 -> 0x8), NaN -> +6 (0x7). Returns a code in 0..15. */
uint8_t tl_num_f32_to_e2m1(uint32_t f);
/* `cvt.rn.satfinite.e2m1x2.f32 d, a, b`: a -> bits 7..4, b -> bits 3..0.
 * Storage order differs: TileKernels (spec §6.2) keeps logical element 2i in the LOW nibble
 * and 2i+1 in the high nibble, so packing elements (x[2i], x[2i+1]) is
 * tl_num_e2m1x2_from_f32(x[2i+1], x[2i]) — the odd element is operand a. */
uint8_t tl_num_e2m1x2_from_f32(uint32_t a, uint32_t b);
/* Storage packing of two codes (spec §6.2): even element low nibble, odd element high. */
static inline uint8_t tl_num_e2m1_pack(uint8_t even, uint8_t odd)
{
    return (uint8_t)((even & 0xF) | (odd & 0xF) << 4);
}
/* e2m1 -> f16 as one lane of `cvt.rn.f16x2.e2m1x2` (exact; -0 -> 0x8000). */
uint16_t tl_num_e2m1_to_f16(uint8_t code);
/* `cvt.rn.f16x2.e2m1x2 d, a`: bits 7..4 of a -> bits 31..16 of d, bits 3..0 -> 15..0. */
uint32_t tl_num_f16x2_from_e2m1x2(uint8_t a);
/* e2m1 -> f32, exact (what a software decoder on sm_90a must produce). */
uint32_t tl_num_e2m1_to_f32(uint8_t code);

/* ---- UE8M0 (unsigned power-of-two exponent, code b = 2^(b-127)) ---- */

/* f32 -> ue8m0 as one lane of `cvt.{rz,rp}{.satfinite}.ue8m0x2.f32` (sm_100a+). rnd must be
 * TL_NUM_RZ or TL_NUM_RP (PTX has no other; any other value is treated as RZ). The sign is
 * ignored (|x| is converted). RZ: floor(log2|x|)+127; RP: ceil(log2|x|)+127; results below
 * code 0 (|x| < 2^-127 for RZ, |x| <= 2^-127 for RP, and ±0) give 0. Finite values whose RP
 * result would be 2^128 and ±inf give 0xFF, or 0xFE with satfinite. NaN -> 0xFF always. */
uint8_t tl_num_f32_to_ue8m0(uint32_t f, TlNumRound rnd, bool satfinite);
/* `cvt.{rz,rp}{.satfinite}.ue8m0x2.f32 d, a, b`: a -> bits 15..8, b -> bits 7..0. */
uint16_t tl_num_ue8m0x2_from_f32(uint32_t a, uint32_t b, TlNumRound rnd, bool satfinite);
/* TileKernels' decoder (spec §6.4): f32 bits b << 23, so 0 -> +0.0 and 0xFF -> +inf. */
uint32_t tl_num_ue8m0_to_f32_tk(uint8_t b);
/* PTX's decoder, one lane of `cvt.rn.bf16x2.ue8m0x2` (sm_100a+): b << 7 as bf16, except
 * 0 -> 0x0040 (2^-127, a bf16 subnormal) and 0xFF -> 0x7FFF (NaN). It differs from the
 * TileKernels decoder only for b = 0 and b = 0xFF. */
uint16_t tl_num_ue8m0_to_bf16(uint8_t b);
/* `cvt.rn.bf16x2.ue8m0x2 d, a`: bits 15..8 of a -> bits 31..16 of d. */
uint32_t tl_num_bf16x2_from_ue8m0x2(uint16_t a);

/* ---- E5M6 (TileKernels' 12-bit format: the top 12 bits of an f16; spec §6.3) ---- */

/* f32 -> e5m6 code (12 bits, sign at bit 11), the spec's pseudo-RNE: h = f16 bits of x by
 * `cvt.rz.f16.f32`, c = h >> 4, c += 1 when (c & 1) + (bits(x) & 0x1FFFF) > 0x10000.
 * Exact RNE where the f16 result is normal, not RNE among f16 subnormals (reproduced on
 * purpose). Beyond the spec's range it follows the hardware RZ, which clamps |x| >= 65536 to
 * 65504: those give 0x7BF, or 0x7C0 (inf) when bits(x) & 0x1FFFF >= 0x10000 (sign at bit
 * 11); ±inf gives ±0x7C0; NaN gives 0x7FF or 0x800 depending on its low mantissa bits, as
 * the kernel would. */
uint16_t tl_num_f32_to_e5m6(uint32_t f);
/* e5m6 -> f16 bits (code << 4) and -> f32 (then `cvt.f32.f16`, exact). */
uint16_t tl_num_e5m6_to_f16(uint16_t code);
uint32_t tl_num_e5m6_to_f32(uint16_t code);
/* 8 codes -> 3 words, MSB-first bit stream (spec §6.3): w0 = h0<<20 | h1<<8 | h2>>4, ... */
void tl_num_e5m6_pack8(const uint16_t codes[8], uint32_t words[3]);
void tl_num_e5m6_unpack8(const uint32_t words[3], uint16_t codes[8]);

/* ---- Scale factor SF(amax) (spec §1.2) ---- */

typedef struct TlNumSf {
    uint32_t sf;      /* the stored dequantisation scale as f32 bits (2^e when rounded) */
    uint32_t sf_inv;  /* the quantisation multiplier as f32 bits */
    uint8_t ue8m0;    /* e + 127 when rounded; 0 when not (packed UE8M0 needs round_sf) */
} TlNumSf;

/* a = max.f32(amax, clamp_min) (a NaN operand loses to the other), sf = a / max_value
 * (div.rn.f32). round_sf false: (sf, max_value / a). round_sf true: e = ((bits(sf) - 1) >> 23)
 * + 1 - 127 = ceil(log2 sf), sf = 2^e and sf_inv = 2^-e built from bits. Exact for every sf
 * that is a positive normal number, which the clamps guarantee; other inputs give the same
 * (meaningless) bits the kernel would compute, wrapping modulo 2^32. */
TlNumSf tl_num_scale_factor(uint32_t amax, uint32_t clamp_min, uint32_t max_value,
                            bool round_sf);

/* ---- Transcendentals ---- */

/* 2^x correctly rounded to f32 (RNE; subnormal results rounded at their own precision,
 * overflow -> +inf, NaN -> 0x7FFFFFFF, -inf -> +0). A reference, not a GPU instruction. */
uint32_t tl_num_exp2_cr(uint32_t x);
/* 1/sqrt(x) correctly rounded (x < 0 -> 0x7FFFFFFF, ±0 -> ±inf, +inf -> +0). Reference. */
uint32_t tl_num_rsqrt_cr(uint32_t x);

/* MODEL of `ex2.approx.ftz.f32` (MUFU.EX2), structured as the H200 measurements show the
 * unit works but with correctly rounded values in place of the unit's own (which only the
 * tables below hold): subnormal inputs -> ±0 -> 1.0; NaN -> 0x7FFFFFFF; x >= 128 -> +inf;
 * otherwise |x| is cut toward zero to 23 fraction bits, |x| -> n + f (n integer, 0 <= f < 1),
 * and the result is 2^n * CR(2^f) for x >= 0, 2^-n * CR(2^-f) for x < 0 (sign-magnitude),
 * CR = correctly rounded; results below 2^-126 flush to +0. The unit differs by about an
 * ulp (tests/gpu/numerics/mufu_dump.cu measures it). */
uint32_t tl_num_ex2_approx_ftz_model(uint32_t x);
/* MODEL of `rsqrt.approx.f32` (MUFU.RSQ, subnormal inputs honoured) and of
 * `rsqrt.approx.ftz.f32`: the correctly rounded 1/sqrt(x) (the ftz form first flushes
 * subnormal inputs to ±0). The hardware differs by an ulp or so (mufu_dump measures it). */
uint32_t tl_num_rsqrt_approx_model(uint32_t x, bool ftz);

/* `ex2.approx.ftz.f32` and `rsqrt.approx{.ftz}.f32` as well as known: the model above, or,
 * once tables are installed (tl_num_mufu_install), the tables' values — bit-exact for tables
 * that mufu_dump wrote and verified on the hardware. ex2 needs the kind 1 table for x >= 0,
 * and for x < 0 either the kind 3 table or a kind 1 table with cut 3 (see the format). */
uint32_t tl_num_ex2_approx_ftz(uint32_t x);
uint32_t tl_num_rsqrt_approx(uint32_t x, bool ftz);
/* Whether tl_num_ex2_approx_ftz (every input) / tl_num_rsqrt_approx are backed by measured
 * tables: ex2 when a kind 1 table is installed with cut 3, or with a kind 3 table. */
bool tl_num_ex2_is_exact(void);
bool tl_num_rsqrt_is_exact(void);

/* CUDA's accurate expf (nvcc without fast math, libdevice __nv_expf with FTZ off), the
 * instruction sequence of spec §0.3 evaluated step by step with f32 fma/mul semantics:
 *   t = sat(fma.rn(x, 0x3BBB989D, 0.5)); j = fma.rm(t, 252, 12582913); k = j - 12583039;
 *   r = fma.rn(x, 0x32A57060, fma.rn(x, 0x3FB8AA3B, -k)); p = ex2.approx.ftz(r);
 *   return p * f32(bits(j) << 23)
 * Bit-exact exactly when tl_num_ex2_approx_ftz is (see tl_num_ex2_is_exact). NaN results
 * are the canonical 0x7FFFFFFF. */
uint32_t tl_num_expf(uint32_t x);

/* CUDA's log1pf (libdevice __nv_log1pf, FTZ off), the sequence the code generator emits for
 * log1p: e = (bits(add.rz(a, 1)) - 0x3F400000) & 0xFF800000; m = f32(bits(a) - e) +
 * fma(0.25, f32(0x40800000 - e), -1); a polynomial p(m) with q = fma(p * m, m, m); result
 * fma(f32(i32(e)) * 2^-23, ln2, q); +inf, NaN and a < -1 give fma(a, inf, inf), -0 gives -0.
 * Needs no table. NaN results are the canonical 0x7FFFFFFF. */
uint32_t tl_num_log1pf(uint32_t x);

/* ---- MUFU tables (written by tests/gpu/numerics/mufu_dump.cu) ----
 * A table file, little-endian:
 *   0  char[8] magic "TLMUFU01"
 *   8  u32 kind: 1 = ex2.approx.ftz.f32 on [0,1), 2 = rsqrt.approx.f32,
 *      3 = ex2.approx.ftz.f32 on (-1,0]
 *  12  u32 index_bits N (entries = 2^N)
 *  16  u32 bits_per_entry B (1..8)
 *  20  i32 delta_min
 *  24  u32 cut: how an ex2 input is cut to N fraction bits and split (below); 0 for rsqrt
 *  28  u32 payload_bytes = ceil(2^N * B / 8)
 *  32  u32 FNV-1a 32-bit hash of the payload
 *  36  payload: entry i occupies bits [i*B, i*B+B) of the byte string, least significant
 *      bit first; its value u gives delta = u + delta_min.
 * Meaning of entry i (f32 bits): kind 1: the unit's ex2(i / 2^N) is tl_num_exp2_cr(i / 2^N)
 * + delta; kind 3: its ex2(-i / 2^N) is tl_num_exp2_cr(-i / 2^N) + delta; kind 2: for the f32
 * m with bits 0x3F800000 + (i << (24 - N)) (m in [1,4)), rsqrt(m) is tl_num_rsqrt_cr(m) +
 * delta, and other inputs reduce to these by 4^k (rsqrt(m 4^k) = rsqrt(m) 2^-k).
 * ex2 inputs reduce to the grid as the kind 1 table's cut says (flush below 2^-126 last):
 *   0 floor, 1 toward zero, 2 nearest even: q = x cut to N fraction bits, q = i + j/2^N with
 *     i = floor(q): result 2^i * T1[j] (the split of a two's complement fixed-point number);
 *   3: |x| cut toward zero to n + f/2^N; x >= 0: 2^n * T1[f]; x < 0: 2^-n when f = 0, else
 *     2^-(n+1) * T1[2^N - 1 - f] (the fraction bits inverted, one's complement).
 * A kind 3 table (cut must be 1) takes over every x < 0: |x| cut toward zero to n + f/2^N,
 * result 2^-n * T3[f] (sign-magnitude).
 * tl_num_mufu_install validates the header and hash and installs the table for the whole
 * process (one per kind; a later install replaces it). The bytes are copied. Returns 0, or
 * -1 with a message in err (when errcap > 0). Not thread-safe against concurrent callers of
 * the functions that use the table. */
int tl_num_mufu_install(const void *blob, size_t len, char *err, size_t errcap);
/* Removes the installed table of the given kind (1, 2 or 3), returning to the model. */
void tl_num_mufu_uninstall(unsigned kind);
/* Writes a table in the format above from deltas[0 .. 2^index_bits): picks the smallest
 * bits_per_entry that holds max - min. Returns the blob size, or 0 when the arguments are
 * invalid (kind, index_bits, cut) or the spread needs more than 8 bits; writes only when
 * the size fits cap (call with out NULL / cap 0 to get the size). */
size_t tl_num_mufu_encode(unsigned kind, unsigned index_bits, unsigned cut,
                          const int32_t *deltas, uint8_t *out, size_t cap);

/* ---- Tensor cores: mma.sync with f32 accumulators (numerics_mma.c) ----
 * A MODEL of the arithmetic of the Hopper tensor core (H100 / H200) in the mma.sync forms the
 * compiler emits: m16n8k16 f16 and bf16, m16n8k8 tf32, m16n8k32 e4m3 and e5m2, all
 * `.row.col.f32.T.T.f32`. It is the numerical-feature model that Khattak and Mikaitis fitted to
 * these GPUs bit for bit ("Accurate Models of NVIDIA Tensor Cores", arXiv:2512.07004, 2025; their
 * H100 model, which they also use for the H200), built on Fasi, Higham, Mikaitis and Pranesh
 * ("Numerical behavior of NVIDIA tensor cores", PeerJ Comput. Sci. 7:e330, 2021), for f16, bf16
 * and tf32; FP8 as measured on an H200 (H200, 2026-12-02, tests/gpu/numerics/mma_model --n 16
 * --dump: the rule below reproduces all 28,672 e4m3 / e5m2 outputs of that run, the literature's
 * one-pass 13-bit rule 11,078). tests/gpu/numerics/mma_model.cu is the cross-check against
 * mma.sync (f16, bf16, tf32: 0 mismatches in 7 x 131,072 outputs each on that H200).
 *
 * f16, bf16, tf32: one output element d = c + sum over the instruction's K of a[k] * b[k], in
 * one step:
 * - every product is exact (two significands of at most 11 bits make at most 22 bits), and the
 *   products and c go through ONE multi-term adder, so within an instruction the order of the
 *   k does not matter;
 * - alignment: R = the largest of the products' exponents ea + eb (ea = floor(log2 |a|), or
 *   the format's smallest normal exponent for a subnormal a; a product's significand is then in
 *   [1, 4)) and of c's exponent (zero terms take no part), and at least -133. Each term is cut
 *   toward zero (its magnitude truncated, no sticky bit) to a multiple of 2^(R - F), F = 25
 *   fraction bits (the 23 of f32 and 2 extra);
 * - the cut terms are added exactly; the sum is normalised once and cut toward zero to f32,
 *   subnormal results included, at least 2^128 -> ±inf;
 * - an exact zero sum is +0, whatever the signs of c and of the zero products;
 * - NaN in any a, b or c, inf * 0, and +inf together with -inf give the canonical NaN
 *   0x7FFFFFFF; otherwise an infinite product or c gives that infinity.
 * e4m3, e5m2 (K = 32): the f16 step above twice, then one f32 addition:
 * - d1 = the step over the 16 products at k mod 4 = 0, 1 (k = 0, 1, 4, 5, ..., 28, 29) from an
 *   accumulator of +0; d2 = the step over the 16 at k mod 4 = 2, 3 with d1 as its accumulator
 *   (F = 25, a full f32 result cut toward zero, each time);
 * - d = c + d2 rounded to nearest even (an IEEE f32 addition: subnormals kept, overflow to
 *   ±inf, -0 only for -0 + -0), so c keeps all its bits and takes no part in either alignment;
 * - NaN and inf as above; the order of the k matters only across the two halves.
 * tf32 operands are f32 bit patterns of which the instruction reads bits 31..13 (the low 13
 * bits are ignored, not rounded: an f32 NaN with a payload only there reads as inf). e4m3 has no
 * infinity; its NaN is S.1111.111. Blackwell (B200) differs, by arXiv:2512.07004, in e4m3 / e5m2
 * only (F = 25 and a full f32 result in one pass, as for the 16-bit forms; not measured here);
 * these functions model sm_90.
 *
 * Operands are the raw element codes of one row of A and one column of B, k = 0 .. K-1, and c
 * and the result are f32 bit patterns. */
uint32_t tl_num_mma_f16(const uint16_t a[16], const uint16_t b[16], uint32_t c);
uint32_t tl_num_mma_bf16(const uint16_t a[16], const uint16_t b[16], uint32_t c);
uint32_t tl_num_mma_tf32(const uint32_t a[8], const uint32_t b[8], uint32_t c);
uint32_t tl_num_mma_e4m3(const uint8_t a[32], const uint8_t b[32], uint32_t c);
uint32_t tl_num_mma_e5m2(const uint8_t a[32], const uint8_t b[32], uint32_t c);

/* The instruction forms, for the warp-level function below. */
typedef enum TlNumMma { TL_NUM_MMA_F16, TL_NUM_MMA_BF16, TL_NUM_MMA_TF32, TL_NUM_MMA_E4M3, TL_NUM_MMA_E5M2 } TlNumMma;
/* K of a form: 16, 16, 8, 32, 32. */
int tl_num_mma_k(TlNumMma form);
/* One mma.sync.aligned.m16n8kK.row.col.f32.T.T.f32 of a whole warp, in registers as the PTX
 * ISA lays out the fragments ("Matrix Fragments for mma.m16n8k*"): with g = lane / 4,
 * t = lane % 4 and E = 4 / bytes per element (2, 2, 1, 4, 4) elements per 32-bit register,
 * element j at bits 32 j / E .. of its register:
 *   A (16 x K), a[lane][q]:  row g + 8 (q & 1),  col E t + j + 4E (q >> 1)
 *   B (K x 8),  b[lane][q]:  row E t + j + 4E q, col g
 *   C, D (16 x 8 f32 bits), c[lane][i], d[lane][i]: row g + 8 (i >> 1), col 2t + (i & 1)
 * and each element of D is the per-element model above. d may be c. */
void tl_num_mma_m16n8(TlNumMma form, const uint32_t a[32][4], const uint32_t b[32][2], const uint32_t c[32][4],
                      uint32_t d[32][4]);

/* ---- Tables built into the library (numerics/numerics_tables.c, not in the GPU programs) ----
 * The tables measured on an H200, numerics/data/mufu_*.bin, are validated, deflated and
 * compiled into libtilec at build time (numerics_embed; numerics/data/README.md says where
 * they come from). tl_num_mufu_install_builtin inflates and installs all of them, with
 * tl_num_mufu_install's rules, which makes tl_num_ex2_approx_ftz, tl_num_rsqrt_approx and
 * tl_num_expf bit-exact for the H200 with no GPU and no data file. Call it once, before
 * threads use those functions. Returns the number of tables installed, or -1 with a message
 * in err; after a failure the tables installed before the failing one stay installed. */
int tl_num_mufu_install_builtin(char *err, size_t errcap);
/* The same from an array laid out as numerics_embed writes it: per table u32 raw length,
 * u32 packed length, u32 name length, the name (no NUL), the zlib stream of the table file;
 * integers little-endian. */
int tl_num_mufu_install_packed(const void *data, size_t size, char *err, size_t errcap);
/* for the installers: a little-endian u32 at p; the message formatted into err (when given), -1 */
uint32_t tl_num_rd32(const uint8_t *p);
int tl_num_install_fail(char *err, size_t errcap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
