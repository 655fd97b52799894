/* The class families results belong to (their "groups") and the list of
 * slowdowns --inject-slowdown injects, which may name a family
 * (suites/suite.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/ops.h"
#include "suites/collectives.h"
#include "suites/suite.h"

static const char *const g_group_names[GT_GROUP_COUNT] = {
#define GT_GROUP_NAME_(ENUM, name) [GT_GROUP_##ENUM] = #name,
    GT_GROUP_LIST(GT_GROUP_NAME_)
#undef GT_GROUP_NAME_
};

const char *gt_group_name(gt_group g) {
    return (unsigned)g < GT_GROUP_COUNT ? g_group_names[g] : NULL;
}

gt_group gt_group_find(const char *name) {
    for (int g = 0; name && g < GT_GROUP_COUNT; g++)
        if (strcmp(g_group_names[g], name) == 0) return (gt_group)g;
    return GT_GROUP_COUNT;
}

void gt_result_set_groups(gt_result *res, unsigned set) {
    for (int g = 0; res && g < GT_GROUP_COUNT; g++)
        if (set & GT_GROUP_BIT(g)) gt_result_group(res, g_group_names[g]);
}

/* ---- --inject-slowdown ------------------------------------------------------------ */

/* What every message ends with: the forms an item may take. */
#define SLOW_FORMS                                                                                 \
    "NAME a kernel op (matmul_fwd), a case prefix of one (matmul_fwd/fp32/N64_C768_OC768), "       \
    "a collective (allreduce) or a class (gemm, memory, collective), FACTOR above 1 and at "       \
    "most 100; `gauntlet list` names the ops and collectives"

/* "item 'x:1' (of 'a:1.2,x:1')" for an item of a list, "'x:1'" for a
 * spec of one item: where a message points. */
static const char *slow_where(char *buf, size_t len, const char *spec, const char *item) {
    if (strcmp(spec, item) == 0)
        snprintf(buf, len, "'%s'", item);
    else
        snprintf(buf, len, "item '%s' (of '%s')", item, spec);
    return buf;
}

/* One item, NAME:FACTOR, trimmed, into *it. */
static gt_status slow_item(const char *spec, const char *item, gt_slowdown_item *it) {
    char where[512];
    snprintf(it->text, sizeof it->text, "%s", item);
    it->group = -1;
    const char *colon = strrchr(item, ':');
    char *end = NULL;
    double f = 0;
    if (colon) {
        errno = 0;
        f = strtod(colon + 1, &end);
    }
    if (!colon || colon == item || !end || end == colon + 1 || *end || errno)
        return GT_ERR(GT_ERR_INVALID, "inject_slowdown %s: expected NAME:FACTOR, " SLOW_FORMS,
                      slow_where(where, sizeof where, spec, item));
    if (!(f > 1 && f <= 100))
        return GT_ERR(GT_ERR_INVALID,
                      "inject_slowdown %s: the factor %g is not above 1 and at most 100 (1.2 "
                      "makes NAME take 20%% longer)",
                      slow_where(where, sizeof where, spec, item), f);
    size_t nl = (size_t)(colon - item);
    if (nl >= sizeof it->name)
        return GT_ERR(GT_ERR_INVALID, "inject_slowdown %s: NAME is longer than %zu characters",
                      slow_where(where, sizeof where, spec, item), sizeof it->name - 1);
    memcpy(it->name, item, nl);
    it->name[nl] = '\0';
    it->factor = f;

    gt_group g = gt_group_find(it->name);
    if (g != GT_GROUP_COUNT) {
        it->group = (int)g;
        return GT_OK;
    }
    /* an op, or a case prefix of one: its first component is the op */
    size_t fl = strcspn(it->name, "/");
    for (int o = 0; o < GT_OP_COUNT; o++) {
        const char *op = gt_op_name((gt_op)o);
        if (strlen(op) == fl && strncmp(op, it->name, fl) == 0) return GT_OK;
    }
    gt_coll_test t;
    if (!it->name[fl] && gt_coll_test_parse(it->name, &t) == GT_OK) {
        snprintf(it->name, sizeof it->name, "%s", gt_coll_test_name(t)); /* its spelling */
        return GT_OK;
    }
    return GT_ERR(GT_ERR_INVALID, "inject_slowdown %s: '%s' names nothing: " SLOW_FORMS,
                  slow_where(where, sizeof where, spec, item), it->name);
}

gt_status gt_slowdown_parse(const char *spec, gt_slowdown *out) {
    out->n = 0;
    if (!spec || !*spec)
        return GT_ERR(
            GT_ERR_INVALID,
            "inject_slowdown is empty: expected NAME:FACTOR[,NAME:FACTOR...], " SLOW_FORMS);
    for (const char *p = spec;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && isspace((unsigned char)*p)) {
            p++;
            len--;
        }
        while (len && isspace((unsigned char)p[len - 1]))
            len--;
        char item[160];
        if (len == 0)
            return GT_ERR(GT_ERR_INVALID,
                          "inject_slowdown '%s': an empty item (two commas, or one at an end); "
                          "expected NAME:FACTOR[,NAME:FACTOR...], " SLOW_FORMS,
                          spec);
        if (len >= sizeof item)
            return GT_ERR(GT_ERR_INVALID,
                          "inject_slowdown '%s': item '%.*s' is longer than %zu characters", spec,
                          (int)len, p, sizeof item - 1);
        if (out->n == GT_SLOWDOWN_MAX)
            return GT_ERR(GT_ERR_INVALID, "inject_slowdown '%s': more than %d items", spec,
                          GT_SLOWDOWN_MAX);
        memcpy(item, p, len);
        item[len] = '\0';
        gt_slowdown_item *it = &out->item[out->n];
        GT_TRY(slow_item(spec, item, it));
        for (int i = 0; i < out->n; i++)
            if (strcmp(out->item[i].name, it->name) == 0)
                return GT_ERR(GT_ERR_INVALID,
                              "inject_slowdown '%s': '%s' is named twice ('%s' and '%s'); give "
                              "each NAME one factor",
                              spec, it->name, out->item[i].text, it->text);
        out->n++;
        if (!comma) return GT_OK;
        p = comma + 1;
    }
}

const gt_slowdown_item *gt_slowdown_match(const gt_slowdown *sl, const char *name,
                                          unsigned groups) {
    const gt_slowdown_item *best = NULL;
    size_t best_rank = 0;
    for (int i = 0; sl && name && i < sl->n; i++) {
        const gt_slowdown_item *it = &sl->item[i];
        size_t rank; /* how specific: a class 1, a name 2 + its length */
        if (it->group >= 0) {
            if (!(groups & GT_GROUP_BIT(it->group))) continue;
            rank = 1;
        } else {
            size_t n = strlen(it->name);
            if (strncmp(it->name, name, n) != 0 || (name[n] && name[n] != '/')) continue;
            rank = 2 + n;
        }
        if (rank > best_rank) {
            best = it;
            best_rank = rank;
        }
    }
    return best;
}

gt_status gt_parse_slowdown(const char *spec, char *name, size_t len, double *factor) {
    *factor = 0;
    gt_slowdown sl;
    GT_TRY(gt_slowdown_parse(spec, &sl));
    if (strlen(sl.item[0].name) >= len)
        return GT_ERR(GT_ERR_INVALID, "inject_slowdown '%s': '%s' is longer than %zu characters",
                      spec, sl.item[0].name, len - 1);
    snprintf(name, len, "%s", sl.item[0].name);
    *factor = sl.item[0].factor;
    return GT_OK;
}
