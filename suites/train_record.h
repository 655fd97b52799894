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

/* The same for a run still going (st as gt_train_run's on_step sees it,
 * st->steps_done steps so far): series and step-time figures of the steps
 * so far, without what only the end knows (final parameter digests, the
 * allocator's statistics, the held-out loss after training), and the result
 * marked partial (status error, "partial": true, message "unfinished: K of
 * N steps done when the report was last written"). Replace it with
 * gt_result_reset + gt_train_record once the run ends. */
void gt_train_record_partial(const gt_train_config *cfg, const gt_train_stats *st,
                             gt_result *res);

#ifdef __cplusplus
}
#endif
#endif
