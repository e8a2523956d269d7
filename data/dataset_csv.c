/* dataset_csv.c - datasets from CSV text and from NumPy .npy files.
**
** CSV: one sample per line, comma-separated numbers, an optional header
** (recognised by a field that is not a number), one column chosen as the
** label. Rows must all have the header's (or the first row's) width;
** every field must be a number and labels whole numbers. Errors give
** file:line and the column.
*/
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "popc/data.h"
#include "core/layer/alloc.h"
#include "data/data_priv.h"

#define NO_LABEL (-1)

typedef struct csv_state {
    const char *path;
    long line;
    int n_cols;
    char **names;             /* header names, NULL when no header */
    int label;                /* label column or NO_LABEL */
    float *values;            /* rows x (n_cols - has label) */
    int64_t n_values, cap_values;
    int32_t *labels;
    int64_t n_rows, cap_rows;
} csv_state;

/* Trim blanks and one pair of double quotes; edits the field in place. */
static char *trim(char *s)
{
    size_t len;

    while (*s == ' ' || *s == '\t')
        s++;
    len = strlen(s);
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' ||
                   s[len - 1] == '\r' || s[len - 1] == '\n'))
        s[--len] = '\0';
    if (len >= 2 && s[0] == '"' && s[len - 1] == '"') {
        s[len - 1] = '\0';
        s++;
    }
    return s;
}

/* Split a line at commas in place; returns the field count (fields may
** be NULL to count only). */
static int split(char *line, char **fields, int cap)
{
    int n = 0;
    char *p = line;

    for (;;) {
        char *comma = strchr(p, ',');

        if (comma)
            *comma = '\0';
        if (fields && n < cap)
            fields[n] = trim(p);
        n++;
        if (!comma)
            return n;
        p = comma + 1;
    }
}

static int parse_number(const char *s, double *v)
{
    char *end;

    if (!*s)
        return 0;
    errno = 0;
    *v = strtod(s, &end);
    return *end == '\0' && errno != ERANGE;
}

static const char *column_name(const csv_state *cs, int col, char *buf,
                               size_t size)
{
    if (cs->names)
        snprintf(buf, size, "column %d ('%s')", col + 1, cs->names[col]);
    else
        snprintf(buf, size, "column %d", col + 1);
    return buf;
}

/* Choose the label column from the user's spec and the header. */
static popc_status pick_label(csv_state *cs, const char *spec)
{
    char *end;
    long idx;

    if (!spec) {
        for (int i = 0; cs->names && i < cs->n_cols; i++)
            if (strcasecmp(cs->names[i], "label") == 0) {
                cs->label = i;
                return POPC_OK;
            }
        return popc_set_error(POPC_EINVAL,
                              "%s: no column is named 'label'; say which "
                              "column holds the labels (a header name, a "
                              "0-based index, first, last or none)",
                              cs->path);
    }
    if (strcasecmp(spec, "none") == 0) {
        cs->label = NO_LABEL;
        return POPC_OK;
    }
    if (strcasecmp(spec, "first") == 0) {
        cs->label = 0;
        return POPC_OK;
    }
    if (strcasecmp(spec, "last") == 0) {
        cs->label = cs->n_cols - 1;
        return POPC_OK;
    }
    errno = 0;
    idx = strtol(spec, &end, 10);
    if (*spec && *end == '\0' && errno == 0) {
        if (idx < 0 || idx >= cs->n_cols)
            return popc_set_error(POPC_EINVAL,
                                  "%s: label column %ld is outside 0..%d "
                                  "(the file has %d columns)",
                                  cs->path, idx, cs->n_cols - 1, cs->n_cols);
        cs->label = (int)idx;
        return POPC_OK;
    }
    for (int i = 0; cs->names && i < cs->n_cols; i++)
        if (strcmp(cs->names[i], spec) == 0) {
            cs->label = i;
            return POPC_OK;
        }
    return popc_set_error(POPC_EINVAL,
                          "%s: no column named '%s'%s; give a header name, "
                          "a 0-based index, first, last or none",
                          cs->path, spec,
                          cs->names ? "" : " (the file has no header)");
}

static int grow(void **p, int64_t *cap, int64_t need, size_t elem)
{
    int64_t n = *cap ? *cap : 1024;
    void *q;

    if (need <= *cap)
        return 1;
    while (n < need)
        n *= 2;
    if (!(q = popci_realloc(*p, (size_t)n * elem)))
        return 0;
    *p = q;
    *cap = n;
    return 1;
}

static popc_status add_row(csv_state *cs, char **fields)
{
    char buf[160];
    int n_feat = cs->n_cols - (cs->label != NO_LABEL);

    if (!grow((void **)&cs->values, &cs->cap_values, cs->n_values + n_feat,
              sizeof *cs->values) ||
        !grow((void **)&cs->labels, &cs->cap_rows, cs->n_rows + 1,
              sizeof *cs->labels))
        return popc_set_error(POPC_ENOMEM, "%s:%ld: out of memory",
                              cs->path, cs->line);
    for (int c = 0; c < cs->n_cols; c++) {
        double v;

        if (!parse_number(fields[c], &v))
            return popc_set_error(POPC_EIO,
                                  "%s:%ld: %s: '%s' is not a number",
                                  cs->path, cs->line,
                                  column_name(cs, c, buf, sizeof buf),
                                  fields[c]);
        if (c == cs->label) {
            if (v != floor(v) || v < INT32_MIN || v > INT32_MAX)
                return popc_set_error(POPC_EIO,
                                      "%s:%ld: %s: label '%s' is not a "
                                      "whole number",
                                      cs->path, cs->line,
                                      column_name(cs, c, buf, sizeof buf),
                                      fields[c]);
            cs->labels[cs->n_rows] = (int32_t)v;
        } else {
            cs->values[cs->n_values++] = (float)v;
        }
    }
    cs->n_rows++;
    return POPC_OK;
}

