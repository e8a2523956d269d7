/* run_ini.c - reading a run INI file: --set overrides, the section and
** key checks, [optimizer], [train], [infer], and writing the model INI
** that a finished training run leaves for `popc infer`.
**
** The file stays a parsed popci_config; every override is a one-key
** popci_config of its own ("[data]\nbatch_size = 32\n" named "--set
** data.batch_size"), so typed getters and their messages work the same
** for both and a value is always reported where it was written.
*/
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "popc/log.h"
#include "popc/optimizer.h"
#include "popc/run.h"
#include "core/layer/alloc.h"
#include "core/layer/options.h"
#include "run/run_priv.h"

static const char *const sections[] = {"options", "data",  "optimizer",
                                       "train",   "infer", "model",
                                       "layer NAME", "nodes PREFIX", NULL};
static const char *const train_keys[] = {
    "epochs",    "weights",  "model",       "checkpoint", "checkpoint_every",
    "log_every", "evaluate", "export_onnx", NULL};
static const char *const infer_keys[] = {"weights", "predictions", "split",
                                         NULL};

/* ---- sources ------------------------------------------------------------ */

const popci_config *popci_run_src(const popc_run *r, const char *section,
                                  const char *key)
{
    for (int i = r->n_sets - 1; i >= 0; i--)
        if (strcasecmp(r->sets[i].section, section) == 0 &&
            strcasecmp(r->sets[i].key, key) == 0)
            return r->sets[i].cfg;
    return r->file;
}

int popci_run_has(const popc_run *r, const char *section, const char *key)
{
    return popci_config_has_key(popci_run_src(r, section, key), section, key);
}

const char *popci_run_where(const popc_run *r, const char *section,
                            const char *key, char *buf, size_t size)
{
    const popci_config *c = popci_run_src(r, section, key);
    int line = popci_config_key_line(c, section, key);

    if (!line)
        line = popci_config_section_line(c, section);
    /* an override is named by itself; its line is meaningless */
    if (line && c == r->file)
        snprintf(buf, size, "%s:%d: [%s] %s", popci_config_path(c), line,
                 section, key);
    else
        snprintf(buf, size, "%s: [%s] %s", popci_config_path(c), section,
                 key);
    return buf;
}

static int has_section(const popc_run *r, const char *section)
{
    if (popci_config_has_section(r->file, section))
        return 1;
    for (int i = 0; i < r->n_sets; i++)
        if (strcasecmp(r->sets[i].section, section) == 0)
            return 1;
    return 0;
}

/* ---- overrides ---------------------------------------------------------- */

/* "section.key=value"; "layer.NAME.key=value" names [layer NAME]. */
static popc_status parse_set(const char *spec, popci_run_set *s)
{
    const char *eq = strchr(spec, '='), *dot;
    char *name = NULL, *text = NULL;
    size_t len;
    popc_status st;

    memset(s, 0, sizeof *s);
    dot = strchr(spec, '.');
    if (!eq || !dot || dot > eq || dot == spec || dot + 1 == eq)
        return popc_set_error(POPC_ECONFIG,
                              "--set %s: expected section.key=value (e.g. "
                              "data.batch_size=32, options.deviceIterations"
                              "=4, layer.fc1.out_features=256)",
                              spec);
    if (strncasecmp(spec, "layer.", 6) == 0) {
        const char *kd = strchr(dot + 1, '.');

        if (!kd || kd > eq || kd == dot + 1 || kd + 1 == eq)
            return popc_set_error(POPC_ECONFIG,
                                  "--set %s: a layer setting is "
                                  "layer.NAME.key=value",
                                  spec);
        s->section = popci_malloc((size_t)(kd - dot) + 6);
        if (s->section)
            sprintf(s->section, "layer %.*s", (int)(kd - dot - 1), dot + 1);
        s->key = popci_strndup(kd + 1, (size_t)(eq - kd - 1));
    } else {
        s->section = popci_strndup(spec, (size_t)(dot - spec));
        s->key = popci_strndup(dot + 1, (size_t)(eq - dot - 1));
    }
    s->value = popci_strdup(eq + 1);
    if (!s->section || !s->key || !s->value)
        return popc_set_error(POPC_ENOMEM, "--set: out of memory");
    if (strpbrk(s->value, "\n\r"))
        return popc_set_error(POPC_ECONFIG,
                              "--set %s: the value must be one line", spec);
    len = strlen(s->section) + strlen(s->key) + 16;
    name = popci_malloc(strlen(spec) + 8);
    text = popci_malloc(len + strlen(s->value));
    if (!name || !text) {
        free(name);
        free(text);
        return popc_set_error(POPC_ENOMEM, "--set: out of memory");
    }
    sprintf(name, "--set %.*s", (int)(eq - spec), spec);
    sprintf(text, "[%s]\n%s = %s\n", s->section, s->key, s->value);
    st = popci_config_from_text(name, text, &s->cfg);
    free(name);
    free(text);
    if (st != POPC_OK)
        return popc_set_error(POPC_ECONFIG, "%s", popc_last_error());
    return POPC_OK;
}

