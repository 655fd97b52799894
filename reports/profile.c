/* The per-op profile in the report (reports/profile.h). */
#include "reports/profile.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stats.h"

static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

static void minmax(const double *v, size_t n, double *lo, double *hi, double *mean) {
    *lo = *hi = *mean = NAN;
    if (!n) return;
    double s = 0;
    *lo = *hi = v[0];
    for (size_t i = 0; i < n; i++) {
        if (v[i] < *lo) *lo = v[i];
        if (v[i] > *hi) *hi = v[i];
        s += v[i];
    }
    *mean = s / (double)n;
}

void gt_result_profile(gt_result *res, const gt_profile *p) {
    if (!res || !p) return;
    gt_profile_info in;
    gt_profile_get_info(p, &in);
    if (in.steps_profiled < 1) return;
    json_t *o = json_object();
    double step = gt_median(in.step_ms, (size_t)in.steps_profiled);
    json_object_set_new(o, "clock", json_string(in.clock));
    json_object_set_new(o, "steps", json_integer(in.steps_profiled));
    json_object_set_new(o, "steps_without_profiler", json_integer(in.steps_without));
    json_object_set_new(o, "step_ms", num(step));
    json_t *parts = json_array();
    double sum = 0;
    for (int k = 0; k < GT_PROF_PARTS; k++) {
        gt_profile_part pt;
        if (gt_profile_part_get(p, k, &pt) != GT_OK) continue;
        if (gt_profile_part_optional(k) && pt.calls_per_step <= 0) continue;
        double med = gt_median(pt.samples_ms, pt.n_samples), lo, hi, mean;
        minmax(pt.samples_ms, pt.n_samples, &lo, &hi, &mean);
        sum += med;
        json_t *j = json_object();
        json_object_set_new(j, "name", json_string(pt.name));
        json_object_set_new(j, "kind", json_string(pt.kind));
        json_object_set_new(j, "calls_per_step", num(pt.calls_per_step));
        json_object_set_new(j, "ms", num(med));
        json_object_set_new(j, "min_ms", num(lo));
        json_object_set_new(j, "max_ms", num(hi));
        json_object_set_new(j, "mean_ms", num(mean));
        json_object_set_new(j, "share", num(step > 0 ? med / step : NAN));
        if (pt.flops_per_step > 0) {
            json_object_set_new(j, "flops_per_step", num(pt.flops_per_step));
            if (med > 0) json_object_set_new(j, "gflops", num(pt.flops_per_step / (med * 1e6)));
        }
        if (pt.bytes_per_step > 0) {
            json_object_set_new(j, "bytes_per_step", num(pt.bytes_per_step));
            if (med > 0)
                json_object_set_new(j, "gbytes_per_s", num(pt.bytes_per_step / (med * 1e6)));
        }
        if (strcmp(pt.kind, "region") == 0)
            json_object_set_new(j, "inclusive_ms", num(pt.inclusive_ms));
        if (pt.mem_known) {
            json_object_set_new(j, "peak_bytes", json_integer((json_int_t)pt.peak_bytes));
            json_object_set_new(j, "scratch_bytes", json_integer((json_int_t)pt.scratch_bytes));
        }
        /* a long run keeps its last GT_PROFILE_REPORT_SAMPLES steps' samples (the figures
         * above are over every profiled step) */
        json_t *sm = json_array();
        size_t from =
            pt.n_samples > GT_PROFILE_REPORT_SAMPLES ? pt.n_samples - GT_PROFILE_REPORT_SAMPLES : 0;
        for (size_t i = from; i < pt.n_samples; i++)
            json_array_append_new(sm, num(pt.samples_ms[i]));
        json_object_set_new(j, "samples_ms", sm);
        json_array_append_new(parts, j);
    }
    /* medians do not add up (each part's own quiet steps); means do */
    json_object_set_new(o, "step_mean_ms", num(in.step_mean_ms));
    json_object_set_new(o, "sum_of_part_means_ms", num(in.parts_mean_ms));
    json_object_set_new(o, "sum_vs_step",
                        num(in.step_mean_ms > 0 ? in.parts_mean_ms / in.step_mean_ms : NAN));
    json_object_set_new(o, "sum_of_part_medians_ms", num(sum));
    json_object_set_new(o, "max_overlap_ms", num(in.max_overlap_ms));
    json_t *ov = json_object();
    json_object_set_new(ov, "call_cost_us", num(in.call_cost_us));
    json_object_set_new(ov, "calls_per_step", num(in.calls_per_step));
    json_object_set_new(ov, "estimate_ms", num(in.estimate_ms));
    json_object_set_new(ov, "estimate_fraction", num(step > 0 ? in.estimate_ms / step : NAN));
    json_object_set_new(ov, "measured_ms", num(in.overhead_ms));
    json_object_set_new(ov, "measured_steps", json_integer(in.overhead_pairs));
    double without =
        in.steps_without > 0 ? gt_median(in.without_ms, (size_t)in.steps_without) : NAN;
    json_object_set_new(
        ov, "measured_fraction",
        num(isfinite(in.overhead_ms) && without > 0 ? in.overhead_ms / without : NAN));
    json_object_set_new(ov, "step_ms_without", num(without));
    json_object_set_new(ov, "limit_fraction", num(GT_PROFILE_OVERHEAD_LIMIT));
    json_object_set_new(
        ov, "how",
        json_string("estimate: the instrumentation's cost per call, timed at start, times the "
                    "op calls of a step; measured: for every step run without the profiler "
                    "in the same run, the mean of its two profiled neighbours minus its own "
                    "time, their median (noisy on a busy machine: it may come out negative)"));
    json_object_set_new(o, "overhead", ov);
    if (in.stopped[0]) json_object_set_new(o, "stopped", json_string(in.stopped));
    if (in.trace_path[0]) json_object_set_new(o, "trace", json_string(in.trace_path));
    if (in.slowed[0]) {
        json_t *sl = json_object();
        json_object_set_new(sl, "op", json_string(in.slowed));
        json_object_set_new(sl, "factor", num(in.slow_factor));
        json_object_set_new(o, "injected_slowdown", sl);
    }
    json_object_set_new(o, "parts", parts);
    gt_result_set_json(res, "profile", o);
}

