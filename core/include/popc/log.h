/* log.h - leveled logging. Level from POPC_LOG_LEVEL (TRACE, DEBUG, INFO,
** WARN, ERR, OFF; default WARN) or popc_log_set_level; destination
** POPC_LOG_DEST (stderr default, stdout, or a file name). Identical lines
** repeated more than maxRepeatLogs times are summarised. Thread-safe.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_LOG_H
#define POPC_LOG_H

#include "popc/status.h"
#include "popc/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

POPC_API void popc_log(int level, const char *fmt, ...) POPC_PRINTF(2, 3);
POPC_API void popc_log_set_level(int level);
POPC_API int popc_log_level(void);
/* Parse "TRACE".."OFF"; POPC_EINVAL with the valid list otherwise. */
POPC_API POPC_NODISCARD popc_status popc_log_parse_level(const char *s,
                                                         int *level);
POPC_API void popc_log_set_max_repeats(int n);
/* Route messages to a callback instead of the destination (NULL resets). */
typedef void (*popc_log_fn)(int level, const char *msg, void *user);
POPC_API void popc_log_set_callback(popc_log_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif /* POPC_LOG_H */