/* ---- checks ------------------------------------------------------------- */

static popc_status check_section_name(const char *where, const char *name)
{
    const char *close;

    if (strncasecmp(name, "nodes ", 6) == 0)
        return name[6] ? POPC_OK
                       : popc_set_error(POPC_ECONFIG,
                                        "%s: [%s] needs a node-name prefix: "
                                        "[nodes /layer1] (or [nodes *] for "
                                        "every node)",
                                        where, name);

    if (strncasecmp(name, "layer ", 6) == 0) {
        const char *n = name + 6;

        if (!*n)
            return popc_set_error(POPC_ECONFIG,
                                  "%s: [%s] needs a layer name: [layer fc1]",
                                  where, name);
        for (const char *p = n; *p; p++)
            if (!(*p == '_' || (*p >= 'a' && *p <= 'z') ||
                  (*p >= 'A' && *p <= 'Z') ||
                  (p != n && *p >= '0' && *p <= '9')))
                return popc_set_error(
                    POPC_ECONFIG,
                    "%s: [%s]: a layer name is letters, digits and '_', "
                    "starting with a letter or '_' (it names the weights, "
                    "e.g. fc1.weight)",
                    where, name);
        return POPC_OK;
    }
    for (int i = 0; sections[i]; i++)
        if (strcasecmp(name, sections[i]) == 0)
            return POPC_OK;
    close = popci_closest_name(name, sections, -1);
    return popc_set_error(POPC_ECONFIG,
                          "%s: unknown section [%s]%s%s%s (valid sections: "
                          "options, data, optimizer, train, infer, model, "
                          "layer NAME, nodes PREFIX)",
                          where, name, close ? "; did you mean [" : "",
                          close ? close : "", close ? "]?" : "");
}

static popc_status check_sections(const popc_run *r)
{
    char where[600];
    popc_status st;

    for (int i = 0; i < popci_config_n_sections(r->file); i++) {
        const char *s = popci_config_section(r->file, i);

        snprintf(where, sizeof where, "%s:%d", r->path,
                 popci_config_section_line(r->file, s));
        if ((st = check_section_name(where, s)) != POPC_OK)
            return st;
    }
    for (int i = 0; i < r->n_sets; i++)
        if ((st = check_section_name(popci_config_path(r->sets[i].cfg),
                                     r->sets[i].section)) != POPC_OK)
            return st;
    return POPC_OK;
}

popc_status popci_run_check_keys(const popc_run *r, const char *section,
                                 const char *const *allowed)
{
    popc_status st;

    if ((st = popci_config_check_keys(r->file, section, allowed)) != POPC_OK)
        return st;
    for (int i = 0; i < r->n_sets; i++)
        if (strcasecmp(r->sets[i].section, section) == 0 &&
            (st = popci_config_check_keys(r->sets[i].cfg, section,
                                          allowed)) != POPC_OK)
            return st;
    return POPC_OK;
}

/* ---- paths -------------------------------------------------------------- */

/* The path of (section, key), or NULL when absent. Input paths written in
** the file are relative to its directory. */
popc_status popci_run_path(const popc_run *r, const char *section,
                           const char *key, int input, const char *def,
                           char **out)
{
    const popci_config *c = popci_run_src(r, section, key);
    const char *v = NULL;
    char where[600];
    popc_status st;

    *out = NULL;
    if ((st = popci_config_get_string(c, section, key, def, &v)) != POPC_OK)
        return st;
    if (!v)
        return POPC_OK;
    if (!*v)
        return popc_set_error(POPC_ECONFIG, "%s: the path is empty",
                              popci_run_where(r, section, key, where,
                                              sizeof where));
    if (input && v[0] != '/' && c == r->file && r->dir &&
        popci_config_has_key(c, section, key)) {
        if (!(*out = popci_malloc(strlen(r->dir) + strlen(v) + 2)))
            return popc_set_error(POPC_ENOMEM, "out of memory");
        sprintf(*out, "%s/%s", r->dir, v);
        return POPC_OK;
    }
    if (!(*out = popci_strdup(v)))
        return popc_set_error(POPC_ENOMEM, "out of memory");
    return POPC_OK;
}

