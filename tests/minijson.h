/* minijson.h - a small JSON reader for tests (RFC 8259 values into a
** tree), written apart from the library's writers so that it checks them
** independently. Not for untrusted input of any size: recursion depth is
** bounded (64), numbers are doubles, \u escapes outside ASCII become '?'.
*/
#ifndef POPC_TESTS_MINIJSON_H
#define POPC_TESTS_MINIJSON_H

#include <stddef.h>

typedef enum mj_type {
    MJ_NULL = 0,
    MJ_BOOL,
    MJ_NUMBER,
    MJ_STRING,
    MJ_ARRAY,
    MJ_OBJECT
} mj_type;

typedef struct mj_value {
    mj_type type;
    double number;               /* MJ_NUMBER, MJ_BOOL (0 or 1) */
    char *string;                /* MJ_STRING */
    int n;                       /* items (MJ_ARRAY, MJ_OBJECT) */
    struct mj_value *items;
    char **keys;                 /* MJ_OBJECT: n keys */
} mj_value;

/* The value of text[0..len), or NULL with a reason ("offset 12: ...") in
** err (size errsize). Free with mj_free. */
mj_value *mj_parse(const char *text, size_t len, char *err, size_t errsize);
void mj_free(mj_value *v); /* NULL-safe */

/* Member key of an object, item i of an array; NULL when absent or v is
** not of that kind (so calls can be chained). */
const mj_value *mj_get(const mj_value *v, const char *key);
const mj_value *mj_at(const mj_value *v, int i);
/* A number (or bool) member, def when absent. */
double mj_num(const mj_value *v, const char *key, double def);
/* A string member, NULL when absent. */
const char *mj_str(const mj_value *v, const char *key);

#endif /* POPC_TESTS_MINIJSON_H */
