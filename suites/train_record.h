/* What a report records of a training run: used by the train suite and
 * `gauntlet train`, over the training loop's config and statistics
 * (suites/trainer/train.h). */
#ifndef GT_SUITE_TRAIN_RECORD_H
#define GT_SUITE_TRAIN_RECORD_H

#include "reports/report.h"
#include "suites/trainer/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Puts config, metrics, series and allocator stats of a run into a result. */
void gt_train_record(const gt_train_config *cfg, const gt_train_stats *st, gt_result *res);

#ifdef __cplusplus
}
#endif
#endif