/* ---- sections read here ------------------------------------------------- */

static popc_status parse_optimizer(popc_run *r)
{
    const popci_config *c;
    const char *name = NULL;
    char where[600];
    popc_status st;

    if (!has_section(r, "optimizer"))
        return POPC_OK;
    c = popci_run_src(r, "optimizer", "name");
    if ((st = popci_config_require(c, "optimizer", "name")) != POPC_OK)
        return st;
    if ((st = popci_config_get_string(c, "optimizer", "name", NULL, &name)) !=
        POPC_OK)
        return st;
    if ((st = popc_optimizer_new(name, &r->optimizer)) != POPC_OK)
        return popc_set_error(POPC_ECONFIG, "%s: %s",
                              popci_run_where(r, "optimizer", "name", where,
                                              sizeof where),
                              popc_last_error());
    /* every other key is a hyper-parameter the optimizer validates; file
    ** keys first, then overrides, so an override wins */
    for (int pass = 0; pass <= r->n_sets; pass++) {
        const popci_config *src =
            pass == 0 ? r->file : r->sets[pass - 1].cfg;

        for (int i = 0; i < popci_config_n_keys(src, "optimizer"); i++) {
            const char *key = popci_config_key(src, "optimizer", i);
            double v;

            if (strcasecmp(key, "name") == 0 ||
                popci_run_src(r, "optimizer", key) != src)
                continue;
            if ((st = popci_config_get_float(src, "optimizer", key, 0,
                                             -1e300, 1e300, &v)) != POPC_OK)
                return st;
            st = popc_optimizer_set(r->optimizer, key, v);
            /* relaxOptimizerAttributesChecks: PopTorch ignores attributes
            ** its optimizer does not know and says so at debug level */
            if (st == POPC_ENOTFOUND &&
                popci_opt_bool(r->opts,
                               POPCI_O_relaxOptimizerAttributesChecks)) {
                popc_log(POPC_LOG_DEBUG, "%s: Ignoring unexpected optimizer "
                         "attribute in %s optimizer: ['%s']",
                         popci_run_where(r, "optimizer", key, where,
                                         sizeof where),
                         name, key);
                continue;
            }
            if (st != POPC_OK)
                return popc_set_error(POPC_ECONFIG, "%s: %s",
                                      popci_run_where(r, "optimizer", key,
                                                      where, sizeof where),
                                      popc_last_error());
        }
    }
    return POPC_OK;
}

static popc_status get_int(const popc_run *r, const char *s, const char *k,
                           int64_t def, int64_t min, int64_t max,
                           int64_t *out)
{
    return popci_config_get_int(popci_run_src(r, s, k), s, k, def, min, max,
                                out);
}

static popc_status output_path(popc_run *r, const char *section,
                               const char *key, const char *suffix,
                               char **out)
{
    char *def = popci_malloc(strlen(r->name) + strlen(suffix) + 1);
    popc_status st;

    if (!def)
        return popc_set_error(POPC_ENOMEM, "out of memory");
    sprintf(def, "%s%s", r->name, suffix);
    st = popci_run_path(r, section, key, 0, def, out);
    free(def);
    return st;
}

static popc_status parse_train(popc_run *r)
{
    const popci_config *c;
    popc_status st;

    if ((st = popci_run_check_keys(r, "train", train_keys)) != POPC_OK)
        return st;
    if ((st = get_int(r, "train", "epochs", 1, 1, INT32_MAX, &r->epochs)) ||
        (st = get_int(r, "train", "checkpoint_every", 0, 0, INT64_MAX / 2,
                      &r->checkpoint_every)) ||
        (st = get_int(r, "train", "log_every", 0, 0, INT64_MAX / 2,
                      &r->log_every)))
        return st;
    c = popci_run_src(r, "train", "evaluate");
    if ((st = popci_config_get_bool(c, "train", "evaluate", 1,
                                    &r->evaluate)) != POPC_OK)
        return st;
    if ((st = output_path(r, "train", "weights", ".weights",
                          &r->weights_out)) ||
        (st = output_path(r, "train", "model", ".model.ini",
                          &r->model_out)) ||
        (st = output_path(r, "train", "checkpoint", ".ckpt",
                          &r->checkpoint)) ||
        (st = popci_run_path(r, "train", "export_onnx", 0, NULL,
                             &r->export_onnx)))
        return st;
    return POPC_OK;
}

