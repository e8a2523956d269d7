/* modules_mlp.c - the PopXL addons tutorial's flow in C (popc/module.h):
** an MLP built from outlined modules, trained by an explicit forward,
** backward and optimizer program on Fashion-MNIST, whose weights are then
** copied into an inference model to measure test accuracy.
**
**   modules_mlp [--epochs N] [--limit N] [--backend ipumodel|cpu]
**               [--data DIR] [--profile DIR]
**
** The MLP is 784 -> 256 -> 256 -> 256 -> 10 with ReLU:
** - "input", "hidden" (twice, each with its own weights) and "classifier"
**   are modules. The two hidden layers are one outlined body called twice;
**   `--profile DIR` writes the IPU model's report, whose "outlined" list
**   shows it;
** - "loss" is a module too (cross entropy of the logits).
**
** The program (one graph, one popc_model_run per batch):
** - forward: the calls of the modules;
** - backward: the calls of their autodiff modules, from the loss back;
** - optimizer: SGD with momentum 0.9 and lr 0.05, as buffer updates of
**   every weight and velocity.
**
** The module variables are frozen, so popc's own optimizer never touches
** them; the program is the optimizer. Build against an installed popc:
**
**   cc -std=c11 modules_mlp.c $(pkg-config --cflags --libs popc) -lm
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <popc/popc.h>
#include <popc/module.h>

#define BATCH 64
#define HIDDEN 256
#define CLASSES 10
#define LR 0.03
#define MOMENTUM 0.9

#define TRY(call)                                                  \
    do {                                                           \
        if ((st = (call)) != POPC_OK)                              \
            goto done;                                             \
    } while (0)

/* ---- the modules ----------------------------------------------------------- */

typedef struct dense_spec {
    int64_t in, out;
    int relu;
} dense_spec;

/* y = x W + b (then ReLU), W and b uniform in +-1/sqrt(in) like
** torch.nn.Linear's; frozen: the program updates them. */
static popc_status build_dense(popc_module_builder *b, void *user)
{
    const dense_spec *s = user;
    double bound = 1.0 / sqrt((double)s->in);
    popc_variable_factory init = {POPC_INIT_UNIFORM, -bound, bound, NULL, 1};
    int64_t xd[2] = {BATCH, s->in}, wd[2] = {s->in, s->out}, bd[1] = {s->out};
    popc_graph *g = popc_module_builder_graph(b);
    int x, w, bias, h, y, in[2];
    popc_status st;

    if ((st = popc_module_add_input(b, "x", POPC_DTYPE_F32, xd, 2, &x)) ||
        (st = popc_module_add_variable(b, "weight", POPC_DTYPE_F32, wd, 2,
                                       &init, &w)) ||
        (st = popc_module_add_variable(b, "bias", POPC_DTYPE_F32, bd, 1,
                                       &init, &bias)))
        return st;
    in[0] = x;
    in[1] = w;
    if ((st = popc_graph_add_node(g, NULL, "MatMul", 0, in, 2, &h, 1, NULL, 0,
                                  "matmul", NULL)))
        return st;
    in[0] = h;
    in[1] = bias;
    if ((st = popc_graph_add_node(g, NULL, "Add", 0, in, 2, &h, 1, NULL, 0,
                                  "bias", NULL)))
        return st;
    if (s->relu && (st = popc_graph_add_node(g, NULL, "Relu", 0, &h, 1, &y,
                                             1, NULL, 0, "relu", NULL)))
        return st;
    return popc_module_add_output(b, "y", s->relu ? y : h);
}

/* mean cross entropy of logits [BATCH, 10] and labels [BATCH] */
static popc_status build_loss(popc_module_builder *b, void *user)
{
    int64_t zd[2] = {BATCH, CLASSES}, yd[1] = {BATCH};
    popc_layers *L = NULL;
    int z, y, loss;
    popc_status st;

    (void)user;
    if ((st = popc_module_add_input(b, "logits", POPC_DTYPE_F32, zd, 2,
                                    &z)) ||
        (st = popc_module_add_input(b, "labels", POPC_DTYPE_I32, yd, 1, &y)) ||
        (st = popc_layers_new(popc_module_builder_graph(b), 0, &L)))
        return st;
    st = popc_nn_cross_entropy(L, z, y, "mean", &loss);
    popc_layers_free(L);
    return st ? st : popc_module_add_output(b, "loss", loss);
}

typedef struct mlp {
    popc_module *input, *hidden, *classifier, *loss;
    popc_module *d_input, *d_hidden, *d_classifier, *d_loss;
} mlp;

