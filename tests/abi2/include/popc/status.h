/* status.h - status codes and the per-thread error message.
**
** Every fallible popc function returns a popc_status. The human-readable
** reason (what, where, and how to fix it) is kept for the calling thread
** and read with popc_last_error() right after the failing call; success
** does not clear it (like errno).
**
** Conventions of every public header, unless a function says otherwise:
**   ownership  an object a popc_*_new, _clone or _load function returns
**              belongs to the caller, who frees it with the matching
**              _free (NULL-safe); arguments are borrowed for the call;
**              tensors are reference-counted (popc/tensor.h); strings and
**              views a getter returns stay valid while their object lives
**              and is not changed;
**   status     POPC_OK or an error code, with the message in
**              popc_last_error(); a failed call leaves its outputs NULL or
**              -1 and its objects as they were;
**   threads    distinct objects may be used from different threads at
**              once; one object is not thread-safe unless its functions
**              say so (the registry, the log and tensor references are);
**   versions   a header's functions are as old as its "Since" line says;
**              a function added later says "Since X.Y.Z" itself.
**
** Since 0.1.0 unless a function says otherwise; the conventions of
** popc/status.h (ownership, status codes, threads) apply.
*/
#ifndef POPC_STATUS_H
#define POPC_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define POPC_API        __attribute__((visibility("default")))
#define POPC_NODISCARD  __attribute__((warn_unused_result))
#define POPC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define POPC_API
#define POPC_NODISCARD
#define POPC_PRINTF(a, b)
#endif

typedef enum popc_status {
    POPC_OK = 0,
    POPC_ENOMEM,      /* out of host memory */
    POPC_EINVAL,      /* invalid argument or user input (validation) */
    POPC_ENOTFOUND,   /* a name (op, plugin, tensor, option) is unknown */
    POPC_EEXIST,      /* a name is registered twice */
    POPC_EABI,        /* a plugin was built for another ABI */
    POPC_EPLUGIN,     /* a plugin is broken or its init failed */
    POPC_ECONFIG,     /* configuration (options, INI) error */
    POPC_EBACKEND,    /* backend failure (compile or run) */
    POPC_ECALLBACK,   /* a user callback or foreign function failed */
    POPC_EIO,         /* file input/output, corrupt or truncated files */
    POPC_ECOMPILE,    /* the graph cannot be compiled (verification, OOM) */
    POPC_ESTATE,      /* call not valid in the object's current state */
    POPC_EUNSUPPORTED,/* a feature or option value not supported yet */
    POPC_EINTERRUPTED,/* a run was interrupted by a signal */
    POPC_EINTERNAL,   /* a bug in popc: please report it */
    POPC_EPERM,       /* refused without the user's consent (foreign code) */
    POPC_EDISTRIBUTED /* another rank of a distributed run failed, left or
                         did not answer in time (since 0.3.0) */
} popc_status;

/* The code's name: "POPC_EINVAL" etc., "POPC_E?" for a value outside the
** enum. Static, never NULL. Thread-safe. Since 0.1.0. */
POPC_API const char *popc_status_name(popc_status st);

/* The calling thread's last message; "" when none was recorded on it.
** Borrowed, never NULL: the thread's own buffer, valid until the thread
** ends but rewritten by its next failing call (copy the text to keep
** it). Thread-safe: each thread reads only its own. Since 0.1.0. */
POPC_API const char *popc_last_error(void);

/* Record a message for the calling thread (cut at 2047 bytes); returns
** st unchanged, POPC_OK or any POPC_E* code, so that a failure is one
** line: return popc_set_error(POPC_EINVAL, "...", ...). Safe to call
** with the current popc_last_error() as an argument. Thread-safe: it
** writes only the calling thread's message. Since 0.1.0. */
POPC_API popc_status popc_set_error(popc_status st, const char *fmt, ...)
    POPC_PRINTF(2, 3);

#ifdef __cplusplus
}
#endif
#endif /* POPC_STATUS_H */
