/* ref_mhc.c — the Sinkhorn normalisation of mHC (moe-engram-mhc.md §3.2), forward:
 *   Y0 = row softmax of X;  P = (Y0 + eps) / (column sums + eps);
 *   repeat - 1 times: P /= row sums + eps, then P /= column sums + eps.
 * The row softmax divides first and then adds eps, as the spec says the kernel does. Row sums
 * add a row's elements in index order; column sums add the rows pairwise, (0+1) + (2+3). */
#include "ref.h"

#include <math.h>

/* pairwise sum of H values (H a power of two) */
static float pair_sum(const float *v, int n)
{
    if (n == 1)
        return v[0];
    return pair_sum(v, n / 2) + pair_sum(v + n / 2, n / 2);
}

void ref_sinkhorn(const float *x, float *out, int N, int H, int repeat, float eps)
{
    for (int b = 0; b < N; b++) {
        const float *X = x + (size_t)b * H * H;
        float *P = out + (size_t)b * H * H;
        for (int j = 0; j < H; j++) {
            float mx = X[j * H];
            for (int k = 1; k < H; k++)
                mx = X[j * H + k] > mx ? X[j * H + k] : mx;
            float s = 0.0f;
            for (int k = 0; k < H; k++) {
                P[j * H + k] = ref_expf(X[j * H + k] - mx);
                s = k == 0 ? P[j * H] : s + P[j * H + k];
            }
            for (int k = 0; k < H; k++)
                P[j * H + k] = P[j * H + k] / s + eps;
        }
        for (int r = 0; r < repeat; r++) {
            if (r > 0)
                for (int j = 0; j < H; j++) {
                    float s = P[j * H];
                    for (int k = 1; k < H; k++)
                        s = s + P[j * H + k];
                    for (int k = 0; k < H; k++)
                        P[j * H + k] = P[j * H + k] / (s + eps);
                }
            for (int k = 0; k < H; k++) {
                float col[64];
                for (int j = 0; j < H; j++)
                    col[j] = P[j * H + k];
                float s = pair_sum(col, H);
                for (int j = 0; j < H; j++)
                    P[j * H + k] = P[j * H + k] / (s + eps);
            }
        }
    }
}

void ref_sinkhorn_f64(const float *x, double *out, int N, int H, int repeat, double eps)
{
    for (int b = 0; b < N; b++) {
        const float *X = x + (size_t)b * H * H;
        double *P = out + (size_t)b * H * H;
        for (int j = 0; j < H; j++) {
            double mx = X[j * H], s = 0.0;
            for (int k = 1; k < H; k++)
                mx = X[j * H + k] > mx ? X[j * H + k] : mx;
            for (int k = 0; k < H; k++)
                s += P[j * H + k] = exp(X[j * H + k] - mx);
            for (int k = 0; k < H; k++)
                P[j * H + k] = P[j * H + k] / s + eps;
        }
        for (int r = 0; r < repeat; r++) {
            if (r > 0)
                for (int j = 0; j < H; j++) {
                    double s = 0.0;
                    for (int k = 0; k < H; k++)
                        s += P[j * H + k];
                    for (int k = 0; k < H; k++)
                        P[j * H + k] /= s + eps;
                }
            for (int k = 0; k < H; k++) {
                double s = 0.0;
                for (int j = 0; j < H; j++)
                    s += P[j * H + k];
                for (int j = 0; j < H; j++)
                    P[j * H + k] /= s + eps;
            }
        }
    }
}