static popc_status parse_infer(popc_run *r)
{
    static const char *const splits[] = {"train", "test", NULL};
    popc_status st;

    if ((st = popci_run_check_keys(r, "infer", infer_keys)) != POPC_OK)
        return st;
    if ((st = popci_run_path(r, "infer", "weights", 1, NULL,
                             &r->infer_weights)) ||
        (st = popci_run_path(r, "infer", "predictions", 0, NULL,
                             &r->predictions)))
        return st;
    return popci_config_get_enum(popci_run_src(r, "infer", "split"), "infer",
                                 "split", splits, POPC_SPLIT_TEST,
                                 &r->infer_split);
}

/* ---- public API --------------------------------------------------------- */

static popc_status apply_options(popc_run *r)
{
    popc_status st;

    if ((st = popc_options_new(&r->opts)) != POPC_OK)
        return st;
    if (popci_config_has_section(r->file, "options") &&
        (st = popc_options_load_ini(r->opts, r->path)) != POPC_OK)
        return popc_set_error(POPC_ECONFIG, "%s", popc_last_error());
    for (int i = 0; i < r->n_sets; i++) {
        popci_run_set *s = &r->sets[i];

        if (strcasecmp(s->section, "options") != 0)
            continue;
        if ((st = popc_options_set(r->opts, s->key, s->value)) != POPC_OK)
            return popc_set_error(POPC_ECONFIG, "%s: %s",
                                  popci_config_path(s->cfg),
                                  popc_last_error());
    }
    /* PopTorch refuses gradient accumulation in an inferenceModel: the
    ** evaluation and inference models get their own copy without it, and
    ** return every batch to score it */
    if ((st = popc_options_clone(r->opts, &r->infer_opts)) ||
        (st = popc_options_set_int(r->infer_opts,
                                   "Training.gradientAccumulation", 1)) ||
        (st = popc_options_set(r->infer_opts, "outputMode", "All")))
        return st;
    return POPC_OK;
}

/* Messages of the config wrapper name an override "--set s.k:2:" (its
** text has the key on line 2): drop the line, which means nothing to the
** user. */
static void tidy_override_message(const popc_run *r)
{
    const char *msg = popc_last_error();

    for (int i = 0; i < r->n_sets; i++) {
        const char *name = popci_config_path(r->sets[i].cfg);
        size_t n = name ? strlen(name) : 0;

        if (n && strncmp(msg, name, n) == 0 &&
            strncmp(msg + n, ":2:", 3) == 0) {
            char copy[2048];

            snprintf(copy, sizeof copy, "%s:%s", name, msg + n + 3);
            popc_set_error(POPC_ECONFIG, "%s", copy);
            return;
        }
    }
}

static popc_status split_path(popc_run *r, const char *path)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t len = strlen(base);

    if (!(r->path = popci_strdup(path)))
        return popc_set_error(POPC_ENOMEM, "out of memory");
    if (slash && !(r->dir = popci_strndup(path, (size_t)(slash - path) + 1)))
        return popc_set_error(POPC_ENOMEM, "out of memory");
    if (r->dir && strlen(r->dir) > 1)
        r->dir[strlen(r->dir) - 1] = '\0';
    if (len > 4 && strcasecmp(base + len - 4, ".ini") == 0)
        len -= 4;
    if (!(r->name = popci_strndup(base, len)))
        return popc_set_error(POPC_ENOMEM, "out of memory");
    return POPC_OK;
}

popc_status popc_run_load(const char *path, const char *const *overrides,
                          int n_overrides, popc_run **out)
{
    popc_run *r;
    popc_status st;

    *out = NULL;
    if (!path || n_overrides < 0 || (n_overrides && !overrides))
        return popc_set_error(POPC_EINVAL, "popc_run_load: bad arguments");
    if (!(r = popci_calloc(1, sizeof *r)))
        return popc_set_error(POPC_ENOMEM, "out of memory");
    if ((st = split_path(r, path)) != POPC_OK)
        goto fail;
    if ((st = popci_config_open(path, &r->file)) != POPC_OK)
        goto fail;
    if (n_overrides &&
        !(r->sets = popci_calloc((size_t)n_overrides, sizeof *r->sets))) {
        st = popc_set_error(POPC_ENOMEM, "out of memory");
        goto fail;
    }
    for (int i = 0; i < n_overrides; i++) {
        st = parse_set(overrides[i], &r->sets[r->n_sets]);
        r->n_sets++;
        if (st != POPC_OK)
            goto fail;
    }
    if ((st = check_sections(r)) || (st = apply_options(r)) ||
        (st = popci_run_parse_model(r)) || (st = popci_run_parse_data(r)) ||
        (st = parse_optimizer(r)) || (st = parse_train(r)) ||
        (st = parse_infer(r)))
        goto fail;
    *out = r;
    return POPC_OK;
fail:
    tidy_override_message(r);
    popc_run_free(r);
    return st;
}

