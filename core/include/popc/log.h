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

/* Log a printf-style message at level (POPC_LOG_TRACE..POPC_LOG_ERR) when
** it is at or above the process-wide level; longer than 1023 bytes is cut.
** Since 0.1.0. Thread-safe: lines from different threads never mix. */
POPC_API void popc_log(int level, const char *fmt, ...) POPC_PRINTF(2, 3);
/* Set the process-wide level (POPC_LOG_TRACE..POPC_LOG_OFF; other values
** are ignored); it overrides POPC_LOG_LEVEL. Since 0.1.0. Thread-safe (an
** atomic): it applies to every thread at once. */
POPC_API void popc_log_set_level(int level);
/* The process-wide level. Since 0.1.0. Thread-safe. */
POPC_API int popc_log_level(void);
/* Parse "TRACE".."OFF" (any case; "ERROR" too) into *level, which is set
** on success only. POPC_OK, or POPC_EINVAL with the valid list otherwise
** (also for NULL s). Since 0.1.0. Thread-safe. */
POPC_API POPC_NODISCARD popc_status popc_log_parse_level(const char *s,
                                                         int *level);
/* maxRepeatLogs: of a run of identical lines, show n, then their count;
** n < 0: no limit; 0 counts as 1; default 4. Process-wide: freezing
** options that set maxRepeatLogs calls it too, and the last call wins.
** Since 0.1.0. Thread-safe. */
POPC_API void popc_log_set_max_repeats(int n);
/* A log callback: the level, the message (borrowed for the call, without
** a newline) and the user pointer given to popc_log_set_callback. */
typedef void (*popc_log_fn)(int level, const char *msg, void *user);
/* Route messages to a callback instead of the destination (NULL resets).
** Process-wide. fn may be called from any thread that logs, one call at a
** time, with the log's lock held; a line fn logs itself (popc_log, or a
** popc function that logs) goes to the destination (POPC_LOG_DEST,
** stderr by default), not to fn again. Once this returns, the previous fn
** is not running.
** Since 0.1.0. Thread-safe. */
POPC_API void popc_log_set_callback(popc_log_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif /* POPC_LOG_H */
