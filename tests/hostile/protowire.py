"""protowire.py - the protobuf wire format, written by hand so that the
hostile-file generators need nothing but Python: fields are built from
the inside out as bytes."""
import struct


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def vint(field, v):
    return key(field, 0) + varint(v)


def ld(field, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return key(field, 2) + varint(len(payload)) + payload


def f32(field, v):
    return key(field, 5) + struct.pack('<f', v)


# onnx.proto field numbers (the ones the generators use)
class Model:
    ir_version, producer_name, graph, opset_import = 1, 2, 7, 8


class Opset:
    domain, version = 1, 2


class Graph:
    node, name, initializer, doc_string, input, output = 1, 2, 5, 10, 11, 12


class Node:
    input, output, name, op_type, attribute, domain = 1, 2, 3, 4, 5, 7


class Attr:
    name, f, i, s, t, g, floats, ints, strings, tensors, graphs = \
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11
    type = 20
    FLOAT, INT, STRING, TENSOR, GRAPH, FLOATS, INTS, GRAPHS = \
        1, 2, 3, 4, 5, 6, 7, 10


class Tensor:
    dims, data_type, float_data, int64_data, name, raw_data = 1, 2, 4, 7, 8, 9
    external_data, data_location = 13, 14
    FLOAT, BOOL, INT64 = 1, 9, 7


class ValueInfo:
    name, type = 1, 2


class Type:
    tensor_type, sequence_type = 1, 4
    elem_type, shape = 1, 2   # TypeProto.Tensor
    seq_elem_type = 1         # TypeProto.Sequence


def model(graph, opset=17):
    return (vint(Model.ir_version, 8) + ld(Model.producer_name, 'hostile') +
            ld(Model.opset_import, vint(Opset.version, opset)) +
            ld(Model.graph, graph))


def node(op, inputs, outputs, attrs=b'', name=None):
    b = b''.join(ld(Node.input, i) for i in inputs)
    b += b''.join(ld(Node.output, o) for o in outputs)
    if name is not None:
        b += ld(Node.name, name)
    return b + ld(Node.op_type, op) + attrs


def attr_graph(name, g):
    return ld(Node.attribute, ld(Attr.name, name) + vint(Attr.type, Attr.GRAPH) +
              ld(Attr.g, g))


def attr_ints(name, values):
    packed = b''.join(varint(v) for v in values)
    return ld(Node.attribute, ld(Attr.name, name) + vint(Attr.type, Attr.INTS) +
              ld(Attr.ints, packed))


def tensor(name, dims, dtype=Tensor.FLOAT, raw=None, floats=None, extra=b''):
    b = b''.join(vint(Tensor.dims, d) for d in dims)
    b += vint(Tensor.data_type, dtype) + ld(Tensor.name, name)
    if raw is not None:
        b += ld(Tensor.raw_data, raw)
    if floats is not None:
        b += ld(Tensor.float_data, b''.join(struct.pack('<f', x)
                                            for x in floats))
    return b + extra


def tensor_type(elem, dims):
    shape = b''.join(ld(1, vint(1, d)) for d in dims)
    return ld(Type.tensor_type, vint(Type.elem_type, elem) +
              ld(Type.shape, shape))


def value_info(name, typ):
    return ld(ValueInfo.name, name) + ld(ValueInfo.type, typ)