static void mlp_free(mlp *n)
{
    popc_module *all[8] = {n->input,   n->hidden,   n->classifier,
                           n->loss,    n->d_input,  n->d_hidden,
                           n->d_classifier, n->d_loss};

    for (int i = 0; i < 8; i++)
        popc_module_free(all[i]);
}

static popc_status mlp_new(mlp *n)
{
    static const dense_spec in = {784, HIDDEN, 1}, hid = {HIDDEN, HIDDEN, 1};
    static const dense_spec cls = {HIDDEN, CLASSES, 0};
    popc_status st;

    memset(n, 0, sizeof *n);
    if ((st = popc_module_new("input", build_dense, (void *)&in,
                              &n->input)) ||
        (st = popc_module_new("hidden", build_dense, (void *)&hid,
                              &n->hidden)) ||
        (st = popc_module_new("classifier", build_dense, (void *)&cls,
                              &n->classifier)) ||
        (st = popc_module_new("loss", build_loss, NULL, &n->loss)) ||
        (st = popc_module_autodiff(n->input, &n->d_input)) ||
        (st = popc_module_autodiff(n->hidden, &n->d_hidden)) ||
        (st = popc_module_autodiff(n->classifier, &n->d_classifier)) ||
        (st = popc_module_autodiff(n->loss, &n->d_loss)))
        mlp_free(n);
    return st;
}

/* ---- the graphs ------------------------------------------------------------- */

/* The four dense layers in order, with their bindings (same prefixes in
** the training and the inference graph, so weights copy by name). */
#define LAYERS 4

typedef struct net {
    const popc_module *mod[LAYERS], *grad[LAYERS];
    popc_bound *bound[LAYERS];
} net;

static popc_status bind_all(const mlp *n, popc_graph *g, net *t)
{
    static const char *const prefix[LAYERS] = {"mlp/input", "mlp/hidden1",
                                               "mlp/hidden2",
                                               "mlp/classifier"};
    popc_status st;

    t->mod[0] = n->input;
    t->mod[1] = t->mod[2] = n->hidden;
    t->mod[3] = n->classifier;
    t->grad[0] = n->d_input;
    t->grad[1] = t->grad[2] = n->d_hidden;
    t->grad[3] = n->d_classifier;
    for (int k = 0; k < LAYERS; k++)
        if ((st = popc_module_bind(t->mod[k], g, prefix[k], (uint64_t)k,
                                   &t->bound[k])))
            return st;
    return POPC_OK;
}

static void unbind_all(net *t)
{
    for (int k = 0; k < LAYERS; k++)
        popc_bound_free(t->bound[k]);
}

static popc_status scalar(popc_graph *g, const char *name, float v, int *id)
{
    popc_tensor *t = NULL;
    popc_status st;

    if ((st = popc_tensor_new(POPC_DTYPE_F32, NULL, 0, &t)))
        return st;
    *(float *)popc_tensor_data(t) = v;
    st = popc_graph_add_constant(g, name, t, id);
    popc_tensor_free(t);
    return st;
}

static popc_status node(popc_graph *g, const char *op, int a, int b, int *y)
{
    int in[2] = {a, b};

    return popc_graph_add_node(g, NULL, op, 0, in, 2, y, 1, NULL, 0, NULL,
                               NULL);
}

/* SGD with momentum for weight w and gradient grad: v = mu v + g,
** w = w - lr v, as updates after each batch (torch.optim.SGD's rule). */
static popc_status sgd(popc_graph *g, int w, int grad, int lr, int mu)
{
    popc_tensor *zeros = NULL;
    popc_view info = popc_graph_value_info(g, w);
    char name[256];
    int v, mv, nv, step, nw;
    popc_status st;

    snprintf(name, sizeof name, "sgd/%s", popc_graph_value_name(g, w));
    if ((st = popc_tensor_new(POPC_DTYPE_F32, info.dims, info.rank, &zeros)))
        return st;
    st = popc_graph_add_initializer(g, name, zeros, 0, &v);
    popc_tensor_free(zeros);
    if (st || (st = node(g, "Mul", v, mu, &mv)) ||
        (st = node(g, "Add", mv, grad, &nv)) ||
        (st = node(g, "Mul", nv, lr, &step)) ||
        (st = node(g, "Sub", w, step, &nw)) ||
        (st = popc_graph_add_update(g, v, nv)))
        return st;
    return popc_graph_add_update(g, w, nw);
}

