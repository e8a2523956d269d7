/* cmd_info.c - `popc plugins` and `popc options`: what this installation
** can do.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

static const char plugins_usage[] =
    "Usage: popc plugins [--json FILE]\n"
    "\n"
    "List every loaded plugin with its path, version and the ops,\n"
    "optimizers and backends it registers, then the files that were\n"
    "refused and why. Plugins come from POPC_PLUGIN_PATH and the install\n"
    "directory " POPC_PLUGINDIR ".\n"
    "\n"
    "  --json FILE   also write the list as JSON\n";

static const char options_usage[] =
    "Usage: popc options [--json FILE]\n"
    "\n"
    "List every option (PopTorch's names, as used in an INI [options]\n"
    "section or with --set options.NAME=VALUE) with its type, default,\n"
    "accepted values, meaning, and whether popc supports it yet.\n"
    "\n"
    "  --json FILE   also write the list as JSON\n";

/* Problems are one per line; an empty string means none. */
static int count_lines(const char *s)
{
    int n = 0;

    for (; s && *s; s++)
        if (*s == '\n' || s[1] == '\0')
            n++;
    return n;
}

static void print_items(const popc_registry *reg, int i, int first, int n,
                        const char *what)
{
    if (n == 0)
        return;
    printf("    %s (%d):", what, n);
    for (int j = first; j < first + n; j++)
        printf("%s %s", j > first ? "," : "",
               popc_registry_plugin_item(reg, i, j));
    printf("\n");
}

static void json_items(json *j, const popc_registry *reg, int i, int first,
                       int n, const char *key)
{
    json_key(j, key);
    json_begin(j, '[');
    for (int k = first; k < first + n; k++)
        json_str(j, popc_registry_plugin_item(reg, i, k));
    json_end(j, ']');
}

/* A plugin's kernels ("provider:name (domain::Op)") follow its other
** items; the record predates them and has no count. */
static int first_kernel(const popc_plugin_record *p)
{
    return p->n_ops + p->n_optimizers + p->n_backends + p->n_collectives;
}

static int n_kernels(const popc_registry *reg, int i,
                     const popc_plugin_record *p)
{
    int n = 0;

    while (popc_registry_plugin_item(reg, i, first_kernel(p) + n))
        n++;
    return n;
}

int cmd_plugins(int argc, char **argv)
{
    popc_registry *reg = NULL;
    const char *problems;
    cli_args a;
    json j = {0};
    int rc, n;
    popc_status st;

    if ((rc = cli_parse(argc, argv, ARG_JSON, plugins_usage, &a)) != 0) {
        free(a.sets);
        return rc < 0 ? EXIT_OK : rc;
    }
    free(a.sets);
    if ((st = popc_registry_global(&reg)) != POPC_OK)
        return cli_fail(st);
    n = popc_registry_plugin_count(reg);
    problems = popc_registry_problems(reg);
    printf("%d plugin%s loaded\n", n, n == 1 ? "" : "s");
    json_begin(&j, '{');
    json_key(&j, "plugins");
    json_begin(&j, '[');
    for (int i = 0; i < n; i++) {
        popc_plugin_record p = popc_registry_plugin_at(reg, i);

        printf("\n%s %s\n    path: %s\n", p.name, p.version ? p.version : "",
               p.path ? p.path : "(linked in)");
        if (p.description && *p.description)
            printf("    %s\n", p.description);
        print_items(reg, i, 0, p.n_ops, "ops");
        print_items(reg, i, p.n_ops, p.n_optimizers, "optimizers");
        print_items(reg, i, p.n_ops + p.n_optimizers, p.n_backends,
                    "backends");
        print_items(reg, i, p.n_ops + p.n_optimizers + p.n_backends,
                    p.n_collectives, "collectives");
        print_items(reg, i, first_kernel(&p), n_kernels(reg, i, &p),
                    "kernels");
        json_begin(&j, '{');
        json_key(&j, "name");
        json_str(&j, p.name);
        json_key(&j, "version");
        json_str(&j, p.version);
        json_key(&j, "description");
        json_str(&j, p.description);
        json_key(&j, "path");
        json_str(&j, p.path);
        json_items(&j, reg, i, 0, p.n_ops, "ops");
        json_items(&j, reg, i, p.n_ops, p.n_optimizers, "optimizers");
        json_items(&j, reg, i, p.n_ops + p.n_optimizers, p.n_backends,
                   "backends");
        json_items(&j, reg, i, p.n_ops + p.n_optimizers + p.n_backends,
                   p.n_collectives, "collectives");
        json_items(&j, reg, i, first_kernel(&p), n_kernels(reg, i, &p),
                   "kernels");
        json_end(&j, '}');
    }
    json_end(&j, ']');
    printf("\nrefused files: %d\n", count_lines(problems));
    json_key(&j, "refused");
    json_begin(&j, '[');
    for (const char *s = problems; s && *s;) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        char line[2048];

        snprintf(line, sizeof line, "%.*s", (int)len, s);
        if (len) {
            printf("    %s\n", line);
            json_str(&j, line);
        }
        s += len + (nl != NULL);
    }
    json_end(&j, ']');
    json_end(&j, '}');
    if (a.json)
        return json_write(&j, a.json);
    free(j.buf);
    return EXIT_OK;
}

static const char *type_name(popc_option_type t)
{
    switch (t) {
    case POPC_OPT_BOOL: return "bool";
    case POPC_OPT_INT: return "int";
    case POPC_OPT_FLOAT: return "float";
    case POPC_OPT_STRING: return "string";
    case POPC_OPT_ENUM: return "enum";
    default: return "?";
    }
}

int cmd_options(int argc, char **argv)
{
    cli_args a;
    json j = {0};
    int rc, n = popc_options_count(), unsupported = 0;

    if ((rc = cli_parse(argc, argv, ARG_JSON, options_usage, &a)) != 0) {
        free(a.sets);
        return rc < 0 ? EXIT_OK : rc;
    }
    free(a.sets);
    json_begin(&j, '{');
    json_key(&j, "options");
    json_begin(&j, '[');
    for (int i = 0; i < n; i++) {
        const popc_option_info *o = popc_options_info(i);

        unsupported += !o->supported;
        printf("%s (%s, default %s)%s\n    %s\n", o->name, type_name(o->type),
               o->def ? o->def : "None",
               o->supported ? "" : "  [not supported yet]",
               o->help ? o->help : "");
        if (o->values)
            printf("    values: %s\n", o->values);
        json_begin(&j, '{');
        json_key(&j, "name");
        json_str(&j, o->name);
        json_key(&j, "type");
        json_str(&j, type_name(o->type));
        json_key(&j, "default");
        json_str(&j, o->def);
        json_key(&j, "values");
        json_str(&j, o->values);
        json_key(&j, "help");
        json_str(&j, o->help);
        json_key(&j, "supported");
        json_bool(&j, o->supported);
        json_end(&j, '}');
    }
    json_end(&j, ']');
    json_end(&j, '}');
    printf("\n%d options, %d supported\n", n, n - unsupported);
    if (a.json)
        return json_write(&j, a.json);
    free(j.buf);
    return EXIT_OK;
}
