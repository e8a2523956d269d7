#!/usr/bin/env python3
"""gen_random.py - reference draws of popc/random.h's generator, written
from its documented definition (random/README.md, core/layer/rng.h), not
from popc's code: the stream id is 64-bit FNV-1a of the name, the key is
mix64(mix64(seed) + G * (stream + 1)), draw k is mix64(key + G * (k + 1)),
with mix64 SplitMix64's finaliser and G = 0x9E3779B97F4A7C15; uniform
floats take the top 24 bits, doubles the top 53, normals are Box-Muller on
(1 - u1, u2).

Writes tests/ref/random_values.h, which tests/check_random.c includes:
    python3 tests/ref/gen_random.py > tests/ref/random_values.h
"""
import math
import struct

M = (1 << 64) - 1
G = 0x9E3779B97F4A7C15


def mix64(x):
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M
    return x ^ (x >> 31)


def fnv1a(s):
    h = 1469598103934665603
    for b in s.encode():
        h = ((h ^ b) * 1099511628211) & M
    return h


def key_of(seed, stream):
    return mix64((mix64(seed) + G * (stream + 1)) & M)


def draw(key, k):
    return mix64((key + G * (k + 1)) & M)


def f32(x):
    return struct.unpack('<f', struct.pack('<f', x))[0]


def f32_bits(x):
    return struct.unpack('<I', struct.pack('<f', x))[0]


def main():
    seed, name = 42, "fc1.weight"
    stream = fnv1a(name)
    key = key_of(seed, stream)
    out = ["/* random_values.h - written by tests/ref/gen_random.py; do not"
           "\n** edit. */",
           "#define REF_SEED %dull" % seed,
           "#define REF_NAME \"%s\"" % name,
           "#define REF_STREAM 0x%016xull" % stream,
           "#define REF_EMPTY_STREAM 0x%016xull" % fnv1a(""),
           "#define REF_KEY 0x%016xull" % key]
    # draws 0..3 as float32 uniforms (bit patterns, exact)
    u = [f32((draw(key, k) >> 40) * (1.0 / 16777216.0)) for k in range(4)]
    out.append("static const uint32_t ref_uniform_bits[4] = {\n    %s};" %
               ", ".join("0x%08xu" % f32_bits(x) for x in u))
    # draws 4..5 as doubles (exact)
    d = [(draw(key, k) >> 11) * (1.0 / 9007199254740992.0) for k in (4, 5)]
    out.append("static const double ref_uniform_double[2] = {\n    %s};" %
               ", ".join(repr(x) for x in d))
    # draws 6..7 make one normal
    u1 = 1.0 - (draw(key, 6) >> 11) * (1.0 / 9007199254740992.0)
    u2 = (draw(key, 7) >> 11) * (1.0 / 9007199254740992.0)
    out.append("static const double ref_normal = %r;" %
               (math.sqrt(-2.0 * math.log(u1)) * math.cos(2 * math.pi * u2)))
    # draws 8..12 fill [-1, 2) in float32 arithmetic
    lo, span = f32(-1.0), f32(2.0 - -1.0)
    fill = [f32(lo + f32(span * f32((draw(key, k) >> 40) / 16777216.0)))
            for k in range(8, 13)]
    out.append("static const float ref_fill[5] = {\n    %s};" %
               ", ".join("%.9gf" % x for x in fill))
    print("\n".join(out))


if __name__ == "__main__":
    main()
