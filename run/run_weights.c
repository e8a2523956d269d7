/* run_weights.c - weights directories and training checkpoints, written
** atomically.
**
** A weights directory holds one .npy file per model tensor, named after
** the tensor (%XX for characters unsafe in file names), so NumPy reads it
** directly: {f[:-4]: np.load(f) for f in os.listdir(d)}. A checkpoint
** directory holds weights/, optimizer/ (the model's optimizer state
** tensors) and state.ini (step, data position, shuffle state, and a
** fingerprint of the run settings).
**
** Both are built in "<dir>.tmp-<pid>.<n>" and then swapped with the old
** directory in one renameat2(RENAME_EXCHANGE), so a process killed at
** any point leaves a complete old or a complete new directory; the old
** copy is removed afterwards. <n> counts the saves of the process, so
** threads saving to the same place never share a temporary. A .tmp-<pid>
** directory left by a killed process is removed by the next save to the
** same place.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "popc/model.h"
#include "popc/run.h"
#include "popc/tensor.h"
#include "core/layer/alloc.h"
#include "fileio/atomic_file.h"
#include "run/run_config_priv.h"
#include "core/layer/model_state.h"
#include "run/run_priv.h"

#define STATE_VERSION 1

/* ---- files -------------------------------------------------------------- */

static int is_dir(const char *path)
{
    struct stat sb;

    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Numbers the temporaries of this process: a name shared by two threads
** saving to one dir would let each delete or swap in the other's files. */
static atomic_ulong tmp_serial;

/* Serialises the swaps of this process: two threads in the two-rename
** fallback below would otherwise move each other's directories away. */
static pthread_mutex_t swap_lock = PTHREAD_MUTEX_INITIALIZER;

/* A fresh, empty "<dir>.tmp-<pid>.<n>". */
static popc_status make_tmp_dir(const char *dir, char **out)
{
    char *tmp = popci_malloc(strlen(dir) + 48);
    struct stat sb;

    *out = NULL;
    if (!tmp)
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", dir);
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        free(tmp);
        return popc_set_error(POPC_EIO,
                              "%s exists and is not a directory; choose "
                              "another output path",
                              dir);
    }
    popci_remove_stale_temps(dir);
    sprintf(tmp, "%s.tmp-%ld.%lu", dir, (long)getpid(),
            atomic_fetch_add(&tmp_serial, 1));
    /* no thread of ours owns this name: what is there was left by a dead
    ** process that had our pid */
    popci_remove_tree(tmp);
    if (mkdir(tmp, 0777) != 0) {
        /* the folder the user named, then the working name */
        popc_status st = popc_set_error(POPC_EIO, "%s: cannot create it "
                                        "(as %s): %s", dir, tmp,
                                        strerror(errno));
        free(tmp);
        return st;
    }
    *out = tmp;
    return POPC_OK;
}

/* Put the finished tmp directory at dir, atomically when the system can
** exchange two names. tmp is "<dir>.tmp-<suffix>" (make_tmp_dir). */
static popc_status swap_locked(const char *tmp, const char *dir)
{
    char *old;
    int err;

    /* a dir another process puts there before the rename is replaced
    ** like an old one */
    if (!is_dir(dir)) {
        if (rename(tmp, dir) == 0)
            return POPC_OK;
        if (errno != ENOTEMPTY && errno != EEXIST)
            return popc_set_error(POPC_EIO, "%s: cannot rename %s into "
                                  "place: %s",
                                  dir, tmp, strerror(errno));
    }
#ifdef RENAME_EXCHANGE
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
        popci_remove_tree(tmp);
        return POPC_OK;
    }
#endif
    /* no exchange on this file system: two renames, a short window */
    if (!(old = popci_malloc(strlen(tmp) + 1)))
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", dir);
    sprintf(old, "%s.old-%s", dir, tmp + strlen(dir) + strlen(".tmp-"));
    popci_remove_tree(old);
    if (rename(dir, old) != 0 && errno != ENOENT) {
        err = errno;
        free(old);
        return popc_set_error(POPC_EIO, "%s: cannot move the old directory "
                              "aside: %s", dir, strerror(err));
    }
    if (rename(tmp, dir) != 0) {
        err = errno;
        /* put the old one back; when another process's dir is there
        ** now, the old one is superseded and goes */
        if (rename(old, dir) != 0 && is_dir(dir))
            popci_remove_tree(old);
        free(old);
        return popc_set_error(POPC_EIO, "%s: cannot rename %s into place: "
                              "%s", dir, tmp, strerror(err));
    }
    popci_remove_tree(old);
    free(old);
    return POPC_OK;
}