static popc_status build_program(const mlp *n, popc_graph **out, net *t)
{
    int64_t xd[2] = {BATCH, 784}, yd[1] = {BATCH};
    popc_graph *g = NULL;
    popc_layers *L = NULL;
    int act[LAYERS + 1], labels, loss, out_loss, one, lr, mu;
    int dloss[2], dy, grads[3], args[4];
    popc_status st;

    *out = NULL;
    TRY(popc_graph_new("modules-mlp-train", &g));
    TRY(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &act[0]));
    TRY(popc_graph_add_input(g, "labels", POPC_DTYPE_I32, yd, 1, &labels));
    TRY(bind_all(n, g, t));
    /* forward */
    for (int k = 0; k < LAYERS; k++)
        TRY(popc_module_call(g, t->mod[k], t->bound[k], &act[k], 1,
                             &act[k + 1], 1));
    args[0] = act[LAYERS];
    args[1] = labels;
    TRY(popc_module_call(g, n->loss, NULL, args, 2, &loss, 1));
    TRY(popc_layers_new(g, 0, &L));
    TRY(popc_nn_identity_loss(L, loss, "none", &out_loss));
    TRY(popc_graph_add_output(g, out_loss));
    /* backward: dloss/dlogits from the loss module's autodiff */
    TRY(scalar(g, "one", 1.0f, &one));
    args[2] = one;
    TRY(popc_module_call(g, n->d_loss, NULL, args, 3, dloss, 2));
    dy = dloss[0];
    TRY(scalar(g, "lr", (float)LR, &lr));
    TRY(scalar(g, "momentum", (float)MOMENTUM, &mu));
    for (int k = LAYERS - 1; k >= 0; k--) {
        int w = popc_bound_variable(t->bound[k], "weight");
        int b = popc_bound_variable(t->bound[k], "bias");

        args[0] = act[k];
        args[1] = w;
        args[2] = b;
        args[3] = dy;
        TRY(popc_module_call(g, t->grad[k], NULL, args, 4, grads, 3));
        /* optimizer */
        TRY(sgd(g, w, grads[1], lr, mu));
        TRY(sgd(g, b, grads[2], lr, mu));
        dy = grads[0];
    }
    *out = g;
    g = NULL;
done:
    popc_layers_free(L);
    popc_graph_free(g);
    return st;
}

static popc_status build_inference(const mlp *n, popc_graph **out, net *t)
{
    int64_t xd[2] = {BATCH, 784};
    popc_graph *g = NULL;
    int act[LAYERS + 1];
    popc_status st;

    *out = NULL;
    TRY(popc_graph_new("modules-mlp-infer", &g));
    TRY(popc_graph_add_input(g, "x", POPC_DTYPE_F32, xd, 2, &act[0]));
    TRY(bind_all(n, g, t));
    for (int k = 0; k < LAYERS; k++)
        TRY(popc_module_call(g, t->mod[k], t->bound[k], &act[k], 1,
                             &act[k + 1], 1));
    TRY(popc_graph_add_output(g, act[LAYERS]));
    *out = g;
    g = NULL;
done:
    popc_graph_free(g);
    return st;
}

/* ---- data and the run --------------------------------------------------- */

static popc_status load_split(const char *dir, const char *split,
                              int64_t limit, popc_dataset **out)
{
    static const float mean = 0.2860f, std = 0.3530f;
    static const int64_t flat[1] = {784};
    char images[1024], labels[1024];
    popc_status st;

    snprintf(images, sizeof images, "%s/%s-images-idx3-ubyte.gz", dir, split);
    snprintf(labels, sizeof labels, "%s/%s-labels-idx1-ubyte.gz", dir, split);
    if ((st = popc_dataset_load_idx(images, labels, out)))
        return st;
    if (limit > 0)
        popc_dataset_truncate(*out, limit);
    if ((st = popc_dataset_set_classes(*out, CLASSES)) ||
        (st = popc_dataset_set_sample_shape(*out, flat, 1)) ||
        (st = popc_dataset_normalize(*out, &mean, &std, 1))) {
        popc_dataset_free(*out);
        *out = NULL;
    }
    return st;
}

static popc_status accuracy(popc_model *m, popc_dataloader *dl, double *acc)
{
    int64_t seen = 0, correct = 0;
    popc_status st;

    for (;;) {
        popc_batch b;
        popc_tensor *logits = NULL;
        const float *z;
        const int32_t *y;

        if ((st = popc_dataloader_next(dl, &b)))
            return st;
        if (b.n == 0)
            break;
        if ((st = popc_model_run(m, &b.features, 1, &logits, 1)))
            return st;
        z = popc_tensor_cdata(logits);
        y = popc_tensor_cdata(b.labels);
        for (int64_t i = 0; i < b.n; i++) {
            int best = 0;

            for (int c = 1; c < CLASSES; c++)
                if (z[i * CLASSES + c] > z[i * CLASSES + best])
                    best = c;
            correct += best == y[i];
        }
        seen += b.n;
        popc_tensor_free(logits);
    }
    *acc = seen ? (double)correct / (double)seen : 0.0;
    return POPC_OK;
}

