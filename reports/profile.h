/* The per-op profile of a training result in the report (docs/profile.md):
 * written from the engine's profile (engine/profile.h) by gt_result_profile,
 * read back by compare (which names the ops behind a slower step) and by the
 * HTML view. */
#ifndef GT_REPORTS_PROFILE_H
#define GT_REPORTS_PROFILE_H

#include <stdio.h>

#include "engine/profile.h"
#include "reports/compare.h"
#include "reports/report.h"

#ifdef __cplusplus
extern "C" {
#endif

struct json_t;

/* At most this many per-step samples of a part go into the report (the last
 * ones); its median, spread and mean are over every profiled step. */
#define GT_PROFILE_REPORT_SAMPLES 512

/* Puts the result's "profile" object: every op called in the profiled steps,
 * every region, the rest, the overhead and the sum of the parts against the
 * step (docs/profile.md, "The figures"). Nothing when p is NULL or no step
 * was profiled. */
void gt_result_profile(gt_result *res, const gt_profile *p);

/* compare's diagnostic line for a train or scaling result whose step got
 * slower: the parts whose time grew most, each with its own verdict from
 * its per-step samples, e.g. "step +8.1% slower: matmul_bwd +21% slower,
 * attention_fwd +1% same, rest -2% same". base and nw are the results'
 * JSON objects; step_rel the step's relative change. Returns a malloc'd
 * string (the caller frees it) or NULL when either result has no profile.
 * At most max_parts parts, those with the largest growth in ms first. */
char *gt_profile_compare_line(struct json_t *base, struct json_t *nw, double step_rel,
                              const char *step_verdict, const gt_compare_options *opt,
                              int max_parts);

/* The same verdicts for every part in both results, for the HTML page's
 * change cells: {"PART": {"v": verdict, "rel", "gated": false, "why":
 * "diagnosis" or "below the timing floor"}}. opt NULL: compare's defaults.
 * A new object (an empty one when a result has no profile), NULL when out
 * of memory. */
struct json_t *gt_profile_part_verdicts(struct json_t *base, struct json_t *nw,
                                        const gt_compare_options *opt);

#ifdef __cplusplus
}
#endif
#endif
