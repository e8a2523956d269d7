/* run_format.c - model file formats registered by the layers above
** libpopc (popc_run_register_model_format in popc/run.h). */
#include "config.h"

#include <pthread.h>
#include <string.h>

#include "popc/run.h"
#include "run/run_priv.h"

#define MAX_FORMATS 8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const popc_run_model_format *formats[MAX_FORMATS];

popc_status popc_run_register_model_format(const popc_run_model_format *f)
{
    popc_status st = POPC_OK;
    int i;

    if (!f || !f->key || !*f->key || !f->read || !f->write)
        return popc_set_error(POPC_EINVAL, "popc_run_register_model_format: "
                                           "key, read and write are "
                                           "required");
    pthread_mutex_lock(&lock);
    for (i = 0; i < MAX_FORMATS && formats[i]; i++)
        if (strcmp(formats[i]->key, f->key) == 0)
            break;
    if (i < MAX_FORMATS)
        formats[i] = f;
    else
        st = popc_set_error(POPC_EINVAL, "popc_run_register_model_format: "
                                         "more than %d formats", MAX_FORMATS);
    pthread_mutex_unlock(&lock);
    return st;
}

const popc_run_model_format *popci_run_format(const char *key)
{
    const popc_run_model_format *f = NULL;

    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_FORMATS && formats[i] && !f; i++)
        if (strcmp(formats[i]->key, key) == 0)
            f = formats[i];
    pthread_mutex_unlock(&lock);
    return f;
}

popc_status popci_run_need_format(const popc_run *r, const char *section,
                                  const char *key,
                                  const popc_run_model_format **out)
{
    char where[700];

    if ((*out = popci_run_format("onnx")))
        return POPC_OK;
    return popc_set_error(POPC_ECONFIG,
                          "%s: ONNX models need popc's ONNX layer, which "
                          "this program did not register: call "
                          "popc_onnx_register_run_format() (libpopc-onnx, "
                          "popc/onnx.h) before using the run; the popc "
                          "command does",
                          popci_run_where(r, section, key, where,
                                          sizeof where));
}