int main(int argc, char **argv)
{
    const char *backend = "ipumodel", *data = "/usr/share/datasets/fashion-mnist";
    const char *profile = NULL;
    int64_t epochs = 3, limit = 0;
    mlp n;
    net tn = {0}, in = {0};
    popc_dataset *train_ds = NULL, *test_ds = NULL;
    popc_dataloader *train_dl = NULL, *test_dl = NULL;
    popc_options *to = NULL, *io = NULL;
    popc_optimizer *none = NULL;
    popc_graph *tg = NULL, *ig = NULL;
    popc_model *train = NULL, *test = NULL;
    popc_loader_config cfg;
    popc_status st;
    double acc = 0.0;
    int copied = 0, have_mlp = 0;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--epochs") == 0)
            epochs = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "--limit") == 0)
            limit = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "--backend") == 0)
            backend = argv[i + 1];
        else if (strcmp(argv[i], "--data") == 0)
            data = argv[i + 1];
        else if (strcmp(argv[i], "--profile") == 0)
            profile = argv[i + 1];
        else {
            fprintf(stderr, "usage: %s [--epochs N] [--limit N] [--backend "
                            "ipumodel|cpu] [--data DIR] [--profile DIR]\n",
                    argv[0]);
            return 2;
        }
    }
    TRY(mlp_new(&n));
    have_mlp = 1;
    TRY(load_split(data, "train", limit, &train_ds));
    TRY(load_split(data, "t10k", 0, &test_ds));
    TRY(popc_options_new(&to));
    TRY(popc_options_set(to, "backend", backend));
    if (profile)
        TRY(popc_options_set(to, "enableProfiling", profile));
    TRY(popc_options_new(&io));
    TRY(popc_options_set(io, "backend", backend));
    popc_loader_config_init(&cfg);
    cfg.batch_size = BATCH;
    cfg.shuffle = 1;
    TRY(popc_dataloader_new(train_ds, to, &cfg, &train_dl));
    popc_loader_config_init(&cfg);
    cfg.batch_size = BATCH;
    cfg.drop_last = 0;
    cfg.pad_last = 1;
    TRY(popc_dataloader_new(test_ds, io, &cfg, &test_dl));
    TRY(build_program(&n, &tg, &tn));
    TRY(build_inference(&n, &ig, &in));
    /* every weight is frozen: the program's updates are the optimizer, so
    ** popc's own gets a learning rate of 0 */
    TRY(popc_optimizer_new("sgd", &none));
    TRY(popc_optimizer_set(none, "lr", 0.0));
    TRY(popc_model_new_training(tg, to, none, &train));
    TRY(popc_model_new_inference(ig, io, &test));
    printf("modules: input, hidden (2 calls, one outlined body), "
           "classifier, loss; their autodiff modules; SGD momentum %.1f, "
           "lr %.2f, batch %d, backend %s\n", MOMENTUM, LR, BATCH, backend);
    for (int64_t e = 0; e < epochs; e++) {
        double sum = 0.0;
        int64_t steps = 0;

        for (;;) {
            popc_batch b;
            popc_tensor *loss = NULL;

            TRY(popc_dataloader_next(train_dl, &b));
            if (b.n == 0)
                break;
            TRY(popc_model_run(train, (popc_tensor *[]){b.features, b.labels},
                               2, &loss, 1));
            sum += *(const float *)popc_tensor_cdata(loss);
            steps++;
            popc_tensor_free(loss);
        }
        /* the tutorial's test session: copy the trained weights over */
        TRY(popc_model_copy_weights(test, train, "mlp/", &copied));
        TRY(accuracy(test, test_dl, &acc));
        printf("epoch %lld: loss %.4f, test accuracy %.2f%% (%d weights "
               "copied)\n", (long long)e + 1,
               steps ? sum / (double)steps : 0.0, 100.0 * acc, copied);
    }
done:
    if (st != POPC_OK)
        fprintf(stderr, "modules_mlp: %s\n", popc_last_error());
    popc_model_free(test);
    popc_model_free(train);
    unbind_all(&tn);
    unbind_all(&in);
    popc_graph_free(tg);
    popc_graph_free(ig);
    popc_optimizer_free(none);
    popc_options_free(to);
    popc_options_free(io);
    popc_dataloader_free(train_dl);
    popc_dataloader_free(test_dl);
    popc_dataset_free(train_ds);
    popc_dataset_free(test_ds);
    if (have_mlp)
        mlp_free(&n);
    return st == POPC_OK ? 0 : 1;
}
