/* The history section of the HTML view (reports/html.h): used by html.c only. */
#ifndef GT_HTML_HISTORY_H
#define GT_HTML_HISTORY_H

#include "engine/status.h"
#include "reports/html.h"

/* At most this many trend plots on a page; the page says how many were left
 * out. Order: the metrics compare gates first (not derived from another
 * metric, not marked "gate": false, not a time whose every run is below
 * GT_COMPARE_TIMING_FLOOR_US: the marks of the series' latest run's report),
 * among them those with change points (the most recent change first), then
 * the history's order; then the same for the metrics compare does not gate. */
#define GT_HTML_HISTORY_MAX_PLOTS 60

/* The JSON the section draws from: {"db", "total", "gated", "floor_us",
 * "runs": {"ID": start, ...}, "series": [{"suite", "case", "topology",
 * "backend", "params", "metric", "unit", "better", "gated", "why", "points":
 * [[run, level, min, max, n], ...], "changes": [{"at", "run", "verdict",
 * "before", "after", "rel", "p", "changed", "hidden"}, ...]}, ...]}: each
 * run's start time once in "runs", numbers to 6 significant digits;
 * "changed" holds only the fingerprint fields that identify a stack
 * (gt_history_stack_changes), "hidden" counts the others. Only series with
 * at least two runs. *out: a new string (free). Errors of gt_history_open
 * and gt_history_series_get (a history without any metric is not one: the
 * section then says the history is empty). */
gt_status gt_html_history_json(const gt_html_history *h, char **out);

/* The section's renderer (appended after the page's own script). */
extern const char gt_html_history_js[];

#endif
