/* The HTML view of gauntlet reports (docs/html-report.md).
 *
 * The page is one file that must open anywhere, offline, years later: so it
 * embeds the reports themselves (not a digest of them) and the renderer, a
 * small script that draws tables and inline SVG charts. The renderer and its
 * style sheet live below as C string literals rather than separate .js/.css
 * files so that the build needs no generation step; edit them in place
 * (keep "</" and "<!--" out of them: they would end the <script> early).
 */
#define _GNU_SOURCE
#include "reports/html.h"
#include "reports/html_profile.h"

#include "engine/fileio.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reports/html_history.h"
#include "reports/html_predict.h"
#include "reports/html_verdicts.h"
#include "reports/read.h"
#include "reports/report.h"

/* one literal per line of CSS/JS keeps them editable: */
/* clang-format off */
static const char g_css[] =
    ":root { --fg: #1d232b; --muted: #5f6b7a; --line: #d5dbe3; --bg2: #f3f5f8; --bad: #b3261e; --badbg: #fdecea; --good: #1e7d32; --diffbg: #fff4c2; }\n"
    "* { box-sizing: border-box; }\n"
    "body { margin: 0; padding: 16px 22px 40px; color: var(--fg); background: #fff; font: 13px/1.4 system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', Arial, sans-serif; }\n"
    "h1 { font-size: 20px; margin: 0 0 2px; }\n"
    "h2 { font-size: 15px; margin: 22px 0 6px; padding-bottom: 3px; border-bottom: 2px solid var(--line); }\n"
    "h3 { font-size: 13px; margin: 10px 0 4px; }\n"
    ".sub, .note, figcaption { color: var(--muted); font-size: 12px; }\n"
    "code, .mono { font-family: ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace; font-size: 12px; }\n"
    "table { border-collapse: collapse; margin: 4px 0 8px; }\n"
    "th, td { border: 1px solid var(--line); padding: 2px 6px; text-align: left; vertical-align: top; }\n"
    "th { background: var(--bg2); font-weight: 600; }\n"
    "td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }\n"
    "tbody tr:nth-child(even) td { background: #fafbfc; }\n"
    "tr.diff td { background: var(--diffbg) !important; }\n"
    "tr.diff th:first-child::after { content: ' \\2260'; color: var(--bad); font-weight: 700; }\n"
    "td.wrap { max-width: 520px; word-break: break-word; }\n"
    ".pass { color: var(--good); font-weight: 600; }\n"
    ".fail, .error { color: var(--bad); font-weight: 600; }\n"
    ".skip { color: var(--muted); }\n"
    ".better { color: var(--good); }\n"
    ".worse { color: var(--bad); }\n"
    ".undecided { color: #a35c00; }\n"
    ".ambiguous, .v-none, .v-ungated { color: var(--muted); }\n"
    "td.delta small { font-size: 10px; line-height: 1; }\n"
    "td.delta.worse, td.delta.better, td.delta.undecided { font-weight: 600; }\n"
    ".legend em.identical { color: var(--muted); }\n"
    "table.failures td { background: var(--badbg) !important; }\n"
    ".ok-line { color: var(--good); font-weight: 600; margin: 10px 0; }\n"
    ".swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: -1px; }\n"
    ".charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(470px, 1fr)); gap: 10px 18px; }\n"
    "figure { margin: 0; break-inside: avoid; page-break-inside: avoid; }\n"
    "figure svg { width: 100%; height: auto; display: block; }\n"
    "figcaption { margin: 2px 0; }\n"
    "figcaption b { color: var(--fg); }\n"
    "svg text { font: 11px system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', Arial, sans-serif; fill: #333; }\n"
    "svg .grid { stroke: #e6e9ee; stroke-width: 1; }\n"
    "svg .axis { stroke: #888; stroke-width: 1; }\n"
    "svg .ref { stroke: #555; stroke-width: 1.3; stroke-dasharray: 6 4; }\n"
    "svg path.series { fill: none; stroke-width: 1.7; stroke-linejoin: round; }\n"
    ".legend { display: flex; flex-wrap: wrap; gap: 2px 12px; font-size: 11px; margin: 2px 0 0 50px; }\n"
    ".legend span { white-space: nowrap; }\n"
    ".legend i { display: inline-block; width: 18px; height: 0; border-top: 2px solid; margin-right: 4px; vertical-align: 3px; }\n"
    ".controls { font-size: 12px; margin: 2px 0; }\n"
    ".controls select, .controls label { margin-right: 10px; font-size: 12px; }\n"
    ".render-errors { color: var(--bad); background: var(--badbg); border: 1px solid var(--bad); padding: 8px; white-space: pre-wrap; }\n"
    "details > summary { cursor: pointer; color: var(--muted); }\n"
    ".scroll { overflow-x: auto; }\n"
    "table.dense { font-size: 12px; }\n"
    "table.dense th, table.dense td { padding: 1px 4px; }\n"
    "table.dense td.shape { min-width: 120px; max-width: 180px; word-break: break-all; }\n"
    "table.dense td.tol { font-size: 11px; max-width: 110px; }\n"
    "td.skipped { color: var(--muted); font-style: italic; }\n"
    "@media print {\n"
    "  .scroll { overflow: visible; }\n"
    "  table.dense { font-size: 8px; }\n"
    "  body { padding: 0; font-size: 10px; }\n"
    "  .controls, details:not([open]) { display: none; }\n"
    "  h2 { break-after: avoid; page-break-after: avoid; }\n"
    "  .charts { grid-template-columns: 1fr 1fr; }\n"
    "  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }\n"
    "  @page { margin: 12mm; }\n"
    "}\n"
    "table.only-diff tbody tr:not(.diff) { display: none; }\n";

/* Round axis ticks (window.gtAxis), for the renderer below and the history
 * plots (reports/html_history.c); first in the page's script, so that it
 * carries the script's 'use strict'. */
static const char g_axis_js[] =
    "'use strict';\n"
    "/* Round axis ticks, shared by the report charts and the history plots: multiples of\n"
    "   a step of 1, 2, 2.5 or 5 x 10^k, so that every tick reads as a round number. */\n"
    "var gtAxis = (function () {\n"
    "  var MANTISSAS = [1, 2, 2.5, 5, 10];\n"
    "  /* the smallest round step that cuts span into at most n parts */\n"
    "  function step(span, n) {\n"
    "    var raw = span / Math.max(1, n), p = Math.pow(10, Math.floor(Math.log10(raw)));\n"
    "    for (var i = 0; i < MANTISSAS.length; i++) if (raw <= MANTISSAS[i] * p * (1 + 1e-9)) return MANTISSAS[i] * p;\n"
    "    return 10 * p;\n"
    "  }\n"
    "  /* the decimals a multiple of s needs (0.25: 2) */\n"
    "  function decimals(s) {\n"
    "    for (var d = 0; d < 15; d++) {\n"
    "      var x = s * Math.pow(10, d);\n"
    "      if (Math.abs(x - Math.round(x)) < 1e-6 * x) return d;\n"
    "    }\n"
    "    return 15;\n"
    "  }\n"
    "  /* the ticks over [lo, hi], about n intervals (at least 2 ticks); wrap: lo and hi widened\n"
    "     to the ticks around them, so that the axis starts and ends on one. Returns {step,\n"
    "     ticks, lo, hi}. */\n"
    "  function ticks(lo, hi, n, wrap) {\n"
    "    if (!(hi > lo)) { var a = Math.abs(lo) || 1; lo -= a * 0.05; hi += a * 0.05; }\n"
    "    var s = step(hi - lo, n || 5), d = Math.min(20, decimals(s));\n"
    "    var k0 = wrap ? Math.floor(lo / s + 1e-9) : Math.ceil(lo / s - 1e-9);\n"
    "    var k1 = wrap ? Math.ceil(hi / s - 1e-9) : Math.floor(hi / s + 1e-9);\n"
    "    var t = [];\n"
    "    for (var k = k0; k <= k1; k++) t.push(Number((k * s).toFixed(d)) || 0);\n"
    "    return {step: s, ticks: t, lo: wrap ? t[0] : lo, hi: wrap ? t[t.length - 1] : hi};\n"
    "  }\n"
    "  /* a tick as text: as many decimals as the step needs, k/M/G/T from 10,000 up */\n"
    "  function label(v, s) {\n"
    "    var a = Math.abs(v), u = ['', 'k', 'M', 'G', 'T'], i = 0;\n"
    "    if (v === 0) return '0';\n"
    "    if (s < 1e-4 || a >= 1e15) return String(Number(v.toPrecision(6))).replace('e+', 'e');\n"
    "    if (a >= 1e4) while (a >= 1000 && i < 4) { a /= 1000; v /= 1000; s /= 1000; i++; }\n"
    "    return String(Number(v.toFixed(Math.min(20, decimals(s))))) + u[i];\n"
    "  }\n"
    "  return {step: step, ticks: ticks, label: label};\n"
    "})();\n";

/* The renderer: reads every <script id="report-N">, builds the sections,
 * leaves out those with nothing to show, and records any exception in
 * body[data-render-errors] and a #render-errors box (the test reads both). */