static popc_status swap_into_place(const char *tmp, const char *dir)
{
    popc_status st;

    pthread_mutex_lock(&swap_lock);
    st = swap_locked(tmp, dir);
    pthread_mutex_unlock(&swap_lock);
    return st;
}

/* dir/<escaped name>.npy into buf. */
static const char *tensor_file(const char *dir, const char *name, char *buf,
                               size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t off = (size_t)snprintf(buf, size, "%s/", dir);

    for (const unsigned char *p = (const unsigned char *)name;
         *p && off + 4 < size; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
            (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' ||
            (*p == '.' && p != (const unsigned char *)name)) {
            buf[off++] = (char)*p;
        } else {
            buf[off++] = '%';
            buf[off++] = hex[*p >> 4];
            buf[off++] = hex[*p & 15];
        }
    }
    snprintf(buf + off, size - off, ".npy");
    return buf;
}

/* ---- weights ------------------------------------------------------------ */

static popc_status save_weights_into(popc_model *m, const char *dir)
{
    char file[4096];
    popc_status st;

    for (int i = 0; i < popc_model_n_tensors(m); i++) {
        const char *name = popc_model_tensor_name(m, i);
        const popc_tensor *t = NULL;

        if ((st = popc_model_get_weight(m, name, &t)) != POPC_OK)
            return st;
        if ((st = popc_npy_save(tensor_file(dir, name, file, sizeof file),
                                t)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

/* Tensors read from a directory and checked against the model but not yet
** set: a load that fails part-way leaves the model as it was. */
typedef struct staged {
    int n;
    popc_tensor **t;
} staged;

static void staged_free(staged *s)
{
    for (int i = 0; i < s->n; i++)
        popc_tensor_free(s->t[i]);
    free(s->t);
    s->t = NULL;
    s->n = 0;
}

static popc_status staged_init(staged *s, int n, const char *dir)
{
    s->n = n;
    s->t = n ? popci_calloc((size_t)n, sizeof *s->t) : NULL;
    if (n && !s->t) {
        s->n = 0;
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", dir);
    }
    return POPC_OK;
}

/* The same dtype and shape. */
static popc_status check_like(const char *file, const char *name,
                              const popc_tensor *t, const popc_tensor *cur)
{
    char have[64], want[64];

    if (popc_tensor_dtype(t) == popc_tensor_dtype(cur) &&
        popc_tensor_rank(t) == popc_tensor_rank(cur) &&
        memcmp(popc_tensor_dims(t), popc_tensor_dims(cur),
               (size_t)popc_tensor_rank(t) * sizeof(int64_t)) == 0)
        return POPC_OK;
    return popc_set_error(POPC_EIO,
                          "%s: holds %s but the model's '%s' is %s (were "
                          "these saved from another model?)",
                          file, popc_tensor_describe(t, have, sizeof have),
                          name, popc_tensor_describe(cur, want, sizeof want));
}

static popc_status stage_weights(popc_model *m, const char *dir, staged *s)
{
    char file[4096];
    popc_status st;

    if ((st = staged_init(s, popc_model_n_tensors(m), dir)) != POPC_OK)
        return st;
    for (int i = 0; i < s->n; i++) {
        const char *name = popc_model_tensor_name(m, i);
        const popc_tensor *cur = NULL;

        tensor_file(dir, name, file, sizeof file);
        if (access(file, F_OK) != 0)
            return popc_set_error(POPC_EIO,
                                  "%s: no file for the model's tensor '%s' "
                                  "(were these weights saved from another "
                                  "model?)",
                                  file, name);
        if ((st = popc_npy_load(file, &s->t[i])) != POPC_OK ||
            (st = popc_model_get_weight(m, name, &cur)) != POPC_OK ||
            (st = check_like(file, name, s->t[i], cur)) != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static popc_status apply_weights(popc_model *m, const staged *s)
{
    for (int i = 0; i < s->n; i++) {
        popc_status st = popc_model_set_weight(
            m, popc_model_tensor_name(m, i), s->t[i]);

        if (st != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static popc_status load_weights_from(popc_model *m, const char *dir)
{
    staged s = {0};
    popc_status st = stage_weights(m, dir, &s);

    if (st == POPC_OK)
        st = apply_weights(m, &s);
    staged_free(&s);
    return st;
}

popc_status popc_weights_save(popc_model *m, const char *dir)
{
    char *tmp = NULL;
    popc_status st;

    if (!m || !dir)
        return popc_set_error(POPC_EINVAL, "popc_weights_save: model and "
                                           "directory are required");
    if ((st = make_tmp_dir(dir, &tmp)) != POPC_OK)
        return st;
    if ((st = save_weights_into(m, tmp)) == POPC_OK)
        st = swap_into_place(tmp, dir);
    if (st != POPC_OK)
        popci_remove_tree(tmp);
    free(tmp);
    return st;
}

popc_status popc_weights_load(popc_model *m, const char *dir)
{
    if (!m || !dir)
        return popc_set_error(POPC_EINVAL, "popc_weights_load: model and "
                                           "directory are required");
    if (!is_dir(dir))
        return popc_set_error(POPC_EIO,
                              "%s: not a weights directory (popc train "
                              "writes one per run: [train] weights)",
                              dir);
    return load_weights_from(m, dir);
}

/* ---- checkpoints -------------------------------------------------------- */

static popc_status sub_dir(const char *dir, const char *name, char *buf,
                           size_t size, int create)
{
    snprintf(buf, size, "%s/%s", dir, name);
    if (create && mkdir(buf, 0777) != 0)
        return popc_set_error(POPC_EIO, "%s: cannot create: %s", buf,
                              strerror(errno));
    return POPC_OK;
}

static popc_status save_optimizer_into(popc_model *m, const char *dir)
{
    char file[4096];
    popc_status st;

    for (int i = 0; i < popc_model_n_optimizer_states(m); i++) {
        const char *name = popc_model_optimizer_state_name(m, i);
        popc_tensor *t = NULL;

        if ((st = popc_model_get_optimizer_state(m, name, &t)) != POPC_OK)
            return st;
        st = popc_npy_save(tensor_file(dir, name, file, sizeof file), t);
        popc_tensor_free(t);
        if (st != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static popc_status stage_optimizer(popc_model *m, const char *dir,
                                   staged *s)
{
    char file[4096];
    popc_status st;

    if ((st = staged_init(s, popc_model_n_optimizer_states(m), dir)))
        return st;
    for (int i = 0; i < s->n; i++) {
        const char *name = popc_model_optimizer_state_name(m, i);
        popc_tensor *cur = NULL;

        tensor_file(dir, name, file, sizeof file);
        if ((st = popc_npy_load(file, &s->t[i])) != POPC_OK)
            return st;
        /* the model may not be compiled yet: its state is then held for
        ** the compile, and the files must fit what it will start from */
        if ((st = popci_model_peek_optimizer_state(m, name, &cur)) !=
            POPC_OK)
            return popc_set_error(st, "%s: %s", file, popc_last_error());
        st = check_like(file, name, s->t[i], cur);
        popc_tensor_free(cur);
        if (st != POPC_OK)
            return st;
    }
    return POPC_OK;
}

static popc_status apply_optimizer(popc_model *m, const staged *s)
{
    for (int i = 0; i < s->n; i++) {
        popc_status st = popc_model_set_optimizer_state(
            m, popc_model_optimizer_state_name(m, i), s->t[i]);

        if (st != POPC_OK)
            return st;
    }
    return POPC_OK;
}

popc_status popci_checkpoint_save(popc_model *m, const popci_checkpoint *c,
                                  const char *dir)
{
    char *tmp = NULL, sub[4096], text[1024];
    int len;
    popc_status st;

    if ((st = make_tmp_dir(dir, &tmp)) != POPC_OK)
        return st;
    len = snprintf(text, sizeof text,
                   "# popc training checkpoint: resume with popc train "
                   "--resume\n"
                   "[checkpoint]\n"
                   "version = %d\n"
                   "step = %" PRId64 "\n"
                   "epoch = %" PRId64 "\n"
                   "batch = %" PRId64 "\n"
                   "rng = %" PRIu64 "\n"
                   "epoch_steps = %" PRId64 "\n"
                   "epoch_loss_sum = %.17g\n"
                   "fingerprint = %" PRIu64 "\n",
                   STATE_VERSION, c->step, c->pos.epoch, c->pos.batch,
                   c->pos.rng, c->epoch_steps, c->epoch_loss_sum,
                   c->fingerprint);
    if ((st = sub_dir(tmp, "weights", sub, sizeof sub, 1)) ||
        (st = save_weights_into(m, sub)) ||
        (st = sub_dir(tmp, "optimizer", sub, sizeof sub, 1)) ||
        (st = save_optimizer_into(m, sub)) ||
        (st = sub_dir(tmp, "state.ini", sub, sizeof sub, 0)) ||
        (st = popci_write_file_atomic(sub, text, (size_t)len)) ||
        (st = swap_into_place(tmp, dir)))
        popci_remove_tree(tmp);
    free(tmp);
    return st;
}

/* An unsigned 64-bit value written by popci_checkpoint_save. */
/* An unsigned decimal number up to max, as popci_checkpoint_save writes
** it (strtoull alone would take "-1" as 2^64 - 1). */
static popc_status get_u64(const popci_config *cfg, const char *key,
                           uint64_t max, uint64_t *out)
{
    const char *raw = popci_config_raw(cfg, "checkpoint", key);
    char *end = NULL;

    errno = 0;
    *out = raw && *raw >= '0' && *raw <= '9' ? strtoull(raw, &end, 10) : 0;
    if (!end || errno || *end || *out > max)
        return popc_set_error(POPC_EIO,
                              "%s: [checkpoint] %s is missing or not a "
                              "number from 0 to %" PRIu64 "; the checkpoint "
                              "is damaged",
                              popci_config_path(cfg), key, max);
    return POPC_OK;
}

popc_status popci_checkpoint_load(popc_model *m, popci_checkpoint *c,
                                  const char *dir)
{
    popci_config *cfg = NULL;
    staged weights = {0}, optimizer = {0};
    char sub[4096];
    int64_t version = 0;
    uint64_t step, epoch, batch, epoch_steps;
    popc_status st;

    memset(c, 0, sizeof *c);
    if (!is_dir(dir))
        return popc_set_error(POPC_ENOTFOUND,
                              "%s: no checkpoint to resume from", dir);
    sub_dir(dir, "state.ini", sub, sizeof sub, 0);
    if ((st = popci_config_open(sub, &cfg)) != POPC_OK)
        return popc_set_error(POPC_EIO, "%s", popc_last_error());
    if ((st = popci_config_get_int(cfg, "checkpoint", "version", 0, 0,
                                   INT64_MAX, &version)) ||
        version != STATE_VERSION) {
        st = popc_set_error(POPC_EIO,
                            "%s: checkpoint version %lld, this popc reads "
                            "version %d",
                            sub, (long long)version, STATE_VERSION);
        goto done;
    }
    if ((st = get_u64(cfg, "step", INT64_MAX, &step)) ||
        (st = get_u64(cfg, "epoch", INT64_MAX, &epoch)) ||
        (st = get_u64(cfg, "batch", INT64_MAX, &batch)) ||
        (st = get_u64(cfg, "rng", UINT64_MAX, &c->pos.rng)) ||
        (st = get_u64(cfg, "epoch_steps", INT64_MAX, &epoch_steps)) ||
        (st = get_u64(cfg, "fingerprint", UINT64_MAX, &c->fingerprint)) ||
        (st = popci_config_get_float(cfg, "checkpoint", "epoch_loss_sum", 0,
                                     -1e308, 1e308, &c->epoch_loss_sum)))
        goto done;
    c->step = (int64_t)step;
    c->pos.epoch = (int64_t)epoch;
    c->pos.batch = (int64_t)batch;
    c->epoch_steps = (int64_t)epoch_steps;
    if ((st = sub_dir(dir, "weights", sub, sizeof sub, 0)) == POPC_OK &&
        (st = stage_weights(m, sub, &weights)) == POPC_OK &&
        (st = sub_dir(dir, "optimizer", sub, sizeof sub, 0)) == POPC_OK &&
        (st = stage_optimizer(m, sub, &optimizer)) == POPC_OK &&
        (st = apply_weights(m, &weights)) == POPC_OK)
        st = apply_optimizer(m, &optimizer);
done:
    staged_free(&weights);
    staged_free(&optimizer);
    popci_config_free(cfg);
    return st;
}

popc_status popc_checkpoint_load(popc_model *m, const char *dir,
                                 int64_t *step)
{
    popci_checkpoint c;
    popc_status st;

    if (!m || !dir)
        return popc_set_error(POPC_EINVAL, "popc_checkpoint_load: model "
                                           "and directory are required");
    if ((st = popci_checkpoint_load(m, &c, dir)) == POPC_OK && step)
        *step = c.step;
    return st;
}
