/* The HTML view's per-op profile section (reports/html_profile.h): where a
 * training step's time goes, for one report or several side by side. */
#include "reports/html_profile.h"

#include <jansson.h>

/* clang-format off */
/* Runs inside the page's renderer (reports/html.c), with its helpers: el,
 * td, tdn, th, fmt, pct, fmtBytes, deltaCell, verdictOf, repLabel, each, reports,
 * section. One case at a time (a selector), each report's step as a bar of
 * its parts, then the table: per part its calls, time, spread, share, rate
 * and the first step's memory, a column group per report and the change
 * against R1. */
const char gt_html_profile_js[] =
    "\n"
    "  /* ---- the per-op profile (reports/html_profile.c) ---- */\n"
    "  section('profile', 'Where the time goes: per-op profile', function () {\n"
    "    var cases = {}, order = [];\n"
    "    each(null, function (r, res) {\n"
    "      var pr = res.profile;\n"
    "      if (!pr || !Array.isArray(pr.parts) || !pr.parts.length) return;\n"
    "      var key = res.suite + '/' + res['case'] + ' (' + res.topology + ' rank' + (res.topology === '1' ? '' : 's') + ', ' + res.backend + ')';\n"
    "      if (!(key in cases)) { cases[key] = {}; order.push(key); }\n"
    "      if (!cases[key][r.tag]) cases[key][r.tag] = res;\n"
    "    });\n"
    "    if (!order.length) return null;\n"
    "    var COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf',\n"
    "                  '#bcbd22', '#393b79', '#ad494a', '#637939', '#e7969c', '#7b4173', '#5254a3', '#8ca252'];\n"
    "    var colorOf = {}, ncol = 0;\n"
    "    function color(name) {\n"
    "      if (name === 'rest') return '#c7c7c7';\n"
    "      if (!(name in colorOf)) colorOf[name] = COLORS[ncol++ % COLORS.length];\n"
    "      return colorOf[name];\n"
    "    }\n"
    "    function ms(v) { return !num(v) ? '\\u2014' : Math.abs(v) < 0.01 && v !== 0 ? fmt(v * 1000, 3) + ' \\u00b5s' : fmt(v, 4) + ' ms'; }\n"
    "    function bar(res) {\n"
    "      var pr = res.profile, box = el('div', {cls: 'profile-bar', style: 'display:flex;height:18px;width:100%;max-width:900px;border:1px solid #d5dbe3'});\n"
    "      pr.parts.forEach(function (p) {\n"
    "        if (!num(p.share) || p.share <= 0) return;\n"
    "        box.appendChild(el('span', {style: 'display:block;height:100%;width:' + (100 * Math.min(p.share, 1)).toFixed(3) + '%;background:' + color(p.name),\n"
    "                                   title: p.name + ': ' + ms(p.ms) + ', ' + pct(p.share) + ' of the step', 'data-part': p.name}));\n"
    "      });\n"
    "      return box;\n"
    "    }\n"
    "    var sel = el('select', {id: 'profile-case'});\n"
    "    order.forEach(function (k, i) { sel.appendChild(el('option', {value: String(i)}, k)); });\n"
    "    var view = el('div', {id: 'profile-view'});\n"
    "    function render() {\n"
    "      var by = cases[order[parseInt(sel.value, 10) || 0]];\n"
    "      var reps = reports.filter(function (r) { return by[r.tag]; });\n"
    "      view.textContent = '';\n"
    "      reps.forEach(function (r) {\n"
    "        var res = by[r.tag], pr = res.profile, ov = pr.overhead || {};\n"
    "        view.appendChild(el('div', {cls: 'note'}, [repLabel(r), ': step ' + ms(pr.step_ms) + ' (median of ' + pr.steps + ' profiled steps, ' + pr.clock + '); parts sum to ' +\n"
    "          pct(pr.sum_vs_step) + ' of the mean step; profiler overhead ' + pct(ov.estimate_fraction) + ' estimated' +\n"
    "          (num(ov.measured_fraction) ? ', ' + pct(ov.measured_fraction) + ' measured' : '') +\n"
    "          (pr.injected_slowdown ? '; INJECTED: ' + pr.injected_slowdown.op + ' \\u00d7' + pr.injected_slowdown.factor : '')]));\n"
    "        view.appendChild(bar(res));\n"
    "      });\n"
    "      var names = [], seen = {}, maps = reps.map(function (r) {\n"
    "        var m = {};\n"
    "        by[r.tag].profile.parts.forEach(function (p) { m[p.name] = p; if (!seen[p.name]) { seen[p.name] = 1; names.push(p.name); } });\n"
    "        return m;\n"
    "      });\n"
    "      function msOf(j, n) { var p = maps[j][n]; return p && num(p.ms) ? p.ms : 0; }\n"
    "      names.sort(function (a, b) { return (a === 'rest') - (b === 'rest') || msOf(0, b) - msOf(0, a); });\n"
    "      var hs = ['part', 'kind'], tmulti = reps.length > 1;\n"
    "      reps.forEach(function (r, j) {\n"
    "        var t = tmulti ? r.tag + ' ' : '';\n"
    "        hs = hs.concat([t + 'calls/step', t + 'time/step', t + 'min\\u2013max', t + 'share']);\n"
    "        if (j > 0) hs.push('\\u0394 vs ' + reps[0].tag);\n"
    "      });\n"
    "      hs = hs.concat(['GFLOP/s', 'GB/s', 'peak memory', 'scratch']);\n"
    "      var tb = el('tbody');\n"
    "      names.forEach(function (n) {\n"
    "        var any = null;\n"
    "        maps.forEach(function (m) { if (m[n]) any = m[n]; });\n"
    "        var cells = [el('td', {}, [el('span', {cls: 'swatch', style: 'background:' + color(n)}), n]), td(any.kind)];\n"
    "        maps.forEach(function (m, j) {\n"
    "          var p = m[n];\n"
    "          if (!p) { cells.push(tdn('\\u2014'), tdn('\\u2014'), tdn('\\u2014'), tdn('\\u2014')); }\n"
    "          else cells.push(tdn(fmt(p.calls_per_step, 3)), tdn(ms(p.ms), num(p.inclusive_ms) ? 'with the ops inside: ' + ms(p.inclusive_ms) : null),\n"
    "                          tdn(ms(p.min_ms) + ' \\u2013 ' + ms(p.max_ms)), tdn(pct(p.share)));\n"
    "          if (j > 0) cells.push(p && maps[0][n] ? deltaCell(p.ms, maps[0][n].ms, false, reps[0].tag, verdictOf(reps[0], reps[j], by[reps[j].tag], n, true)) : tdn('\\u2014'));\n"
    "        });\n"
    "        var last = maps[maps.length - 1][n] || any;\n"
    "        cells.push(tdn(num(last.gflops) ? fmt(last.gflops, 4) : '\\u2014'), tdn(num(last.gbytes_per_s) ? fmt(last.gbytes_per_s, 4) : '\\u2014'),\n"
    "                   tdn(num(last.peak_bytes) ? fmtBytes(last.peak_bytes) : '\\u2014'), tdn(num(last.scratch_bytes) ? fmtBytes(last.scratch_bytes) : '\\u2014'));\n"
    "        tb.appendChild(el('tr', {'data-part': n}, cells));\n"
    "      });\n"
    "      view.appendChild(el('div', {cls: 'scroll'}, el('table', {id: 'profile-table', cls: 'dense'},\n"
    "        [el('thead', {}, el('tr', {}, hs.map(function (h, j) { return th(h, j >= 2 ? 'num' : null); }))), tb])));\n"
    "    }\n"
    "    sel.addEventListener('change', function () { try { render(); } catch (e) { errors.push('profile: ' + e); finish(); } });\n"
    "    render();\n"
    "    return [el('p', {cls: 'note', text: 'Each training case\\u2019s step split into the op table\\u2019s ops (forward and backward apart), the data wait, the gradient all-reduce (issued during the backward, and the part it did not hide), the optimizer\\u2019s own time and the rest; medians over the profiled steps, the first step left out (its memory: the allocator\\u2019s peak during each op). docs/profile.md explains every figure.'}),\n"
    "            el('div', {cls: 'controls'}, ['case ', sel, ' (' + order.length + ' with a profile)']), view];\n"
    "  });\n";
/* clang-format on */

void gt_html_profile_drop_samples(struct json_t *result) {
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(json_object_get(result, "profile"), "parts"), i, p) {
        if (json_is_object(p)) json_object_del(p, "samples_ms");
    }
}