static const char g_js[] =
    "(function () {\n"
    "  var errors = [];\n"
    "  var t0 = window.performance ? performance.now() : Date.now();\n"
    "  var app = document.getElementById('app');\n"
    "  var SVGNS = 'http://www.w3.org/2000/svg';\n"
    "  var PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',\n"
    "                 '#17becf', '#bcbd22', '#7f7f7f', '#393b79', '#ad494a', '#637939', '#e7969c'];\n"
    "  var DASHES = ['', '7 3', '2 3', '10 3 2 3'];\n"
    "\n"
    "  function finish() {\n"
    "    document.body.setAttribute('data-render-errors', String(errors.length));\n"
    "    var box = document.getElementById('render-errors');\n"
    "    if (!errors.length) return;\n"
    "    if (!box) {\n"
    "      box = el('pre', {id: 'render-errors', cls: 'render-errors'});\n"
    "      app.insertBefore(box, app.firstChild);\n"
    "    }\n"
    "    box.textContent = 'The page could not draw everything (the reports are embedded ' +\n"
    "      'intact as JSON in this file):\\n' + errors.join('\\n');\n"
    "  }\n"
    "  window.onerror = function (msg, src, line) {\n"
    "    errors.push(String(msg) + ' (line ' + line + ')');\n"
    "    finish();\n"
    "  };\n"
    "\n"
    "  /* ---- DOM helpers ---- */\n"
    "  function setAttrs(e, a) {\n"
    "    for (var k in a) {\n"
    "      if (a[k] === null || a[k] === undefined) continue;\n"
    "      if (k === 'text') e.textContent = String(a[k]);\n"
    "      else if (k === 'cls') e.setAttribute('class', a[k]);\n"
    "      else e.setAttribute(k, a[k]);\n"
    "    }\n"
    "  }\n"
    "  function append(e, kids) {\n"
    "    if (kids === null || kids === undefined) return;\n"
    "    if (!Array.isArray(kids)) kids = [kids];\n"
    "    kids.forEach(function (k) {\n"
    "      if (k === null || k === undefined) return;\n"
    "      e.appendChild(typeof k === 'object' ? k : document.createTextNode(String(k)));\n"
    "    });\n"
    "  }\n"
    "  function el(tag, attrs, kids) {\n"
    "    var e = document.createElement(tag);\n"
    "    setAttrs(e, attrs || {});\n"
    "    append(e, kids);\n"
    "    return e;\n"
    "  }\n"
    "  function sv(tag, attrs, kids) {\n"
    "    var e = document.createElementNS(SVGNS, tag);\n"
    "    setAttrs(e, attrs || {});\n"
    "    append(e, kids);\n"
    "    return e;\n"
    "  }\n"
    "  function num(v) { return typeof v === 'number' && isFinite(v); }\n"
    "  function fmt(v, digits) {\n"
    "    if (!num(v)) return v === null || v === undefined ? '\\u2014' : String(v);\n"
    "    var a = Math.abs(v);\n"
    "    if (v === 0) return '0';\n"
    "    if (a >= 1e9 || a < 1e-3) return v.toExponential((digits || 4) - 1);\n"
    "    if (a >= Math.pow(10, digits || 4)) return String(Math.round(v));\n"
    "    var s = v.toPrecision(digits || 4);\n"
    "    /* 9999.7 to 4 digits is 1.000e+4: a whole number reads better */\n"
    "    if (s.indexOf('e') >= 0 && a >= 1) return String(Math.round(v));\n"
    "    if (s.indexOf('.') >= 0 && s.indexOf('e') < 0) s = s.replace(/0+$/, '').replace(/[.]$/, '');\n"
    "    return s;\n"
    "  }\n"
    "  function fmtBytes(b) {\n"
    "    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0;\n"
    "    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }\n"
    "    return fmt(b, 3) + ' ' + u[i];\n"
    "  }\n"
    "  /* axis ticks: short, no exponent for the usual ranges */\n"
    "  function fmtAxis(v) {\n"
    "    var a = Math.abs(v);\n"
    "    if (a >= 1e4 && a < 1e13) {\n"
    "      var u = ['k', 'M', 'G', 'T'], i = -1;\n"
    "      while (a >= 1000 && i < 3) { a /= 1000; v /= 1000; i++; }\n"
    "      return fmt(v, 3) + u[i];\n"
    "    }\n"
    "    return fmt(v, 3);\n"
    "  }\n"
    "  function pct(v) { return num(v) ? fmt(100 * v, 3) + '%' : '\\u2014'; }\n"
    "  /* the page embeds a metric as its value (reports/html.c); --full as the report has it */\n"
    "  function metric(res, name) {\n"
    "    var m = res.metrics && res.metrics[name];\n"
    "    if (typeof m === 'number') return num(m) ? m : null;\n"
    "    return m && num(m.value) ? m.value : null;\n"
    "  }\n"
    "  /* the model family of a training result: its loss chart and target */\n"
    "  function family(res) {\n"
    "    var m = String((res.params || {}).model || String(res['case'] || '').split('/')[0]);\n"
    "    if (/^(gpt2|llmc)/.test(m)) return 'gpt2';\n"
    "    if (/^mlp/.test(m)) return 'mlp';\n"
    "    if (/^(convnet|resnet)/.test(m)) return 'convnet';\n"
    "    return m;\n"
    "  }\n"
    "  function target(res) {\n"
    "    var p = res.params || {};\n"
    "    return num(p.source_entropy) ? p.source_entropy : num(p.target_loss) ? p.target_loss : null;\n"
    "  }\n"
    "  /* tokens/s (gpt2), samples/s (mlp), images/s (convnet) */\n"
    "  function throughput(res) {\n"
    "    var u = [['tokens_per_s', 'tok/s'], ['samples_per_s', 'samples/s'], ['images_per_s', 'images/s']];\n"
    "    for (var i = 0; i < u.length; i++) if (metric(res, u[i][0]) !== null) return [metric(res, u[i][0]), u[i][1], u[i][0]];\n"
    "    return [null, '', null];\n"
    "  }\n"
    "  function check(res, name) {\n"
    "    var cs = res.checks || [];\n"
    "    for (var i = 0; i < cs.length; i++) if (cs[i].name === name) return cs[i];\n"
    "    return null;\n"
    "  }\n"
    "  function statusCell(s) { return el('td', {cls: s, text: s}); }\n"
    "  function td(v, cls) { return el('td', {cls: cls || null}, v); }\n"
    "  function tdn(v, title) { return el('td', {cls: 'num', title: title || null}, v); }\n"
    "  function th(v, cls, attrs) {\n"
    "    var e = el('th', attrs || {}, v);\n"
    "    if (cls) e.setAttribute('class', cls);\n"
    "    return e;\n"
    "  }\n"
    "  function section(id, title, build) {\n"
    "    try {\n"
    "      var body = build();\n"
    "      if (!body) return; /* nothing to show: the section is left out */\n"
    "      app.appendChild(el('section', {id: id}, [el('h2', {text: title})].concat(body)));\n"
    "    } catch (e) {\n"
    "      errors.push(id + ': ' + (e && e.stack ? e.stack.split('\\n').slice(0, 3).join(' | ') : e));\n"
    "    }\n"
    "  }\n"
    "  function repLabel(r) {\n"
    "    return el('span', {title: r.file}, [el('span', {cls: 'swatch', style: 'background:' + r.color}), r.tag]);\n"
    "  }\n"
    "  /* The change against the base report, coloured by gauntlet compare's verdict for it\n"
    "     (vd from verdictOf; reports/html_verdicts.c), never by the size of the change alone:\n"
    "     a large change inside the noise is \"same\" or \"ambiguous\", a time under the timing\n"
    "     floor is not gated. The verdict is written under the change. */\n"
    "  var VERDICT_CLASS = {slower: 'worse', faster: 'better', undecided: 'undecided', ambiguous: 'ambiguous', same: 'same'};\n"
    "  function verdictWords(vd) {\n"
    "    if (!vd) return ['no verdict', 'gauntlet compare gave no verdict for it'];\n"
    "    if (vd.error) return ['no verdict', 'gauntlet compare could not compare the reports: ' + vd.error];\n"
    "    var shown = vd.gated || vd.why === 'derived' || vd.why === 'diagnosis';\n"
    "    var why = vd.why === 'derived' ? ' (computed from ' + vd.via + ', whose verdict gates)' :\n"
    "              vd.why === 'diagnosis' ? ' (from its per-step samples; a diagnosis, never gated)' :\n"
    "              vd.why ? ' (not gated: ' + vd.why + ')' : '';\n"
    "    return [shown ? vd.v : 'not gated', 'gauntlet compare: ' + vd.v + why +\n"
    "            (vd.noisy ? '; slower by its estimate, too noisy to decide' : '') +\n"
    "            (vd.family ? '; its family ' + vd.family + ': ' + vd.fv : ''), shown];\n"
    "  }\n"
    "  function deltaCell(v, base, higherBetter, baseTag, vd) {\n"
    "    if (!num(v) || !num(base) || base === 0) return tdn('\\u2014');\n"
    "    var d = 100 * (v - base) / Math.abs(base);\n"
    "    /* a change is read to a tenth of a percent, never in exponent form */\n"
    "    var txt = Math.abs(d) < 0.05 ? '0%' : (d > 0 ? '+' : '') + (Math.abs(d) >= 100 ? Math.round(d) : d.toFixed(1)) + '%';\n"
    "    var w = verdictWords(vd), cls = 'num delta';\n"
    "    if (w[2]) cls += ' v-' + vd.v + (VERDICT_CLASS[vd.v] ? ' ' + VERDICT_CLASS[vd.v] : '');\n"
    "    else cls += ' v-none';\n"
    "    return el('td', {cls: cls, 'data-verdict': w[0], title: 'change against ' + baseTag + ': ' + fmt(d, 4) + '%; ' + w[1]},\n"
    "              [txt, el('br'), el('small', {text: w[0]})]);\n"
    "  }\n"
    "\n"
    "  /* ---- the reports ---- */\n"
    "  var reports = [];\n"
    "  var nodes = document.querySelectorAll('script[type=\"application/json\"][id^=\"report-\"]');\n"
    "  for (var i = 0; i < nodes.length; i++) {\n"
    "    var d = JSON.parse(nodes[i].textContent);\n"
    "    reports.push({i: i, tag: 'R' + (i + 1), file: nodes[i].getAttribute('data-file') || '', d: d,\n"
    "                  color: PALETTE[i % PALETTE.length], dash: DASHES[i % DASHES.length],\n"
    "                  results: Array.isArray(d.results) ? d.results : []});\n"
    "  }\n"
    "  var multi = reports.length > 1;\n"
    "  /* compare's verdicts, per pair of reports (reports/html_verdicts.c) */\n"
    "  var verdictPairs = {};\n"
    "  (function () {\n"
    "    var node = document.getElementById('verdicts');\n"
    "    if (node) JSON.parse(node.textContent).pairs.forEach(function (p) { verdictPairs[p.base + '>' + p['new']] = p; });\n"
    "  })();\n"
    "  /* the verdict of metric (or, part set, profile part) name of result res of report r\n"
    "     against report base; null when compare gave none */\n"
    "  function verdictOf(base, r, res, name, part) {\n"
    "    var p = verdictPairs[base.i + '>' + r.i];\n"
    "    if (!p) return null;\n"
    "    if (p.error) return {error: p.error};\n"
    "    var idx = String(r.results.indexOf(res));\n"
    "    return ((part ? p.parts : p.metrics) || {})[idx] && ((part ? p.parts : p.metrics)[idx][name] || null) || null;\n"
    "  }\n"
    "  function each(suite, fn) {\n"
    "    reports.forEach(function (r) {\n"
    "      r.results.forEach(function (res) { if (!suite || res.suite === suite) fn(r, res); });\n"
    "    });\n"
    "  }\n"
    "\n"
    "  /* ---- charts: inline SVG, no library ---- */\n"
    "  function logTicks(lo, hi, base2) {\n"
    "    var t = [], k;\n"
    "    if (base2) {\n"
    "      var a = Math.ceil(Math.log2(lo) - 1e-9), b = Math.floor(Math.log2(hi) + 1e-9);\n"
    "      var step = Math.max(1, Math.ceil((b - a + 1) / 8));\n"
    "      for (k = a; k <= b; k += step) t.push(Math.pow(2, k));\n"
    "      return t;\n"
    "    }\n"
    "    var a10 = Math.floor(Math.log10(lo)), b10 = Math.ceil(Math.log10(hi));\n"
    "    var mults = b10 - a10 <= 2 ? [1, 2, 5] : [1];\n"
    "    var skip = Math.max(1, Math.ceil((b10 - a10 + 1) / 8));\n"
    "    for (k = a10; k <= b10; k += skip)\n"
    "      mults.forEach(function (m) { var v = m * Math.pow(10, k); if (v >= lo * 0.999 && v <= hi * 1.001) t.push(v); });\n"
    "    return t;\n"
    "  }\n"
    "  /* an axis's ticks over the range r: on a log scale 1, 2, 5 x 10^k (2^k for base2),\n"
    "     else, or when the range is too narrow for two of those, the round values of\n"
    "     gtAxis (steps of 1, 2, 2.5 or 5 x 10^k); label writes a tick */\n"
    "  function axisTicks(r, log, base2) {\n"
    "    if (log) {\n"
    "      var lt = logTicks(r[0], r[1], base2);\n"
    "      if (lt.length >= 2) return {ticks: lt, label: fmtAxis};\n"
    "    }\n"
    "    var a = gtAxis.ticks(r[0], r[1], 5, false);\n"
    "    return {ticks: log ? a.ticks.filter(function (v) { return v > 0; }) : a.ticks,\n"
    "            label: function (v) { return gtAxis.label(v, a.step); }};\n"
    "  }\n"
    "  /* the width of a chart label (11 px, the style sheet's svg text font) */\n"
    "  var measure = null;\n"
    "  function textWidth(t) {\n"
    "    if (measure === null) {\n"
    "      var c = document.createElement('canvas');\n"
    "      measure = (c.getContext && c.getContext('2d')) || false;\n"
    "      if (measure) measure.font = \"11px system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', Arial, sans-serif\";\n"
    "    }\n"
    "    return measure ? measure.measureText(t).width : 6.5 * t.length;\n"
    "  }\n"
    "  /* whether segment g [x0, y0, x1, y1] crosses box b [x0, y0, x1, y1] */\n"
    "  function segHits(g, b) {\n"
    "    var xa = Math.max(Math.min(g[0], g[2]), b[0]), xb = Math.min(Math.max(g[0], g[2]), b[2]);\n"
    "    if (xa > xb) return false;\n"
    "    if (g[2] === g[0]) return Math.min(g[1], g[3]) <= b[3] && Math.max(g[1], g[3]) >= b[1];\n"
    "    function yAt(x) { return g[1] + (g[3] - g[1]) * (x - g[0]) / (g[2] - g[0]); }\n"
    "    return Math.min(yAt(xa), yAt(xb)) <= b[3] && Math.max(yAt(xa), yAt(xb)) >= b[1];\n"
    "  }\n"
    "  /* one label for reference lines closer than a text line: \"Bayes-optimal loss 0.5, 0.505\",\n"
    "     with the reports when they differ */\n"
    "  function refGroupLabel(rs) {\n"
    "    if (rs.length === 1) return rs[0].label;\n"
    "    rs = rs.slice().sort(function (a, b) { return a.y - b.y; });\n"
    "    var names = rs.map(function (r) { return r.name || ''; });\n"
    "    if (!names[0] || names.some(function (n) { return n !== names[0]; })) return rs.map(function (r) { return r.label; }).join('; ');\n"
    "    var who = rs.map(function (r) { return (r.who || []).join(' '); });\n"
    "    var differ = who.some(function (w) { return w !== who[0]; });\n"
    "    return names[0] + ' ' + rs.map(function (r, j) { return r.value + (differ && who[j] ? ' (' + who[j] + ')' : ''); }).join(', ');\n"
    "  }\n"
    "  /* the reference lines (refs [{y, label, name, value, who}]) and their labels: lines\n"
    "     closer than a text line share one label, and a label goes where it covers neither\n"
    "     another label nor a curve (segs) nor leaves the plot (area): the right end, the left\n"
    "     end or the middle, above or below its lines; one that fits nowhere is left to the\n"
    "     legend, which lists every line */\n"
    "  function drawRefs(svg, refs, Y, segs, area) {\n"
    "    var rs = refs.filter(function (r) { return num(r.y) && num(Y(r.y)); })\n"
    "                 .map(function (r) { return {r: r, y: Y(r.y)}; }).sort(function (a, b) { return a.y - b.y; });\n"
    "    var groups = [], boxes = [];\n"
    "    rs.forEach(function (x) {\n"
    "      svg.appendChild(sv('line', {x1: area[0], x2: area[2], y1: x.y.toFixed(1), y2: x.y.toFixed(1), cls: 'ref', 'data-ref': x.r.label},\n"
    "                         sv('title', {text: x.r.label + ': ' + fmt(x.r.y, 6)})));\n"
    "      var g = groups[groups.length - 1];\n"
    "      if (g && x.y - g[g.length - 1].y < 13) g.push(x); else groups.push([x]);\n"
    "    });\n"
    "    function fits(b) {\n"
    "      if (b[0] < area[0] || b[2] > area[2] || b[1] < area[1] - 4 || b[3] > area[3]) return false;\n"
    "      if (boxes.some(function (o) { return b[0] < o[2] + 2 && o[0] < b[2] + 2 && b[1] < o[3] + 2 && o[1] < b[3] + 2; })) return false;\n"
    "      var m = [b[0] - 2, b[1] - 2, b[2] + 2, b[3] + 2];\n"
    "      return !segs.some(function (g) { return segHits(g, m); });\n"
    "    }\n"
    "    groups.forEach(function (g) {\n"
    "      var text = refGroupLabel(g.map(function (x) { return x.r; })), w = textWidth(text);\n"
    "      var top = g[0].y, bottom = g[g.length - 1].y, cands = [];\n"
    "      [area[2] - 4 - w, area[0] + 4, (area[0] + area[2] - w) / 2].forEach(function (x0) {\n"
    "        cands.push([x0, top - 15, x0 + w, top - 1, top - 4], [x0, bottom + 2, x0 + w, bottom + 16, bottom + 13]);\n"
    "      });\n"
    "      var c = cands.filter(fits)[0];\n"
    "      if (!c) return;\n"
    "      boxes.push(c);\n"
    "      svg.appendChild(sv('text', {x: c[0].toFixed(1), y: c[4].toFixed(1), cls: 'ref-label', text: text}));\n"
    "    });\n"
    "  }\n"
    "  /* o: {id, xlabel, ylabel, xlog, ylog, xbase2, yzero, xfmt, yfmt, series: [{name, color, dash,\n"
    "     points: [[x, y, hover]]}], refs: [{y, label}]}; returns null when no point can be drawn */\n"
    "  function chart(o) {\n"
    "    var W = 560, H = 290, L = 62, R = 14, T = 12, B = 42;\n"
    "    var xs = [], ys = [];\n"
    "    o.series.forEach(function (s) {\n"
    "      s.points = s.points.filter(function (p) {\n"
    "        return num(p[0]) && num(p[1]) && (!o.xlog || p[0] > 0) && (!o.ylog || p[1] > 0);\n"
    "      });\n"
    "      s.points.sort(function (a, b) { return a[0] - b[0]; });\n"
    "      s.points.forEach(function (p) { xs.push(p[0]); ys.push(p[1]); });\n"
    "    });\n"
    "    var series = o.series.filter(function (s) { return s.points.length > 0; });\n"
    "    if (!series.length) return null;\n"
    "    /* colour tells series apart, the dash tells reports apart when several are drawn */\n"
    "    var reps = [];\n"
    "    series.forEach(function (s) { if (s.rep && reps.indexOf(s.rep) < 0) reps.push(s.rep); });\n"
    "    series.forEach(function (s) { s.dash = reps.length > 1 ? DASHES[reps.indexOf(s.rep) % DASHES.length] : ''; });\n"
    "    (o.refs || []).forEach(function (r) { if (num(r.y) && (!o.ylog || r.y > 0)) ys.push(r.y); });\n"
    "    if (o.yzero) ys.push(0);\n"
    "    function range(v, log) {\n"
    "      var lo = Math.min.apply(null, v), hi = Math.max.apply(null, v);\n"
    "      if (log) {\n"
    "        var l0 = Math.log10(lo), l1 = Math.log10(hi);\n"
    "        if (l1 - l0 < 1e-9) { l0 -= 0.5; l1 += 0.5; }\n"
    "        var pad = (l1 - l0) * 0.04;\n"
    "        return [Math.pow(10, l0 - pad), Math.pow(10, l1 + pad)];\n"
    "      }\n"
    "      if (hi - lo < 1e-12 * Math.max(1, Math.abs(hi))) { lo -= 0.5 * Math.abs(lo || 1); hi += 0.5 * Math.abs(hi || 1); }\n"
    "      var p = (hi - lo) * 0.05;\n"
    "      return [lo === 0 && o.yzero ? 0 : lo - p, hi + p];\n"
    "    }\n"
    "    var xr = range(xs, o.xlog), yr = range(ys, o.ylog);\n"
    "    function f(v, r, log) { return log ? (Math.log10(v) - Math.log10(r[0])) / (Math.log10(r[1]) - Math.log10(r[0])) : (v - r[0]) / (r[1] - r[0]); }\n"
    "    function X(v) { return L + f(v, xr, o.xlog) * (W - L - R); }\n"
    "    function Y(v) { return H - B - f(v, yr, o.ylog) * (H - T - B); }\n"
    "    var svg = sv('svg', {viewBox: '0 0 ' + W + ' ' + H, 'data-chart': o.id, role: 'img',\n"
    "                         'aria-label': o.ylabel + ' against ' + o.xlabel});\n"
    "    var xa = axisTicks(xr, o.xlog, o.xbase2), ya = axisTicks(yr, o.ylog, false);\n"
    "    var xf = o.xfmt || xa.label, yf = o.yfmt || ya.label;\n"
    "    xa.ticks.forEach(function (v) {\n"
    "      var x = X(v).toFixed(1);\n"
    "      svg.appendChild(sv('line', {x1: x, x2: x, y1: T, y2: H - B, cls: 'grid'}));\n"
    "      svg.appendChild(sv('text', {x: x, y: H - B + 14, 'text-anchor': 'middle', cls: 'tick-x', 'data-tick': v, text: xf(v)}));\n"
    "    });\n"
    "    ya.ticks.forEach(function (v) {\n"
    "      var y = Y(v).toFixed(1);\n"
    "      svg.appendChild(sv('line', {x1: L, x2: W - R, y1: y, y2: y, cls: 'grid'}));\n"
    "      svg.appendChild(sv('text', {x: L - 5, y: +y + 4, 'text-anchor': 'end', cls: 'tick-y', 'data-tick': v, text: yf(v)}));\n"
    "    });\n"
    "    svg.appendChild(sv('path', {d: 'M' + L + ' ' + T + 'V' + (H - B) + 'H' + (W - R), cls: 'axis', fill: 'none'}));\n"
    "    svg.appendChild(sv('text', {x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle', text: o.xlabel}));\n"
    "    svg.appendChild(sv('text', {x: 12, y: (T + H - B) / 2, 'text-anchor': 'middle',\n"
    "                                transform: 'rotate(-90 12 ' + (T + H - B) / 2 + ')', text: o.ylabel}));\n"
    "    /* the curves' segments (a lone point: a segment of no length), for the labels to avoid */\n"
    "    var segs = [], drawn = {};\n"
    "    series.forEach(function (s) {\n"
    "      var q = s.points.map(function (p) { return [X(p[0]), Y(p[1])]; });\n"
    "      q.forEach(function (a, j) { var b = q[j + 1] || a; segs.push([a[0], a[1], b[0], b[1]]); });\n"
    "    });\n"
    "    drawRefs(svg, (o.refs || []).filter(function (r) { return !o.ylog || r.y > 0; }), Y, segs, [L, T, W - R, H - B]);\n"
    "    series.forEach(function (s) {\n"
    "      var d = '';\n"
    "      s.points.forEach(function (p, j) { d += (j ? 'L' : 'M') + X(p[0]).toFixed(1) + ' ' + Y(p[1]).toFixed(1); });\n"
    "      /* a curve drawn exactly over an earlier one hides it: the legend says so */\n"
    "      if (d in drawn) s.identicalTo = drawn[d]; else drawn[d] = s.name;\n"
    "      var g = sv('g', {});\n"
    "      g.appendChild(sv('path', {d: d, cls: 'series', stroke: s.color, 'stroke-dasharray': s.dash || null,\n"
    "                                'data-series': o.id + ':' + s.name}, sv('title', {text: s.name})));\n"
    "      if (s.points.length <= 64) {\n"
    "        s.points.forEach(function (p) {\n"
    "          g.appendChild(sv('circle', {cx: X(p[0]).toFixed(1), cy: Y(p[1]).toFixed(1), r: 2.6, fill: s.color},\n"
    "                           sv('title', {text: s.name + ': ' + (p[2] || (o.xfmt || fmtAxis)(p[0]) + ', ' + fmt(p[1]))})));\n"
    "        });\n"
    "      }\n"
    "      svg.appendChild(g);\n"
    "    });\n"
    "    var legend = el('div', {cls: 'legend'});\n"
    "    series.forEach(function (s) {\n"
    "      legend.appendChild(el('span', {'data-identical-to': s.identicalTo || null},\n"
    "        [el('i', {style: 'border-top-color:' + s.color + (s.dash ? ';border-top-style:dashed' : '')}), s.name,\n"
    "         s.identicalTo ? el('em', {cls: 'identical', text: ' identical to ' + s.identicalTo + ' (drawn over it)'}) : null]));\n"
    "    });\n"
    "    (o.refs || []).forEach(function (r) {\n"
    "      legend.appendChild(el('span', {}, [el('i', {style: 'border-top-color:#555;border-top-style:dashed'}), r.label]));\n"
    "    });\n"
    "    return el('figure', {}, [o.caption ? el('figcaption', {}, o.caption) : null, svg, legend]);\n"
    "  }\n"
    "  /* distinct colours for the series of one chart; the report's dash tells reports apart */\n"
    "  function colorer() {\n"
    "    var map = {}, n = 0;\n"
    "    return function (key) {\n"
    "      if (!(key in map)) map[key] = PALETTE[n++ % PALETTE.length];\n"
    "      return map[key];\n"
    "    };\n"
    "  }\n"
    "\n"
    "  /* ---- header: the runs ---- */\n"
    "  section('runs', multi ? 'Runs' : 'Run', function () {\n"
    "    var rows = [\n"
    "      ['report', function (r) { return [repLabel(r), ' ', el('span', {cls: 'mono', text: r.file})]; }],\n"
    "      ['run id', function (r) { return el('span', {cls: 'mono', text: (r.d.run || {}).id}); }],\n"
    "      ['start', function (r) { return (r.d.run || {}).start; }],\n"
    "      ['end', function (r) {\n"
    "        var run = r.d.run || {};\n"
    "        var dur = num(run.end_unix) && num(run.start_unix) ? ' (' + fmt(run.end_unix - run.start_unix, 3) + ' s)' : '';\n"
    "        return (run.end || '\\u2014') + dur;\n"
    "      }],\n"
    "      ['git revision', function (r) { return el('span', {cls: 'mono', text: (r.d.run || {}).git_revision}); }],\n"
    "      ['schema version', function (r) { return String(r.d.schema_version); }],\n"
    "      ['command line', function (r) {\n"
    "        var c = (r.d.run || {}).command_line;\n"
    "        return el('code', {text: Array.isArray(c) ? c.map(function (a) {\n"
    "          return /^[A-Za-z0-9_.,:=\\/+-]+$/.test(a) ? a : \"'\" + String(a).split(\"'\").join(\"'\\\"'\\\"'\") + \"'\";\n"
    "        }).join(' ') : '\\u2014'});\n"
    "      }]\n"
    "    ];\n"
    "    var tb = el('tbody');\n"
    "    rows.forEach(function (row) {\n"
    "      tb.appendChild(el('tr', {}, [th(row[0])].concat(reports.map(function (r) { return td(row[1](r), 'wrap'); }))));\n"
    "    });\n"
    "    return [el('table', {}, tb)];\n"
    "  });\n"
    "\n"
    "  /* ---- every failed check and error result ---- */\n"
    "  section('failures', 'Failed checks and errors', function () {\n"
    "    var tb = el('tbody'), n = 0;\n"
    "    each(null, function (r, res) {\n"
    "      var failed = (res.checks || []).filter(function (c) { return c.passed === false; });\n"
    "      function row(status, name, value, limit, detail) {\n"
    "        n++;\n"
    "        tb.appendChild(el('tr', {}, [td(repLabel(r)), td(res.suite), td(el('span', {cls: 'mono', text: res['case']})),\n"
    "          td(res.topology), td(res.backend), statusCell(status), td(name),\n"
    "          tdn(fmt(value, 6)), tdn(fmt(limit, 6)), td(detail, 'wrap')]));\n"
    "      }\n"
    "      failed.forEach(function (c) { row('fail', c.name, c.value, c.limit, c.detail || ''); });\n"
    "      if (res.status === 'error') row('error', '\\u2014', null, null, res.message || '');\n"
    "      else if (res.status === 'fail' && !failed.length) row('fail', '\\u2014', null, null, res.message || '');\n"
    "    });\n"
    "    if (!n) return null;\n"
    "    var head = el('tr', {}, ['report', 'suite', 'case', 'topology', 'backend', 'status', 'check', 'value',\n"
    "                             'limit', 'detail / message'].map(function (h) { return th(h); }));\n"
    "    return [el('div', {cls: 'scroll'}, el('table', {cls: 'failures'}, [el('thead', {}, head), tb]))];\n"
    "  });\n"
    "\n"
    "  /* ---- summary counts ---- */\n"
    "  section('summary', 'Summary', function () {\n"
    "    var tb = el('tbody');\n"
    "    reports.forEach(function (r) {\n"
    "      var s = r.d.summary || {}, suites = {};\n"
    "      r.results.forEach(function (res) { suites[res.suite] = (suites[res.suite] || 0) + 1; });\n"
    "      /* an incomplete report (its run did not finish) is never ok, whatever it holds */\n"
    "      var inc = s.complete === false;\n"
    "      var ok = !inc && (s.ok === true || (s.fail === 0 && s.error === 0));\n"
    "      var verdict = inc ? 'INCOMPLETE: ' + ((s.incomplete || {}).reason || 'the run did not finish') : ok ? 'ok' : 'FAILED';\n"
    "      tb.appendChild(el('tr', {}, [td(repLabel(r)), tdn(s.total), el('td', {cls: 'num pass', text: s.pass}),\n"
    "        el('td', {cls: 'num' + (s.fail ? ' fail' : ''), text: s.fail}), el('td', {cls: 'num' + (s.skip ? ' skip' : ''), text: s.skip}),\n"
    "        el('td', {cls: 'num' + (s.error ? ' error' : ''), text: s.error}), el('td', {cls: (ok ? 'pass' : 'fail') + (inc ? ' wrap' : ''), text: verdict}),\n"
    "        td(Object.keys(suites).map(function (k) { return k + ' ' + suites[k]; }).join(' \\u00b7 '))]));\n"
    "    });\n"
    "    var head = el('tr', {}, ['report', 'total', 'pass', 'fail', 'skip', 'error', 'verdict', 'results by suite'].map(function (h, j) {\n"
    "      return th(h, j >= 1 && j <= 5 ? 'num' : null);\n"
    "    }));\n"
    "    return [el('table', {}, [el('thead', {}, head), tb])];\n"
    "  });\n"
    "\n"
    "  /* ---- environment fingerprint ---- */\n"
    "  section('env', 'Environment', function () {\n"
    "    var keys = [], vals = reports.map(function () { return {}; });\n"
    "    function flat(r, prefix, v) {\n"
    "      if (prefix === 'topology_xml') return; /* the digest row stands for it */\n"
    "      if (v !== null && typeof v === 'object' && !Array.isArray(v)) {\n"
    "        var ks = Object.keys(v);\n"
    "        if (!ks.length) put(r, prefix, '(none)');\n"
    "        ks.forEach(function (k) { flat(r, prefix ? prefix + '.' + k : k, v[k]); });\n"
    "      } else if (Array.isArray(v)) {\n"
    "        if (!v.length) put(r, prefix, '(none)');\n"
    "        else if (v.every(function (x) { return x === null || typeof x !== 'object'; })) put(r, prefix, v.join(', '));\n"
    "        else v.forEach(function (x, j) { flat(r, prefix + '.' + j, x); });\n"
    "      } else put(r, prefix, v === null ? 'null' : typeof v === 'number' ? fmt(v, 6) : String(v));\n"
    "    }\n"
    "    function put(r, k, v) { if (keys.indexOf(k) < 0) keys.push(k); vals[r][k] = v; }\n"
    "    reports.forEach(function (r, j) { if (r.d.env) flat(j, '', r.d.env); });\n"
    "    if (!keys.length) return null;\n"
    "    var head = el('tr', {}, [th('key')].concat(reports.map(function (r) { return th(repLabel(r)); })));\n"
    "    /* returns [table, rows that differ]; the variables get their own table, folded,\n"
    "       because launchers (mpirun, Slurm) set dozens that differ on every run */\n"
    "    function table(ks) {\n"
    "      var tb = el('tbody'), nd = 0;\n"
    "      ks.forEach(function (k) {\n"
    "        var v = vals.map(function (m) { return k in m ? m[k] : '\\u2014'; });\n"
    "        var diff = multi && v.some(function (x) { return x !== v[0]; });\n"
    "        if (diff) nd++;\n"
    "        tb.appendChild(el('tr', {cls: diff ? 'diff' : null}, [th(el('span', {cls: 'mono', text: k}))].concat(v.map(function (x) { return td(x, 'wrap'); }))));\n"
    "      });\n"
    "      return [el('table', {cls: 'env'}, [el('thead', {}, head.cloneNode(true)), tb]), nd];\n"
    "    }\n"
    "    var main = keys.filter(function (k) { return k.indexOf('variables.') !== 0; });\n"
    "    var vars = keys.filter(function (k) { return k.indexOf('variables.') === 0; });\n"
    "    var t1 = table(main), out = [];\n"
    "    if (multi) {\n"
    "      var box = el('input', {type: 'checkbox'});\n"
    "      box.addEventListener('change', function () {\n"
    "        document.querySelectorAll('table.env').forEach(function (t) { t.classList.toggle('only-diff', box.checked); });\n"
    "      });\n"
    "      out.push(el('p', {cls: 'note'}, t1[1] ? t1[1] + ' of ' + main.length + ' entries differ between the reports (highlighted, \\u2260).' :\n"
    "                                       'The fingerprints are the same in every entry' + (vars.length ? ' but the variables.' : '.')));\n"
    "      out.push(el('div', {cls: 'controls'}, el('label', {}, [box, ' only the differences'])));\n"
    "    }\n"
    "    out.push(el('div', {cls: 'scroll'}, t1[0]));\n"
    "    if (vars.length) {\n"
    "      var t2 = table(vars);\n"
    "      out.push(el('details', {}, [el('summary', {text: 'environment variables: ' + vars.length + (multi ? ', ' + t2[1] + ' differ' : '')}),\n"
    "                                  el('div', {cls: 'scroll'}, t2[0])]));\n"
    "    }\n"
    "    return out;\n"
    "  });\n"
    "\n"
    "  /* ---- collectives: busbw against message size ---- */\n"
    "  section('collectives', 'Collectives: bus bandwidth', function () {\n"
    "    var groups = {}, order = [], topos = {}, oneRank = [];\n"
    "    each('collectives', function (r, res) {\n"
    "      var name = String(res['case'] || '').split('/')[0];\n"
    "      /* one rank moves nothing between ranks: its busbw is n/a (older reports\n"
    "         recorded 0, or 10,000 GB/s for a broadcast no-op): never plotted */\n"
    "      if (parseInt(res.topology, 10) === 1) {\n"
    "        if (oneRank.indexOf(name) < 0) oneRank.push(name);\n"
    "        return;\n"
    "      }\n"
    "      if (!(name in groups)) { groups[name] = []; order.push(name); }\n"
    "      groups[name].push({r: r, res: res});\n"
    "      topos[res.topology + '/' + res.backend] = 1;\n"
    "    });\n"
    "    var oneNote = oneRank.length ? el('p', {cls: 'note', id: 'busbw-one-rank', text: 'One rank: busbw n/a (no data moves between ranks), not drawn: ' + oneRank.join(', ') + '.'}) : null;\n"
    "    if (!order.length) return oneNote ? [oneNote] : null;\n"
    "    var manyTopo = Object.keys(topos).length > 1;\n"
    "    var grid = el('div', {cls: 'charts'});\n"
    "    var drawn = 0, flat = [];\n"
    "    order.forEach(function (name) {\n"
    "      var items = groups[name], ops = [], places = [];\n"
    "      items.forEach(function (it) {\n"
    "        var p = it.res.params || {};\n"
    "        var op = p.op === undefined ? 'none' : String(p.op), pl = p.in_place ? 'in-place' : 'out-of-place';\n"
    "        it.op = op; it.place = pl;\n"
    "        if (ops.indexOf(op) < 0) ops.push(op);\n"
    "        if (places.indexOf(pl) < 0) places.push(pl);\n"
    "      });\n"
    "      var sel = {op: ops.indexOf('sum') >= 0 ? 'sum' : ops[0],\n"
    "                 place: places.indexOf('out-of-place') >= 0 ? 'out-of-place' : places[0]};\n"
    "      var holder = el('div');\n"
    "      function draw() {\n"
    "        var color = colorer(), series = [];\n"
    "        items.forEach(function (it) {\n"
    "          if (it.op !== sel.op || it.place !== sel.place) return;\n"
    "          var p = it.res.params || {}, dt = p.dtype || String(it.res['case']).split('/')[1] || '?';\n"
    "          var label = (multi ? it.r.tag + ' ' : '') + dt + (manyTopo ? ' n=' + it.res.topology + ' ' + it.res.backend : '');\n"
    "          var pts = [];\n"
    "          Object.keys(it.res.metrics || {}).forEach(function (k) {\n"
    "            if (k.indexOf('busbw_') !== 0) return;\n"
    "            var b = Number(k.slice(6));\n"
    "            if (!(b > 0)) return;\n"
    "            var t = metric(it.res, 'time_' + k.slice(6));\n"
    "            pts.push([b, metric(it.res, k), fmtBytes(b) + ': ' + fmt(metric(it.res, k)) + ' GB/s' +\n"
    "                      (t !== null ? ', ' + fmt(t) + ' \\u00b5s' : '') + ' (' + it.res.status + ')']);\n"
    "          });\n"
    "          series.push({name: label, color: color(dt + ' ' + it.res.topology + it.res.backend), rep: it.r, points: pts});\n"
    "        });\n"
    "        var variant = (sel.op !== 'none' ? 'op ' + sel.op + ', ' : '') + sel.place;\n"
    "        var fig = chart({id: 'busbw-' + name, xlabel: 'message size (bytes)', ylabel: 'busbw (GB/s)',\n"
    "                         xlog: true, ylog: true, xbase2: true, xfmt: fmtBytes, series: series,\n"
    "                         caption: [el('b', {text: name}), ' \\u2014 ' + variant]});\n"
    "        holder.textContent = '';\n"
    "        if (fig) holder.appendChild(fig);\n"
    "        return !!fig;\n"
    "      }\n"
    "      var controls = el('div', {cls: 'controls'});\n"
    "      function picker(key, list, label) {\n"
    "        if (list.length < 2) return;\n"
    "        var s = el('select', {'aria-label': label}, list.map(function (v) { return el('option', {value: v, text: v}); }));\n"
    "        s.value = sel[key];\n"
    "        s.addEventListener('change', function () { sel[key] = s.value; draw(); });\n"
    "        controls.appendChild(el('label', {}, [label + ' ', s]));\n"
    "      }\n"
    "      picker('op', ops, 'op');\n"
    "      picker('place', places, 'placement');\n"
    "      if (draw()) {\n"
    "        drawn++;\n"
    "        grid.appendChild(el('div', {}, [controls.childNodes.length ? controls : null, holder]));\n"
    "      } else {\n"
    "        flat.push(name);\n"
    "      }\n"
    "    });\n"
    "    var out = [];\n"
    "    if (drawn) out.push(el('p', {cls: 'note', text: 'busbw = algbw \\u00d7 the collective\\u2019s bus factor (nccl-tests\\u2019 definition); median of the samples at each size. Hover a point for its time.'}), grid);\n"
    "    if (flat.length) out.push(el('p', {cls: 'note', id: 'busbw-not-drawn', text: 'Not drawn, no positive busbw in the selected variant: ' + flat.join(', ') + '.'}));\n"
    "    if (oneNote) out.push(oneNote);\n"
    "    return out;\n"
    "  });\n"
    "\n"
    "  /* ---- training: throughput, scaling efficiency, loss ---- */\n"
    "  section('training', 'Training', function () {\n"
    "    var items = [];\n"
    "    each(null, function (r, res) {\n"
    "      if (res.suite === 'train' || res.suite === 'scaling' || (res.series && Array.isArray(res.series.loss)))\n"
    "        items.push({r: r, res: res, ranks: parseInt(res.topology, 10) || (res.params || {}).ranks || 1});\n"
    "    });\n"
    "    if (!items.length) return null;\n"
    "    var out = [], grid = el('div', {cls: 'charts'});\n"
    "    var reportTopos = {};\n"
    "    items.forEach(function (it) { (reportTopos[it.r.tag] = reportTopos[it.r.tag] || {})[it.ranks] = 1; });\n"
    "    function label(it, withRanks) {\n"
    "      var multiTopo = Object.keys(reportTopos[it.r.tag]).length > 1;\n"
    "      return (multi ? it.r.tag + ' ' : '') + it.res['case'] + (it.res.backend && it.res.backend !== 'cpu' ? ' ' + it.res.backend : '') +\n"
    "             (withRanks && multiTopo ? ' n=' + it.ranks : '');\n"
    "    }\n"
    "    /* one line per report x case x backend x scaling kind, against the rank count */\n"
    "    var lines = {}, lorder = [], xset = {}, anyEff = false;\n"
    "    items.forEach(function (it) {\n"
    "      var weak = metric(it.res, 'weak_scaling_efficiency') !== null || !!(it.res.params || {}).weak;\n"
    "      var key = it.r.tag + '|' + it.res['case'] + '|' + it.res.backend + '|' + weak;\n"
    "      if (!(key in lines)) { lines[key] = {it: it, weak: weak, pts: []}; lorder.push(key); }\n"
    "      lines[key].pts.push(it);\n"
    "      xset[it.ranks] = 1;\n"
    "      if (metric(it.res, 'strong_scaling_efficiency') !== null || metric(it.res, 'weak_scaling_efficiency') !== null) anyEff = true;\n"
    "    });\n"
    "    var rankAxis = {xlabel: 'ranks', xlog: true, xbase2: true, xfmt: function (v) { return fmt(v, 3); }};\n"
    "    if (Object.keys(xset).length > 1) {\n"
    "      var c1 = colorer(), s1 = lorder.map(function (k) {\n"
    "        var L = lines[k];\n"
    "        return {name: label(L.it, false) + (L.weak ? ' (weak)' : ''), color: c1(L.it.res['case'] + L.it.res.backend + L.weak), rep: L.it.r,\n"
    "                points: L.pts.map(function (it) {\n"
    "                  var t = metric(it.res, 'tokens_per_s');\n"
    "                  return [it.ranks, t, it.ranks + ' ranks: ' + fmt(t, 5) + ' tokens/s'];\n"
    "                })};\n"
    "      });\n"
    "      var f1 = chart(Object.assign({id: 'tokens', ylabel: 'tokens/s', ylog: true, series: s1,\n"
    "                                    caption: [el('b', {text: 'Throughput'}), ' against rank count (median step)']}, rankAxis));\n"
    "      if (f1) grid.appendChild(f1);\n"
    "    }\n"
    "    if (anyEff) {\n"
    "      var c2 = colorer(), s2 = lorder.map(function (k) {\n"
    "        var L = lines[k], name = L.weak ? 'weak_scaling_efficiency' : 'strong_scaling_efficiency';\n"
    "        var lo = Math.min.apply(null, L.pts.map(function (it) { return it.ranks; }));\n"
    "        /* a line without any efficiency figure would be a lone 100% at its first topology */\n"
    "        if (!L.pts.some(function (it) { return metric(it.res, name) !== null; })) return {name: '', points: []};\n"
    "        var pts = L.pts.map(function (it) {\n"
    "          var e = metric(it.res, name);\n"
    "          /* the first topology is the reference: 1 by definition, not recorded */\n"
    "          if (e === null && it.ranks === lo) e = 1;\n"
    "          return [it.ranks, e, it.ranks + ' ranks: ' + pct(e) + (L.weak ? ' weak' : ' strong') + ' scaling efficiency'];\n"
    "        });\n"
    "        return {name: label(L.it, false) + (L.weak ? ' (weak)' : ' (strong)'), color: c2(L.it.res['case'] + L.it.res.backend + L.weak),\n"
    "                rep: L.it.r, points: pts};\n"
    "      });\n"
    "      var f2 = chart(Object.assign({id: 'efficiency', ylabel: 'scaling efficiency', yzero: true, yfmt: pct, series: s2,\n"
    "                                    refs: [{y: 1, label: 'ideal'}],\n"
    "                                    caption: [el('b', {text: 'Scaling efficiency'}), ' against the smallest topology']}, rankAxis));\n"
    "      if (f2) grid.appendChild(f2);\n"
    "    }\n"
    "    /* loss: one chart per model family, each against its own floor (gpt2: the synthetic\n"
    "       source's entropy; mlp, convnet: their task's Bayes-optimal loss) */\n"
    "    var fams = {}, forder = [];\n"
    "    items.forEach(function (it) {\n"
    "      var loss = it.res.series && it.res.series.loss;\n"
    "      if (!Array.isArray(loss) || !loss.length) return;\n"
    "      var f = family(it.res);\n"
    "      if (!(f in fams)) { fams[f] = {series: [], refs: [], color: colorer()}; forder.push(f); }\n"
    "      var F = fams[f];\n"
    "      F.series.push({name: label(it, true), color: F.color(it.r.tag + label(it, true)), rep: it.r,\n"
    "                     points: loss.map(function (v, j) { return [j + 1, v, 'step ' + (j + 1) + ': ' + fmt(v, 6)]; })});\n"
    "      var e = target(it.res), rname = f === 'gpt2' ? 'source entropy' : 'Bayes-optimal loss';\n"
    "      if (num(e)) {\n"
    "        var ref = F.refs.filter(function (x) { return Math.abs(x.y - e) <= 1e-9; })[0];\n"
    "        if (!ref) F.refs.push(ref = {y: e, name: rname, value: fmt(e, 4), label: rname + ' ' + fmt(e, 4), who: []});\n"
    "        if (ref.who.indexOf(it.r.tag) < 0) ref.who.push(it.r.tag);\n"
    "      }\n"
    "    });\n"
    "    forder.forEach(function (f) {\n"
    "      var F = fams[f], gpt = f === 'gpt2';\n"
    "      var fig = chart({id: 'loss-' + f, xlabel: 'step', ylabel: gpt ? 'loss (nats/token)' : 'loss (nats/sample)',\n"
    "                       series: F.series, refs: F.refs,\n"
    "                       caption: [el('b', {text: 'Loss, ' + f}), gpt ? ' per step; dashed: the entropy floor of the synthetic source'\n"
    "                                                                 : ' per step; dashed: the task\\u2019s Bayes-optimal loss']});\n"
    "      if (fig) grid.appendChild(fig);\n"
    "    });\n"
    "    if (grid.childNodes.length) out.push(grid);\n"
    "    /* the table: the figures behind the charts, with the change against R1 */\n"
    "    var tb = el('tbody'), treps = [];\n"
    "    items.forEach(function (it) { if (treps.indexOf(it.r) < 0) treps.push(it.r); });\n"
    "    var tmulti = treps.length > 1;\n"
    "    items.forEach(function (it) {\n"
    "      var base = null;\n"
    "      if (tmulti && it.r !== treps[0])\n"
    "        treps[0].results.forEach(function (b) {\n"
    "          if (b.suite === it.res.suite && b['case'] === it.res['case'] && b.topology === it.res.topology && b.backend === it.res.backend) base = b;\n"
    "        });\n"
    "      var p = it.res.params || {}, fl = metric(it.res, 'final_loss'), eff = metric(it.res, 'strong_scaling_efficiency');\n"
    "      if (eff === null) eff = metric(it.res, 'weak_scaling_efficiency');\n"
    "      var pm = metric(it.res, 'peak_memory'), tp = throughput(it.res), tg = target(it.res);\n"
    "      var cells = [td(repLabel(it.r)), td(it.res['case']), tdn(it.res.topology), td(it.res.backend), statusCell(it.res.status)];\n"
    "      if (it.res.status === 'skip' || it.res.status === 'error') {\n"
    "        /* nothing was measured: say why instead of a row of zeros */\n"
    "        cells.push(el('td', {colspan: tmulti ? 9 : 8, cls: 'wrap skipped'},\n"
    "                      (it.res.status === 'skip' ? 'skipped' : 'error') + (it.res.message ? ': ' + it.res.message : '')));\n"
    "      } else {\n"
    "        cells = cells.concat([tdn(num(p.steps) ? p.steps : '\\u2014'), tdn(fmt(fl, 6)), tdn(num(fl) && num(tg) ? fmt(fl - tg, 4) : '\\u2014'),\n"
    "          tdn(tp[0] !== null ? fmt(tp[0], 5) + ' ' + tp[1] : '\\u2014'),\n"
    "          tmulti ? (base ? deltaCell(tp[0], throughput(base)[0], true, treps[0].tag, verdictOf(treps[0], it.r, it.res, tp[2])) : tdn('\\u2014')) : null,\n"
    "          tdn(fmt(metric(it.res, 'ms_per_step'), 4)), tdn(pct(metric(it.res, 'mfu'))), tdn(pm !== null ? fmtBytes(pm) : '\\u2014'), tdn(pct(eff))]);\n"
    "      }\n"
    "      tb.appendChild(el('tr', {}, cells));\n"
    "    });\n"
    "    var hs = ['report', 'case', 'ranks', 'backend', 'status', 'steps', 'final loss', 'gap to target', 'throughput'];\n"
    "    if (tmulti) hs.push('\\u0394 throughput');\n"
    "    hs = hs.concat(['ms/step', 'MFU', 'peak memory', 'scaling eff.']);\n"
    "    out.push(el('div', {cls: 'scroll'}, el('table', {id: 'training-table'}, [el('thead', {}, el('tr', {}, hs.map(function (h, j) { return th(h, j >= 5 || j === 2 ? 'num' : null); }))), tb])));\n"
    "    return out;\n"
    "  });\n"
    "\n"
    "  /* ---- kernels: conformance and speed, reports side by side ---- */\n"
    /* the scaling prediction (html_predict.c), when the page has one */
    "  if (window.gtPredictSection) window.gtPredictSection({section: section, el: el, fmt: fmt, pct: pct, num: num, chart: chart, td: td, tdn: tdn, th: th});\n"
    "  section('kernels', 'Kernels', function () {\n"
    "    var rows = {}, order = [];\n"
    "    each('kernels', function (r, res) {\n"
    "      var key = res['case'] + '|' + res.backend + '|' + res.topology;\n"
    "      if (!(key in rows)) { rows[key] = {res: res, by: {}}; order.push(key); }\n"
    "      rows[key].by[r.tag] = res;\n"
    "    });\n"
    "    if (!order.length) return null;\n"
    "    var kreps = reports.filter(function (r) { return r.results.some(function (res) { return res.suite === 'kernels'; }); });\n"
    "    /* the tolerance that applied, |a - e| <= atol + rtol |e| (the conformance check's detail\n"
    "       names it): near zero atol dominates, so a large relative error can pass */\n"
    "    function tolerance(res) {\n"
    "      var c = res && check(res, 'conformance'), m = c && /rtol ([-+0-9.e]+) atol ([-+0-9.e]+)/.exec(c.detail || '');\n"
    "      return m ? 'atol ' + fmt(Number(m[2]), 2) + ' + rtol ' + fmt(Number(m[1]), 2) + '\\u00b7|e|' : '\\u2014';\n"
    "    }\n"
    "    /* above 1 the measured peak is no bound for the op (it fits in cache, or the peak\n"
    "       probe fell short): a percent over 100 would mislead */\n"
    "    function peakCell(v) {\n"
    "      if (!num(v) || v <= 1) return tdn(pct(v));\n"
    "      return el('td', {cls: 'num skip', title: 'fraction_of_peak ' + fmt(v, 3) + ': above the measured peak, which is then no bound for this op'}, '>100%');\n"
    "    }\n"
    "    /* short headings and the change next to the time: with two reports side by side the\n"
    "       table must still fit 1280 px (the test measures it) */\n"
    "    var cols = [['conf.', 'conformance against kernels/ref'], ['err abs / rel', 'max abs error / max rel error'],\n"
    "                ['\\u00b5s', 'time (\\u00b5s, median)'], ['GFLOP/s'], ['GB/s'], ['peak', 'fraction of the roofline peak']];\n"
    "    var h1 = el('tr', {}, [th('op', null, {rowspan: 2}), th('dtype', null, {rowspan: 2}), th('shape', null, {rowspan: 2}), th('backend', null, {rowspan: 2}),\n"
    "                           th('tolerance', null, {rowspan: 2, title: 'the conformance bound that applied: |a - e| <= atol + rtol |e|, e the fp64 reference'})]);\n"
    "    var h2 = el('tr');\n"
    "    kreps.forEach(function (r, j) {\n"
    "      var n = cols.length + (j > 0 ? 1 : 0);\n"
    "      h1.appendChild(th(repLabel(r), null, {colspan: n}));\n"
    "      cols.forEach(function (c, k) {\n"
    "        h2.appendChild(th(c[0], 'num', {title: c[1] || null}));\n"
    "        if (k === 2 && j > 0) h2.appendChild(th('\\u0394 \\u00b5s', 'num', {title: 'change of the time against ' + kreps[0].tag + ', with gauntlet compare\\u2019s verdict for it (its colour)'}));\n"
    "      });\n"
    "    });\n"
    "    var tb = el('tbody');\n"
    "    order.forEach(function (key) {\n"
    "      var row = rows[key], res0 = row.res, p = res0.params || {}, parts = String(res0['case']).split('/');\n"
    "      var tol = '\\u2014';\n"
    "      kreps.forEach(function (r) { if (tol === '\\u2014' && row.by[r.tag]) tol = tolerance(row.by[r.tag]); });\n"
    "      var cells = [td(p.op || parts[0]), td(p.dtype || parts[1] || ''), td(el('span', {cls: 'mono', text: p.shape || parts.slice(2).join('/')}), 'shape'),\n"
    "                   td(res0.backend), el('td', {cls: 'tol', text: tol})];\n"
    "      var base = row.by[kreps[0].tag];\n"
    "      kreps.forEach(function (r, j) {\n"
    "        var res = row.by[r.tag];\n"
    "        if (!res) {\n"
    "          for (var k = 0; k < cols.length + (j > 0 ? 1 : 0); k++) cells.push(tdn('\\u2014'));\n"
    "          return;\n"
    "        }\n"
    "        var c = check(res, 'conformance');\n"
    "        var conf = c ? (c.passed ? 'pass' : 'fail') : res.status;\n"
    "        var used = c && num(c.value) && num(c.limit) && c.limit > 0 ? '; ' + pct(c.value / c.limit) + ' of the tolerance used' : '';\n"
    "        cells.push(el('td', {cls: conf, title: (c && c.detail ? c.detail + used : (res.message || null)), text: conf}));\n"
    "        var ea = metric(res, 'max_abs_err'), er = metric(res, 'max_rel_err');\n"
    "        cells.push(tdn(ea === null && er === null ? '\\u2014' : fmt(ea, 2) + ' / ' + fmt(er, 2)));\n"
    "        cells.push(tdn(fmt(metric(res, 'time_us'), 4)));\n"
    "        if (j > 0) cells.push(base ? deltaCell(metric(res, 'time_us'), metric(base, 'time_us'), false, kreps[0].tag, verdictOf(kreps[0], r, res, 'time_us')) : tdn('\\u2014'));\n"
    "        cells.push(tdn(fmt(metric(res, 'gflops'), 4)));\n"
    "        cells.push(tdn(fmt(metric(res, 'gbps'), 4)));\n"
    "        cells.push(peakCell(metric(res, 'fraction_of_peak')));\n"
    "      });\n"
    "      tb.appendChild(el('tr', {}, cells));\n"
    "    });\n"
    "    var table = el('table', {id: 'kernels-table', cls: 'dense'}, [el('thead', {}, [h1, h2]), tb]);\n"
    "    return [el('p', {cls: 'note', text: 'A result conforms when |a \\u2212 e| \\u2264 atol + rtol\\u00b7|e| for every element (e: the fp64 reference); near zero atol dominates, so a large relative error can pass. Hover a conformance cell for its check.' +\n"
    "              (kreps.length > 1 ? ' \\u0394 \\u00b5s: the change against ' + kreps[0].tag + ' with gauntlet compare\\u2019s verdict under it, which also gives the colour (red slower, green faster, amber undecided); a time under the timing floor is not gated, and one run a side decides only large changes.' : '')}),\n"
    "            el('div', {cls: 'scroll'}, table)];\n"
    "  });\n"
    "\n"
    "  var kt = document.getElementById('kernels-table');\n"
    "  if (kt) document.body.setAttribute('data-kernels-width', String(kt.offsetWidth));\n"
    "  /* how long the page took to load, from navigation to the load event (file read,\n"
    "     parse, every script), and the renderer alone: docs/html-report.md measures pages\n"
    "     with them */\n"
    "  window.addEventListener('load', function () {\n"
    "    if (window.performance) document.body.setAttribute('data-load-ms', String(Math.round(performance.now())));\n"
    "  });\n"
    "  /* the reference labels as drawn: how many overlap another label or a curve (each\n"
    "     chart's data-label-overlaps; the test requires none) */\n"
    "  function labelOverlaps(svg) {\n"
    "    var boxes = [].slice.call(svg.querySelectorAll('text.ref-label')).map(function (t) { return t.getBBox(); });\n"
    "    if (!boxes.length) return 0;\n"
    "    var n = 0;\n"
    "    function inside(x, y, b, m) { return x >= b.x - m && x <= b.x + b.width + m && y >= b.y - m && y <= b.y + b.height + m; }\n"
    "    boxes.forEach(function (a, i) {\n"
    "      boxes.slice(i + 1).forEach(function (b) { if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) n++; });\n"
    "    });\n"
    "    /* each curve's segments as drawn (its path: M x y L x y ...) */\n"
    "    svg.querySelectorAll('path.series').forEach(function (p) {\n"
    "      var v = (p.getAttribute('d') || '').split(/[ML ]+/).filter(function (t) { return t !== ''; }).map(Number), segs = [];\n"
    "      for (var k = 0; k + 1 < v.length; k += 2) segs.push([v[k], v[k + 1], v[k + 2 < v.length ? k + 2 : k], v[k + 3 < v.length ? k + 3 : k + 1]]);\n"
    "      boxes.forEach(function (b) {\n"
    "        var box = [b.x, b.y, b.x + b.width, b.y + b.height];\n"
    "        if (segs.some(function (g) { return segHits(g, box); })) n++;\n"
    "      });\n"
    "    });\n"
    "    svg.querySelectorAll('circle').forEach(function (c) {\n"
    "      boxes.forEach(function (b) { if (inside(+c.getAttribute('cx'), +c.getAttribute('cy'), b, +c.getAttribute('r'))) n++; });\n"
    "    });\n"
    "    return n;\n"
    "  }\n"
    "  document.querySelectorAll('svg[data-chart]').forEach(function (svg) {\n"
    "    try { svg.setAttribute('data-label-overlaps', String(labelOverlaps(svg))); } catch (e) { errors.push('label check: ' + e); }\n"
    "  });\n"
    "  document.body.setAttribute('data-render-ms', String(Math.round((window.performance ? performance.now() : Date.now()) - t0)));\n"
    "  document.body.setAttribute('data-rendered', '1');\n";
