/* wire.c - the protobuf wire format, walked without recursion.
**
** protobuf-c unpacks a message by recursing once per nested message, and
** allocates a structure for every message and string it meets. A file
** nesting If inside If 3,000 deep overflows the stack inside
** protobuf_c_message_unpack, before popc sees a graph; a file of millions
** of empty messages makes it allocate far more than the file's size. So
** every file is walked here first, with an explicit stack and protobuf-c's
** own descriptors (which field is a message of which type), and refused
** when it exceeds a limit of popc/limits.h: message depth, subgraph
** nesting, messages and strings, nodes, string length, attribute list
** length. lean.c walks the same format to find weights.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_priv.h"

int popco_wire_varint(const uint8_t *p, size_t end, size_t *at, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*at >= end)
            return -1;
        *v |= (uint64_t)(p[*at] & 0x7f) << shift;
        if (!(p[(*at)++] & 0x80))
            return 0;
    }
    return -1;
}

int popco_wire_field(const uint8_t *p, size_t end, size_t *at,
                     uint32_t *field, int *wire, size_t *payload, size_t *len)
{
    uint64_t key, v;

    if (popco_wire_varint(p, end, at, &key) != 0 || (key >> 3) == 0 ||
        (key >> 3) > 0x1fffffff)
        return -1;
    *field = (uint32_t)(key >> 3);
    *wire = (int)(key & 7);
    *payload = *at;
    *len = 0;
    switch (*wire) {
    case 0:
        return popco_wire_varint(p, end, at, &v);
    case 1:
        if (end - *at < 8)
            return -1;
        *at += 8;
        return 0;
    case 2:
        if (popco_wire_varint(p, end, at, &v) != 0 || v > end - *at)
            return -1;
        *payload = *at;
        *len = (size_t)v;
        *at += (size_t)v;
        return 0;
    case 5:
        if (end - *at < 4)
            return -1;
        *at += 4;
        return 0;
    default:
        return -1; /* groups: not in onnx.proto, and protobuf-c refuses them */
    }
}

/* One message being walked. */
typedef struct frame {
    const ProtobufCMessageDescriptor *desc;
    size_t at, end;
    int graphs;           /* GraphProtos on the path, this one included */
    int64_t list_values;  /* AttributeProto: values of its lists so far */
} frame;

typedef struct checker {
    const char *file;
    int64_t max_depth, max_nesting, max_messages, max_nodes, max_string,
        max_list;
    int64_t messages, nodes;
    frame *stack;
    size_t n, cap;
} checker;

static popc_status push(checker *c, const ProtobufCMessageDescriptor *desc,
                        size_t from, size_t end, int graphs)
{
    if ((int64_t)c->n >= c->max_depth)
        return popc_limit_error(POPC_LIMIT_MESSAGE_DEPTH, c->file,
                                "protobuf messages (types, graphs, "
                                "attributes) nested too deep",
                                (int64_t)c->n + 1);
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 32;
        frame *s = realloc(c->stack, cap * sizeof *s);

        if (!s)
            return popc_set_error(POPC_ENOMEM, "%s: out of memory", c->file);
        c->stack = s;
        c->cap = cap;
    }
    c->stack[c->n].desc = desc;
    c->stack[c->n].at = from;
    c->stack[c->n].end = end;
    c->stack[c->n].graphs = graphs;
    c->stack[c->n].list_values = 0;
    c->n++;
    return POPC_OK;
}

/* Values a packed scalar payload holds. */
static int64_t packed_count(const ProtobufCFieldDescriptor *fd,
                            const uint8_t *p, size_t len)
{
    int64_t n = 0;

    switch (fd->type) {
    case PROTOBUF_C_TYPE_FLOAT: case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return (int64_t)(len / 4);
    case PROTOBUF_C_TYPE_DOUBLE: case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
        return (int64_t)(len / 8);
    default: /* varints: one per byte without the continuation bit */
        for (size_t i = 0; i < len; i++)
            n += !(p[i] & 0x80);
        return n;
    }
}

static popc_status malformed(const checker *c)
{
    return popc_set_error(POPC_EIO, "%s: not a valid ONNX model (protobuf "
                          "%s did not parse: truncated or not an .onnx "
                          "file)", c->file, c->stack[0].desc->short_name);
}

