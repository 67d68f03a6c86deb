/* zoo.c — the model architectures baton knows by name, built as layer graphs. The names and
 * order of parameters and buffers are those of the PyTorch reference modules' state_dict().
 *
 *   mlp      flatten -> fc1 Linear(C*H*W, 256) -> ReLU -> Dropout(0.2) -> fc2 Linear(256, classes)
 *            (baton's own small baseline; PyTorch equivalent: an nn.Module with attributes fc1, drop,
 *            fc2, so state_dict = fc1.weight, fc1.bias, fc2.weight, fc2.bias)
 *   lenet    conv1 Conv2d(C, 32, 3) -> ReLU -> conv2 Conv2d(32, 64, 3) -> ReLU -> MaxPool 2x2 ->
 *            flatten -> fc1 Linear(64*((H-4)/2)*((W-4)/2), 128) -> ReLU -> fc2 Linear(128, classes)
 *            (LeNetLike; 1,199,882 parameters for 1x28x28 and 10 classes)
 *   resnetN  N = 6n+2 (resnet8: n=1, resnet20: n=3, resnet56: n=9): conv Conv2d(C, 16, 3, pad 1, no
 *            bias) -> bn -> ReLU -> 3 stages of n BasicBlocks (16 ch stride 1, 32 ch stride 2, 64 ch
 *            stride 2) -> global average pool -> fc Linear(64, classes). BasicBlock: conv1 3x3
 *            (stride s, pad 1, no bias) -> bn1 -> ReLU -> conv2 3x3 -> bn2, plus the shortcut (the
 *            identity, or "option B" short.0 Conv2d 1x1 stride s no bias -> short.1 BN when the
 *            stride or width changes), added, then ReLU. Block modules are layers.<i>.
 *
 * The racing league's policy and value networks (src/race): `classes` is the output count (the
 * action logits or distribution parameters, or 1 for a value), and the output is a plain linear
 * layer (no softmax: the caller computes its loss and gives backward its gradient,
 * baton_nn_backward_from).
 *   race_mlp fc1 Linear(C*H*W, 128) -> ReLU -> fc2 Linear(128, 128) -> ReLU -> head Linear(128, classes)
 *            (on the sensor vector; baton's own)
 *   race_cnn DeepRacer's "shallow" network (deepracer-simapp markov/architecture/
 *            custom_architectures.py: DEFAULT_INPUT_EMBEDDER and DEFAULT_MIDDLEWARE): conv1
 *            Conv2d(C, 32, 8, stride 4) -> ReLU -> conv2 Conv2d(32, 64, 4, stride 2) -> ReLU -> conv3
 *            Conv2d(64, 64, 3, stride 1) -> ReLU (no padding, as rl_coach's Conv2d) -> flatten -> fc
 *            Linear(64*h*w, 512) -> ReLU -> head Linear(512, classes). On DeepRacer's 160x120 camera
 *            the convolutions give 32x29x39, 64x13x18, 64x11x16 (fc in 11264); C = frames stacked.
 *
 * Contract: nn_zoo_build fills m with the graph for m->spec or returns a baton status naming the
 * model and the reason (unknown name, input too small, fewer than 2 classes for a classifier). */
#include "nn_internal.h"

#include <stdio.h>
#include <string.h>

static int build_mlp(baton_nn_model *m)
{
    int x = nn_b_input(m, m->spec.in_c, m->spec.in_h, m->spec.in_w);
    x = nn_b_linear(m, "fc1", x, 256, 1);
    x = nn_b_relu(m, x);
    x = nn_b_dropout(m, x, 0.2f);
    nn_b_linear(m, "fc2", x, m->spec.classes, 1);
    return BATON_OK;
}

static int build_lenet(baton_nn_model *m, baton_err *err)
{
    if (m->spec.in_h < 6 || m->spec.in_w < 6)
        return baton_err_set(err, BATON_ERR_ARG, "model lenet: input %dx%d is too small (needs at least 6x6)",
                             m->spec.in_h, m->spec.in_w);
    int x = nn_b_input(m, m->spec.in_c, m->spec.in_h, m->spec.in_w);
    x = nn_b_conv(m, "conv1", x, 32, 3, 1, 0, 1);
    x = nn_b_relu(m, x);
    x = nn_b_conv(m, "conv2", x, 64, 3, 1, 0, 1);
    x = nn_b_relu(m, x);
    x = nn_b_maxpool(m, x, 2, 2);
    x = nn_b_linear(m, "fc1", x, 128, 1);
    x = nn_b_relu(m, x);
    nn_b_linear(m, "fc2", x, m->spec.classes, 1);
    return BATON_OK;
}