/* after the sections of other files (the per-op profile's) */
static const char g_js_end[] =
    "  finish();\n"
    "})();\n";
/* clang-format on */

gt_status gt_html_check_report(const char *path) {
    gt_report_doc *d = NULL;
    GT_TRY(gt_report_read(path, NULL, &d));
    gt_report_doc_free(d);
    return GT_OK;
}

/* JSON inside <script>: the HTML parser ends the element at the first
 * "</script" whatever the quoting, and "<!--" can hide that end. In JSON a
 * '<' only occurs inside strings, where \u003c means the same character, so
 * replacing every one keeps the document equal and the element intact. */
static void put_script_json(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '<')
            fputs("\\u003c", f);
        else
            fputc(*s, f);
    }
}

/* <script type="application/json" id="ID">TEXT</script>; nothing when text is NULL */
static void put_json_element(FILE *f, const char *id, const char *text) {
    if (!text) return;
    fprintf(f, "<script type=\"application/json\" id=\"%s\">", id);
    put_script_json(f, text);
    fputs("</script>\n", f);
}

/* A report as the page embeds it. full: the document unchanged. Otherwise
 * what the page draws, in fewer bytes: every metric as its value alone
 * (the page reads no unit, sample, min or max: they are for compare, which
 * reads the report files), the results' numbers to 6 significant digits
 * (the page shows at most 6), the profile parts without their per-step
 * samples, the environment without the hwloc XML (its digest stands for
 * it), of the per-step series only the loss; run and env keep full precision
 * (run.start_unix and end_unix give a duration). Returns a new string (free),
 * NULL when out of memory. */
