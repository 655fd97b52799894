/* gauntlet: the command users run. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gt_config.h"
#include "harness/cli.h"
#include "kernels/registry.h"

static void usage(FILE *f) {
    fprintf(f,
            "gauntlet %s: kernel, model and collectives conformance and benchmarks\n"
            "\n"
            "usage: gauntlet COMMAND [options]   (gauntlet COMMAND --help for its options)\n"
            "\n"
            "commands:\n"
            "  run [SUITE]   run suites on every topology and backend, write a report\n"
            "  list          the suites and their cases, and what each checks\n"
            "  train         train a model (GPT-2 presets), print per-step figures, write a report\n"
            "  env           print the machine, library versions and measured peaks\n"
            "  data synth    write a synthetic token file with a known entropy rate\n"
            "  data encode   turn any file's bytes into a token file (vocabulary 256)\n"
            "  compare       BASE NEW: the CI gate (noise-aware verdicts per metric, JUnit XML)\n"
            "  report        A.json [B.json ...] --html OUT.html: one offline HTML page\n"
            "  predict       --from REPORT... --ranks 8,64,512: step time at rank counts not measured\n"
            "  history       DB: the runs recorded with --history, a metric's series and its\n"
            "                change points, --gate against the last good run\n"
            "  doctor        under mpirun/srun: probe every rank at once, name the slow node\n"
            "  version       print the version\n"
            "\n"
            "exit codes: 0 all checks passed, 1 a check failed, 2 usage or environment error,\n"
            "            3 compare found a regression\n",
            GT_VERSION);
}

int main(int argc, char **argv) {
    /* a file-size limit (ulimit -f) makes a write fail with EFBIG, which the
     * writers report, instead of killing the process mid-write */
    signal(SIGXFSZ, SIG_IGN);
    /* piped (2>&1 | tee, a CI log) stdout is fully buffered and stderr is not:
     * an error line then came out before the job header it follows. Line
     * buffering keeps the two in the order they were written; the console
     * prints a line per case, not per element, so it costs nothing */
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* the kernels' part of the engine (the nccl communicator's avg division)
     * before any command makes a communicator */
    gt_kernels_init();
    if (argc < 2) {
        usage(stderr);
        return GT_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "run") == 0) return gt_cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "list") == 0) return gt_cmd_list(argc - 1, argv + 1);
    if (strcmp(cmd, "train") == 0) return gt_cmd_train(argc - 1, argv + 1);
    if (strcmp(cmd, "env") == 0) return gt_cmd_env(argc - 1, argv + 1);
    if (strcmp(cmd, "data") == 0) return gt_cmd_data(argc - 1, argv + 1);
    if (strcmp(cmd, "compare") == 0) return gt_cmd_compare(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0) return gt_cmd_report(argc - 1, argv + 1);
    if (strcmp(cmd, "predict") == 0) return gt_cmd_predict(argc - 1, argv + 1);
    if (strcmp(cmd, "history") == 0) return gt_cmd_history(argc - 1, argv + 1);
    if (strcmp(cmd, "doctor") == 0) return gt_cmd_doctor(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("gauntlet %s\n", GT_VERSION);
        return GT_EXIT_OK;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return GT_EXIT_OK;
    }
    static const char *const cmds[] = {"run", "list", "train", "env", "data",
                                       "compare", "report", "predict", "history", "doctor",
                                       "version", "help"};
    const char *near = gt_nearest(cmd, cmds, (int)(sizeof cmds / sizeof *cmds));
    if (near) fprintf(stderr, "gauntlet: unknown command '%s': did you mean %s?\n\n", cmd, near);
    else fprintf(stderr, "gauntlet: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return GT_EXIT_USAGE;
}