static int basic_block(baton_nn_model *m, int idx, int x, int cin, int cout, int stride)
{
    char p[24], name[NN_NAME_MAX];
    snprintf(p, sizeof p, "layers.%d", idx);
    snprintf(name, sizeof name, "%s.conv1", p);
    int o = nn_b_conv(m, name, x, cout, 3, stride, 1, 0);
    snprintf(name, sizeof name, "%s.bn1", p);
    o = nn_b_bn(m, name, o);
    o = nn_b_relu(m, o);
    snprintf(name, sizeof name, "%s.conv2", p);
    o = nn_b_conv(m, name, o, cout, 3, 1, 1, 0);
    snprintf(name, sizeof name, "%s.bn2", p);
    o = nn_b_bn(m, name, o);
    int sc = x;
    if (stride != 1 || cin != cout) {
        snprintf(name, sizeof name, "%s.short.0", p);
        sc = nn_b_conv(m, name, x, cout, 1, stride, 0, 0);
        snprintf(name, sizeof name, "%s.short.1", p);
        sc = nn_b_bn(m, name, sc);
    }
    o = nn_b_add(m, o, sc);
    return nn_b_relu(m, o);
}

static int build_resnet(baton_nn_model *m, int n)
{
    int x = nn_b_input(m, m->spec.in_c, m->spec.in_h, m->spec.in_w);
    x = nn_b_conv(m, "conv", x, 16, 3, 1, 1, 0);
    x = nn_b_bn(m, "bn", x);
    x = nn_b_relu(m, x);
    static const int widths[3] = {16, 32, 64}, strides[3] = {1, 2, 2};
    int cin = 16, idx = 0;
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < n; i++) {
            x = basic_block(m, idx++, x, cin, widths[s], i == 0 ? strides[s] : 1);
            cin = widths[s];
        }
    }
    x = nn_b_gap(m, x);
    nn_b_linear(m, "fc", x, m->spec.classes, 1);
    return BATON_OK;
}

static int build_race_mlp(baton_nn_model *m)
{
    int x = nn_b_input(m, m->spec.in_c, m->spec.in_h, m->spec.in_w);
    x = nn_b_linear(m, "fc1", x, 128, 1);
    x = nn_b_relu(m, x);
    x = nn_b_linear(m, "fc2", x, 128, 1);
    x = nn_b_relu(m, x);
    nn_b_linear(m, "head", x, m->spec.classes, 1);
    return BATON_OK;
}

static int build_race_cnn(baton_nn_model *m, baton_err *err)
{
    /* the smallest input the three valid convolutions take: 36 (8 + 4 * 7 -> 8 -> 3 -> 1) */
    if (m->spec.in_h < 36 || m->spec.in_w < 36)
        return baton_err_set(err, BATON_ERR_ARG, "model race_cnn: input %dx%d is too small (needs at least 36x36)",
                             m->spec.in_h, m->spec.in_w);
    int x = nn_b_input(m, m->spec.in_c, m->spec.in_h, m->spec.in_w);
    x = nn_b_relu(m, nn_b_conv(m, "conv1", x, 32, 8, 4, 0, 1));
    x = nn_b_relu(m, nn_b_conv(m, "conv2", x, 64, 4, 2, 0, 1));
    x = nn_b_relu(m, nn_b_conv(m, "conv3", x, 64, 3, 1, 0, 1));
    x = nn_b_relu(m, nn_b_linear(m, "fc", x, 512, 1));
    nn_b_linear(m, "head", x, m->spec.classes, 1);
    return BATON_OK;
}

int nn_zoo_build(baton_nn_model *m, baton_err *err)
{
    const char *name = m->spec.name;
    if (strcmp(name, "race_mlp") == 0) return build_race_mlp(m);
    if (strcmp(name, "race_cnn") == 0) return build_race_cnn(m, err);
    if (m->spec.classes < 2 && (!strcmp(name, "mlp") || !strcmp(name, "lenet") || !strncmp(name, "resnet", 6)))
        return baton_err_set(err, BATON_ERR_ARG, "model %s: bad class count %d (a classifier needs at least 2)", name,
                             m->spec.classes);
    if (strcmp(name, "mlp") == 0) return build_mlp(m);
    if (strcmp(name, "lenet") == 0) return build_lenet(m, err);
    if (strcmp(name, "resnet8") == 0) return build_resnet(m, 1);
    if (strcmp(name, "resnet20") == 0) return build_resnet(m, 3);
    if (strcmp(name, "resnet56") == 0) return build_resnet(m, 9);
    return baton_err_set(err, BATON_ERR_NOTFOUND,
                         "unknown model \"%s\" (known: mlp, lenet, resnet8, resnet20, resnet56, race_mlp, race_cnn)", name);
}
