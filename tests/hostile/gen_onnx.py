#!/usr/bin/env python3
"""gen_onnx.py OUTDIR - hostile but well-formed ONNX files, one per class,
written with protowire.py (no onnx package needed). test_hostile.sh says
what each must give: a clean error naming the file and the limit, or the
correct result (the expected outputs are written beside, as .npy files
computed here by hand). Also run under ASan and with a 1 MiB stack."""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from protowire import (Attr, Graph, Tensor, Type, attr_graph, attr_ints, key,
                       ld, model, node, tensor, tensor_type, value_info,
                       varint, vint)

F = Tensor.FLOAT


def npy_f32(values, shape):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % (
        ''.join('%d,' % d for d in shape) if len(shape) == 1 else
        ', '.join(str(d) for d in shape))
    header += ' ' * ((64 - (10 + len(header) + 1) % 64) % 64) + '\n'
    return (b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) +
            header.encode() + b''.join(struct.pack('<f', v) for v in values))


def out_y(shape=(1,)):
    return ld(Graph.output, value_info('y', tensor_type(F, list(shape))))


def consts(**values):
    """Initializers: x=2.0, one=1.0 and the bool c=true."""
    b = ld(Graph.initializer, tensor('x', [1], floats=[2.0]))
    b += ld(Graph.initializer, tensor('one', [1], floats=[1.0]))
    b += ld(Graph.initializer, tensor('c', [], dtype=Tensor.BOOL, raw=b'\x01'))
    return b


def nested_if(levels, field='g', cond_input=False):
    """If inside the then_branch of If, levels deep; the innermost adds one
    to x (so y = 3 when it runs). field 'graphs' nests through the
    GRAPHS list form instead of the single graph. With cond_input the
    condition is the graph input k, so the Ifs stay in the graph."""
    g = ld(Graph.node, node('Add', ['x', 'one'], ['y'])) + out_y()
    for k in range(levels):
        els = ld(Graph.node, node('Identity', ['x'], ['y'])) + out_y()
        if field == 'g':
            then = attr_graph('then_branch', g)
        else:
            then = ld(5, ld(Attr.name, 'then_branch') +
                      vint(Attr.type, Attr.GRAPHS) + ld(Attr.graphs, g))
        g = ld(Graph.node, node('If', ['c'], ['y'],
                                then + attr_graph('else_branch', els))) + \
            out_y()
    if cond_input:  # not constant: the importer cannot fold the Ifs away
        g = ld(Graph.node, node('Identity', ['k'], ['c'])) + g
        g += ld(Graph.input, value_info('k', tensor_type(Tensor.BOOL, [])))
        return model(g + ld(Graph.initializer, tensor('x', [1],
                                                      floats=[2.0])) +
                     ld(Graph.initializer, tensor('one', [1],
                                                  floats=[1.0])))
    return model(g + consts())


def deep_type(levels):
    """A graph input whose type is a sequence of sequences ... levels deep."""
    t = tensor_type(F, [1])
    for _ in range(levels):
        t = ld(Type.sequence_type, ld(Type.seq_elem_type, t))
    g = ld(Graph.input, value_info('s', t))
    g += ld(Graph.node, node('Identity', ['x'], ['y'])) + out_y()
    return model(g + consts())


def add_chain(n, initializers=False, name_len=0, x_input=False):
    """y = x + 1 + 1 ... (n Add nodes): with initializers, each step adds
    its own initializer w<k> = 1/1024 instead of one. name_len pads every
    value name to that many bytes. x is the constant 2, which the importer
    folds the whole chain into; with x_input it is the graph input x, and
    the chain stays n nodes through every pass."""
    pad = 'v' * name_len
    g = b''
    prev = 'x'
    for k in range(n):
        out = 'y' if k == n - 1 else '%s%d' % (pad, k)
        w = 'w%d' % k if initializers else 'one'
        g += ld(Graph.node, node('Add', [prev, w], [out]))
        if initializers:
            g += ld(Graph.initializer, tensor(w, [1], floats=[1 / 1024]))
        prev = out
    if x_input:
        return model(g + out_y() +
                     ld(Graph.input, value_info('x', tensor_type(F, [1]))) +
                     ld(Graph.initializer, tensor('one', [1], floats=[1.0])))
    return model(g + out_y() + consts())


def two_node(n1, n2, extra=b''):
    g = ld(Graph.node, n1) + ld(Graph.node, n2) + out_y() + extra
    return model(g + consts())


def external(location, dims=(1,), extra_kv=()):
    kv = ld(1, 'location') + ld(2, location)
    ext = ld(Tensor.external_data, kv)
    for k, v in extra_kv:
        ext += ld(Tensor.external_data, ld(1, k) + ld(2, v))
    w = tensor('w', list(dims), extra=ext + vint(Tensor.data_location, 1))
    g = ld(Graph.initializer, w)
    g += ld(Graph.node, node('Add', ['x', 'w'], ['y'])) + out_y()
    return model(g + consts())


