/* The verdicts behind the HTML page's change cells (reports/html_verdicts.h):
 * the same gt_compare the `gauntlet compare` command runs, so that a cell is
 * red only where compare says slower, never because a change passed a fixed
 * percentage. */
#include "reports/html_verdicts.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/compare.h"
#include "reports/compare_view.h"
#include "reports/profile.h"

const char *const gt_html_verdict_metrics[] = {"time_us", "tokens_per_s", "samples_per_s",
                                               "images_per_s", NULL};

/* need[b * n + j]: report j is compared with report b (compare's verdicts) */
enum { NEED_COMPARE = 1 };

static int shown_metric(const char *name) {
    for (int i = 0; gt_html_verdict_metrics[i]; i++)
        if (strcmp(name, gt_html_verdict_metrics[i]) == 0) return 1;
    return 0;
}

static int is_kernels(const gt_report_result *r) {
    return strcmp(r->suite, "kernels") == 0;
}

/* The renderer's training section: train, scaling, or a loss curve. */
static int is_training(const gt_report_result *r) {
    if (strcmp(r->suite, "train") == 0 || strcmp(r->suite, "scaling") == 0) return 1;
    return json_is_array(json_object_get(json_object_get(r->json, "series"), "loss"));
}

static int any_result(const gt_report_doc *d, int (*pred)(const gt_report_result *)) {
    for (size_t i = 0; i < gt_report_doc_result_count(d); i++)
        if (pred(gt_report_doc_result(d, i))) return 1;
    return 0;
}

/* Each later report with such results against the first one with them. */
static void mark_section(gt_report_doc *const *rd, int n, int (*pred)(const gt_report_result *),
                         unsigned char *need) {
    int b = -1;
    for (int j = 0; j < n; j++) {
        if (!any_result(rd[j], pred)) continue;
        if (b < 0)
            b = j;
        else
            need[b * n + j] |= NEED_COMPARE;
    }
}

static json_t *pair_obj(json_t *pairs, json_t **made, int n, int b, int j) {
    json_t **slot = &made[b * n + j];
    if (!*slot) {
        *slot = json_pack("{s:i, s:i}", "base", b, "new", j);
        json_array_append_new(pairs, *slot);
    }
    return *slot;
}

/* obj[key] as an object, made when absent. */
static json_t *child(json_t *obj, const char *key) {
    json_t *c = json_object_get(obj, key);
    if (!c) {
        c = json_object();
        json_object_set_new(obj, key, c);
    }
    return c;
}

static json_t *rel_json(double rel) {
    return isfinite(rel) ? json_real(rel) : json_null();
}

static void put_metric(void *ctx, const gt_compare_metric_view *m) {
    if (!shown_metric(m->metric)) return;
    char idx[24];
    snprintf(idx, sizeof idx, "%zu", m->new_index);
    json_t *o = json_pack("{s:s, s:o, s:b}", "v", gt_verdict_name(m->verdict), "rel",
                          rel_json(m->rel), "gated", m->gated);
    if (!o) return;
    if (m->why) json_object_set_new(o, "why", json_string(m->why));
    if (m->derived_from) json_object_set_new(o, "via", json_string(m->derived_from));
    if (m->beyond_reach) json_object_set_new(o, "noisy", json_true());
    if (m->family) {
        json_object_set_new(o, "family", json_string(m->family));
        json_object_set_new(o, "fv", json_string(gt_verdict_name(m->family_verdict)));
    }
    json_object_set_new(child(child((json_t *)ctx, "metrics"), idx), m->metric, o);
}

static void put_machine_field(void *ctx, const char *key, const char *base, const char *new_) {
    json_array_append_new((json_t *)ctx,
                          json_pack("{s:s, s:s, s:s}", "key", key, "base", base, "new", new_));
}

static void compare_pair(json_t *pair, const char *base_path, const char *new_path) {
    gt_compare_options o = gt_compare_defaults();
    gt_compare *c = NULL;
    if (gt_compare_files(base_path, new_path, &o, &c) != GT_OK) {
        json_object_set_new(pair, "error", json_string(gt_last_error()));
        return;
    }
    json_object_set_new(pair, "metrics", json_object());
    gt_compare_each_metric(c, put_metric, pair);
    /* different machine classes: compare says NOT COMPARABLE and names the
     * fields; the page says the same above everything else */
    if (gt_compare_not_comparable(c)) {
        json_object_set_new(pair, "not_comparable", json_true());
        json_t *fields = json_array();
        gt_compare_each_machine_diff(c, put_machine_field, fields);
        json_object_set_new(pair, "machine", fields);
    }
    gt_compare_free(c);
}

/* ---- profile parts ------------------------------------------------------------------ */

static int has_parts(const gt_report_result *r) {
    return json_array_size(json_object_get(json_object_get(r->json, "profile"), "parts")) > 0;
}

static int same_case(const gt_report_result *a, const gt_report_result *b) {
    return strcmp(a->suite, b->suite) == 0 && strcmp(a->case_name, b->case_name) == 0 &&
           strcmp(a->topology, b->topology) == 0 && strcmp(a->backend, b->backend) == 0;
}

/* The first profiled result of d with r's suite, case, topology and backend. */
static const gt_report_result *profiled(const gt_report_doc *d, const gt_report_result *r) {
    for (size_t i = 0; i < gt_report_doc_result_count(d); i++) {
        const gt_report_result *x = gt_report_doc_result(d, i);
        if (has_parts(x) && same_case(x, r)) return x;
    }
    return NULL;
}

/* Every profiled result of a later report against the first report that
 * profiled its case (the renderer's base for it). */
static void profile_pairs(gt_report_doc *const *rd, int n, json_t *pairs, json_t **made) {
    for (int j = 1; j < n; j++)
        for (size_t i = 0; i < gt_report_doc_result_count(rd[j]); i++) {
            const gt_report_result *r = gt_report_doc_result(rd[j], i);
            if (!has_parts(r) || profiled(rd[j], r) != r) continue;
            int b = 0;
            const gt_report_result *base = NULL;
            for (; b < j && !(base = profiled(rd[b], r)); b++)
                continue;
            if (!base) continue;
            char idx[24];
            snprintf(idx, sizeof idx, "%zu", r->index);
            json_t *pair = pair_obj(pairs, made, n, b, j);
            json_object_set_new(child(pair, "parts"), idx,
                                gt_profile_part_verdicts(base->json, r->json, NULL));
        }
}

gt_status gt_html_verdicts_json(gt_report_doc *const *rd, const char *const *paths, int n,
                                char **out) {
    *out = NULL;
    if (n < 2) return GT_OK;
    unsigned char *need = calloc((size_t)n * (size_t)n, 1);
    json_t **made = calloc((size_t)n * (size_t)n, sizeof *made);
    json_t *pairs = json_array(), *root = json_object();
    gt_status s = GT_OK;
    if (!need || !made || !pairs || !root) s = GT_ERR(GT_ERR_OOM, "no memory");
    if (s == GT_OK) {
        mark_section(rd, n, is_kernels, need);
        mark_section(rd, n, is_training, need);
        for (int b = 0; b < n; b++)
            for (int j = b + 1; j < n; j++)
                if (need[b * n + j] & NEED_COMPARE)
                    compare_pair(pair_obj(pairs, made, n, b, j), paths[b], paths[j]);
        profile_pairs(rd, n, pairs, made);
        json_object_set_new(root, "pairs", pairs);
        pairs = NULL;
        *out = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(4));
        if (!*out) s = GT_ERR(GT_ERR_OOM, "no memory");
    }
    json_decref(pairs);
    json_decref(root);
    free(made);
    free(need);
    return s;
}
