/* proto.c - files and messages: a model file is mapped read-only, checked
** against popc's limits (wire.c) and unpacked with protobuf-c, which
** checks every length against the buffer. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx/onnx_priv.h"

popc_status popco_map_file(const char *path, popco_map *m)
{
    struct stat sb;
    int fd;

    m->data = NULL;
    m->size = 0;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return popc_set_error(POPC_EIO, "%s: cannot open: %s", path,
                              strerror(errno));
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return popc_set_error(POPC_EIO, "%s: not a regular file", path);
    }
    if ((uint64_t)sb.st_size > POPCO_MAX_MODEL_BYTES) {
        close(fd);
        return popc_set_error(POPC_EIO, "%s: %lld bytes is more than the 2 "
                              "GiB a protobuf can hold; save large weights as "
                              "external data (onnx.save_model(..., "
                              "save_as_external_data=True))",
                              path, (long long)sb.st_size);
    }
    m->size = (size_t)sb.st_size;
    if (m->size) {
        m->data = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m->data == MAP_FAILED) {
            m->data = NULL;
            close(fd);
            return popc_set_error(POPC_EIO, "%s: cannot map: %s", path,
                                  strerror(errno));
        }
    }
    close(fd);
    return POPC_OK;
}

void popco_unmap(popco_map *m)
{
    if (m->data)
        munmap(m->data, m->size);
    m->data = NULL;
    m->size = 0;
}

popc_status popco_unpack_model(const void *data, size_t size,
                               const char *name, Onnx__ModelProto **out)
{
    popc_status st;

    *out = NULL;
    if (size == 0)
        return popc_set_error(POPC_EIO, "%s: empty file, not an ONNX model",
                              name);
    if ((st = popco_wire_check(data, size, &onnx__model_proto__descriptor,
                               name)) != POPC_OK)
        return st;
    *out = onnx__model_proto__unpack(NULL, size, data);
    if (!*out)
        return popc_set_error(POPC_EIO, "%s: not a valid ONNX model "
                              "(protobuf ModelProto did not parse: truncated "
                              "or not an .onnx file)", name);
    if (!(*out)->graph) {
        onnx__model_proto__free_unpacked(*out, NULL);
        *out = NULL;
        return popc_set_error(POPC_EIO, "%s: the ONNX model has no graph",
                              name);
    }
    return POPC_OK;
}

popc_status popco_unpack_tensor(const void *data, size_t size,
                                const char *name, Onnx__TensorProto **out)
{
    popc_status st;

    *out = NULL;
    if ((st = popco_wire_check(data, size, &onnx__tensor_proto__descriptor,
                               name)) != POPC_OK)
        return st;
    *out = onnx__tensor_proto__unpack(NULL, size, data);
    if (!*out)
        return popc_set_error(POPC_EIO, "%s: not a valid ONNX TensorProto "
                              "(protobuf did not parse)", name);
    return POPC_OK;
}
