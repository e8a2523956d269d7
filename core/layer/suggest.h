/* layer/suggest.h - "did you mean": the name closest to a typo, for every
** reader that refuses a name (options, optimizers, INI sections and keys,
** layer types), so that they all suggest alike (core/options/suggest.c). */
#ifndef POPC_LAYER_SUGGEST_H
#define POPC_LAYER_SUGGEST_H

/* The candidate closest to word by edit distance (case-insensitive), or
** NULL when none is close enough to be a plausible typo. n < 0: cands is
** NULL-terminated. */
const char *popci_closest_name(const char *word, const char *const *cands,
                               int n);

#endif /* POPC_LAYER_SUGGEST_H */
