/* The verdicts behind the HTML page's change cells (reports/html.h): used by
 * html.c only. */
#ifndef GT_HTML_VERDICTS_H
#define GT_HTML_VERDICTS_H

#include "engine/status.h"
#include "reports/read.h"

/* The metrics whose change the page shows beside their value (the kernels'
 * time, a training's throughput); compare's verdicts of the others stay
 * out of the page. NULL-terminated. */
extern const char *const gt_html_verdict_metrics[];

/* The JSON the change cells are coloured from:
 * {"pairs": [{"base": B, "new": J, "error": TEXT, "metrics": {"IDX": {"NAME":
 * {"v", "rel", "gated", "why", "via", "family", "fv", "noisy"}}}, "parts":
 * {"IDX": {"PART": {"v", "rel", "gated", "why"}}}, "not_comparable": true,
 * "machine": [{"key", "base", "new"}]}, ...]}; not_comparable and machine
 * only where BASE and NEW ran on different machine classes (compare's NOT
 * COMPARABLE; machine: the class fields that differ). B and J index
 * the reports (paths[0..n)); IDX is the result's place in report J's
 * results[]. A pair is made for each later report against the first report
 * of a section (the first with kernels results, the first with training
 * results; per profiled case the first with its profile), as the renderer
 * picks them. metrics: gt_compare_files(paths[B], paths[J]) with compare's
 * defaults, as `gauntlet compare` decides (reports/compare_view.h); error:
 * why compare refused (the cells are then left uncoloured). parts: each
 * profile part's verdict from its per-step samples (gt_compare_samples, as
 * compare's diagnostic line does), never gated. *out: NULL when n < 2
 * (nothing to compare), else a new string (free). GT_ERR_OOM. */
gt_status gt_html_verdicts_json(gt_report_doc *const *rd, const char *const *paths, int n,
                                char **out);

#endif
