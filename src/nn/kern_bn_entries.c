/* kern_bn_entries.c — the batch-norm entries of the oneDNN kernel tables, one per layout: on
 * blocked activations (nChw16c, the f32 table) and on channels-last ones (_cl: nhwc, the bf16
 * table), each kern_bn_fast.c's kernel for that layout (nn_fast_bn_*_lay); and the bf16 table's
 * entries with x or y in bfloat16 (bn16_*, bn_x16_bwd: channels-last with NN_CL_X16 / NN_CL_Y16).
 * Contract: the kernel table's (nn.h); the two layouts give the same bits for the same values, and
 * the bfloat16 entries the _cl ones' bits on x widened, y rounded. */
#include "nn_internal.h"

#define F(p) ((const float *)(const void *)(p))   /* the kernels take bfloat16 through their float pointers */
#define CL16(x16, y16) (1 | ((x16) ? NN_CL_X16 : 0) | ((y16) ? NN_CL_Y16 : 0))
int nn_fast_bn16_fwd_train(int n, int c, int hw, int x16, const void *x, const float *res, int relu, const float *gamma,
                           const float *beta, float eps, int y16, void *y, uint16_t *ycopy, float *mean, float *var)
{
    if (!nn_fast_bn_stats_ok(c, hw)) return 0;
    return nn_fast_bn_fused_train_lay(CL16(x16, y16), n, c, hw, F(x), res, relu, gamma, beta, eps, y, ycopy, mean,
                                      var);
}
int nn_fast_bn16_fwd_infer(int n, int c, int hw, int x16, const void *x, const float *gamma, const float *beta,
                           const float *mean, const float *var, float eps, int y16, void *y)
{
    if (!nn_fast_bn_stats_ok(c, hw)) return 0;
    nn_fast_bn_fwd_infer_lay(CL16(x16, y16), n, c, hw, F(x), gamma, beta, mean, var, eps, y);
    return 1;
}
int nn_fast_bn_x16_bwd(int n, int c, int hw, const uint16_t *x, const float *y, const float *dy, const float *dy2,
                       int relu, const float *gamma, const float *beta, const float *mean, const float *var, float eps,
                       float *g, int dx16, void *dx, float *dgamma, float *dbeta)
{
    if (!nn_fast_bn_stats_ok(c, hw)) return 0;
    const int cl = CL16(1, dx16);
    if (y)
        return nn_fast_bn_add_relu_bwd_lay(cl, n, c, hw, F(x), y, dy, dy2, gamma, mean, var, eps, g, dx, dgamma, dbeta);
    if (relu) return nn_fast_bn_relu_bwd_lay(cl, n, c, hw, F(x), dy, gamma, beta, mean, var, eps, dx, dgamma, dbeta);
    nn_fast_bn_bwd_lay(cl, n, c, hw, F(x), dy, gamma, mean, var, eps, dx, dgamma, dbeta);
    return 1;
}

#define BN_X float *y, float *mean, float *var
void nn_fast_bn_fwd_train(int n, int c, int hw, const float *x, const float *gamma, const float *beta, float eps, BN_X)
{
    nn_fast_bn_fwd_train_lay(0, n, c, hw, x, gamma, beta, eps, y, mean, var);
}
void nn_fast_bn_fwd_train_cl(int n, int c, int hw, const float *x, const float *gamma, const float *beta, float eps,
                             BN_X)
{
    nn_fast_bn_fwd_train_lay(1, n, c, hw, x, gamma, beta, eps, y, mean, var);
}
#define BN_I int n, int c, int hw, const float *x, const float *gamma, const float *beta, const float *mean, \
             const float *var, float eps, float *y
void nn_fast_bn_fwd_infer(BN_I) { nn_fast_bn_fwd_infer_lay(0, n, c, hw, x, gamma, beta, mean, var, eps, y); }
void nn_fast_bn_fwd_infer_cl(BN_I) { nn_fast_bn_fwd_infer_lay(1, n, c, hw, x, gamma, beta, mean, var, eps, y); }
#define BN_B int n, int c, int hw, const float *x, const float *dy, const float *gamma, const float *mean, \
             const float *var, float eps, float *dx, float *dgamma, float *dbeta
void nn_fast_bn_bwd(BN_B) { nn_fast_bn_bwd_lay(0, n, c, hw, x, dy, gamma, mean, var, eps, dx, dgamma, dbeta); }
void nn_fast_bn_bwd_cl(BN_B) { nn_fast_bn_bwd_lay(1, n, c, hw, x, dy, gamma, mean, var, eps, dx, dgamma, dbeta); }
#define BN_R int n, int c, int hw, const float *x, const float *gamma, const float *beta, float eps, BN_X
int nn_fast_bn_relu_fwd_train(BN_R)
{
    return nn_fast_bn_fused_train_lay(0, n, c, hw, x, NULL, 1, gamma, beta, eps, y, NULL, mean, var);
}
int nn_fast_bn_relu_fwd_train_cl(BN_R)
{
    return nn_fast_bn_fused_train_lay(1, n, c, hw, x, NULL, 1, gamma, beta, eps, y, NULL, mean, var);
}
#define BN_A int n, int c, int hw, const float *x, const float *res, const float *gamma, const float *beta, \
             float eps, BN_X
int nn_fast_bn_add_relu_fwd_train(BN_A)
{
    return nn_fast_bn_fused_train_lay(0, n, c, hw, x, res, 1, gamma, beta, eps, y, NULL, mean, var);
}
int nn_fast_bn_add_relu_fwd_train_cl(BN_A)
{
    return nn_fast_bn_fused_train_lay(1, n, c, hw, x, res, 1, gamma, beta, eps, y, NULL, mean, var);
}
#define BN_RB int n, int c, int hw, const float *x, const float *dy, const float *gamma, const float *beta, \
              const float *mean, const float *var, float eps, float *dx, float *dgamma, float *dbeta
int nn_fast_bn_relu_bwd(BN_RB)
{
    return nn_fast_bn_relu_bwd_lay(0, n, c, hw, x, dy, gamma, beta, mean, var, eps, dx, dgamma, dbeta);
}
int nn_fast_bn_relu_bwd_cl(BN_RB)
{
    return nn_fast_bn_relu_bwd_lay(1, n, c, hw, x, dy, gamma, beta, mean, var, eps, dx, dgamma, dbeta);
}
#define BN_AB int n, int c, int hw, const float *x, const float *y, const float *dy, const float *dy2, \
              const float *gamma, const float *mean, const float *var, float eps, float *g, float *dx, \
              float *dgamma, float *dbeta
int nn_fast_bn_add_relu_bwd(BN_AB)
{
    return nn_fast_bn_add_relu_bwd_lay(0, n, c, hw, x, y, dy, dy2, gamma, mean, var, eps, g, dx, dgamma, dbeta);
}
int nn_fast_bn_add_relu_bwd_cl(BN_AB)
{
    return nn_fast_bn_add_relu_bwd_lay(1, n, c, hw, x, y, dy, dy2, gamma, mean, var, eps, g, dx, dgamma, dbeta);
}
#define BN_P int n, int c, int hw, const float *x, const float *res, int relu, const float *gamma, \
             const float *beta, float eps, const float *mean, const float *var, float *y
int nn_fast_bn_apply_train(BN_P)
{
    return nn_fast_bn_apply_train_lay(0, n, c, hw, x, res, relu, gamma, beta, eps, mean, var, y);
}
int nn_fast_bn_apply_train_cl(BN_P)
{
    return nn_fast_bn_apply_train_lay(1, n, c, hw, x, res, relu, gamma, beta, eps, mean, var, y);
}
