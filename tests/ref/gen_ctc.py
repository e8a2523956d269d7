#!/usr/bin/python3
"""gen_ctc.py - a reference CTC prefix beam search decoder in NumPy, and
the cases tests/check_helpers.c compares popc::CTCBeamSearchDecoder with.

Run: /usr/bin/python3 tests/ref/gen_ctc.py   (writes tests/ref/ctc/)

The rules (the same as ops/popc/ctc_beam.c documents, implemented here
independently, with tuples as prefixes):
- a beam is (prefix, pb, pnb): log probabilities of the prefix ending in
  blank and not; it starts as ((), 0, -inf);
- at each step t < length, each beam in beam order and each class c in
  ascending order: blank adds pb + pnb to pb(prefix); the prefix's last
  label adds pnb to pnb(prefix) and pb to pnb(prefix + c); any other label
  adds pb + pnb to pnb(prefix + c); each term times p_t(c), added as
  lse(a, b) = max + log1p(exp(-|a - b|)) in double precision;
- the beam_width best are kept, ordered by total = lse(pb, pnb) rounded to
  1e-9 (descending), then shorter prefix, then the smaller prefix
  lexicographically;
- results: top_paths (log probability, length, path padded with blank);
  missing paths have log probability -inf and length 0.

Each case writes ctc_<case>_{log_probs,lengths,probs,lens,paths}.npy.
"""
import math
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ctc")
NEG = float("-inf")

# name: (T, B, C, lengths, blank, beam_width, top_paths, seed or None for
# uniform probabilities)
CASES = {
    "random": (12, 3, 5, [12, 7, 0], 0, 4, 3, 1),
    "ties": (4, 1, 3, [4], 0, 3, 3, None),
    "blank2": (6, 2, 4, [6, 5], 2, 5, 2, 2),
    "narrow": (8, 2, 4, [8, 8], 0, 1, 1, 3),
    "few": (2, 1, 2, [1], 1, 8, 4, 4),
}


def lse(a, b):
    if a == NEG:
        return b
    if b == NEG:
        return a
    m = max(a, b)
    return m + math.log1p(math.exp(-abs(a - b)))


def key(item):
    prefix, (pb, pnb) = item
    total = lse(pb, pnb)
    q = -(2 ** 63) if total == NEG else math.floor(total * 1e9 + 0.5)
    return (-q, len(prefix), prefix)


def decode(lp, length, blank, width):
    beams = [((), (0.0, NEG))]
    for t in range(length):
        cands = {}
        for prefix, (pb, pnb) in beams:
            total = lse(pb, pnb)
            last = prefix[-1] if prefix else None
            for c in range(lp.shape[1]):
                p = float(lp[t, c])
                if c == blank:
                    b0, n0 = cands.get(prefix, (NEG, NEG))
                    cands[prefix] = (lse(b0, total + p), n0)
                    continue
                ext = prefix + (c,)
                if c == last:
                    b0, n0 = cands.get(ext, (NEG, NEG))
                    cands[ext] = (b0, lse(n0, pb + p))
                    b1, n1 = cands.get(prefix, (NEG, NEG))
                    cands[prefix] = (b1, lse(n1, pnb + p))
                else:
                    b0, n0 = cands.get(ext, (NEG, NEG))
                    cands[ext] = (b0, lse(n0, total + p))
        beams = sorted(cands.items(), key=key)[:width]
    return [(prefix, lse(pb, pnb)) for prefix, (pb, pnb) in beams]


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (T, B, C, lengths, blank, width, top, seed) in CASES.items():
        if seed is None:
            lp = np.full((T, B, C), math.log(1.0 / C), dtype=np.float32)
        else:
            x = np.random.default_rng(seed).standard_normal((T, B, C))
            x = x - np.log(np.exp(x).sum(axis=2, keepdims=True))
            lp = x.astype(np.float32)
        probs = np.full((B, top), NEG, dtype=np.float32)
        lens = np.zeros((B, top), dtype=np.int32)
        paths = np.full((B, top, T), blank, dtype=np.int32)
        for b in range(B):
            for k, (prefix, total) in enumerate(
                    decode(lp[:, b, :], lengths[b], blank, width)[:top]):
                probs[b, k] = total
                lens[b, k] = len(prefix)
                paths[b, k, :len(prefix)] = prefix
        for part, arr in (("log_probs", lp),
                          ("lengths", np.array(lengths, dtype=np.int32)),
                          ("probs", probs), ("lens", lens),
                          ("paths", paths)):
            np.save(os.path.join(OUT, "ctc_%s_%s.npy" % (name, part)), arr)


if __name__ == "__main__":
    main()
