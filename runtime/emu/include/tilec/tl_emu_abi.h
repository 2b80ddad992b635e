/* tl_emu_abi.h — the functions that kernel code compiled for the host target calls: the
 * compiler's emu_lower pass turns every GPU intrinsic into one of these. Kernel code runs on a
 * fiber; these functions find the fiber (its thread and block) in thread-local state.
 * `site` arguments index the object's table of source locations (for reports); a kernel
 * written in C passes any number. */
#ifndef TILEC_EMU_ABI_H
#define TILEC_EMU_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* special registers, in this order: tid.xyz, ctaid.xyz, ntid.xyz, nctaid.xyz */
enum { TL_EMU_SREG_TID_X, TL_EMU_SREG_TID_Y, TL_EMU_SREG_TID_Z, TL_EMU_SREG_CTAID_X, TL_EMU_SREG_CTAID_Y,
       TL_EMU_SREG_CTAID_Z, TL_EMU_SREG_NTID_X, TL_EMU_SREG_NTID_Y, TL_EMU_SREG_NTID_Z, TL_EMU_SREG_NCTAID_X,
       TL_EMU_SREG_NCTAID_Y, TL_EMU_SREG_NCTAID_Z, TL_EMU_SREG_COUNT };
/* shfl.sync modes, as PTX numbers them */
enum { TL_EMU_SHFL_UP, TL_EMU_SHFL_DOWN, TL_EMU_SHFL_BFLY, TL_EMU_SHFL_IDX };
/* vote.sync modes */
enum { TL_EMU_VOTE_BALLOT, TL_EMU_VOTE_ALL, TL_EMU_VOTE_ANY, TL_EMU_VOTE_UNI };
/* access kinds (tl_emu_shared_access, tl_emu_global_access) */
enum { TL_EMU_READ, TL_EMU_WRITE, TL_EMU_ATOMIC };
/* the `tensor` of tl_emu_global_access when the compiler cannot tell which one an access is through */
#define TL_EMU_NO_TENSOR 0xFFFFFFFFu
/* value types of tl_emu_cvt */
enum { TL_EMU_S8, TL_EMU_S16, TL_EMU_S32, TL_EMU_S64, TL_EMU_U8, TL_EMU_U16, TL_EMU_U32, TL_EMU_U64,
       TL_EMU_F16, TL_EMU_BF16, TL_EMU_F32, TL_EMU_F64, TL_EMU_NTYPES };
/* rounding of tl_emu_cvt: to nearest even, toward zero, toward -inf, toward +inf (to an integer:
 * .rni .rzi .rmi .rpi) */
enum { TL_EMU_RN, TL_EMU_RZ, TL_EMU_RM, TL_EMU_RP };
/* paired conversions of tl_emu_cvt_x2 (the PTX operand order: a -> high half, b -> low half) */
enum {
    TL_EMU_X2_E4M3_FROM_F32,   /* cvt.rn.satfinite.e4m3x2.f32 d, a, b */
    TL_EMU_X2_E5M2_FROM_F32,
    TL_EMU_X2_E2M1_FROM_F32,   /* cvt.rn.satfinite.e2m1x2.f32 d, a, b (a: bits 7..4) */
    TL_EMU_X2_F16_FROM_E4M3,   /* cvt.rn.f16x2.e4m3x2 d, a (b unused) */
    TL_EMU_X2_F16_FROM_E5M2,
    TL_EMU_X2_F16_FROM_E2M1,
    TL_EMU_X2_E4M3_FROM_F16X2, /* cvt.rn.satfinite.e4m3x2.f16x2 d, a */
    TL_EMU_X2_E5M2_FROM_F16X2,
    TL_EMU_X2_BF16_FROM_F32,   /* cvt.rn.bf16x2.f32 d, a, b */
    TL_EMU_X2_F16_FROM_F32,
    TL_EMU_X2_UE8M0_FROM_F32_RZ, /* cvt.rz.satfinite.ue8m0x2.f32 d, a, b */
    TL_EMU_X2_UE8M0_FROM_F32_RP,
    TL_EMU_X2_BF16_FROM_UE8M0, /* cvt.rn.bf16x2.ue8m0x2 d, a */
    TL_EMU_X2_COUNT
};

/* the mma.sync forms of tl_emu_mma, all .row.col with f32 accumulators:
 * m16n8k16 .f16 / .bf16, m16n8k8 .tf32, m16n8k32 .e4m3 / .e5m2 */
enum { TL_EMU_MMA_F16, TL_EMU_MMA_BF16, TL_EMU_MMA_TF32, TL_EMU_MMA_E4M3, TL_EMU_MMA_E5M2, TL_EMU_MMA_COUNT };

