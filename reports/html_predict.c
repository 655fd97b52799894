/* The HTML view's scaling prediction (html_predict.h). The renderer below is
 * a C string literal like html.c's (keep "</" and "<!--" out of it) and uses
 * the page's own helpers, which html.c hands to window.gtPredictSection. */
#include "reports/html_predict.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "reports/predict.h"

/* clang-format off */
static const char g_predict_js[] =
    "'use strict';\n"
    "window.gtPredictSection = function (api) {\n"
    "  var el = api.el, fmt = api.fmt, pct = api.pct, tdn = api.tdn, th = api.th, td = api.td, num = api.num;\n"
    "  var node = document.getElementById('predict-data');\n"
    "  if (!node) return;\n"
    "  var P = JSON.parse(node.textContent);\n"
    "  function iv(v, f) {\n"
    "    if (!v || !num(v.mid)) return '\\u2014';\n"
    "    f = f || function (x) { return fmt(x, 4); };\n"
    "    return f(v.mid) + ' [' + f(v.lo) + ', ' + f(v.hi) + ']';\n"
    "  }\n"
    "  api.section('predict', 'Scaling prediction', function () {\n"
    "    if (P.error) return [el('p', {cls: 'note', id: 'predict-error', text: 'No prediction from these reports: ' + P.error})];\n"
    "    var out = [];\n"
    "    out.push(el('p', {cls: 'note', text: 'Data-parallel step time of ' + P['case'] + ' (' + P.model + ', ' + P.precision + ', ' + P.backend + ', ' +\n"
    "      fmt(P.num_params, 4) + ' parameters, ' + P.mode + ') at rank counts not measured, from the measured compute and collectives ' +\n"
    "      '(gauntlet predict; docs/predict.md). Each figure: the median inputs [the low and high ends of the measured samples].'}));\n"
    "    var unit = String(P.unit || '').replace('_per_s', '/s');\n"
    "    function measStep(k) { return k && k.measured ? fmt(k.measured.step_ms, 4) : '\\u2014'; }\n"
    "    var head = el('tr', {}, [th('ranks', 'num'), th('nodes', 'num'), th('cores per rank', 'num'),\n"
    "                             th('strong step ms', 'num'), th('strong measured ms', 'num'), th('strong ' + unit, 'num'), th('strong efficiency', 'num'),\n"
    "                             th('weak step ms', 'num'), th('weak measured ms', 'num'), th('weak ' + unit, 'num'), th('weak efficiency', 'num')]);\n"
    "    var tb = el('tbody');\n"
    "    var rows = (P.predictions || []).slice();\n"
    "    var hasOne = rows.some(function (r) { return r.ranks === 1; });\n"
    "    if (!hasOne && P.reference) rows.unshift(P.reference);\n"
    "    rows.forEach(function (r) {\n"
    "      var s = r.strong || {}, w = r.weak || {};\n"
    "      var ok = !!s.step_ms, isRef = !hasOne && r === P.reference;\n"
    "      tb.appendChild(el('tr', {}, [tdn(String(r.ranks) + (isRef ? '*' : ''), isRef ? 'the 1-rank reference (not asked for)' : null), tdn(String(r.nodes)),\n"
    "        tdn(r.cores_per_rank === undefined ? 'gpu' : fmt(r.cores_per_rank, 3)),\n"
    "        tdn(ok ? iv(s.step_ms) : 'n/a', ok ? null : 'global batch ' + s.global_batch + ' < ranks'), tdn(measStep(s)),\n"
    "        tdn(ok ? fmt(s.throughput.mid, 4) : '\\u2014'), tdn(ok ? iv(s.efficiency, function (x) { return pct(x); }) : '\\u2014'),\n"
    "        tdn(iv(w.step_ms)), tdn(measStep(w)), tdn(fmt(w.throughput.mid, 4)), tdn(iv(w.efficiency, function (x) { return pct(x); }))]));\n"
    "    });\n"
    "    out.push(el('p', {text: 'Strong scaling: global batch ' + fmt(P.global_batch, 6) + '; weak scaling: ' + fmt(P.batch_per_rank, 6) +\n"
    "                   ' per rank; ' + P.ranks_per_node + ' rank(s) per node.'}));\n"
    "    out.push(el('div', {cls: 'scroll'}, el('table', {id: 'predict-table', cls: 'dense'}, [el('thead', {}, head), tb])));\n"
    "    out.push(el('p', {cls: 'note', text: 'Every row gives each rank the same cores. Efficiency: the row\\u2019s ' + unit + ' over ranks \\u00d7 the 1-rank row\\u2019s' +\n"
    "                   (hasOne ? '.' : ' (* the 1-rank reference, not asked for).') + ' Measured: the median step of a result with that rank count and batch per rank.'}));\n"
    "    var mb = el('tbody');\n"
    "    rows.forEach(function (r) {\n"
    "      [['strong', r.strong], ['weak', r.weak]].forEach(function (kv) {\n"
    "        var k = kv[1] || {}, m = k.measured;\n"
    "        if (!m || !k.step_ms) return;\n"
    "        var d = (k.step_ms.mid - m.step_ms) / m.step_ms;\n"
    "        mb.appendChild(el('tr', {}, [td(kv[0]), tdn(String(r.ranks)), td(m['case']),\n"
    "          tdn(r.cores_per_rank === undefined ? 'gpu' : fmt(r.cores_per_rank, 3) + ' / ' + fmt(m.cores_per_rank, 3)),\n"
    "          tdn(fmt(k.step_ms.mid, 4)), tdn(fmt(m.step_ms, 4)), tdn((d >= 0 ? '+' : '') + fmt(100 * d, 3) + '%'),\n"
    "          tdn(fmt(k.exposed_comm_ms.mid, 3)), tdn(fmt(m.exposed_comm_ms, 3)), tdn(fmt(k.compute_ms.mid, 4)), tdn(fmt(m.compute_ms, 4))]));\n"
    "      });\n"
    "    });\n"
    "    if (mb.childNodes.length) {\n"
    "      out.push(el('h3', {text: 'Predicted against measured'}));\n"
    "      out.push(el('div', {cls: 'scroll'}, el('table', {id: 'predict-measured', cls: 'dense'}, [el('thead', {}, el('tr', {}, [th('scaling'), th('ranks', 'num'),\n"
    "        th('measured case'), th('cores per rank pred / meas', 'num'), th('step ms pred', 'num'), th('step ms meas', 'num'), th('diff', 'num'),\n"
    "        th('exposed comm ms pred', 'num'), th('exposed comm ms meas', 'num'), th('compute ms pred', 'num'), th('compute ms meas', 'num')])), mb])));\n"
    "    }\n"
    "    var cs = [], col = ['#1f77b4', '#d62728'];\n"
    "    ['strong', 'weak'].forEach(function (k, i) {\n"
    "      var pts = (P.predictions || []).filter(function (r) { return r[k] && r[k].efficiency; }).map(function (r) {\n"
    "        return [r.ranks, r[k].efficiency.mid, r.ranks + ' ranks: ' + pct(r[k].efficiency.mid) + ' ' + k + ' (predicted)'];\n"
    "      });\n"
    "      cs.push({name: k + ' (predicted)', color: col[i], points: pts});\n"
    "    });\n"
    "    var meas = (P.check || []).map(function (c) { return c; });\n"
    "    var fig = api.chart({id: 'predict-efficiency', ylabel: 'scaling efficiency', yzero: true, yfmt: pct, series: cs,\n"
    "                         refs: [{y: 1, label: 'ideal'}], xlabel: 'ranks', xlog: true, xbase2: true, xfmt: function (v) { return fmt(v, 3); },\n"
    "                         caption: [el('b', {text: 'Predicted scaling efficiency'}), ' against rank count (median inputs)']});\n"
    "    if (fig) out.push(el('div', {cls: 'charts'}, fig));\n"
    "    if (meas.length) {\n"
    "      var ch = el('tr', {}, [th('case'), th('ranks', 'num'), th('fitted from ranks'), th('predicted ms', 'num'), th('measured ms', 'num'),\n"
    "                             th('error', 'num'), th('exposed comm ms pred / meas', 'num')]);\n"
    "      var cb = el('tbody');\n"
    "      meas.forEach(function (c) {\n"
    "        cb.appendChild(el('tr', {}, [td(c['case']), tdn(String(c.ranks) + (c.oversubscribed ? '*' : '')),\n"
    "          td('compute ' + c.compute_fitted_from_ranks + '; links ' + c.links_fitted_from_ranks + (c.leave_one_out === false ? ' (not leave-one-out: the links come from this rank count)' : '')),\n"
    "          tdn(iv(c.predicted_step_ms)), tdn(fmt(c.measured_step_ms, 4)),\n"
    "          el('td', {cls: 'num ' + (c.within_bound === false ? 'fail' : ''), text: (c.error >= 0 ? '+' : '') + fmt(100 * c.error, 3) + '%'}),\n"
    "          tdn(fmt(c.predicted_exposed_comm_ms.mid, 3) + ' / ' + fmt(c.measured_exposed_comm_ms, 3))]));\n"
    "      });\n"
    "      out.push(el('h3', {text: 'Checked against measurement'}));\n"
    "      var notLoo = meas.some(function (c) { return c.leave_one_out === false; });\n"
    "      out.push(el('p', {cls: 'note', text: 'Each measured multi-rank topology predicted from the results of the other rank counts only' +\n"
    "                   (notLoo ? ', except the links of a row marked not leave-one-out (no collectives measured at another multi-rank count: that row is not a leave-one-out check)' : '') + '. ' +\n"
    "                   '* more ranks than cores (oversubscribed: the ranks time-slice the cores).'}));\n"
    "      out.push(el('div', {cls: 'scroll'}, el('table', {id: 'predict-check', cls: 'dense'}, [el('thead', {}, ch), cb])));\n"
    "    }\n"
    "    var lb = el('tbody');\n"
    "    ['intra_node', 'inter_node'].forEach(function (lv) {\n"
    "      var L = ((P.inputs || {}).links || {})[lv] || {};\n"
    "      Object.keys(L).forEach(function (c) {\n"
    "        var f = L[c];\n"
    "        if (!f || f.source === 'none' || (lv === 'inter_node' && f.source === 'assumed')) return;\n"
    "        lb.appendChild(el('tr', {}, [td(lv), td(c), td(f.source), tdn(iv(f.alpha_us)), tdn(iv(f.beta_gbps)),\n"
    "                                     td(Array.isArray(f.ranks) ? f.ranks.join(',') : '')]));\n"
    "      });\n"
    "    });\n"
    "    out.push(el('h3', {text: 'Inputs'}));\n"
    "    out.push(el('div', {cls: 'scroll'}, el('table', {id: 'predict-inputs', cls: 'dense'}, [el('thead', {}, el('tr', {}, [th('level'), th('collective'),\n"
    "      th('source'), th('alpha us', 'num'), th('beta GB/s (largest size)', 'num'), th('ranks')])), lb])));\n"
    "    var ul = el('ul', {id: 'predict-assumptions'});\n"
    "    (P.assumptions || []).forEach(function (a) { ul.appendChild(el('li', {text: a})); });\n"
    "    out.push(ul);\n"
    "    return out;\n"
    "  });\n"
    "};\n";
