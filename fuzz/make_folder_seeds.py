#!/usr/bin/env python3
"""Seed inputs for fuzz_weights and fuzz_checkpoint: a weights directory
and a checkpoint of fuzz/fuzz_model.c's model (8 -> 4 -> 3 MLP, Adam),
each packed as one input (parts joined by fuzz_util.h's FUZZ_FOLDER_SEP,
in the order the harness lists its files). Needs only the standard
library; run from the source tree: python3 fuzz/make_folder_seeds.py"""
import os
import struct

SEP = b"\n%%popc-file%%\n"
SHAPES = {"fc1.weight": (4, 8), "fc1.bias": (4,),
          "fc2.weight": (3, 4), "fc2.bias": (3,)}


def npy(descr, shape, values):
    shape_text = "(%s)" % ("".join("%d," % d for d in shape) if len(shape) == 1
                           else ", ".join(str(d) for d in shape))
    head = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        descr, shape_text)
    pad = 64 - (10 + len(head) + 1) % 64
    head = head + " " * pad + "\n"
    fmt = {"<f4": "f", "<i8": "q"}[descr]
    body = struct.pack("<%d%s" % (len(values), fmt), *values)
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + \
        head.encode() + body


def count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def weight(name, k):
    n = count(SHAPES[name])
    return npy("<f4", SHAPES[name], [((i * 7 + k) % 11 - 5) / 10.0
                                      for i in range(n)])


def write(folder, name, parts):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(SEP.join(parts))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    weights = [weight(t, k) for k, t in enumerate(SHAPES)]
    write(os.path.join(here, "corpus", "weights"), "valid", weights)
    write(os.path.join(here, "corpus", "weights"), "missing-last",
          weights[:3])
    state = (b"[checkpoint]\nversion = 1\nstep = 12\nepoch = 1\n"
             b"batch = 2\nrng = 12345\nepoch_steps = 2\n"
             b"epoch_loss_sum = 2.5\nfingerprint = 99\n")
    opt = []
    for k, t in enumerate(SHAPES):
        n = count(SHAPES[t])
        opt.append(npy("<f4", SHAPES[t], [0.01 * i for i in range(n)]))
        opt.append(npy("<f4", SHAPES[t], [0.001 * i for i in range(n)]))
        opt.append(npy("<i8", (), [12]))
    ckpt = os.path.join(here, "corpus", "checkpoint")
    write(ckpt, "valid", [state] + weights + opt)
    write(ckpt, "state-only", [state])
    write(ckpt, "old-version", [state.replace(b"version = 1", b"version = 0")]
          + weights + opt)


if __name__ == "__main__":
    main()
