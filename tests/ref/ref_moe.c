/* ref_moe.c — topk_gate (moe-engram-mhc.md §1.2): the K indices of each row in rank order,
 * descending by score with ties to the smaller index, as torch.sort(descending, stable). */
#include "ref.h"

void ref_topk(const float *scores, int T, int E, int K, int64_t *idx)
{
    for (int t = 0; t < T; t++) {
        const float *s = scores + (size_t)t * E;
        int order[1024];
        for (int e = 0; e < E; e++)
            order[e] = e;
        /* insertion sort: stable, descending */
        for (int i = 1; i < E; i++) {
            int v = order[i], j = i;
            while (j > 0 && s[order[j - 1]] < s[v]) {
                order[j] = order[j - 1];
                j--;
            }
            order[j] = v;
        }
        for (int k = 0; k < K; k++)
            idx[(size_t)t * K + k] = order[k];
    }
}
