/* cmd_infer.c - `popc infer RUN.ini`: classify a dataset with trained
** weights and report accuracy and throughput.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "popc/run.h"
#include "tools/cli.h"

static const char usage[] =
    "Usage: popc infer RUN.ini [OPTIONS]\n"
    "       popc infer MODEL.onnx -i NAME=FILE.npy ... -o DIR (see popc\n"
    "       infer MODEL.onnx --help)\n"
    "\n"
    "Classify the [infer] split (default: [data] test) of RUN.ini with the\n"
    "weights named by [infer] weights (popc train writes a model INI that\n"
    "sets it). Prints the accuracy when the data has labels, and writes the\n"
    "predicted classes to [infer] predictions (an int32 .npy) when set.\n"
    "\n"
    "Options:\n"
    "  --set SECTION.KEY=VALUE  override a setting of the run file; may be\n"
    "                           repeated\n"
    "  --json FILE              write the results as JSON\n"
    "  --allow-foreign          let the file load the shared libraries and\n"
    "                           call the symbols it names (foreign layers);\n"
    "                           only for files you trust\n"
    "  -h, --help               show this help\n";

static int write_json(const char *path, const char *ini, int rc,
                      const char *error, const popc_infer_result *res)
{
    json j = {0};

    json_begin(&j, '{');
    json_key(&j, "command");
    json_str(&j, "infer");
    json_key(&j, "run");
    json_str(&j, ini);
    json_key(&j, "status");
    json_str(&j, rc == EXIT_OK ? "ok" : rc >= 128 ? "interrupted" : "error");
    json_key(&j, "exit_code");
    json_int(&j, rc);
    json_key(&j, "error");
    json_str(&j, error);
    if (rc == EXIT_OK) {
        json_key(&j, "samples");
        json_int(&j, res->samples);
        json_key(&j, "correct");
        if (res->correct >= 0)
            json_int(&j, res->correct);
        else
            json_str(&j, NULL);
        json_key(&j, "accuracy");
        if (res->accuracy >= 0)
            json_num(&j, res->accuracy);
        else
            json_str(&j, NULL);
        json_key(&j, "seconds");
        json_num(&j, res->seconds);
        json_key(&j, "samples_per_second");
        json_num(&j, res->samples_per_second);
        json_key(&j, "predictions");
        json_str(&j, res->predictions);
    }
    json_end(&j, '}');
    return json_write(&j, path);
}

static int is_onnx(const char *arg)
{
    size_t n = strlen(arg);

    return n > 5 && strcmp(arg + n - 5, ".onnx") == 0;
}

int cmd_infer(int argc, char **argv)
{
    popc_run *r = NULL;
    popc_infer_result res;
    cli_args a;
    char error[2048] = "";
    time_t started = time(NULL);
    int rc;
    popc_status st;

    for (int i = 1; i < argc; i++)
        if (argv[i][0] != '-' && is_onnx(argv[i]))
            return cmd_infer_onnx(argc, argv);
    memset(&res, 0, sizeof res);
    if ((rc = cli_parse(argc, argv, ARG_INI | ARG_SET | ARG_JSON | ARG_FOREIGN,
                        usage,
                        &a)) != 0) {
        free(a.sets);
        return rc < 0 ? EXIT_OK : rc;
    }
    if ((st = popc_run_load(a.ini, a.sets, a.n_sets, &r)) != POPC_OK) {
        snprintf(error, sizeof error, "%s", popc_last_error());
        rc = cli_fail_load(st);
        goto done;
    }
    cli_catch_signals();
    if ((st = popc_run_infer(r, &cli_stop, &res)) != POPC_OK) {
        snprintf(error, sizeof error, "%s", popc_last_error());
        rc = cli_fail(st);
        goto done;
    }
    printf("classified %lld samples in %.2f s (%.0f samples/s)",
           (long long)res.samples, res.seconds, res.samples_per_second);
    if (res.accuracy >= 0)
        printf("; accuracy %.2f%% (%lld correct)", 100 * res.accuracy,
               (long long)res.correct);
    printf("\n");
    if (res.predictions)
        printf("predictions: %s\n", res.predictions);
    cli_print_profiles(popc_run_options(r), started);
done:
    if (a.json && write_json(a.json, a.ini, rc, rc ? error : NULL, &res) !=
                      EXIT_OK &&
        rc == EXIT_OK)
        rc = EXIT_RUNTIME;
    free(a.sets);
    popc_run_free(r);
    return rc;
}