static popc_status first_row(csv_state *cs, char *line, const char *spec,
                             char ***fields)
{
    int n = 1, header = 0;
    popc_status st;

    for (const char *p = line; *p; p++)
        n += *p == ',';
    if (!(*fields = popci_calloc((size_t)n, sizeof **fields)))
        return popc_set_error(POPC_ENOMEM, "%s: out of memory", cs->path);
    split(line, *fields, n);
    cs->n_cols = n;
    for (int i = 0; i < n; i++) {
        double v;

        if (!parse_number((*fields)[i], &v))
            header = 1;
    }
    if (header) {
        if (!(cs->names = popci_calloc((size_t)n, sizeof *cs->names)))
            return popc_set_error(POPC_ENOMEM, "%s: out of memory",
                                  cs->path);
        for (int i = 0; i < n; i++)
            if (!(cs->names[i] = popci_strdup((*fields)[i])))
                return popc_set_error(POPC_ENOMEM, "%s: out of memory",
                                      cs->path);
    }
    if ((st = pick_label(cs, spec)) != POPC_OK)
        return st;
    if (cs->n_cols - (cs->label != NO_LABEL) < 1)
        return popc_set_error(POPC_EIO,
                              "%s: the only column is the label: there are "
                              "no features",
                              cs->path);
    return header ? POPC_OK : add_row(cs, *fields);
}

popc_status popc_dataset_load_csv(const char *path, const char *label_column,
                                  popc_dataset **out)
{
    csv_state cs = {0};
    FILE *fp = NULL;
    char *line = NULL, **fields = NULL, *source = NULL;
    size_t cap = 0;
    ssize_t len;
    popc_status st = POPC_OK;
    int64_t dims[1];

    *out = NULL;
    if (!path)
        return popc_set_error(POPC_EINVAL,
                              "popc_dataset_load_csv: path is NULL");
    cs.path = path;
    cs.label = NO_LABEL;
    if (!(fp = fopen(path, "r")))
        return popc_set_error(POPC_EIO, "%s: cannot open: %s", path,
                              strerror(errno));
    while ((len = getline(&line, &cap, fp)) >= 0) {
        char *p = line;

        cs.line++;
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p)
            continue;
        if (!fields) {
            if ((st = first_row(&cs, line, label_column, &fields)) !=
                POPC_OK)
                goto done;
            continue;
        }
        {
            int n = split(line, fields, cs.n_cols);

            if (n != cs.n_cols) {
                st = popc_set_error(POPC_EIO,
                                    "%s:%ld: row has %d fields but the %s "
                                    "has %d; every row needs the same "
                                    "columns",
                                    path, cs.line, n,
                                    cs.names ? "header" : "first row",
                                    cs.n_cols);
                goto done;
            }
        }
        if ((st = add_row(&cs, fields)) != POPC_OK)
            goto done;
    }
    if (ferror(fp)) {
        st = popc_set_error(POPC_EIO, "%s: read error: %s", path,
                            strerror(errno));
        goto done;
    }
    if (cs.n_rows == 0) {
        st = popc_set_error(POPC_EIO, "%s: no data rows", path);
        goto done;
    }
    if (!(source = popci_strdup(path))) {
        st = popc_set_error(POPC_ENOMEM, "%s: out of memory", path);
        goto done;
    }
    dims[0] = cs.n_cols - (cs.label != NO_LABEL);
    if (cs.label == NO_LABEL) {
        free(cs.labels);
        cs.labels = NULL;
    }
    st = popci_dataset_new(source, cs.n_rows, dims, 1, POPC_DTYPE_F32,
                           cs.values, cs.labels, out);
    cs.values = NULL;
    cs.labels = NULL;
done:
    if (fp)
        fclose(fp);
    free(source);
    free(line);
    free(fields);
    for (int i = 0; cs.names && i < cs.n_cols; i++)
        free(cs.names[i]);
    free(cs.names);
    free(cs.values);
    free(cs.labels);
    return st;
}

popc_status popc_dataset_load_npy(const char *features, const char *labels,
                                  popc_dataset **out)
{
    popc_tensor *f = NULL, *l = NULL;
    popc_status st;

    *out = NULL;
    if (!features)
        return popc_set_error(POPC_EINVAL,
                              "popc_dataset_load_npy: features path is NULL");
    if ((st = popc_npy_load(features, &f)) != POPC_OK)
        return st;
    if (labels && (st = popc_npy_load(labels, &l)) != POPC_OK)
        goto done;
    st = popci_dataset_from_tensors(features, labels, f, l, out);
done:
    popc_tensor_free(f);
    popc_tensor_free(l);
    return st;
}
