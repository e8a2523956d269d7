/* userlib.c - a tiny user C library for tests/check_ffi.c, which compiles
** it into a temporary directory (cc -shared -fPIC) and binds its functions
** with popc_foreign_op. Plain C, no popc headers: any library would do. */
#include <stdint.h>
#include <stdio.h>

/* y = a x + b: "void(in f32* x, out f32* y, i64 n, f32 a = 2.5, f32 b = -1)" */
void scale_add(const float *x, float *y, int64_t n, float a, float b)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = a * x[i] + b;
}

/* y = sqrt(x) by Newton's method; a negative element is reported through
** err and the status: "i32(in f32*, out f32*, i64 n, err)" */
int32_t checked_sqrt(const float *x, float *y, int64_t n,
                     void (*err)(const char *msg))
{
    for (int64_t i = 0; i < n; i++) {
        float v = x[i], r = v > 1.0f ? v : 1.0f;

        if (v < 0.0f) {
            char msg[96];

            snprintf(msg, sizeof msg, "checked_sqrt: element %lld is "
                     "negative (%g)", (long long)i, (double)v);
            err(msg);
            return 1;
        }
        for (int k = 0; k < 40; k++)
            r = 0.5f * (r + v / r);
        y[i] = v == 0.0f ? 0.0f : r;
    }
    return 0;
}

/* out[r] = sum of row r: "i64(in i32*, i64 dim(in0, 0), i64 dim(in0, 1),
** out i64*)" */
int64_t row_sums(const int32_t *x, int64_t rows, int64_t cols, int64_t *out)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t s = 0;

        for (int64_t c = 0; c < cols; c++)
            s += x[r * cols + c];
        out[r] = s;
    }
    return 0;
}

/* "i32(in f32*, out f32*, i64 n)": always fails with status 7 */
int32_t always_fails(const float *x, float *y, int64_t n)
{
    (void)x;
    (void)y;
    (void)n;
    return 7;
}

/* float16 bits copied: "void(in f16*, out f16*, i32 n)" */
void half_copy(const uint16_t *x, uint16_t *y, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        y[i] = x[i];
}

/* per element: "i32(in i32, in i32)" */
int32_t add_i32(int32_t a, int32_t b)
{
    return a + b;
}

/* per element: "i64(in i64, i64 k = 3)" */
int64_t times_k(int64_t v, int64_t k)
{
    return v * k;
}

/* per element: "bool(in f32)" */
_Bool is_negative(float v)
{
    return v < 0.0f;
}
