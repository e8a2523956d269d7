/* bytes_priv.h - the byte encoding as the core's own files include it.
** Everything (the encoding's version, byte buffers of bytes.c, the graph
** encoding of serialize.c and popci_fnv1a) is in core/layer/bytes.h, since
** exe/ writes and reads the same encoding.
*/
#ifndef POPC_BYTES_PRIV_H
#define POPC_BYTES_PRIV_H

#include "core/layer/bytes.h"

#endif /* POPC_BYTES_PRIV_H */