/* One field of the message on top of the stack. */
static popc_status step(checker *c, const uint8_t *p)
{
    frame *f = &c->stack[c->n - 1];
    const ProtobufCFieldDescriptor *fd;
    size_t payload, len;
    uint32_t field;
    int wire;

    if (popco_wire_field(p, f->end, &f->at, &field, &wire, &payload,
                         &len) != 0)
        return malformed(c);
    if (!(fd = protobuf_c_message_descriptor_get_field(f->desc, field))) {
        /* kept by protobuf-c as bytes: no nesting, but an allocation */
        if (++c->messages > c->max_messages)
            return popc_limit_error(POPC_LIMIT_MESSAGES, c->file,
                                    "too many protobuf messages, strings "
                                    "and unknown fields", c->messages);
        return POPC_OK;
    }
    if (f->desc == &onnx__attribute_proto__descriptor &&
        fd->label == PROTOBUF_C_LABEL_REPEATED) {
        f->list_values += wire == 2 && fd->type != PROTOBUF_C_TYPE_MESSAGE &&
                                  fd->type != PROTOBUF_C_TYPE_STRING &&
                                  fd->type != PROTOBUF_C_TYPE_BYTES
                              ? packed_count(fd, p + payload, len)
                              : 1;
        if (f->list_values > c->max_list)
            return popc_limit_error(POPC_LIMIT_ATTRIBUTE_ELEMENTS, c->file,
                                    "an attribute list with too many "
                                    "values", f->list_values);
    }
    if (wire != 2)
        return POPC_OK;
    if (fd->type == PROTOBUF_C_TYPE_STRING && (int64_t)len > c->max_string)
        return popc_limit_error(POPC_LIMIT_STRING_BYTES, c->file,
                                "a string (a name, op type or doc "
                                "string) too long, in bytes",
                                (int64_t)len);
    if (fd->type == PROTOBUF_C_TYPE_MESSAGE ||
        (fd->label == PROTOBUF_C_LABEL_REPEATED &&
         (fd->type == PROTOBUF_C_TYPE_STRING ||
          fd->type == PROTOBUF_C_TYPE_BYTES))) {
        /* each one becomes an allocation of its own */
        if (++c->messages > c->max_messages)
            return popc_limit_error(POPC_LIMIT_MESSAGES, c->file,
                                    "too many protobuf messages, strings "
                                    "and unknown fields", c->messages);
    }
    if (fd->type == PROTOBUF_C_TYPE_MESSAGE) {
        const ProtobufCMessageDescriptor *d = fd->descriptor;
        int graphs = f->graphs + (d == &onnx__graph_proto__descriptor);

        /* the main graph is not nested: its bodies are, one level each */
        if (graphs - 1 > c->max_nesting)
            return popc_limit_error(POPC_LIMIT_NESTING, c->file,
                                    "subgraphs (If, Loop or Scan bodies) "
                                    "nested too deep", graphs - 1);
        if (d == &onnx__node_proto__descriptor && ++c->nodes > c->max_nodes)
            return popc_limit_error(POPC_LIMIT_NODES, c->file,
                                    "too many nodes", c->nodes);
        return push(c, d, payload, payload + len, graphs);
    }
    return POPC_OK;
}

popc_status popco_wire_check(const void *data, size_t size,
                             const ProtobufCMessageDescriptor *desc,
                             const char *file)
{
    checker c = {.file = file ? file : "<memory>"};
    popc_status st;

    c.max_depth = popc_limit_get(POPC_LIMIT_MESSAGE_DEPTH);
    c.max_nesting = popc_limit_get(POPC_LIMIT_NESTING);
    c.max_messages = popc_limit_get(POPC_LIMIT_MESSAGES);
    c.max_nodes = popc_limit_get(POPC_LIMIT_NODES);
    c.max_string = popc_limit_get(POPC_LIMIT_STRING_BYTES);
    c.max_list = popc_limit_get(POPC_LIMIT_ATTRIBUTE_ELEMENTS);
    st = push(&c, desc, 0, size, desc == &onnx__graph_proto__descriptor);
    while (st == POPC_OK && c.n) {
        if (c.stack[c.n - 1].at >= c.stack[c.n - 1].end)
            c.n--;
        else
            st = step(&c, data);
    }
    free(c.stack);
    return st;
}
