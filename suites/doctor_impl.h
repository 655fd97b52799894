/* What suites/doctor.c shares with suites/doctor_layout.c (the layout
 * probes of `gauntlet doctor --layout`); not a public interface. */
#ifndef GT_SUITES_DOCTOR_IMPL_H
#define GT_SUITES_DOCTOR_IMPL_H

#include <stdio.h>

#include "engine/comm.h"
#include "engine/job.h"
#include "reports/report.h"
#include "suites/doctor.h"

/* "NAME:FACTOR[,NAME:FACTOR...]" (var: the variable's name for messages):
 * *factor raised to the largest FACTOR whose NAME is `host` (by_rank 0) or
 * the decimal `rank` (by_rank 1). GT_ERR_INVALID for a malformed spec. */
gt_status gt_doctor_fault_factor(const char *spec, const char *var, int by_rank,
                                 const char *host, int rank, double *factor);

/* The layout probes (docs/doctor.md, "Layouts"): cfg->layout's groups split
 * from comm as training splits them, each tensor and data-parallel group's
 * all-reduce and each pipeline boundary's send/recv timed under
 * cfg->layout_deadline_s, every group judged against the median group of
 * its kind. Collective over comm. Rank 0 adds results (suite "doctor",
 * cases layout_*) and doctor.outliers[] records to rep (NULL elsewhere)
 * and prints to out (NULL: nothing). *named, on every rank: the groups
 * named. GT_ERR_INVALID for a layout that does not fit the job, the
 * communicator's errors. */
gt_status gt_doctor_layout_run(gt_comm *comm, const gt_doctor_config *cfg, const gt_job *job,
                               gt_report *rep, const char *topology, FILE *out, int *named);

#endif
