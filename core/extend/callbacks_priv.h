/* callbacks_priv.h - the host callbacks of a model (core/extend/callbacks.c),
** reached by CPU ops (popc::HostOp) through host->host_call.
**
** A model keeps one popci_callbacks (created by the first
** popc_model_register_callback) and passes popci_callbacks_user() of it as
** the frame's user pointer, which backends hand to kernels as kc->user.
*/
#ifndef POPC_CALLBACKS_PRIV_H
#define POPC_CALLBACKS_PRIV_H

#include "popc/callback.h"

typedef struct popci_callbacks popci_callbacks;

/* An empty registry. POPC_ENOMEM. */
popc_status popci_callbacks_new(popci_callbacks **out);
void popci_callbacks_free(popci_callbacks *cb); /* NULL-safe */

/* Register fn under id (first registration wins; see popc/callback.h). */
popc_status popci_callbacks_add(popci_callbacks *cb, const char *id,
                                popc_callback_fn fn, void *user);

/* What the model passes as popc_frame.user: a popci_callback_impl. Never
** NULL: with cb NULL it is a shared table whose calls fail naming the ID
** and how to register it. */
void *popci_callbacks_user(popci_callbacks *cb);

/* Seconds spent inside callbacks since the last call (then reset to 0).
** 0 for NULL. */
double popci_callbacks_take_seconds(popci_callbacks *cb);

#endif /* POPC_CALLBACKS_PRIV_H */
