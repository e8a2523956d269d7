#!/usr/bin/env python3
"""gen_exe.py IN.popc OUTDIR - hostile executables made from a real one
(docs/executable-format.md): its graph section (GRPH) is replaced by a
crafted graph and the CRC32s are recomputed, so the reader gets past the
container checks to the graph decoder. test_hostile.sh says what each
must give."""
import os
import struct
import sys
import zlib

GRAPH_ATTR = 8  # POPC_ATTR_GRAPH


def u8(v): return struct.pack('<B', v)
def u32(v): return struct.pack('<I', v)
def i64(v): return struct.pack('<q', v)
def f64(v): return struct.pack('<d', v)


def s(text):
    b = text.encode()
    return u32(len(b)) + b + b'\0'


def annot():
    return u8(0) + s('') + u8(0) + s('') + i64(-1) * 4 + f64(0)


def node(name, attrs=b'', n_attrs=0):
    return (s(name) + s('') + s('Identity') + i64(1) + u32(0) + u32(0) +
            u32(n_attrs) + attrs + annot())


def graph(name, nodes, n_nodes, n_values=0):
    return (s(name) + u32(0) + u32(n_values) + u32(n_nodes) + nodes +
            u32(0) + u32(0) + u32(0) + u32(0) + annot() + i64(0))


def nested(levels):
    g = graph('inner', b'', 0)
    for k in range(levels):
        g = graph('g%d' % k,
                  node('n%d' % k, s('body') + u32(GRAPH_ATTR) + g, 1), 1)
    return g


def sections(data):
    """(header, [(tag, payload)]) of an executable."""
    at = 12
    (n,) = struct.unpack_from('<I', data, at)
    at += 4 + n + 1
    header = data[:at]
    out = []
    while True:
        tag = data[at:at + 4]
        (length,) = struct.unpack_from('<Q', data, at + 4)
        out.append((tag, data[at + 16:at + 16 + length]))
        at += 16 + length
        if tag == b'END\0':
            return header, out


def assemble(header, secs):
    b = bytearray(header)
    for tag, payload in secs:
        head = tag + struct.pack('<Q', len(payload))
        b += head + u32(zlib.crc32(payload, zlib.crc32(head))) + payload
    return bytes(b) + u32(zlib.crc32(bytes(b)))


def main():
    data = open(sys.argv[1], 'rb').read()
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    header, secs = sections(data)
    variants = {
        'exe_nest_3000.popc': nested(3000),
        'exe_values_claim.popc': s('g') + u32(0) + u32(0xffffffff),
        'exe_name_claim.popc': u32(0xfffffff0) + b'g',
        'exe_nodes_2000.popc': graph(
            'g', b''.join(node('n%d' % k) for k in range(2000)), 2000),
    }
    for name, g in variants.items():
        new = [(t, g if t == b'GRPH' else p) for t, p in secs]
        with open(os.path.join(out, name), 'wb') as f:
            f.write(assemble(header, new))
    # the unchanged sections reassembled: the round trip is exact
    with open(os.path.join(out, 'exe_same.popc'), 'wb') as f:
        f.write(assemble(header, secs))


if __name__ == '__main__':
    main()