def loop(trips, scan=False):
    """Loop M=trips with cond kept true: y = x + trips (one added per
    iteration); with scan, the body also emits a scan output."""
    body = ld(Graph.input, value_info('i', tensor_type(Tensor.INT64, [])))
    body += ld(Graph.input, value_info('cin', tensor_type(Tensor.BOOL, [])))
    body += ld(Graph.input, value_info('a', tensor_type(F, [1])))
    body += ld(Graph.node, node('Identity', ['cin'], ['cout']))
    body += ld(Graph.node, node('Add', ['a', 'one'], ['b']))
    body += ld(Graph.output, value_info('cout', tensor_type(Tensor.BOOL, [])))
    body += ld(Graph.output, value_info('b', tensor_type(F, [1])))
    outs = ['y']
    if scan:
        body += ld(Graph.node, node('Identity', ['a'], ['sc']))
        body += ld(Graph.output, value_info('sc', tensor_type(F, [1])))
        outs.append('ys')
    g = ld(Graph.initializer, tensor('M', [], dtype=Tensor.INT64,
                                     raw=struct.pack('<q', trips)))
    g += ld(Graph.node, node('Loop', ['M', 'c', 'x'], outs,
                             attr_graph('body', body)))
    g += out_y()
    return model(g + consts())


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)

    def w(name, data):
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)

    # deep nesting of every nestable element
    w('if_3000.onnx', nested_if(3000))
    w('if_40.onnx', nested_if(40))
    w('if_40.y.npy', npy_f32([3.0], [1]))
    w('if_40_input.onnx', nested_if(40, cond_input=True))
    w('graphs_3000.onnx', nested_if(3000, 'graphs'))
    w('type_100000.onnx', deep_type(100000))
    # long chains, many nodes, many small initializers
    w('chain_20000.onnx', add_chain(20000, initializers=True))
    w('chain_20000.y.npy', npy_f32([2.0 + 20000 / 1024], [1]))
    w('chain_2000.onnx', add_chain(2000))
    w('chain_2000.y.npy', npy_f32([2002.0], [1]))
    w('chain_input_20000.onnx', add_chain(20000, x_input=True))
    w('chain_input_20000.x.npy', npy_f32([0.5], [1]))
    w('chain_input_20000.y.npy', npy_f32([20000.5], [1]))
    # long names: 100 KiB names work, a 2 MiB one is refused
    w('names_100k.onnx', add_chain(3, name_len=100 * 1024))
    w('names_100k.y.npy', npy_f32([5.0], [1]))
    w('name_2m.onnx', add_chain(2, name_len=2 << 20))
    # 100000 unknown fields (each a 3-byte varint field 1000 = 0): kept
    # by protobuf-c, one allocation each
    w('unknown_fields.onnx', add_chain(1) + vint(1000, 0) * 100000)
    w('unknown_fields.y.npy', npy_f32([3.0], [1]))
    # counts and dims that claim more data than the file holds
    w('dims_huge.onnx', two_node(node('Add', ['x', 'big'], ['t']),
                                 node('Identity', ['t'], ['y']),
                                 ld(Graph.initializer,
                                    tensor('big', [1 << 40], raw=b'\0' * 4))))
    w('dims_overflow.onnx', two_node(
        node('Add', ['x', 'big'], ['t']), node('Identity', ['t'], ['y']),
        ld(Graph.initializer, tensor('big', [1 << 62, 1 << 62],
                                     raw=b'\0' * 4))))
    # a packed list whose length runs past the end of the file
    w('packed_past_end.onnx', model(
        ld(Graph.node, node('Identity', ['x'], ['y'])) + out_y() + consts())
        + key(7, 2) + varint(1 << 20) + b'\0' * 16)
    w('attr_200.onnx', two_node(
        node('Identity', ['x'], ['t'], attr_ints('pad', range(200))),
        node('Identity', ['t'], ['y'])))
    # cycles and shared names
    w('cycle.onnx', two_node(node('Add', ['x', 'b'], ['a']),
                             node('Add', ['a', 'one'], ['b']),
                             ld(Graph.node, node('Identity', ['b'], ['y']))))
    w('self_loop.onnx', model(ld(Graph.node, node('Add', ['y', 'one'], ['y']))
                              + out_y() + consts()))
    w('shared_output.onnx', two_node(node('Add', ['x', 'one'], ['y']),
                                     node('Add', ['x', 'x'], ['y'])))
    w('shared_initializer.onnx', two_node(
        node('Add', ['x', 'one'], ['t']), node('Identity', ['t'], ['y']),
        ld(Graph.initializer, tensor('one', [1], floats=[5.0]))))
    # external data that escapes the folder
    w('ext_dotdot.onnx', external('../outside.bin'))
    w('ext_absolute.onnx', external('/etc/passwd'))
    w('ext_devzero.onnx', external('/dev/zero'))
    w('ext_link_zero.onnx', external('zero'))
    w('ext_link_dir.onnx', external('etc/passwd'))
    w('ext_short.onnx', external('w.bin', dims=(1 << 20,)))
    w('ext_offset.onnx', external('w.bin', extra_kv=[('offset', '9' * 30)]))
    w('ext_ok.onnx', external('w.bin'))
    w('ext_ok.y.npy', npy_f32([2.5], [1]))
    w('w.bin', struct.pack('<f', 0.5))
    for link, target in (('zero', '/dev/zero'), ('etc', '/etc')):
        path = os.path.join(out, link)
        if os.path.lexists(path):
            os.remove(path)
        os.symlink(target, path)
    # loops: a condition that never stops, and scan outputs that would
    # hold 2^40 values
    w('loop_forever.onnx', loop((1 << 63) - 1))
    w('loop_10.onnx', loop(10))
    w('loop_10.y.npy', npy_f32([12.0], [1]))
    w('loop_scan_huge.onnx', loop(1 << 40, scan=True))


if __name__ == '__main__':
    main()
