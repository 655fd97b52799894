/* The run history on the HTML page (reports/html_history.h, docs/history.md):
 * per case and metric a trend plot of the runs' levels (the median of each
 * run's samples), the samples' spread (min to max) as a bar per run, and the
 * change points as marked vertical lines with the fingerprint fields that
 * changed there. */
#include "reports/html_history.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/compare_view.h"
#include "reports/history.h"

static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

typedef struct order {
    const gt_history_series *s;
    size_t idx;
    int gated;       /* compare would gate this metric (not derived, not "gate": false,
                        not a time below the timing floor in every run) */
    const char *why; /* why not: "derived from M", a kind, "below the timing floor" */
    int class_shown; /* a twin series of another machine class exists: name the class */
    char buf[96];
} order;

static int64_t last_run(const gt_history_series *s) {
    return s->pts[s->n - 1].run;
}

/* Plots in the order a person looks for: the metrics compare gates first, then
 * those with change points (the latest change first), then the history's order. */
static int cmp_order(const void *a, const void *b) {
    const order *x = a, *y = b;
    if (x->gated != y->gated) return y->gated - x->gated;
    int cx = x->s->ncp > 0, cy = y->s->ncp > 0;
    if (cx != cy) return cy - cx;
    if (cx) {
        int64_t rx = x->s->pts[x->s->cps[x->s->ncp - 1].at].run;
        int64_t ry = y->s->pts[y->s->cps[y->s->ncp - 1].at].run;
        if (rx != ry) return rx < ry ? 1 : -1;
    }
    return (x->idx > y->idx) - (x->idx < y->idx);
}

static int by_last_run(const void *a, const void *b) {
    int64_t x = last_run(((const order *)a)->s), y = last_run(((const order *)b)->s);
    return (x > y) - (x < y);
}

/* The result of d that the series follows (suite, case, topology, backend and
 * identity params as gt_compare_identity writes them; a repeat's "#k" aside). */
static const gt_report_result *series_result(const gt_report_doc *d, const gt_history_series *x) {
    size_t plen = strcspn(x->params, "#");
    for (size_t i = 0; i < gt_report_doc_result_count(d); i++) {
        const gt_report_result *r = gt_report_doc_result(d, i);
        if (strcmp(r->suite, x->suite) || strcmp(r->case_name, x->case_name) ||
            strcmp(r->topology, x->topology) || strcmp(r->backend, x->backend))
            continue;
        char *id = gt_compare_identity(r);
        const char *p = id;
        for (int k = 0; k < 4 && p; k++) {
            p = strchr(p, '\x1f');
            if (p) p++;
        }
        int same = p && strlen(p) == plen && strncmp(p, x->params, plen) == 0;
        free(id);
        if (same) return r;
    }
    return NULL;
}

/* Whether compare gates the series' metric, by the marks of its latest run's
 * report (d; NULL when it could not be read: taken as gated) and the timing
 * floor over every run's level. */
static void gate_of(const gt_report_doc *d, order *o) {
    const gt_history_series *x = o->s;
    const gt_report_result *r = d ? series_result(d, x) : NULL;
    const gt_report_metric *m = r ? gt_report_result_metric(r, x->metric) : NULL;
    o->gated = 1;
    o->why = NULL;
    if (m && m->derived_from) {
        snprintf(o->buf, sizeof o->buf, "derived from %s", m->derived_from);
        o->why = o->buf;
    } else if (m && !m->gated) {
        snprintf(o->buf, sizeof o->buf, "%s", m->kind ? m->kind : "marked not gated");
        o->why = o->buf;
    } else if (gt_compare_us_per_unit(x->unit) > 0) {
        double top = -INFINITY, us = gt_compare_us_per_unit(x->unit);
        for (size_t i = 0; i < x->n; i++)
            if (isfinite(x->pts[i].level) && x->pts[i].level > top) top = x->pts[i].level;
        if (top * us < GT_COMPARE_TIMING_FLOOR_US) {
            snprintf(o->buf, sizeof o->buf, "below the %g us timing floor",
                     GT_COMPARE_TIMING_FLOOR_US);
            o->why = o->buf;
        }
    }
    o->gated = o->why == NULL;
}

/* gate_of for every series, reading each latest run's report once (the
 * series are visited by their last run, one report in memory at a time). */
static void gate_all(gt_history *db, order *ord, size_t total) {
    qsort(ord, total, sizeof *ord, by_last_run);
    gt_report_doc *d = NULL;
    int64_t have = -1;
    for (size_t k = 0; k < total; k++) {
        int64_t run = last_run(ord[k].s);
        if (run != have) {
            gt_report_doc_free(d);
            d = NULL;
            have = run;
            if (gt_history_run_report(db, run, &d) != GT_OK) d = NULL;
        }
        gate_of(d, &ord[k]);
    }
    gt_report_doc_free(d);
}

