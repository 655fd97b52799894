/* The run history on the HTML page (reports/html_history.h, docs/history.md):
 * per case and metric a trend plot of the runs' levels (the median of each
 * run's samples), the samples' spread (min to max) as a bar per run, and the
 * change points as marked vertical lines with the fingerprint fields that
 * changed there. */
#include "reports/html_history.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reports/history.h"

static json_t *num(double v) {
    return isfinite(v) ? json_real(v) : json_null();
}

typedef struct order {
    const gt_history_series *s;
    size_t idx;
} order;

/* Series with change points first (the latest change first), then the rest
 * in the history's order. */
static int cmp_order(const void *a, const void *b) {
    const order *x = a, *y = b;
    int cx = x->s->ncp > 0, cy = y->s->ncp > 0;
    if (cx != cy) return cy - cx;
    if (cx) {
        int64_t rx = x->s->pts[x->s->cps[x->s->ncp - 1].at].run;
        int64_t ry = y->s->pts[y->s->cps[y->s->ncp - 1].at].run;
        if (rx != ry) return rx < ry ? 1 : -1;
    }
    return (x->idx > y->idx) - (x->idx < y->idx);
}

gt_status gt_html_history_json(const gt_html_history *h, char **out) {
    *out = NULL;
    gt_history *db = NULL;
    GT_TRY(gt_history_open(h->db, 0, &db));
    gt_history_series *ser = NULL;
    size_t n = 0;
    gt_status s = gt_history_series_get(db, NULL, h->case_name, h->metric, NULL, &ser, &n);
    if (s == GT_ERR_INVALID && !h->case_name && !h->metric) s = GT_OK; /* an empty history */
    json_t *root = json_object(), *arr = json_array();
    order *ord = calloc(n ? n : 1, sizeof *ord);
    if (s == GT_OK && (!root || !arr || !ord)) s = GT_ERR(GT_ERR_OOM, "no memory");
    size_t total = 0;
    for (size_t i = 0; s == GT_OK && i < n; i++)
        if (ser[i].n >= 2) ord[total++] = (order){&ser[i], i};
    if (s == GT_OK) qsort(ord, total, sizeof *ord, cmp_order);
    for (size_t k = 0; s == GT_OK && k < total && k < GT_HTML_HISTORY_MAX_PLOTS; k++) {
        const gt_history_series *x = ord[k].s;
        json_t *o = json_object(), *pts = json_array(), *cps = json_array();
        json_object_set_new(o, "suite", json_string(x->suite));
        json_object_set_new(o, "case", json_string(x->case_name));
        json_object_set_new(o, "topology", json_string(x->topology));
        json_object_set_new(o, "backend", json_string(x->backend));
        json_object_set_new(o, "params", json_string(x->params));
        json_object_set_new(o, "metric", json_string(x->metric));
        json_object_set_new(o, "unit", json_string(x->unit));
        json_object_set_new(o, "better", json_string(x->higher_better ? "higher" : "lower"));
        for (size_t i = 0; i < x->n; i++) {
            const gt_history_point *p = &x->pts[i];
            json_array_append_new(pts, json_pack("[I, s, o, o, o, I]", (json_int_t)p->run, p->start,
                                                 num(p->level), num(p->lo), num(p->hi),
                                                 (json_int_t)p->n_samples));
        }
        for (size_t i = 0; i < x->ncp; i++) {
            const gt_history_change *c = &x->cps[i];
            json_array_append_new(
                cps, json_pack("{s:I, s:I, s:s, s:o, s:o, s:o, s:o, s:s}", "at", (json_int_t)c->at,
                               "run", (json_int_t)x->pts[c->at].run, "verdict",
                               gt_verdict_name(c->verdict), "before", num(c->before), "after",
                               num(c->after), "rel", num(c->rel), "p", num(c->p), "changed",
                               c->changed ? c->changed : ""));
        }
        json_object_set_new(o, "points", pts);
        json_object_set_new(o, "changes", cps);
        json_array_append_new(arr, o);
    }
    if (s == GT_OK) {
        json_object_set_new(root, "db", json_string(h->db));
        json_object_set_new(root, "total", json_integer((json_int_t)total));
        json_object_set_new(root, "series", arr);
        arr = NULL;
        *out = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(10));
        if (!*out) s = GT_ERR(GT_ERR_OOM, "no memory");
    }
    json_decref(arr);
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
    "  function plot(s) {\n"
    "    var W = 470, H = 210, L = 58, R = 12, T = 22, B = 34;\n"
    "    var pts = s.points, n = pts.length;\n"
    "    var lo = Infinity, hi = -Infinity;\n"
    "    pts.forEach(function (p) { lo = Math.min(lo, p[3], p[2]); hi = Math.max(hi, p[4], p[2]); });\n"
    "    if (!(hi > lo)) { hi = hi + Math.abs(hi || 1) * 0.05; lo = lo - Math.abs(lo || 1) * 0.05; }\n"
    "    var pad = (hi - lo) * 0.08; lo -= pad; hi += pad;\n"
    "    function X(i) { return L + (n > 1 ? i * (W - L - R) / (n - 1) : (W - L - R) / 2); }\n"
    "    function Y(v) { return T + (hi - v) * (H - T - B) / (hi - lo); }\n"
    "    var svg = sv('svg', {viewBox: '0 0 ' + W + ' ' + H, role: 'img',\n"
    "      'aria-label': s.case + ' ' + s.metric + ' over ' + n + ' runs'});\n"
    "    for (var k = 0; k <= 4; k++) {\n"
    "      var v = lo + (hi - lo) * k / 4, y = Y(v);\n"
    "      svg.appendChild(sv('line', {x1: L, x2: W - R, y1: y, y2: y, cls: 'grid'}));\n"
    "      svg.appendChild(sv('text', {x: L - 4, y: y + 4, 'text-anchor': 'end', text: fmt(v)}));\n"
    "    }\n"
    "    svg.appendChild(sv('line', {x1: L, x2: L, y1: T, y2: H - B, cls: 'axis'}));\n"
    "    svg.appendChild(sv('line', {x1: L, x2: W - R, y1: H - B, y2: H - B, cls: 'axis'}));\n"
    "    var step = Math.max(1, Math.ceil(n / 8));\n"
    "    for (var i = 0; i < n; i += step)\n"
    "      svg.appendChild(sv('text', {x: X(i), y: H - B + 14, 'text-anchor': 'middle', text: String(pts[i][0])}));\n"
    "    svg.appendChild(sv('text', {x: (L + W - R) / 2, y: H - 4, 'text-anchor': 'middle', text: 'run'}));\n"
    "    /* the samples' spread of each run: min to max */\n"
    "    pts.forEach(function (p, i) {\n"
    "      svg.appendChild(sv('line', {x1: X(i), x2: X(i), y1: Y(p[3]), y2: Y(p[4]), stroke: '#9ecae1',\n"
    "        'stroke-width': 5, 'stroke-linecap': 'round', 'data-spread': p[0]}, [sv('title', {text: 'run ' + p[0] + ': ' + p[5] + ' samples, ' + fmt(p[3]) + ' .. ' + fmt(p[4]) + ' ' + s.unit})]));\n"
    "    });\n"
    "    /* the change points, between the run before and the run of the change */\n"
    "    s.changes.forEach(function (c) {\n"
    "      var x = c.at > 0 ? (X(c.at - 1) + X(c.at)) / 2 : X(c.at);\n"
    "      var label = c.verdict + ' ' + (c.rel >= 0 ? '+' : '') + (100 * c.rel).toFixed(1) + '%';\n"
    "      var g = sv('g', {'data-change-point': c.run}, [\n"
    "        sv('title', {text: 'change point at run ' + c.run + ': ' + label + ' (' + fmt(c.before) + ' -> ' + fmt(c.after) + ' ' + s.unit + ', p ' + fmt(c.p) + ')' + (c.changed ? '\\nchanged: ' + c.changed.split('; ').join('\\n  ') : '')}),\n"
    "        sv('line', {x1: x, x2: x, y1: T - 6, y2: H - B, stroke: '#d62728', 'stroke-width': 2.5, 'stroke-dasharray': '6 3'}),\n"
    "        sv('text', {x: Math.min(x + 4, W - R - 70), y: T - 8, fill: '#d62728', text: label})]);\n"
    "      svg.appendChild(g);\n"
    "    });\n"
    "    var d = pts.map(function (p, i) { return (i ? 'L' : 'M') + X(i).toFixed(1) + ' ' + Y(p[2]).toFixed(1); }).join(' ');\n"
    "    svg.appendChild(sv('path', {d: d, cls: 'series', stroke: '#1f77b4', 'data-history-line': s.case + ':' + s.metric}));\n"
    "    pts.forEach(function (p, i) { svg.appendChild(sv('circle', {cx: X(i), cy: Y(p[2]), r: 2.6, fill: '#1f77b4'})); });\n"
    "    return svg;\n"
    "  }\n"
    "  /* a page of the history alone: the report sections have nothing to show */\n"
    "  if (!document.querySelector('script[type=\"application/json\"][id^=\"report-\"]')) {\n"
    "    while (app.firstChild) app.removeChild(app.firstChild);\n"
    "    var sub = document.querySelector('header .sub');\n"
    "    if (sub) sub.textContent = 'run history ' + data.db;\n"
    "  }\n"
    "  var body = [];\n"
    "  var shown = data.series.length;\n"
    "  body.push(el('p', {cls: 'note', text: 'History ' + data.db + ': ' + data.total + ' series of two or more runs' +\n"
    "    (data.total > shown ? ', the ' + shown + ' drawn here first those with change points (gauntlet report --history-case C --history-metric M picks one)' : '') +\n"
    "    '. The line joins each run\\u2019s median, the bar spans its samples (min to max), a dashed red line marks a change point: the level moved by more than its noise (gauntlet compare\\u2019s test on the runs before and after).'}));\n"
    "  var grid = el('div', {cls: 'charts'});\n"
    "  data.series.forEach(function (s) {\n"
    "    var cap = [el('b', {text: s.suite + '/' + s.case}), ' ' + s.metric + ' (' + (s.unit || 'no unit') + ', ' + s.better + ' is better), ' +\n"
    "      s.topology + ' rank(s), ' + s.backend + (s.params !== '{}' ? ', ' + s.params : '') + ': ' + s.points.length + ' runs, ' +\n"
    "      s.changes.length + ' change point' + (s.changes.length === 1 ? '' : 's')];\n"
    "    var list = s.changes.map(function (c) {\n"
    "      return el('li', {text: 'run ' + c.run + ': ' + c.verdict + ', ' + fmt(c.before) + ' \\u2192 ' + fmt(c.after) + ' ' + s.unit +\n"
    "        ' (' + (c.rel >= 0 ? '+' : '') + (100 * c.rel).toFixed(1) + '%, p ' + fmt(c.p) + '); changed: ' + (c.changed || 'nothing recorded')});\n"
    "    });\n"
    "    grid.appendChild(el('figure', {'data-history-series': s.suite + '/' + s.case + ':' + s.metric}, [\n"
    "      el('figcaption', {}, cap), plot(s), list.length ? el('ul', {cls: 'note'}, list) : null]));\n"
    "  });\n"
    "  if (!shown) body.push(el('p', {cls: 'note', text: 'No metric has two runs in the history yet.'}));\n"
    "  app.appendChild(el('section', {id: 'history'}, [el('h2', {text: 'Run history'})].concat(body, [grid])));\n"
    "  document.body.setAttribute('data-history-rendered', String(shown));\n"
    "})();\n";
/* clang-format on */
