/* options_priv.h - internals of PopTorch's Options shared by options*.c.
**
** The option table (options_table.c) is the single list of options: name,
** type, default text, validation and the `supported` flag. A popc_options
** holds one popci_optval per table entry, in table order. Every change goes
** through popci_options_commit, which checks in this order: frozen, type
** and range (or enum member), `supported` (a value other than the default
** is refused with POPC_EUNSUPPORTED), the entry's hook (PopTorch's own
** checks and side effects such as useOfflineIpuTarget -> connectionType),
** then stores the value.
**
** PopTorch's method-call form ("outputMode(poptorch.OutputMode.EveryN, 2)")
** is shared by loadFromFile (options_file.c) and POPC_DEFAULT_OPTIONS
** (options_json.c): both parse into popci_val trees and call
** popci_options_call (options_call.c).
*/
#ifndef POPC_OPTIONS_PRIV_H
#define POPC_OPTIONS_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include "popc/options.h"

/* ---- the table ------------------------------------------------------------ */

#define POPCI_OPT_COMPILE  (1u << 0) /* affects compilation: hashed */
#define POPCI_OPT_NULLABLE (1u << 1) /* accepts None ("None", "" or NULL) */
#define POPCI_OPT_POPC     (1u << 2) /* popc's own, not a PopTorch option */

#define POPCI_MEMBER_REJECT      (1u << 0) /* EINVAL: note or bad_value */
#define POPCI_MEMBER_MAPPED      (1u << 2) /* accepted, warns note */
#define POPCI_MEMBER_ALIAS       (1u << 3) /* other spelling, not listed */

typedef struct popci_enum_member {
    const char *name;
    int value;
    unsigned flags;
    const char *note;
} popci_enum_member;

/* The value of one option. s is owned. */
typedef struct popci_optval {
    int64_t i;                /* BOOL (0/1), INT, ENUM */
    double f;                 /* FLOAT */
    char *s;                  /* STRING */
    unsigned char none;       /* None (NULLABLE options only) */
    unsigned char set;        /* changed by the user */
} popci_optval;

typedef struct popci_optdef popci_optdef;

/* PopTorch's own checks and side effects, run after the generic checks;
** may canonicalise v (replacing v->s) and change other options through
** popci_options_commit_other. Errors must come before side effects. */
typedef popc_status (*popci_opt_hook)(popc_options *o, const popci_optdef *d,
                                      popci_optval *v);

struct popci_optdef {
    popc_option_info info;    /* first: popc_options_info returns &info */
    unsigned flags;           /* POPCI_OPT_* */
    int64_t min, max;         /* INT */
    double fmin, fmax;        /* FLOAT */
    const char *enum_type;    /* "OutputMode": accepted as prefix */
    const popci_enum_member *members; /* ENUM; {NULL}-terminated */
    const char *bad_value;    /* PopTorch's text for an invalid value */
    const char *why;          /* unsupported: "it would ..." */
    const char *call_default; /* value of "name()" in loadFromFile */
    const char *param;        /* PopTorch's parameter name (keyword) */
    popci_opt_hook hook;
};

extern const popci_optdef popci_option_table[];
extern const int popci_option_count;

/* Option ids: an option's index in the table, named after it with '.' as
** '_' (POPCI_O_deviceIterations, POPCI_O_Training_gradientAccumulation),
** made from core/options/options_list.h like the table itself. Code outside the
** option layer reads options through these typed accessors: no name
** look-up, and the default is the table's. */
typedef enum popci_opt_id {
#define OPTION(ID, ...) POPCI_O_##ID,
#include "core/options/options_list.h"
#undef OPTION
    POPCI_O_COUNT
} popci_opt_id;

/* The value of option id in o, as popc_options_get_int / _float / _bool /
** _string read it (0, 0.0, 0 or NULL when None); o must not be NULL. */
int64_t popci_opt_int(const popc_options *o, popci_opt_id id);
double popci_opt_float(const popc_options *o, popci_opt_id id);
int popci_opt_bool(const popc_options *o, popci_opt_id id);
const char *popci_opt_string(const popc_options *o, popci_opt_id id);
/* Whether the value is None / was set by the user. */
int popci_opt_is_none(const popc_options *o, popci_opt_id id);
int popci_opt_is_set(const popc_options *o, popci_opt_id id);