static char *page_text(json_t *doc, int full) {
    if (full) return json_dumps(doc, JSON_COMPACT);
    json_t *d = json_deep_copy(doc);
    if (!d) return NULL;
    json_object_del(json_object_get(d, "env"), "topology_xml");
    size_t i;
    json_t *res;
    json_array_foreach(json_object_get(d, "results"), i, res) {
        const char *k;
        json_t *m;
        json_object_foreach(json_object_get(res, "metrics"), k, m) {
            json_t *v = json_is_object(m) ? json_object_get(m, "value") : NULL;
            json_object_set(json_object_get(res, "metrics"), k,
                            json_is_number(v) ? v : json_null());
        }
        gt_html_profile_drop_samples(res);
        /* of the per-step series the page draws the loss (lr, grad_norm, ms: two thirds
           of a training's series, are for other tools) */
        json_t *ser = json_object_get(res, "series");
        json_t *loss = json_object_get(ser, "loss");
        if (ser)
            json_object_set_new(res, "series",
                                loss ? json_pack("{s:O}", "loss", loss) : json_object());
    }
    /* the members in their order, results rounded */
    size_t cap = 1 << 16, len = 0;
    char *out = malloc(cap);
    const char *k;
    json_t *v;
    int first = 1, ok = out != NULL;
    if (ok) out[len++] = '{';
    json_object_foreach(d, k, v) {
        json_t *key = json_string(k);
        char *kt = key ? json_dumps(key, JSON_ENCODE_ANY) : NULL;
        size_t prec = strcmp(k, "results") == 0 ? JSON_REAL_PRECISION(6) : 0;
        char *vt = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | prec);
        size_t need = (kt ? strlen(kt) : 0) + (vt ? strlen(vt) : 0) + 3;
        if (ok && len + need + 2 > cap) {
            while (len + need + 2 > cap)
                cap *= 2;
            char *t = realloc(out, cap);
            if (t) out = t;
            ok = t != NULL;
        }
        if (ok && kt && vt) len += (size_t)sprintf(out + len, "%s%s:%s", first ? "" : ",", kt, vt);
        ok = ok && kt && vt;
        first = 0;
        free(kt);
        free(vt);
        json_decref(key);
    }
    json_decref(d);
    if (!ok) {
        free(out);
        return NULL;
    }
    out[len++] = '}';
    out[len] = '\0';
    return out;
}