/* ---- compare ----------------------------------------------------------------------------- */

typedef struct part_cmp {
    const char *name;
    double base_ms, new_ms, rel;
    gt_verdict v;
    int floor;
} part_cmp;

static size_t samples_of(json_t *part, double **out) {
    json_t *a = json_object_get(part, "samples_ms");
    size_t n = json_array_size(a), k = 0;
    *out = malloc((n ? n : 1) * sizeof **out);
    if (!*out) return 0;
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(a, i);
        if (json_is_number(x)) (*out)[k++] = json_number_value(x);
    }
    return k;
}

static json_t *find_part(json_t *parts, const char *name) {
    size_t i;
    json_t *pt;
    json_array_foreach(parts, i, pt) {
        const char *n = json_string_value(json_object_get(pt, "name"));
        if (n && strcmp(n, name) == 0) return pt;
    }
    return NULL;
}

/* 3 significant digits without an exponent: 0.0123, 1.23, 123, 4970 */
static int decimals(double ms) {
    double a = fabs(ms);
    int d = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : a >= 0.1 ? 3 : a >= 0.01 ? 4 : 5;
    return d;
}

static int by_growth(const void *a, const void *b) {
    const part_cmp *x = a, *y = b;
    double dx = x->new_ms - x->base_ms, dy = y->new_ms - y->base_ms;
    return dx < dy ? 1 : dx > dy ? -1 : strcmp(x->name, y->name);
}

static void cat(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void cat(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || !*buf) return;
    if (*len + (size_t)n + 1 > *cap) {
        size_t c = (*cap + (size_t)n + 1) * 2;
        char *b = realloc(*buf, c);
        if (!b) return;
        *buf = b;
        *cap = c;
    }
    memcpy(*buf + *len, tmp, (size_t)n + 1);
    *len += (size_t)n;
}

