/* limits.h - how much a file may make popc nest, allocate and repeat.
**
** Model files, executables and options files are untrusted input
** (docs/security.md). Every reader checks what a file claims against
** these limits before it recurses or allocates, and refuses a file that
** exceeds one with an error naming the file, the limit, its value and how
** to raise it. The defaults fit real models; a program raises a limit
** with popc_limit_set, a user with the environment variable the limit
** names (POPC_MAX_NESTING=64 popc infer ...).
**
** Since 0.3.0; the conventions of popc/status.h (ownership, status codes,
** threads) apply.
*/
#ifndef POPC_LIMITS_H
#define POPC_LIMITS_H

#include <stdint.h>

#include "popc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum popc_limit {
    POPC_LIMIT_NESTING,            /* subgraphs inside subgraphs (If, Loop,
                                      Scan bodies), in any file: 32 */
    POPC_LIMIT_MESSAGE_DEPTH,      /* protobuf messages inside messages in
                                      an ONNX file (types nest too): 128 */
    POPC_LIMIT_MESSAGES,           /* protobuf messages, repeated strings
                                      and unknown fields in an ONNX file:
                                      16777216 */
    POPC_LIMIT_NODES,              /* nodes of a model, all graphs: 1000000 */
    POPC_LIMIT_INITIALIZER_BYTES,  /* bytes of one model's initializers and
                                      constant tensors: 32 GiB */
    POPC_LIMIT_ATTRIBUTE_ELEMENTS, /* values of one attribute list: 16777216 */
    POPC_LIMIT_STRING_BYTES,       /* bytes of one name or string: 1 MiB */
    POPC_LIMIT_LOOP_TRIPS,         /* iterations of one Loop run: 1048576 */
    POPC_LIMIT_UNROLLED_STEPS,     /* steps of a Loop or Scan unrolled into
                                      its gradient: 4096 */
    POPC_LIMIT_COUNT
} popc_limit;

/* The value of a limit in force: the one set by popc_limit_set, else the
** environment variable popc_limit_env names when it holds a positive
** integer, else the default; -1 for an unknown limit. Thread-safe.
** Since 0.3.0. */
POPC_API int64_t popc_limit_get(popc_limit which);
/* Sets a limit for the whole process (value > 0), or with value 0 goes
** back to the environment variable or the default. POPC_EINVAL for an
** unknown limit or a negative value. Thread-safe: readers running on
** other threads see the old or the new value. Since 0.3.0. */
POPC_API popc_status popc_limit_set(popc_limit which, int64_t value);
/* The limit's environment variable ("POPC_MAX_NODES"), or NULL for an
** unknown limit; static storage, thread-safe. Since 0.3.0. */
POPC_API const char *popc_limit_env(popc_limit which);
/* Sets and returns the error of a file that exceeds a limit:
** POPC_EUNSUPPORTED, "<file>: <what>: <found>, over popc's limit of N
** (<ENV>); ... raise the limit (<ENV>=N ...)". found < 0 leaves the count out (a reader
** that stops counting at the limit). Thread-safe, as popc_set_error.
** Since 0.3.0. */
POPC_API popc_status popc_limit_error(popc_limit which, const char *file,
                                      const char *what, int64_t found);
/* The limit's default, -1 for an unknown limit. Thread-safe.
** Since 0.3.0. */
POPC_API int64_t popc_limit_default(popc_limit which);

#ifdef __cplusplus
}
#endif

#endif /* POPC_LIMITS_H */
