/* profile_files.c - see profile_files.h. */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <check.h>

#include "popc/popc.h"
#include "tests/profile_files.h"

char *pf_temp_dir(void)
{
    char tmpl[] = "/tmp/popc-profile-XXXXXX";
    char *d = mkdtemp(tmpl);

    ck_assert_ptr_nonnull(d);
    return strdup(d);
}

/* rm -r: the profile is one level down, in the model's subdirectory. */
void pf_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[1024];

    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' &&
                                                      !e->d_name[2])))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0)
            pf_remove_dir(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* dir/name: where a model's profile goes (PopTorch's modelName). */
char *pf_sub_dir(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *s = malloc(n);

    ck_assert_ptr_nonnull(s);
    snprintf(s, n, "%s/%s", dir, name);
    return s;
}

char *pf_slurp(const char *dir, const char *name, size_t *len)
{
    char path[1024];
    FILE *f;
    char *buf;
    long n;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s is missing", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

mj_value *pf_read_profile(const char *dir)
{
    size_t len;
    char *text = pf_slurp(dir, "profile.json", &len), err[256];
    mj_value *v = mj_parse(text, len, err, sizeof err);

    ck_assert_msg(v != NULL, "profile.json: %s", err);
    ck_assert_int_eq(v->type, MJ_OBJECT);
    /* no key twice at the top (the backend's report is merged in) */
    for (int i = 0; i < v->n; i++)
        for (int j = i + 1; j < v->n; j++)
            ck_assert_str_ne(v->keys[i], v->keys[j]);
    free(text);
    return v;
}

mj_value *pf_inference_report(popc_graph *g, popc_tensor *const *inputs,
                              int n_inputs, int n_outputs)
{
    return pf_inference_report_at(g, inputs, n_inputs, n_outputs, -1);
}

mj_value *pf_inference_report_at(popc_graph *g, popc_tensor *const *inputs,
                                 int n_inputs, int n_outputs, int level)
{
    popc_options *o = NULL;
    popc_model *m = NULL;
    popc_tensor *out[8] = {NULL};
    char *dir = pf_temp_dir(), *sub;
    mj_value *r;

    ck_assert_int_le(n_outputs, 8);
    ck_assert_int_eq(popc_options_new(&o), POPC_OK);
    ck_assert_int_eq(popc_options_set(o, "backend", "ipumodel"), POPC_OK);
    ck_assert_int_eq(popc_options_set(o, "enableProfiling", dir), POPC_OK);
    if (level >= 0)
        ck_assert_int_eq(popc_options_set_int(o, "optimizationLevel", level),
                         POPC_OK);
    ck_assert_msg(popc_model_new_inference(g, o, &m) == POPC_OK, "%s",
                  popc_last_error());
    ck_assert_msg(popc_model_run(m, (popc_tensor **)inputs, n_inputs, out,
                                 n_outputs) == POPC_OK,
                  "%s", popc_last_error());
    sub = pf_sub_dir(dir, "inference");
    r = pf_read_profile(sub);
    free(sub);
    pf_remove_dir(dir);
    free(dir);
    for (int i = 0; i < n_outputs; i++)
        popc_tensor_free(out[i]);
    popc_model_free(m);
    popc_options_free(o);
    return r;
}