static void write_head(FILE *f, const char *const *paths, int n, const char *title) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", f);
    /* the promise that the page works offline, kept by the browser: nothing
     * outside this file may be fetched */
    fputs("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n",
          f);
    fputs("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"gauntlet report\">\n<title>",
          f);
    gt_xml_escape(f, title);
    fputs("</title>\n<style>\n", f);
    fputs(g_css, f);
    fputs("</style>\n</head>\n<body data-render-errors=\"pending\">\n<header><h1>", f);
    gt_xml_escape(f, title);
    fprintf(f, "</h1><div class=\"sub\">%d report%s: ", n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        fprintf(f, "%sR%d <span class=\"mono\">", i ? ", " : "", i + 1);
        gt_xml_escape(f, paths[i]);
        fputs("</span>", f);
    }
    fputs("</div></header>\n<noscript><p>This page draws its tables and charts with "
          "JavaScript, which is off. The reports are embedded in the file as JSON.</p>"
          "</noscript>\n<main id=\"app\"></main>\n",
          f);
}

typedef struct page {
    gt_report_doc **rd;
    const char *const *paths;
    int n, full;
    const char *title;
    char *history_json, *verdicts_json;
} page;

static gt_status write_page(FILE *f, const page *p) {
    write_head(f, p->paths, p->n, p->title);
    for (int i = 0; i < p->n; i++) {
        char *text = page_text(gt_report_doc_json(p->rd[i]), p->full);
        if (!text) return GT_ERR(GT_ERR_OOM, "no memory for the page's copy of '%s'", p->paths[i]);
        fprintf(f, "<script type=\"application/json\" id=\"report-%d\" data-file=\"", i);
        gt_xml_escape(f, p->paths[i]);
        fputs("\">", f);
        put_script_json(f, text);
        fputs("</script>\n", f);
        free(text);
    }
    put_json_element(f, "history", p->history_json);   /* reports/html_history.c */
    put_json_element(f, "verdicts", p->verdicts_json); /* reports/html_verdicts.c */
    gt_html_predict_write(f, p->rd, p->n);
    fputs("<script>\n", f);
    fputs(g_axis_js, f);
    fputs(g_js, f);
    fputs(gt_html_profile_js, f);
    fputs(g_js_end, f);
    fputs("</script>\n", f);
    if (p->history_json) fprintf(f, "<script>\n%s</script>\n", gt_html_history_js);
    fputs("</body>\n</html>\n", f);
    return GT_OK;
}

