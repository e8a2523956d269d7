/* progress.c - showCompilationProgressBar: the phases of a compile, timed
** and shown.
**
** On a terminal the bar is redrawn in place on stderr (carriage return,
** erase line), like PopTorch's; it is the one thing the library prints
** itself, because the user asked for it and a log line cannot be redrawn.
** When stderr is not a terminal (CI logs, pipes, TERM=dumb) each phase is
** one INFO log line instead, so that it goes wherever the log goes and
** stays quiet at the default level. The times are kept either way: they
** are the compilation time and the profile's compile phases.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "popc/log.h"
#include "profile/profile_priv.h"

#define BAR_WIDTH 30

/* Share of the bar a finished phase fills: on the models of examples/
** the plan and the backend's tile mapping take nearly all the time. */
static const double share[POPCI_PHASES] = {0.1, 0.4, 0.5};

const char *popci_progress_phase_name(int phase, int training)
{
    switch (phase) {
    case POPCI_PHASE_VERIFY: return "verify";
    case POPCI_PHASE_PLAN: return training ? "autodiff and plan" : "plan";
    case POPCI_PHASE_BACKEND: return "backend compile";
    default: return "compile";
    }
}

static int stderr_is_terminal(void)
{
    const char *term = getenv("TERM");

    return isatty(STDERR_FILENO) && !(term && strcmp(term, "dumb") == 0);
}

void popci_progress_begin(popci_progress *p, const popc_options *o,
                          const char *name, int training)
{
    memset(p, 0, sizeof *p);
    p->on = o && popc_options_get_int(o, "showCompilationProgressBar");
    p->tty = p->on && stderr_is_terminal();
    p->training = training;
    p->phase = -1;
    p->t0 = p->phase_t0 = popci_exec_now();
    snprintf(p->name, sizeof p->name, "%s", name && *name ? name : "model");
}

static void draw(const popci_progress *p, double done, const char *label,
                 int last)
{
    char bar[BAR_WIDTH + 1];
    int fill = (int)(done * BAR_WIDTH + 0.5);

    for (int i = 0; i < BAR_WIDTH; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[BAR_WIDTH] = '\0';
    fprintf(stderr, "\r\033[Kpopc: compiling '%s' [%s] %3d%% %s (%.2f s)%s",
            p->name, bar, (int)(done * 100.0 + 0.5), label,
            popci_exec_now() - p->t0, last ? "\n" : "");
    fflush(stderr);
}

/* Share of the bar filled when phase starts. */
static double done_before(int phase)
{
    double d = 0.0;

    for (int i = 0; i < phase && i < POPCI_PHASES; i++)
        d += share[i];
    return d;
}

void popci_progress_phase(popci_progress *p, int phase)
{
    double now = popci_exec_now();
    const char *label = popci_progress_phase_name(phase, p->training);

    if (p->phase >= 0 && p->phase < POPCI_PHASES)
        p->seconds[p->phase] += now - p->phase_t0;
    p->phase = phase;
    p->phase_t0 = now;
    if (!p->on)
        return;
    if (p->tty)
        draw(p, done_before(phase), label, 0);
    else
        popc_log(POPC_LOG_INFO, "Compiling '%s': [%d/%d] %s", p->name,
                 phase + 1, POPCI_PHASES, label);
}

void popci_progress_end(popci_progress *p, int ok)
{
    double now = popci_exec_now();
    const char *label = popci_progress_phase_name(p->phase, p->training);

    if (p->ended)
        return;
    p->ended = 1;
    if (p->phase >= 0 && p->phase < POPCI_PHASES)
        p->seconds[p->phase] += now - p->phase_t0;
    p->total = now - p->t0;
    if (!p->on)
        return;
    if (p->tty) {
        char what[96];
        snprintf(what, sizeof what, "failed during %s", label);
        draw(p, ok ? 1.0 : done_before(p->phase), ok ? "done" : what, 1);
    } else if (ok) {
        popc_log(POPC_LOG_INFO, "Compiling '%s': done in %.3f s (verify "
                 "%.3f s, %s %.3f s, backend compile %.3f s)", p->name,
                 p->total, p->seconds[POPCI_PHASE_VERIFY],
                 popci_progress_phase_name(POPCI_PHASE_PLAN, p->training),
                 p->seconds[POPCI_PHASE_PLAN],
                 p->seconds[POPCI_PHASE_BACKEND]);
    } else {
        popc_log(POPC_LOG_INFO, "Compiling '%s': failed during %s after "
                 "%.3f s", p->name, label, p->total);
    }
}
