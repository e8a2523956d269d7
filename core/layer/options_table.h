/* layer/options_table.h - PopTorch's option table and the one path every
** change of an option takes, for the text front-ends above the core: the
** loadFromFile, JSON and method-call forms (optfmt/) and INI [options]
** sections (run/), and the options hash of compile keys (encode/). They
** parse text into calls of these; the table, validation and storage stay
** in the core (core/options/).
**
** The option table (core/options/options_table.c) is the single list of
** options: name, type, default text, validation and the `supported` flag.
** A popc_options holds one popci_optval per table entry, in table order.
** Every change goes through popci_options_commit, which checks in this
** order: frozen, type and range (or enum member), `supported` (a value
** other than the default is refused with POPC_EUNSUPPORTED), the entry's
** hook (PopTorch's own checks and side effects such as useOfflineIpuTarget
** -> connectionType), then stores the value.
*/
#ifndef POPC_LAYER_OPTIONS_TABLE_H
#define POPC_LAYER_OPTIONS_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include "popc/options.h"
#include "core/layer/options.h"

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
/* Validate and store *v in option idx (takes v->s in every case). */
popc_status popci_options_commit(popc_options *o, int idx, popci_optval *v);
/* For hooks: set another option from text, with all its checks. */
popc_status popci_options_commit_other(popc_options *o, const char *name,
                                       const char *text);
/* Move every value of src into dst (dst's old values are freed); src is
** left empty and must still be freed. Used to apply a file atomically. */
void popci_options_move(popc_options *dst, popc_options *src);

/* Change the value o starts from without marking it set by the user
** (POPC_THREADS changes the default of threads); v is the caller's to
** check. */
void popci_options_set_start_int(popc_options *o, popci_opt_id id,
                                 int64_t v);

/* ---- the environment ----------------------------------------------------- */

/* Apply the process environment's options (POPC_THREADS, OMPI_COMM_WORLD_*,
** POPC_CACHE_DIR, POPC_DEFAULT_OPTIONS) to new options o, with errors
** naming the variable. popc_options_new calls the one lib/options_env.c names
** (optfmt/'s popci_options_apply_environment), so the core reads no
** environment, parses no JSON and names no layer. */
typedef popc_status (*popci_options_env_fn)(popc_options *o);
extern const popci_options_env_fn popci_layer_options_env;

#endif /* POPC_LAYER_OPTIONS_TABLE_H */