/* clang-format on */

/* JSON inside <script>: '<' as \u003c (html.c does the same for the reports) */
static void put_json(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<')
            fputs("\\u003c", f);
        else
            fputc(*s, f);
    }
}

static int has_step_time(gt_report_doc *const *docs, int n) {
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < gt_report_doc_result_count(docs[i]); j++) {
            const gt_report_result *r = gt_report_doc_result(docs[i], j);
            if ((strcmp(r->suite, "scaling") == 0 || strcmp(r->suite, "train") == 0) &&
                gt_report_result_metric(r, "ms_per_step"))
                return 1;
        }
    return 0;
}

void gt_html_predict_write(FILE *f, gt_report_doc *const *docs, int n) {
    if (!has_step_time(docs, n)) return;
    gt_predict_options o = gt_predict_defaults();
    static const int ranks[] = {1, 2, 4, 8, 64, 512, 4096};
    o.n_ranks = (int)(sizeof ranks / sizeof ranks[0]);
    memcpy(o.ranks, ranks, sizeof ranks);
    o.check = 1;
    gt_prediction *p = NULL;
    char *text = NULL;
    if (gt_predict_build(docs, (size_t)n, &o, &p) == GT_OK) {
        text = gt_prediction_json_text(p);
    } else {
        json_t *e = json_pack("{s:s}", "error", gt_last_error());
        text = e ? json_dumps(e, JSON_COMPACT) : NULL;
        json_decref(e);
    }
    gt_prediction_free(p);
    if (!text) return;
    fputs("<script type=\"application/json\" id=\"predict-data\">", f);
    put_json(f, text);
    fputs("</script>\n<script>\n", f);
    fputs(g_predict_js, f);
    fputs("</script>\n", f);
    free(text);
}
