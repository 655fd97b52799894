/* Inside reports/ only: the JSON behind a report and a result, for the
 * writers of report sections kept in their own files (job.c, records.c). */
#ifndef GT_REPORT_IMPL_H
#define GT_REPORT_IMPL_H

#include <jansson.h>

#include "reports/report.h"

json_t *gt_report_json(gt_report *r);   /* the document (borrowed) */
json_t *gt_result_json(gt_result *res); /* the result's object (borrowed) */

#endif