static json_t *change_json(const gt_history_series *x, const gt_history_change *c) {
    int hidden = 0;
    char *stack = gt_history_stack_changes(c->changed, &hidden);
    json_t *o =
        json_pack("{s:I, s:I, s:s, s:o, s:o, s:o, s:o, s:s, s:i}", "at", (json_int_t)c->at, "run",
                  (json_int_t)x->pts[c->at].run, "verdict", gt_verdict_name(c->verdict), "before",
                  num(c->before), "after", num(c->after), "rel", num(c->rel), "p", num(c->p),
                  "changed", stack ? stack : "", "hidden", hidden);
    free(stack);
    return o;
}

/* One plot's data; each point's start time goes into runs (shared by every
 * series: a history of many runs would repeat it in each). */
static json_t *series_json(const order *o, json_t *runs) {
    const gt_history_series *x = o->s;
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b}", "suite", x->suite,
                          "case", x->case_name, "topology", x->topology, "backend", x->backend,
                          "params", x->params, "metric", x->metric, "unit", x->unit, "better",
                          x->higher_better ? "higher" : "lower", "gated", o->gated);
    if (!j) return NULL;
    if (o->why) json_object_set_new(j, "why", json_string(o->why));
    if (o->class_shown) json_object_set_new(j, "class", json_string(x->host_kind));
    json_t *pts = json_array(), *cps = json_array();
    for (size_t i = 0; i < x->n; i++) {
        const gt_history_point *p = &x->pts[i];
        char id[24];
        snprintf(id, sizeof id, "%lld", (long long)p->run);
        if (!json_object_get(runs, id)) json_object_set_new(runs, id, json_string(p->start));
        json_array_append_new(pts, json_pack("[I, o, o, o, I]", (json_int_t)p->run, num(p->level),
                                             num(p->lo), num(p->hi), (json_int_t)p->n_samples));
    }
    for (size_t i = 0; i < x->ncp; i++)
        json_array_append_new(cps, change_json(x, &x->cps[i]));
    json_object_set_new(j, "points", pts);
    json_object_set_new(j, "changes", cps);
    return j;
}

gt_status gt_html_history_json(const gt_html_history *h, char **out) {
    *out = NULL;
    gt_history *db = NULL;
    GT_TRY(gt_history_open(h->db, 0, &db));
    gt_history_series *ser = NULL;
    size_t n = 0;
    gt_status s = gt_history_series_get(db, NULL, h->case_name, h->metric, NULL, &ser, &n);
    if (s == GT_ERR_INVALID && !h->case_name && !h->metric) s = GT_OK; /* an empty history */
    json_t *root = json_object(), *arr = json_array(), *runs = json_object();
    order *ord = calloc(n ? n : 1, sizeof *ord);
    if (s == GT_OK && (!root || !arr || !runs || !ord)) s = GT_ERR(GT_ERR_OOM, "no memory");
    size_t total = 0, gated = 0;
    for (size_t i = 0; s == GT_OK && i < n; i++)
        if (ser[i].n >= 2)
            ord[total++] = (order){.s = &ser[i], .idx = i,
                                   .class_shown = gt_history_series_class_shown(ser, n, i)};
    if (s == GT_OK) {
        gate_all(db, ord, total);
        qsort(ord, total, sizeof *ord, cmp_order);
    }
    for (size_t k = 0; s == GT_OK && k < total; k++) {
        gated += (size_t)ord[k].gated;
        if (k < GT_HTML_HISTORY_MAX_PLOTS) json_array_append_new(arr, series_json(&ord[k], runs));
    }
    if (s == GT_OK) {
        json_object_set_new(root, "db", json_string(h->db));
        json_object_set_new(root, "total", json_integer((json_int_t)total));
        json_object_set_new(root, "gated", json_integer((json_int_t)gated));
        json_object_set_new(root, "floor_us", json_real(GT_COMPARE_TIMING_FLOOR_US));
        json_object_set_new(root, "runs", runs);
        json_object_set_new(root, "series", arr);
        runs = arr = NULL;
        *out = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(6));
        if (!*out) s = GT_ERR(GT_ERR_OOM, "no memory");
    }
    json_decref(arr);
    json_decref(runs);
    json_decref(root);
    free(ord);
    gt_history_series_free(ser, n);
    gt_history_close(db);
    return s;
}

