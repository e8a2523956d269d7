/* anchors.c - the anchorTensor option's list (anchors_priv.h). */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc_priv.h"
#include "core/runtime/anchors_priv.h"

#define WHAT "anchorTensor"

static const struct {
    const char *name;
    popc_output_mode mode;
} modes[] = {{"Final", POPC_OUTPUT_FINAL}, {"All", POPC_OUTPUT_ALL},
             {"Sum", POPC_OUTPUT_SUM}, {"EveryN", POPC_OUTPUT_EVERYN}};

/* One entry [s, e): short, long, mode, period. */
static popc_status entry(const char *s, const char *e, char **sh, char **lg,
                         popc_output_mode *mode, int64_t *period, int *given)
{
    const char *eq = memchr(s, '=', (size_t)(e - s));
    const char *at = eq ? memchr(eq, '@', (size_t)(e - eq)) : NULL;
    const char *lend = at ? at : e;
    int len = (int)(e - s);

    *given = 0;
    if (!eq || eq == s || eq + 1 >= lend)
        return popc_set_error(POPC_EINVAL, WHAT ": '%.*s' is not "
                              "SHORT=LONG[@MODE] (e.g. h=fc1_out@All)", len,
                              s);
    if (at) {
        const char *m = at + 1;
        size_t ml = (size_t)(e - m);
        int found = 0;

        for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
            size_t nl = strlen(modes[i].name);
            if (ml >= nl && strncmp(m, modes[i].name, nl) == 0 &&
                (ml == nl || m[nl] == ':')) {
                *mode = modes[i].mode;
                found = 1;
                *period = 1;
                if (modes[i].mode == POPC_OUTPUT_EVERYN) {
                    char *end;
                    *period = ml > nl ? strtoll(m + nl + 1, &end, 10) : 0;
                    if (ml == nl || end != e || *period <= 0)
                        return popc_set_error(POPC_EINVAL, WHAT ": '%.*s': "
                                              "EveryN anchor must have "
                                              "output_return_period set to "
                                              "valid positive integer "
                                              "(write EveryN:N)", len, s);
                } else if (ml != nl) {
                    found = 0;
                }
                break;
            }
        }
        if (!found)
            return popc_set_error(POPC_EINVAL, WHAT ": '%.*s': unknown "
                                  "output mode '%.*s' (valid: Final, All, "
                                  "Sum, EveryN:N)", len, s, (int)ml, m);
        *given = 1;
    }
    if (sh && lg) {
        *sh = popci_strndup(s, (size_t)(eq - s));
        *lg = popci_strndup(eq + 1, (size_t)(lend - eq - 1));
        if (!*sh || !*lg)
            return popc_set_error(POPC_ENOMEM, WHAT ": out of memory");
    }
    return POPC_OK;
}

static int count_entries(const char *text)
{
    int n = 1;

    for (const char *p = text; *p; p++)
        n += *p == ',';
    return n;
}

popc_status popci_anchors_parse(const char *text, popc_output_mode mode,
                                int64_t period, int64_t di,
                                popci_anchors **out)
{
    popci_anchors *a;
    int n, k = 0;
    popc_status st = POPC_OK;

    *out = NULL;
    if (!text)
        return POPC_OK;
    n = count_entries(text);
    if (!(a = popci_calloc(1, sizeof *a)) ||
        !(a->short_names = popci_calloc((size_t)n, sizeof(char *))) ||
        !(a->long_names = popci_calloc((size_t)n, sizeof(char *))) ||
        !(a->mode = popci_calloc((size_t)n, sizeof *a->mode)) ||
        !(a->period = popci_calloc((size_t)n, sizeof *a->period)) ||
        !(a->values = popci_calloc((size_t)n, sizeof *a->values))) {
        popci_anchors_free(a);
        return popc_set_error(POPC_ENOMEM, WHAT ": out of memory");
    }
    for (const char *s = text; st == POPC_OK && k < n; k++) {
        const char *e = strchr(s, ',');
        int given;

        if (!e)
            e = s + strlen(s);
        a->n = k + 1;
        a->mode[k] = mode;
        a->period[k] = period;
        st = entry(s, e, &a->short_names[k], &a->long_names[k], &a->mode[k],
                   &a->period[k], &given);
        for (int j = 0; st == POPC_OK && j < k; j++)
            if (strcmp(a->short_names[j], a->short_names[k]) == 0)
                st = popc_set_error(POPC_EINVAL, WHAT ": the short name "
                                    "'%s' is used twice", a->short_names[k]);
        if (st == POPC_OK && di > 0 && a->mode[k] == POPC_OUTPUT_EVERYN &&
            (a->period[k] > di || di % a->period[k] != 0))
            st = popc_set_error(POPC_EINVAL, WHAT ": anchor '%s': Return "
                                "period must be a factor of the number of "
                                "batches per step (period %lld, "
                                "deviceIterations %lld)", a->short_names[k],
                                (long long)a->period[k], (long long)di);
        s = *e ? e + 1 : e;
    }
    if (st != POPC_OK) {
        popci_anchors_free(a);
        return st;
    }
    *out = a;
    return POPC_OK;
}

popc_status popci_anchors_check(const char *text)
{
    popci_anchors *a = NULL;
    /* deviceIterations is checked at compile */
    popc_status st = popci_anchors_parse(text, POPC_OUTPUT_ALL, 1, 0, &a);

    popci_anchors_free(a);
    return st;
}

void popci_anchors_free(popci_anchors *a)
{
    if (!a)
        return;
    for (int i = 0; i < a->n; i++) {
        free(a->short_names ? a->short_names[i] : NULL);
        free(a->long_names ? a->long_names[i] : NULL);
        popc_tensor_free(a->values ? a->values[i] : NULL);
    }
    free(a->short_names);
    free(a->long_names);
    free(a->mode);
    free(a->period);
    free(a->values);
    free(a);
}