gt_status gt_html_write(const char *out_path, const char *const *paths, int n, const char *title,
                        int full) {
    return gt_html_write_history(out_path, paths, n, title, full, NULL);
}

gt_status gt_html_write_history(const char *out_path, const char *const *paths, int n,
                                const char *title, int full, const gt_html_history *h) {
    if (h && !h->db) h = NULL;
    if (n < 1 && !h) return GT_ERR(GT_ERR_INVALID, "no report to show");
    if (!out_path || !out_path[0]) return GT_ERR(GT_ERR_INVALID, "no output file");
    page p = {.paths = paths,
              .n = n,
              .full = full,
              .title = title && title[0] ? title : "gauntlet report"};
    p.rd = calloc((size_t)n + 1, sizeof *p.rd);
    if (!p.rd) return GT_ERR(GT_ERR_OOM, "no memory");
    gt_status s = GT_OK;
    for (int i = 0; i < n && s == GT_OK; i++)
        s = gt_report_read(paths[i], NULL, &p.rd[i]);
    if (s == GT_OK && h) s = gt_html_history_json(h, &p.history_json);
    if (s == GT_OK) s = gt_html_verdicts_json(p.rd, paths, n, &p.verdicts_json);
    if (s == GT_OK) {
        gt_atomic_file af;
        s = gt_atomic_open(out_path, "", "choose a writable --html path", &af);
        if (s == GT_OK) {
            s = write_page(af.f, &p);
            if (s == GT_OK)
                s = gt_atomic_commit(&af);
            else
                gt_atomic_discard(&af);
        }
    }
    free(p.history_json);
    free(p.verdicts_json);
    for (int i = 0; i < n; i++)
        gt_report_doc_free(p.rd[i]);
    free(p.rd);
    return s;
}