/* clang-format off */
const char gt_html_history_js[] =
    "'use strict';\n"
    "(function () {\n"
    "  var SVGNS = 'http://www.w3.org/2000/svg';\n"
    "  var data = JSON.parse(document.getElementById('history').textContent);\n"
    "  var app = document.getElementById('app');\n"
    "  function el(tag, a, kids, ns) {\n"
    "    var e = ns ? document.createElementNS(SVGNS, tag) : document.createElement(tag);\n"
    "    for (var k in (a || {})) {\n"
    "      if (a[k] === null || a[k] === undefined) continue;\n"
    "      if (k === 'text') e.textContent = String(a[k]); else e.setAttribute(k === 'cls' ? 'class' : k, a[k]);\n"
    "    }\n"
    "    (kids || []).forEach(function (c) { if (c) e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c))); });\n"
    "    return e;\n"
    "  }\n"
    "  function sv(tag, a, kids) { return el(tag, a, kids, true); }\n"
    "  function fmt(v) {\n"
    "    if (v === null || v === undefined || !isFinite(v)) return 'n/a';\n"
    "    var a = Math.abs(v);\n"
    "    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);\n"
    "    return String(Number(v.toPrecision(4)));\n"
    "  }\n"
    "  function relText(c) { return (c.rel >= 0 ? '+' : '') + (100 * c.rel).toFixed(1) + '%'; }\n"
    "  /* points: [run, level, min, max, samples]; the value axis runs between round\n"
    "     ticks (gtAxis: steps of 1, 2, 2.5 or 5 x 10^k) that enclose every point */\n"
    "  function plot(s) {\n"
    "    var W = 470, H = 210, L = 58, R = 12, T = 22, B = 34;\n"
    "    var pts = s.points, n = pts.length;\n"
    "    var lo = Infinity, hi = -Infinity;\n"
    "    pts.forEach(function (p) { lo = Math.min(lo, p[2], p[1]); hi = Math.max(hi, p[3], p[1]); });\n"
    "    if (!(hi > lo)) { hi = hi + Math.abs(hi || 1) * 0.05; lo = lo - Math.abs(lo || 1) * 0.05; }\n"
    "    var pad = (hi - lo) * 0.03, ax = gtAxis.ticks(lo - pad, hi + pad, 4, true);\n"
    "    lo = ax.lo; hi = ax.hi;\n"
    "    function X(i) { return L + (n > 1 ? i * (W - L - R) / (n - 1) : (W - L - R) / 2); }\n"
    "    function Y(v) { return T + (hi - v) * (H - T - B) / (hi - lo); }\n"
    "    var svg = sv('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'data-tick-step': ax.step,\n"
    "      'aria-label': s.case + ' ' + s.metric + ' over ' + n + ' runs'});\n"
    "    ax.ticks.forEach(function (v) {\n"
    "      var y = Y(v).toFixed(1);\n"
    "      svg.appendChild(sv('line', {x1: L, x2: W - R, y1: y, y2: y, cls: 'grid'}));\n"
    "      svg.appendChild(sv('text', {x: L - 4, y: +y + 4, 'text-anchor': 'end', cls: 'tick-y', 'data-tick': v, text: gtAxis.label(v, ax.step)}));\n"
    "    });\n"
    "    svg.appendChild(sv('line', {x1: L, x2: L, y1: T, y2: H - B, cls: 'axis'}));\n"
    "    svg.appendChild(sv('line', {x1: L, x2: W - R, y1: H - B, y2: H - B, cls: 'axis'}));\n"
    "    var step = Math.max(1, Math.ceil(n / 8));\n"
    "    for (var i = 0; i < n; i += step)\n"
    "      svg.appendChild(sv('text', {x: X(i), y: H - B + 14, 'text-anchor': 'middle', text: String(pts[i][0])}));\n"
    "    svg.appendChild(sv('text', {x: (L + W - R) / 2, y: H - 4, 'text-anchor': 'middle', text: 'run'}));\n"
    "    /* the samples' spread of each run: min to max */\n"
    "    pts.forEach(function (p, i) {\n"
    "      svg.appendChild(sv('line', {x1: X(i), x2: X(i), y1: Y(p[2]), y2: Y(p[3]), stroke: '#9ecae1',\n"
    "        'stroke-width': 5, 'stroke-linecap': 'round', 'data-spread': p[0]}, [sv('title', {text: 'run ' + p[0] + ' (' + (data.runs[p[0]] || '?') + '): ' + p[4] + ' samples, ' + fmt(p[2]) + ' .. ' + fmt(p[3]) + ' ' + s.unit})]));\n"
    "    });\n"
    "    /* the change points, between the run before and the run of the change */\n"
    "    s.changes.forEach(function (c) {\n"
    "      var x = c.at > 0 ? (X(c.at - 1) + X(c.at)) / 2 : X(c.at);\n"
    "      var label = c.verdict + ' ' + relText(c);\n"
    "      var g = sv('g', {'data-change-point': c.run}, [\n"
    "        sv('title', {text: 'change point at run ' + c.run + ': ' + label + ' (' + fmt(c.before) + ' -> ' + fmt(c.after) + ' ' + s.unit + ', p ' + fmt(c.p) + ')' + (c.changed ? '\\nchanged: ' + c.changed.split('; ').join('\\n  ') : '')}),\n"
    "        sv('line', {x1: x, x2: x, y1: T - 6, y2: H - B, stroke: '#d62728', 'stroke-width': 2.5, 'stroke-dasharray': '6 3'}),\n"
    "        sv('text', {x: Math.min(x + 4, W - R - 70), y: T - 8, fill: '#d62728', text: label})]);\n"
    "      svg.appendChild(g);\n"
    "    });\n"
    "    var d = pts.map(function (p, i) { return (i ? 'L' : 'M') + X(i).toFixed(1) + ' ' + Y(p[1]).toFixed(1); }).join(' ');\n"
    "    svg.appendChild(sv('path', {d: d, cls: 'series', stroke: '#1f77b4', 'data-history-line': s.case + ':' + s.metric}));\n"
    "    pts.forEach(function (p, i) { svg.appendChild(sv('circle', {cx: X(i), cy: Y(p[1]), r: 2.6, fill: '#1f77b4'})); });\n"
    "    return svg;\n"
    "  }\n"
    "  /* what changed at a change point: the fingerprint fields that identify a stack\n"
    "     (versions, CPU and GPU, threads, transports, the job's shape), never the\n"
    "     launcher's variables that differ on every run (counted, not listed) */\n"
    "  function changedText(c) {\n"
    "    var t = c.changed || (c.hidden ? 'no field of the stack' : 'nothing recorded');\n"
    "    if (c.hidden) t += ' (and ' + c.hidden + ' launch or host field' + (c.hidden === 1 ? '' : 's') + ' not shown)';\n"
    "    return t;\n"
    "  }\n"
    "  /* a page of the history alone: the report sections have nothing to show */\n"
    "  if (!document.querySelector('script[type=\"application/json\"][id^=\"report-\"]')) {\n"
    "    while (app.firstChild) app.removeChild(app.firstChild);\n"
    "    var sub = document.querySelector('header .sub');\n"
    "    if (sub) sub.textContent = 'run history ' + data.db;\n"
    "  }\n"
    "  var body = [];\n"
    "  var shown = data.series.length;\n"
    "  body.push(el('p', {cls: 'note', text: 'History ' + data.db + ': ' + data.total + ' series of two or more runs, ' + data.gated +\n"
    "    ' of them gated by gauntlet compare; drawn first the gated ones (not derived from another metric, not marked ungated, not a time under the ' +\n"
    "    data.floor_us + ' \\u00b5s timing floor), among them those with change points, the latest first' +\n"
    "    (data.total > shown ? '; ' + shown + ' drawn (gauntlet report --history-case C --history-metric M picks one)' : '') +\n"
    "    '. The line joins each run\\u2019s median, the bar spans its samples (min to max), a dashed red line marks a change point: the level moved by more than its noise (gauntlet compare\\u2019s test on the runs before and after).'}));\n"
    "  var grid = el('div', {cls: 'charts'});\n"
    "  data.series.forEach(function (s) {\n"
    "    var cap = [el('b', {text: s.suite + '/' + s.case}), ' ' + s.metric + ' (' + (s.unit || 'no unit') + ', ' + s.better + ' is better), ' +\n"
    "      s.topology + ' rank(s), ' + s.backend + (s.params !== '{}' ? ', ' + s.params : '') +\n"
    "      (s['class'] ? ', machine class ' + s['class'] + ' (its runs only: a series never mixes machine classes)' : '') + ': ' + s.points.length + ' runs, ' +\n"
    "      s.changes.length + ' change point' + (s.changes.length === 1 ? '' : 's'),\n"
    "      s.gated ? null : el('span', {cls: 'skip', text: '; not gated: ' + s.why})];\n"
    "    var list = s.changes.map(function (c) {\n"
    "      return el('li', {text: 'run ' + c.run + ': ' + c.verdict + ', ' + fmt(c.before) + ' \\u2192 ' + fmt(c.after) + ' ' + s.unit +\n"
    "        ' (' + relText(c) + ', p ' + fmt(c.p) + '); changed: ' + changedText(c)});\n"
    "    });\n"
    "    grid.appendChild(el('figure', {'data-history-series': s.suite + '/' + s.case + ':' + s.metric, 'data-gated': s.gated ? '1' : '0',\n"
    "                                   'data-history-class': s['class'] || null}, [\n"
    "      el('figcaption', {}, cap), plot(s), list.length ? el('ul', {cls: 'note'}, list) : null]));\n"
    "  });\n"
    "  if (!shown) body.push(el('p', {cls: 'note', text: 'No metric has two runs in the history yet.'}));\n"
    "  app.appendChild(el('section', {id: 'history'}, [el('h2', {text: 'Run history'})].concat(body, [grid])));\n"
    "  document.body.setAttribute('data-history-rendered', String(shown));\n"
    "})();\n";
/* clang-format on */