/* Each part in both results (base's order) with its verdict from the
 * per-step samples; *pc malloc'd (NULL when none: out of memory or no
 * parts). Returns how many. */
static size_t compare_parts(json_t *base, json_t *nw, const gt_compare_options *o, part_cmp **pc) {
    json_t *pb = json_object_get(json_object_get(base, "profile"), "parts");
    json_t *pn = json_object_get(json_object_get(nw, "profile"), "parts");
    *pc = NULL;
    if (!json_is_array(pb) || !json_is_array(pn)) return 0;
    size_t nb = json_array_size(pb);
    *pc = calloc(nb ? nb : 1, sizeof **pc);
    if (!*pc) return 0;
    size_t k = 0, i;
    json_t *b;
    json_array_foreach(pb, i, b) {
        const char *name = json_string_value(json_object_get(b, "name"));
        json_t *n = name ? find_part(pn, name) : NULL;
        if (!n) continue;
        double *sb = NULL, *sn = NULL;
        size_t cb = samples_of(b, &sb), cn = samples_of(n, &sn);
        part_cmp *c = &(*pc)[k];
        c->name = name;
        c->v =
            gt_compare_samples(sb, cb, sn, cn, 0, o, NULL, &c->base_ms, &c->new_ms, &c->rel, NULL);
        /* a part too short to time is told as such, never judged */
        c->floor = c->base_ms * 1e3 < o->timing_floor_us && c->new_ms * 1e3 < o->timing_floor_us;
        free(sb);
        free(sn);
        if (cb && cn && isfinite(c->base_ms) && isfinite(c->new_ms)) k++;
    }
    return k;
}

json_t *gt_profile_part_verdicts(json_t *base, json_t *nw, const gt_compare_options *opt) {
    gt_compare_options o = opt ? *opt : gt_compare_defaults();
    part_cmp *pc = NULL;
    size_t k = compare_parts(base, nw, &o, &pc);
    json_t *out = json_object();
    for (size_t j = 0; out && j < k; j++) {
        const part_cmp *c = &pc[j];
        json_object_set_new(out, c->name,
                            json_pack("{s:s, s:o, s:b, s:s}", "v", gt_verdict_name(c->v), "rel",
                                      num(c->rel), "gated", 0, "why",
                                      c->floor ? "below the timing floor" : "diagnosis"));
    }
    free(pc);
    return out;
}

char *gt_profile_compare_line(json_t *base, json_t *nw, double step_rel, const char *step_verdict,
                              const gt_compare_options *opt, int max_parts) {
    gt_compare_options o = opt ? *opt : gt_compare_defaults();
    part_cmp *pc = NULL;
    size_t k = compare_parts(base, nw, &o, &pc);
    if (!pc) return NULL;
    qsort(pc, k, sizeof *pc, by_growth);
    size_t len = 0, cap = 256;
    char *out = malloc(cap);
    if (!out) {
        free(pc);
        return NULL;
    }
    out[0] = '\0';
    cat(&out, &len, &cap, "step %+.1f%% %s:", 100.0 * step_rel, step_verdict);
    for (size_t j = 0; j < k && (int)j < max_parts; j++) {
        const part_cmp *c = &pc[j];
        if (c->floor)
            cat(&out, &len, &cap, "%s %s%s (under the timing floor)", j ? "," : "", c->name,
                "");
        else if (isfinite(c->rel))
            cat(&out, &len, &cap, "%s %s %+.0f%% %s (%.*f -> %.*f ms)", j ? "," : "", c->name,
                100.0 * c->rel, gt_verdict_name(c->v), decimals(c->base_ms), c->base_ms,
                decimals(c->new_ms), c->new_ms);
        else
            cat(&out, &len, &cap, "%s %s new (%.*f ms)", j ? "," : "", c->name,
                decimals(c->new_ms), c->new_ms);
    }
    if (k > (size_t)max_parts) cat(&out, &len, &cap, ", %zu more parts", k - (size_t)max_parts);
    free(pc);
    return out;
}
