#!/usr/bin/python3
"""Writes the .npy fixtures of tests/check_npy.c into tests/data/npy/.

Run from anywhere with Debian's python3 and numpy:
    /usr/bin/python3 tests/ref/gen_npy_fixtures.py
The values are simple closed forms that check_npy.c recomputes.
"""
import os
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                   "npy")


def save(name, arr, version=None):
    path = os.path.join(OUT, name)
    if version is None:
        np.save(path, arr, allow_pickle=False)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, arr, version=version,
                                      allow_pickle=False)


def main():
    os.makedirs(OUT, exist_ok=True)
    # supported dtypes; values are i * 0.5 - 1 for floats, i - 3 for ints
    save("f32_2x3.npy", (np.arange(6, dtype=np.float32) * 0.5 - 1)
         .reshape(2, 3))
    save("f16_special.npy", np.array(
        [0.0, -0.0, 1.0, -2.5, 65504.0, np.inf, -np.inf, np.nan,
         2.0 ** -24, 2.0 ** -14], dtype=np.float16))
    save("i32_2x2.npy", (np.arange(4, dtype=np.int32) - 3).reshape(2, 2))
    save("i64_3.npy", np.array([-(2 ** 40), 0, 2 ** 62], dtype=np.int64))
    save("u8_5.npy", np.array([0, 1, 127, 128, 255], dtype=np.uint8))
    save("bool_4.npy", np.array([True, False, False, True]))
    save("f64_2x2.npy", np.array([[0.1, -1e30], [3.25, 1e-3]],
                                 dtype=np.float64))
    save("scalar_f32.npy", np.float32(3.5).reshape(()))
    save("empty_0x3.npy", np.zeros((0, 3), dtype=np.float32))
    save("rank8_i32.npy", np.arange(2 * 1 * 2 * 1 * 1 * 2 * 1 * 3,
                                    dtype=np.int32).reshape(
                                        2, 1, 2, 1, 1, 2, 1, 3))
    # header formats 2.0 and 3.0
    save("v2_f32.npy", (np.arange(6, dtype=np.float32) * 0.5 - 1)
         .reshape(2, 3), version=(2, 0))
    save("v3_f32.npy", (np.arange(6, dtype=np.float32) * 0.5 - 1)
         .reshape(2, 3), version=(3, 0))
    # refused files
    save("fortran_2x3.npy", np.asfortranarray(
        np.arange(6, dtype=np.float32).reshape(2, 3)))
    save("bigendian_f32.npy", np.arange(3, dtype=">f4"))
    save("int16.npy", np.arange(3, dtype=np.int16))
    save("rank9.npy", np.zeros((1,) * 9, dtype=np.float32))
    good = open(os.path.join(OUT, "f32_2x3.npy"), "rb").read()
    with open(os.path.join(OUT, "truncated_data.npy"), "wb") as f:
        f.write(good[:-5])
    with open(os.path.join(OUT, "truncated_header.npy"), "wb") as f:
        f.write(good[:40])
    with open(os.path.join(OUT, "bad_magic.npy"), "wb") as f:
        f.write(b"\x93NUMPX" + good[6:])
    with open(os.path.join(OUT, "not_npy.npy"), "wb") as f:
        f.write(b"hello, this is text\n")


if __name__ == "__main__":
    main()
