/* reports.history_fields.host: what a change point says changed
 * (gt_history_stack_changes, reports/history.h). A run under mpirun differs
 * from the run before in dozens of OMPI_* launch variables (job id, daemon
 * URI, session directories); the change point of the HTML page and the
 * history listing must name the fields that identify the stack instead:
 * library versions, the CPU and GPU model and counts, threads per rank
 * (env.threads and, before it, the OMP_* variables), the transport
 * settings, the job's shape. Before this filter the page's "changed:" note
 * listed about 40 OMPI_* variables and the driver change was lost among
 * them. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/tests/check.h"
#include "reports/history.h"

static void check_fields(void) {
    static const char *const stack[] = {"env.software.cuda_driver",
                                        "env.software.mpi",
                                        "env.blas.core",
                                        "env.threads.per_rank",
                                        "env.threads.obtained",
                                        "env.threads.OMP_NUM_THREADS",
                                        "env.transport.OMPI_MCA_btl",
                                        "env.transport.mpi_library",
                                        "env.cpu.model",
                                        "env.cpu.logical",
                                        "env.gpus.0.name",
                                        "env.gpus.1",
                                        "env.topology_digest",
                                        "env.job.ranks",
                                        "env.variables.OMP_NUM_THREADS",
                                        "env.variables.OPENBLAS_NUM_THREADS",
                                        "env.affinity",
                                        "git_revision"};
    static const char *const noise[] = {"env.variables.OMPI_MCA_orte_hnp_uri",
                                        "env.variables.OMPI_COMM_WORLD_SIZE",
                                        "env.variables.PMIX_NAMESPACE",
                                        "env.variables.SLURM_JOB_ID",
                                        "env.host",
                                        "env.memory_gib",
                                        "env.gpus.0.uuid",
                                        "env.gpus.0.index",
                                        "env.cpu"};
    for (size_t i = 0; i < sizeof stack / sizeof stack[0]; i++)
        CHECK(gt_history_stack_field(stack[i]), "%s should identify the stack", stack[i]);
    for (size_t i = 0; i < sizeof noise / sizeof noise[0]; i++)
        CHECK(!gt_history_stack_field(noise[i]), "%s should be left out", noise[i]);
}

/* A change at which the driver and the threads changed, among 40 launch
 * variables and a host name; a value that holds "; " stays whole. */
static void check_changes(void) {
    char *text = strdup("env.host: node-a -> node-b");
    for (int i = 0; i < 40; i++) {
        char *t = NULL;
        if (asprintf(&t, "%s; env.variables.OMPI_MCA_orte_var%02d: job-1.%d -> job-2.%d", text, i,
                     i, i) < 0)
            abort();
        free(text);
        text = t;
    }
    char *t = NULL;
    if (asprintf(&t,
                 "%s; env.software.cuda_driver: 550.54 -> 555.42; env.blas.steering: a; b -> "
                 "c; env.threads.per_rank: 2 -> 1; git_revision: abc -> def",
                 text) < 0)
        abort();
    free(text);
    int hidden = -1;
    char *out = gt_history_stack_changes(t, &hidden);
    CHECK(out != NULL, "out of memory");
    if (out)
        CHECK(strcmp(out, "env.software.cuda_driver: 550.54 -> 555.42; env.blas.steering: a; b "
                          "-> c; env.threads.per_rank: 2 -> 1; git_revision: abc -> def") == 0,
              "got '%s'", out);
    CHECK(hidden == 41, "hidden %d, want 41 (40 launch variables and the host)", hidden);
    free(out);
    free(t);

    out = gt_history_stack_changes("", &hidden);
    CHECK(out && out[0] == '\0' && hidden == 0, "empty: '%s', %d", out ? out : "(null)", hidden);
    free(out);
    out = gt_history_stack_changes("env.variables.OMPI_X: 1 -> 2", NULL);
    CHECK(out && out[0] == '\0', "only launch noise: '%s'", out ? out : "(null)");
    free(out);
}

int main(void) {
    check_fields();
    check_changes();
    return check_done("reports.history_fields.host");
}
