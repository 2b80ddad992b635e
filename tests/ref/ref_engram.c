/* ref_engram.c — engram_hash (moe-engram-mhc.md §2.1): 64-bit wrap-around n-gram hashes, each
 * reduced with a floor modulo (the result has the sign of the divisor, as torch's % on int64). */
#include "ref.h"

void ref_engram_hash(const int32_t *ids, const int64_t *mult, const int32_t *vocab, const int32_t *offsets, int T,
                     int MN, int L, int B, int32_t *out)
{
    int NC = (MN - 1) * B;
    for (int l = 0; l < L; l++)
        for (int t = 0; t < T; t++) {
            uint64_t h = 0; /* unsigned: the multiply wraps without undefined behaviour */
            for (int n = 0; n < MN; n++) {
                h ^= (uint64_t)(int64_t)ids[(size_t)t * MN + n] * (uint64_t)mult[(size_t)l * MN + n];
                if (n < 1)
                    continue;
                for (int j = 0; j < B; j++) {
                    int c = (n - 1) * B + j;
                    int64_t v = vocab[((size_t)l * (MN - 1) + (n - 1)) * B + j];
                    int64_t hs = (int64_t)h;
                    int64_t r = hs % v;
                    if (r != 0 && ((r < 0) != (v < 0)))
                        r += v;
                    out[((size_t)l * T + t) * NC + c] = (int32_t)(uint32_t)(uint64_t)(r + offsets[(size_t)l * NC + c]);
                }
            }
        }
}