void popc_run_free(popc_run *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n_sets; i++) {
        free(r->sets[i].section);
        free(r->sets[i].key);
        free(r->sets[i].value);
        popci_config_free(r->sets[i].cfg);
    }
    free(r->sets);
    for (int i = 0; i < r->n_layers; i++)
        free(r->layers[i].name);
    free(r->layers);
    for (int i = 0; i < r->n_body_layers; i++)
        free(r->body_layers[i].name);
    free(r->body_layers);
    popci_config_free(r->file);
    popc_options_free(r->opts);
    popc_options_free(r->infer_opts);
    popc_optimizer_free(r->optimizer);
    free(r->train);
    free(r->train_labels);
    free(r->test);
    free(r->test_labels);
    free(r->label_column);
    free(r->weights_out);
    free(r->model_out);
    free(r->checkpoint);
    free(r->export_onnx);
    free(r->model_file);
    free(r->model_output);
    free(r->labels_name);
    free(r->half_prefixes);
    free(r->annots);
    free(r->infer_weights);
    free(r->predictions);
    free(r->path);
    free(r->dir);
    free(r->name);
    free(r);
}

const char *popc_run_path(const popc_run *r)
{
    return r->path;
}

popc_options *popc_run_options(popc_run *r)
{
    return r->opts;
}

const popc_optimizer *popc_run_optimizer(const popc_run *r)
{
    return r->optimizer;
}

const char *popc_run_value(const popc_run *r, const char *section,
                           const char *key)
{
    return popci_config_raw(popci_run_src(r, section, key), section, key);
}

int64_t popc_run_batch_size(const popc_run *r)
{
    return r->batch_size;
}

/* ---- the model INI ------------------------------------------------------ */

typedef struct sbuf {
    char *s;
    size_t len, cap;
    int failed;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) POPC_PRINTF(2, 3);
static void put(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->failed)
        return;
    for (;;) {
        va_start(ap, fmt);
        n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0,
                      fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = 1;
            return;
        }
        if (b->s && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        {
            size_t cap = (b->cap + (size_t)n + 1) * 2;
            char *p = popci_realloc(b->s, cap);

            if (!p) {
                b->failed = 1;
                return;
            }
            b->s = p;
            b->cap = cap;
        }
    }
}

/* Every key of a section as it stands after overrides, file order first. */
static void copy_section(sbuf *b, const popc_run *r, const char *section,
                         const char *const *skip)
{
    put(b, "\n[%s]\n", section);
    for (int pass = 0; pass <= r->n_sets; pass++) {
        const popci_config *src = pass ? r->sets[pass - 1].cfg : r->file;

        for (int i = 0; i < popci_config_n_keys(src, section); i++) {
            const char *key = popci_config_key(src, section, i);
            int skipped = 0;

            for (int k = 0; skip && skip[k]; k++)
                skipped |= strcasecmp(key, skip[k]) == 0;
            /* write each key once: where the winning value lives */
            if (skipped || popci_run_src(r, section, key) != src)
                continue;
            put(b, "%s = %s\n", key, popci_config_raw(src, section, key));
        }
    }
}

/* Every [nodes PREFIX] section, in file order. */
static void copy_nodes_sections(sbuf *b, const popc_run *r)
{
    for (int i = 0; i < popci_config_n_sections(r->file); i++) {
        const char *s = popci_config_section(r->file, i);

        if (strncasecmp(s, "nodes ", 6) == 0)
            copy_section(b, r, s, NULL);
    }
}

static char *absolute(const char *path)
{
    char cwd[PATH_MAX];
    char *out;

    if (path[0] == '/')
        return popci_strdup(path);
    if (!getcwd(cwd, sizeof cwd))
        return popci_strdup(path);
    if ((out = popci_malloc(strlen(cwd) + strlen(path) + 2)))
        sprintf(out, "%s/%s", cwd, path);
    return out;
}

