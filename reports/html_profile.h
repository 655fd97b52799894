/* The HTML view's per-op profile section (docs/html-report.md, docs/profile.md):
 * a piece of the page's renderer, which reports/html.c places inside its own
 * script, and what it leaves out of the embedded reports. */
#ifndef GT_HTML_PROFILE_H
#define GT_HTML_PROFILE_H

#ifdef __cplusplus
extern "C" {
#endif

struct json_t;

/* JavaScript run inside the renderer's scope (it uses its helpers): adds the
 * section "profile" when a result has a profile. */
extern const char gt_html_profile_js[];

/* Removes the per-step samples of a result's profile parts (the page draws
 * their medians), as the metrics' samples are left out. */
void gt_html_profile_drop_samples(struct json_t *result);

#ifdef __cplusplus
}
#endif
#endif
