/* compare's verdicts for other views (reports/compare_view.h): read out of
 * the comparison's own records, never decided again. */
#include "reports/compare_view.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "reports/compare_impl.h"

/* A metric's family, found by the metric's address. */
typedef struct member {
    const cmp_metric *m;
    const cmp_family *f;
} member;

static int by_metric(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const member *)a)->m, y = (uintptr_t)((const member *)b)->m;
    return (x > y) - (x < y);
}

/* Every (member, family) pair, sorted by the member's address; NULL (and
 * *n 0) when there is no family or no memory: the views then name none. */
static member *members(const gt_compare *c, size_t *n) {
    size_t k = 0;
    for (size_t i = 0; i < c->nfam; i++)
        k += c->fam[i].n;
    *n = 0;
    member *v = k ? malloc(k * sizeof *v) : NULL;
    if (!v) return NULL;
    for (size_t i = 0; i < c->nfam; i++)
        for (size_t j = 0; j < c->fam[i].n; j++)
            v[(*n)++] = (member){c->fam[i].mem[j], &c->fam[i]};
    qsort(v, *n, sizeof *v, by_metric);
    return v;
}

/* The family of m that did not find "same" (the first of its families when
 * all did); NULL when m is in none. */
static const cmp_family *family_of(const member *v, size_t n, const cmp_metric *m) {
    member key = {m, NULL};
    const member *hit = n ? bsearch(&key, v, n, sizeof *v, by_metric) : NULL;
    if (!hit) return NULL;
    while (hit > v && hit[-1].m == m)
        hit--;
    const cmp_family *first = hit->f;
    for (; hit < v + n && hit->m == m; hit++)
        if (hit->f->verdict != GT_VERDICT_SAME) return hit->f;
    return first;
}

/* Why a metric's verdict decides nothing, in compare's words; NULL when it gates. */
static const char *why_not_gated(const gt_compare *c, const cmp_metric *m) {
    if (m->method == GT_METHOD_NONE) return "no value";
    if (m->method == GT_METHOD_FLOOR) return "below the timing floor";
    if (m->ungated) return m->ungated;
    if (m->derived_from) return "derived";
    /* speed shown, not gated: another machine class (NOT COMPARABLE), or --checks-only */
    if (c->opt.checks_only) return c->not_comparable ? "not comparable" : "checks only";
    return NULL;
}

void gt_compare_each_metric(const gt_compare *c, gt_compare_metric_fn fn, void *ctx) {
    size_t nmem = 0;
    member *v = members(c, &nmem);
    for (size_t i = 0; i < c->nres; i++) {
        const cmp_result *r = &c->res[i];
        if (!r->rb || !r->rn) continue;
        for (size_t j = 0; j < r->nm; j++) {
            const cmp_metric *m = &r->m[j];
            if (!m->in_base || !m->in_new) continue;
            const cmp_family *f = family_of(v, nmem, m);
            gt_compare_metric_view mv = {
                .new_index = r->rn->index,
                .metric = m->name,
                .verdict = m->verdict,
                .rel = isfinite(m->rel) ? m->rel : NAN,
                .why = why_not_gated(c, m),
                .derived_from = m->derived_from,
                .beyond_reach = m->beyond_reach,
                .family = f ? f->name : NULL,
                .family_verdict = f ? f->verdict : GT_VERDICT_SAME,
            };
            mv.gated = mv.why == NULL;
            fn(ctx, &mv);
        }
    }
    free(v);
}

int gt_compare_not_comparable(const gt_compare *c) {
    return c->not_comparable;
}

void gt_compare_each_machine_diff(const gt_compare *c, gt_compare_field_fn fn, void *ctx) {
    for (size_t i = 0; i < c->nfp; i++)
        if (c->fp[i].machine) fn(ctx, c->fp[i].key, c->fp[i].base, c->fp[i].nw);
}

double gt_compare_us_per_unit(const char *unit) {
    return gt_cmp_us_per_unit(unit);
}