/* The shortest text that reads back as the same float. */
static void put_floats(sbuf *b, const char *key, const float *v, int n)
{
    put(b, "%s = ", key);
    for (int i = 0; i < n; i++) {
        char text[32];

        for (int digits = 6; digits <= 9; digits++) {
            snprintf(text, sizeof text, "%.*g", digits, (double)v[i]);
            if (strtof(text, NULL) == v[i])
                break;
        }
        put(b, "%s%s", i ? ", " : "", text);
    }
    put(b, "\n");
}

popc_status popci_run_write_model_ini(const popc_run *r, const char *path,
                                      const char *weights_dir,
                                      const float *mean, const float *std,
                                      int n_norm)
{
    static const char *const data_skip[] = {
        "train", "train_labels", "test", "test_labels", "mean", "std",
        "shuffle", "seed", "drop_last", "limit", "test_limit", "mode",
        "workers", "buffer_size", "load_indefinitely", "early_preload",
        "rebatched_worker_size", "distributed_batches", NULL};
    static const char *const model_skip[] = {"onnx", NULL};
    char *test = NULL, *test_labels = NULL, *weights = NULL, *onnx = NULL;
    sbuf b = {0};
    popc_status st;

    put(&b, "# Written by popc train from %s.\n"
            "# The trained model, ready for popc infer.\n",
        r->path);
    if (has_section(r, "options"))
        copy_section(&b, r, "options", NULL);
    copy_section(&b, r, "model", model_skip);
    if (r->model_file) {
        onnx = absolute(r->model_file);
        put(&b, "onnx = %s\n", onnx ? onnx : r->model_file);
        free(onnx);
    }
    for (int i = 0; i < r->n_layers + r->n_body_layers; i++) {
        const popci_run_layer *L = i < r->n_layers
                                       ? &r->layers[i]
                                       : &r->body_layers[i - r->n_layers];
        char section[256];

        if (!L->has_section)
            continue;
        snprintf(section, sizeof section, "layer %s", L->name);
        copy_section(&b, r, section, NULL);
    }
    copy_nodes_sections(&b, r);
    copy_section(&b, r, "data", data_skip);
    if (r->test) {
        test = absolute(r->test);
        put(&b, "test = %s\n", test ? test : r->test);
    }
    if (r->test_labels) {
        test_labels = absolute(r->test_labels);
        put(&b, "test_labels = %s\n", test_labels ? test_labels
                                                   : r->test_labels);
    }
    if (n_norm > 0) {
        put_floats(&b, "mean", mean, n_norm);
        put_floats(&b, "std", std, n_norm);
    }
    weights = absolute(weights_dir);
    put(&b, "\n[infer]\nweights = %s\n", weights ? weights : weights_dir);
    free(test);
    free(test_labels);
    free(weights);
    if (b.failed) {
        free(b.s);
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
    }
    st = popci_write_file_atomic(path, b.s, b.len);
    free(b.s);
    return st;
}

/* ---- fingerprint -------------------------------------------------------- */

uint64_t popci_run_fingerprint(const popc_run *r)
{
    /* what decides the sequence of computed steps; outputs, epochs, the
    ** test split and the loader mode do not */
    static const char *const data_skip[] = {
        "test", "test_labels", "test_limit", "mode", "workers",
        "buffer_size", "load_indefinitely", "early_preload",
        "rebatched_worker_size", NULL};
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    sbuf b = {0};

    copy_section(&b, r, "model", NULL);
    copy_nodes_sections(&b, r);
    copy_section(&b, r, "optimizer", NULL);
    copy_section(&b, r, "data", data_skip);
    for (int i = 0; i < r->n_layers + r->n_body_layers; i++) {
        char section[256];

        snprintf(section, sizeof section, "layer %s",
                 i < r->n_layers ? r->layers[i].name
                                 : r->body_layers[i - r->n_layers].name);
        copy_section(&b, r, section, NULL);
    }
    for (size_t i = 0; b.s && i < b.len; i++)
        h = (h ^ (unsigned char)b.s[i]) * UINT64_C(0x100000001b3);
    free(b.s);
    /* a distributed run's checkpoint holds every rank's position only
    ** because all ranks take equal steps on equal shares: the same number
    ** of processes must resume it */
    h = (h ^
         (uint64_t)popci_opt_int(r->opts, POPCI_O_Distributed_numProcesses)) *
        UINT64_C(0x100000001b3);
    return h ^ popc_options_hash(r->opts);
}