uint32_t tl_emu_sreg(uint32_t which);
void *tl_emu_smem(void);
void tl_emu_barrier(uint32_t site);
void tl_emu_warp_sync(uint32_t mask, uint32_t site);
uint32_t tl_emu_shfl(uint32_t mode, uint32_t mask, uint32_t value, uint32_t b, uint32_t c, uint32_t site);
uint32_t tl_emu_vote(uint32_t mode, uint32_t mask, uint32_t pred, uint32_t site);
uint32_t tl_emu_match_any(uint32_t mask, uint64_t value, uint32_t site);
void tl_emu_grid_sync(uint32_t site);
_Noreturn void tl_emu_trap(uint32_t site);
_Noreturn void tl_emu_assertfail(const char *message, const char *file, uint32_t line, const char *function,
                                 uint64_t char_size);
int32_t tl_emu_vprintf(const char *format, const void *args);
void tl_emu_shared_access(const void *p, uint32_t size, uint32_t kind, uint32_t site);
void tl_emu_cp_async(void *dst, const void *src, uint32_t size, uint32_t src_size, uint32_t site);
/* Tensor-core instructions, warp-collective like shfl (all 32 lanes of the warp take part).
 * tl_emu_mma: `mma.sync.aligned.m16n8kK.row.col.f32.T.T.f32` of the form (TL_EMU_MMA_*): regs[0..3]
 * the lane's A registers, regs[4..5] its B registers, regs[6..9] its C (f32 bits); the lane's D
 * comes back in regs[6..9]. The arithmetic is the numerics library's model (tl_num_mma_m16n8).
 * tl_emu_ldmatrix: `ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16` with mode N (1, 2, 4), plus 8
 * for .trans: lanes 0 .. 8N-1 each give the address of one 16-byte row (checked like a shared
 * load), and out[0 .. N-1] receive the lane's registers. */
void tl_emu_mma(uint32_t form, uint32_t *regs, uint32_t site);
void tl_emu_ldmatrix(uint32_t mode, const void *row, uint32_t *out, uint32_t site);
/* Global memory. The ranges of the launch's tensors (tl_emu_launch_config.ranges) as
 * TL_EMU_MAX_RANGES pairs (base, size in bytes), which a thread reads for the inline check that
 * the compiler puts before each access through a tensor: size 0 where there is no range, size
 * UINT64_MAX (base 0) everywhere when the launch checks nothing. The ranges follow the kernel's
 * tensor and tensor-list parameters in order: one for a tensor, MAX + 1 for a tensor list taking
 * at most MAX tensors (one per tensor, those past its length without memory, then one without
 * memory for an index past MAX), so that an access through element i of a list is checked
 * against that element (i read from where the kernel took the element's pointer). An access that
 * fails the check calls tl_emu_global_access, which stops the launch with a report unless the
 * access lies in the range `tensor` (with TL_EMU_NO_TENSOR: in any range). */
#define TL_EMU_MAX_RANGES 4224
const uint64_t *tl_emu_global_ranges(void);
void tl_emu_global_access(const void *p, uint64_t size, uint32_t kind, uint32_t site, uint32_t tensor);

uint64_t tl_emu_cvt(uint64_t bits, uint32_t from, uint32_t to, uint32_t rnd);
uint32_t tl_emu_cvt_x2(uint32_t op, uint32_t a, uint32_t b);
float tl_emu_fma_rm(float a, float b, float c);
float tl_emu_sat(float x);
/* prmt.b32 (default mode): byte i of the result is byte (c >> 4i) & 7 of the pair b:a, or, when
 * bit 3 of that nibble is set, that byte's bit 7 copied to all 8 bits */
uint32_t tl_emu_prmt(uint32_t a, uint32_t b, uint32_t c);
float tl_emu_ex2(float x, uint32_t ftz);
float tl_emu_rsqrt(float x);
float tl_emu_fminf(float a, float b);
float tl_emu_fmaxf(float a, float b);
double tl_emu_fmin(double a, double b);
double tl_emu_fmax(double a, double b);
float tl_emu_atomic_add_f32(float *p, float v);        /* global memory: flushes subnormals */
float tl_emu_atomic_add_f32_shared(float *p, float v); /* shared memory: keeps them */

/* For debuggers: "kernel K, block (x,y,z), thread t (warp w, lane l)" of the fiber running on
 * this OS thread, or "not in a kernel" (in gdb: printf "%s\n", (char *)tl_emu_where()). */
const char *tl_emu_where(void);

#ifdef __cplusplus
}
#endif
#endif
