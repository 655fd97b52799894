/* The job in the report: env.job and each result's layout (cli.h). */
#include "engine/job.h"
#include "harness/cli.h"
#include "reports/report.h"

/* the run's job, gathered once per process (every command runs one job) */
static gt_job g_job;
static int g_have_job;

int gt_report_job(gt_report *rep, gt_comm *comm) {
    if (g_have_job) gt_job_free(&g_job);
    g_have_job = gt_job_gather(comm, &g_job) == GT_OK;
    if (g_have_job && rep) gt_report_set_job(rep, &g_job);
    return g_have_job;
}

void gt_report_topology_layout(gt_report *rep, int n) {
    if (!rep) return;
    char layout[64];
    gt_job_layout(g_have_job ? &g_job : NULL, n, layout, sizeof layout);
    gt_report_set_layout(rep, layout);
}

const gt_job *gt_harness_job(void) { return g_have_job ? &g_job : NULL; }
