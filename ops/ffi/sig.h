/* sig.h - signatures of foreign C functions (popc::ForeignCall): parsing
** and checking them against a node's tensors (ops/ffi/sig.c).
**
** Grammar (whitespace free; docs/plugins.md has the user's version):
**
**   signature := ret '(' [ arg { ',' arg } ] ')'
**   ret       := 'void' | type
**   arg       := 'in' type '*' [name]       data of the next input
**              | 'out' type '*' [name]      data of the next output
**              | 'in' type [name]           one element of the next input:
**                                           the function is called once per
**                                           element and ret is the element
**                                           of output 0
**              | int ('n' | 'numel') [ '(' ref ')' ]
**                                           element count (default: input 0,
**                                           or output 0 without inputs)
**              | int 'dim' '(' ref ',' k ')'  one dimension (k < 0 from the
**                                           end)
**              | type name '=' number       a constant scalar argument
**              | 'err' [name]               a void (*)(const char *msg)
**                                           the function may call to report
**                                           a failure (a libffi closure)
**   type      := f32|float  f64|double  i32|int|int32  i64|int64|long
**                u8|uint8  bool  f16 (buffers only)
**   int       := i32 | i64 (and their aliases)
**   ref       := 'in'K | 'out'K
**
** A function on buffers returns void or an integer status (non-zero is a
** failure). A per-element function takes no buffers and returns a type
** with a tensor dtype.
*/
#ifndef POPC_OPS_FFI_SIG_H
#define POPC_OPS_FFI_SIG_H

#include <stddef.h>
#include <stdint.h>

#include "popc/plugin.h"

#define FFS_MAX_ARGS 32

typedef enum ffs_type {
    FFS_VOID = 0,
    FFS_F16,
    FFS_F32,
    FFS_F64,
    FFS_I32,
    FFS_I64,
    FFS_U8,
    FFS_BOOL
} ffs_type;

typedef enum ffs_kind {
    FFS_IN_PTR = 1,
    FFS_OUT_PTR,
    FFS_IN_ELEM,
    FFS_COUNT,
    FFS_DIM,
    FFS_CONST,
    FFS_ERR
} ffs_kind;

typedef union ffs_value {
    float f32;
    double f64;
    int32_t i32;
    int64_t i64;
    uint8_t u8;
    void *p;
} ffs_value;

typedef struct ffs_arg {
    ffs_kind kind;
    ffs_type type;
    int tensor;          /* IN_*, OUT_PTR: its index; COUNT, DIM: referred */
    int ref_output;      /* COUNT, DIM: tensor is an output */
    int dim;             /* DIM */
    ffs_value value;     /* CONST */
} ffs_arg;

typedef struct ffs_sig {
    ffs_type ret;
    int n_args;
    ffs_arg args[FFS_MAX_ARGS];
    int n_in, n_out;
    int elementwise;
    int err_arg;         /* index of the 'err' argument, or -1 */
} ffs_sig;

/* Parse text. On failure returns 0 with a message naming the position in
** err. */
int ffs_parse(const char *text, ffs_sig *sig, char *err, size_t err_size);

/* "f32" etc. */
const char *ffs_type_name(ffs_type t);
/* The tensor dtype of a type (UNDEFINED for void and f64). */
popc_dtype ffs_dtype(ffs_type t);
/* Bytes of one value. */
size_t ffs_size(ffs_type t);

/* Check the inputs against sig and give the outputs' dtypes and shapes
** from the rules (shape_rules[j], or "same_as:0" when shape_rules is NULL
** or shorter). Returns 0 with a message in err on a mismatch. */
int ffs_outputs(const ffs_sig *sig, const popc_view *in, int n_in,
                const popc_attr *shape_rules, popc_view *out, int n_out,
                char *err, size_t err_size);

#endif /* POPC_OPS_FFI_SIG_H */
