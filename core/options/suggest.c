/* suggest.c - "did you mean": the candidate name closest to a typo, by
** case-insensitive edit distance. Used by the INI and options readers and
** by the optimizers' attribute errors, so it stands alone.
*/
#include "config.h"

#include <limits.h>
#include <string.h>

#include "core/layer/suggest.h"

#define MAX_SUGGEST_LEN 128

static int lower(int ch)
{
    return ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch;
}

/* Case-insensitive Levenshtein distance; INT_MAX for over-long words. */
static int distance(const char *a, const char *b)
{
    int row[2][MAX_SUGGEST_LEN + 1];
    size_t la = strlen(a), lb = strlen(b);

    if (la > MAX_SUGGEST_LEN || lb > MAX_SUGGEST_LEN)
        return INT_MAX;
    for (size_t j = 0; j <= lb; j++)
        row[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int *cur = row[i & 1], *prev = row[(i - 1) & 1];

        cur[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (lower(a[i - 1]) != lower(b[j - 1]));
            int del = prev[j] + 1, ins = cur[j - 1] + 1;

            cur[j] = sub < del ? (sub < ins ? sub : ins)
                               : (del < ins ? del : ins);
        }
    }
    return row[la & 1][lb];
}

const char *popci_closest_name(const char *word, const char *const *cands,
                               int n)
{
    const char *best = NULL;
    int best_d = INT_MAX, limit;

    if (!word || !cands)
        return NULL;
    limit = (int)strlen(word) / 3;
    if (limit < 2)
        limit = 2;
    for (int i = 0; n < 0 ? cands[i] != NULL : i < n; i++) {
        const char *dot = strrchr(cands[i], '.');
        int d = distance(word, cands[i]);

        /* "gradientAccumulation" -> "Training.gradientAccumulation" */
        if (dot) {
            int dt = distance(word, dot + 1);
            if (dt < d)
                d = dt;
        }
        if (d < best_d) {
            best_d = d;
            best = cands[i];
        }
    }
    return best_d <= limit ? best : NULL;
}