struct popc_options {
    popci_optval *v;          /* popci_option_count values */
    int frozen;
};

/* Index of a canonical name or an alias; -1 when unknown. */
int popci_options_index(const char *name);
/* Index of a canonical name known to exist (table code only). */
int popci_options_must(const char *name);
/* POPC_ENOTFOUND "unknown option 'x'; did you mean 'y'?". */
popc_status popci_options_unknown(const char *name);

/* Parse text for d into *v (v->s owned by the caller on success). The
** message starts with the option name. POPC_EINVAL, POPC_ENOMEM. */
popc_status popci_options_parse(const popci_optdef *d, const char *text,
                                popci_optval *v);
/* Whether a file loader (who: "popc_options_load_ini") may change o from
** path: POPC_EINVAL for NULL arguments, POPC_ESTATE ("Can't modify frozen
** Options") once a model uses o. */
popc_status popci_options_loadable(const popc_options *o, const char *who,
                                   const char *path);
/* Validate and store *v in option idx (takes v->s in every case). */
popc_status popci_options_commit(popc_options *o, int idx, popci_optval *v);
/* For hooks: set another option from text, with all its checks. */
popc_status popci_options_commit_other(popc_options *o, const char *name,
                                       const char *text);
/* Canonical text of a value. */
const char *popci_options_format_val(const popci_optdef *d,
                                     const popci_optval *v, char *buf,
                                     size_t size);
/* Current value of a known option (table code only). */
const popci_optval *popci_options_val(const popc_options *o,
                                      const char *name);
/* Move every value of src into dst (dst's old values are freed); src is
** left empty and must still be freed. Used to apply a file atomically. */
void popci_options_move(popc_options *dst, popc_options *src);

/* ---- PopTorch's call form --------------------------------------------------- */

typedef enum popci_vkind {
    POPCI_V_NONE = 0, POPCI_V_BOOL, POPCI_V_INT, POPCI_V_FLOAT, POPCI_V_STR,
    POPCI_V_NAME,             /* dotted identifier: poptorch.OutputMode.Sum */
    POPCI_V_CALL,             /* s(items...) then .next(...) */
    POPCI_V_LIST,             /* [items] or (items) */
    POPCI_V_DICT              /* {items[2k]: items[2k+1]} */
} popci_vkind;

typedef struct popci_val {
    popci_vkind kind;
    int64_t i;
    double f;
    char *s;                  /* STR text; NAME and CALL name */
    char *kw;                 /* keyword of an argument ("period=2"), or NULL */
    struct popci_val *items;
    int n;
    struct popci_val *next;   /* CALL: chained method call */
} popci_val;

void popci_val_clear(popci_val *v);  /* frees the contents, NULL-safe */
/* "an integer (3)", "a string ('x')", ... for messages. */
const char *popci_val_describe(const popci_val *v, char *buf, size_t size);

/* Apply PopTorch's method name(args...) to o, with PopTorch's argument
** rules (outputMode(mode, period), Distributed.configureProcessId(id, n),
** setExecutionStrategy(poptorch.ShardedExecution()), ...). The message is
** the bare reason; callers add the place. Sets *kind to the Python
** exception class PopTorch would raise ("ValueError", "TypeError",
** "AttributeError", ...) when kind is not NULL. *prefix is the category
** the call returns (for chained calls: "Training." after
** Training.gradientAccumulation(2)). */
popc_status popci_options_call(popc_options *o, const char *prefix,
                               const char *name, const popci_val *args,
                               int n, const char **kind,
                               const char **next_prefix);

/* Parse a JSON object of "dotted.name": value and apply each entry with
** popci_options_call (a list value is splatted as positional arguments).
** what names the source in messages ("POPC_DEFAULT_OPTIONS"). */
popc_status popci_options_apply_json(popc_options *o, const char *what,
                                     const char *json);

/* The optimizer popc_model_new_training uses when given none, as
** poptorch.trainingModel(model) does: SGD at lr 0.01 (options_table.c, so
** that the defaults live in one place and the rest of the core names no
** plugin). */
extern const char *const popci_default_optimizer;
extern const double popci_default_lr;

#endif /* POPC_OPTIONS_PRIV_H */
