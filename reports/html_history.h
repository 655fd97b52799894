/* The history section of the HTML view (reports/html.h): used by html.c only. */
#ifndef GT_HTML_HISTORY_H
#define GT_HTML_HISTORY_H

#include "engine/status.h"
#include "reports/html.h"

/* At most this many trend plots on a page (the series with change points
 * first, the most recent change first); the page says how many were left out. */
#define GT_HTML_HISTORY_MAX_PLOTS 60

/* The JSON the section draws from: {"db", "runs", "total", "series": [{"suite",
 * "case", "topology", "backend", "params", "metric", "unit", "better",
 * "points": [[run, start, level, min, max, n], ...], "changes": [{"at", "run",
 * "verdict", "before", "after", "rel", "p", "changed"}, ...]}, ...]}. Only
 * series with at least two runs. *out: a new string (free). Errors of
 * gt_history_open and gt_history_series_get (a history without any metric is
 * not one: the section then says the history is empty). */
gt_status gt_html_history_json(const gt_html_history *h, char **out);

/* The section's renderer (appended after the page's own script). */
extern const char gt_html_history_js[];

#endif
