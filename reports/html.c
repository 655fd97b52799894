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

#include "engine/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The renderer: reads every <script id="report-N">, builds the sections,
 * leaves out those with nothing to show, and records any exception in
 * body[data-render-errors] and a #render-errors box (the test reads both). */
static const char g_js[] =
    "'use strict';\n"
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
    "  function metric(res, name) {\n"
    "    var m = res.metrics && res.metrics[name];\n"
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
    "    for (var i = 0; i < u.length; i++) if (metric(res, u[i][0]) !== null) return [metric(res, u[i][0]), u[i][1]];\n"
    "    return [null, ''];\n"
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
    "  function deltaCell(v, base, higherBetter, baseTag) {\n"
    "    if (!num(v) || !num(base) || base === 0) return tdn('\\u2014');\n"
    "    var d = 100 * (v - base) / Math.abs(base);\n"
    "    var cls = 'num';\n"
    "    if (Math.abs(d) >= 5) cls += (d > 0) === higherBetter ? ' better' : ' worse';\n"
    "    /* a change is read to a tenth of a percent, never in exponent form */\n"
    "    var txt = Math.abs(d) < 0.05 ? '0%' : (d > 0 ? '+' : '') + (Math.abs(d) >= 100 ? Math.round(d) : d.toFixed(1)) + '%';\n"
    "    return el('td', {cls: cls, title: 'change against ' + baseTag + ': ' + fmt(d, 4) + '%'}, txt);\n"
    "  }\n"
    "\n"
    "  /* ---- the reports ---- */\n"
    "  var reports = [];\n"
    "  var nodes = document.querySelectorAll('script[type=\"application/json\"][id^=\"report-\"]');\n"
    "  for (var i = 0; i < nodes.length; i++) {\n"
    "    var d = JSON.parse(nodes[i].textContent);\n"
    "    reports.push({tag: 'R' + (i + 1), file: nodes[i].getAttribute('data-file') || '', d: d,\n"
    "                  color: PALETTE[i % PALETTE.length], dash: DASHES[i % DASHES.length],\n"
    "                  results: Array.isArray(d.results) ? d.results : []});\n"
    "  }\n"
    "  var multi = reports.length > 1;\n"
    "  function each(suite, fn) {\n"
    "    reports.forEach(function (r) {\n"
    "      r.results.forEach(function (res) { if (!suite || res.suite === suite) fn(r, res); });\n"
    "    });\n"
    "  }\n"
    "\n"
    "  /* ---- charts: inline SVG, no library ---- */\n"
    "  function niceStep(span, n) {\n"
    "    var raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;\n"
    "    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;\n"
    "  }\n"
    "  function linTicks(lo, hi) {\n"
    "    var s = niceStep(hi - lo || 1, 5), t = [];\n"
    "    for (var v = Math.ceil(lo / s) * s; v <= hi + s * 1e-9; v += s) t.push(Math.abs(v) < s * 1e-9 ? 0 : v);\n"
    "    return t;\n"
    "  }\n"
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
    "    var xt = o.xlog ? logTicks(xr[0], xr[1], o.xbase2) : linTicks(xr[0], xr[1]);\n"
    "    var yt = o.ylog ? logTicks(yr[0], yr[1], false) : linTicks(yr[0], yr[1]);\n"
    "    var xf = o.xfmt || fmtAxis, yf = o.yfmt || fmtAxis;\n"
    "    xt.forEach(function (v) {\n"
    "      var x = X(v).toFixed(1);\n"
    "      svg.appendChild(sv('line', {x1: x, x2: x, y1: T, y2: H - B, cls: 'grid'}));\n"
    "      svg.appendChild(sv('text', {x: x, y: H - B + 14, 'text-anchor': 'middle', text: xf(v)}));\n"
    "    });\n"
    "    yt.forEach(function (v) {\n"
    "      var y = Y(v).toFixed(1);\n"
    "      svg.appendChild(sv('line', {x1: L, x2: W - R, y1: y, y2: y, cls: 'grid'}));\n"
    "      svg.appendChild(sv('text', {x: L - 5, y: +y + 4, 'text-anchor': 'end', text: yf(v)}));\n"
    "    });\n"
    "    svg.appendChild(sv('path', {d: 'M' + L + ' ' + T + 'V' + (H - B) + 'H' + (W - R), cls: 'axis', fill: 'none'}));\n"
    "    svg.appendChild(sv('text', {x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle', text: o.xlabel}));\n"
    "    svg.appendChild(sv('text', {x: 12, y: (T + H - B) / 2, 'text-anchor': 'middle',\n"
    "                                transform: 'rotate(-90 12 ' + (T + H - B) / 2 + ')', text: o.ylabel}));\n"
    "    var placed = [];\n"
    "    (o.refs || []).forEach(function (r) {\n"
    "      if (!num(r.y)) return;\n"
    "      var y = Y(r.y).toFixed(1);\n"
    "      svg.appendChild(sv('line', {x1: L, x2: W - R, y1: y, y2: y, cls: 'ref', 'data-ref': r.label},\n"
    "                         sv('title', {text: r.label + ': ' + fmt(r.y, 6)})));\n"
    "      /* labels of lines closer than a text line go side by side, not on top of each other */\n"
    "      var near = placed.filter(function (py) { return Math.abs(py - y) < 12; }).length;\n"
    "      placed.push(+y);\n"
    "      svg.appendChild(sv('text', {x: W - R - 4 - 150 * near, y: +y - 4, 'text-anchor': 'end', text: r.label}));\n"
    "    });\n"
    "    series.forEach(function (s) {\n"
    "      var d = '';\n"
    "      s.points.forEach(function (p, j) { d += (j ? 'L' : 'M') + X(p[0]).toFixed(1) + ' ' + Y(p[1]).toFixed(1); });\n"
    "      var g = sv('g', {});\n"
    "      g.appendChild(sv('path', {d: d, cls: 'series', stroke: s.color, 'stroke-dasharray': s.dash || null,\n"
    "                                'data-series': o.id + ':' + s.name}, sv('title', {text: s.name})));\n"
    "      if (s.points.length <= 64) {\n"
    "        s.points.forEach(function (p) {\n"
    "          g.appendChild(sv('circle', {cx: X(p[0]).toFixed(1), cy: Y(p[1]).toFixed(1), r: 2.6, fill: s.color},\n"
    "                           sv('title', {text: s.name + ': ' + (p[2] || xf(p[0]) + ', ' + fmt(p[1]))})));\n"
    "        });\n"
    "      }\n"
    "      svg.appendChild(g);\n"
    "    });\n"
    "    var legend = el('div', {cls: 'legend'});\n"
    "    series.forEach(function (s) {\n"
    "      legend.appendChild(el('span', {}, [el('i', {style: 'border-top-color:' + s.color + (s.dash ? ';border-top-style:dashed' : '')}), s.name]));\n"
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
    "      var ok = s.ok === true || (s.fail === 0 && s.error === 0);\n"
    "      tb.appendChild(el('tr', {}, [td(repLabel(r)), tdn(s.total), el('td', {cls: 'num pass', text: s.pass}),\n"
    "        el('td', {cls: 'num' + (s.fail ? ' fail' : ''), text: s.fail}), el('td', {cls: 'num' + (s.skip ? ' skip' : ''), text: s.skip}),\n"
    "        el('td', {cls: 'num' + (s.error ? ' error' : ''), text: s.error}), el('td', {cls: ok ? 'pass' : 'fail', text: ok ? 'ok' : 'FAILED'}),\n"
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
    "      var e = target(it.res);\n"
    "      if (num(e) && F.refs.every(function (x) { return Math.abs(x.y - e) > 1e-9; }))\n"
    "        F.refs.push({y: e, label: (f === 'gpt2' ? 'source entropy ' : 'Bayes-optimal loss ') + fmt(e, 4)});\n"
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
    "          tmulti ? (base ? deltaCell(tp[0], throughput(base)[0], true, treps[0].tag) : tdn('\\u2014')) : null,\n"
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
    "        if (k === 2 && j > 0) h2.appendChild(th('\\u0394 \\u00b5s', 'num', {title: 'change of the time against ' + kreps[0].tag + '; gauntlet compare gives noise-aware verdicts'}));\n"
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
    "        if (j > 0) cells.push(base ? deltaCell(metric(res, 'time_us'), metric(base, 'time_us'), false, kreps[0].tag) : tdn('\\u2014'));\n"
    "        cells.push(tdn(fmt(metric(res, 'gflops'), 4)));\n"
    "        cells.push(tdn(fmt(metric(res, 'gbps'), 4)));\n"
    "        cells.push(peakCell(metric(res, 'fraction_of_peak')));\n"
    "      });\n"
    "      tb.appendChild(el('tr', {}, cells));\n"
    "    });\n"
    "    var table = el('table', {id: 'kernels-table', cls: 'dense'}, [el('thead', {}, [h1, h2]), tb]);\n"
    "    return [el('p', {cls: 'note', text: 'A result conforms when |a \\u2212 e| \\u2264 atol + rtol\\u00b7|e| for every element (e: the fp64 reference); near zero atol dominates, so a large relative error can pass. Hover a conformance cell for its check.'}),\n"
    "            el('div', {cls: 'scroll'}, table)];\n"
    "  });\n"
    "\n"
    "  var kt = document.getElementById('kernels-table');\n"
    "  if (kt) document.body.setAttribute('data-kernels-width', String(kt.offsetWidth));\n"
    "  /* how long the renderer took (docs/html-report.md measures pages with it) */\n"
    "  document.body.setAttribute('data-render-ms', String(Math.round((window.performance ? performance.now() : Date.now()) - t0)));\n"
    "  document.body.setAttribute('data-rendered', '1');\n"
    "  finish();\n"
    "})();\n";
/* clang-format on */

/* Reads the whole file; GT_ERR_IO names the file and why it is unreadable. */
static gt_status read_file(const char *path, char **out, size_t *len) {
    struct stat st;
    if (stat(path, &st) != 0)
        return GT_ERR(GT_ERR_IO, "cannot read report '%s': %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return GT_ERR(GT_ERR_IO, "cannot read report '%s': it is a directory", path);
    FILE *f = fopen(path, "rb");
    if (!f) return GT_ERR(GT_ERR_IO, "cannot read report '%s': %s", path, strerror(errno));
    size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return GT_ERR(GT_ERR_OOM, "no memory for report '%s' (%zu bytes)", path, cap);
    }
    for (;;) {
        if (n == cap) { /* the file grew, or st_size was 0 (a pipe, /proc) */
            char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                fclose(f);
                return GT_ERR(GT_ERR_OOM, "no memory for report '%s'", path);
            }
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    int e = errno;
    fclose(f);
    if (bad) {
        free(buf);
        return GT_ERR(GT_ERR_IO, "cannot read report '%s': %s", path, strerror(e));
    }
    *out = buf;
    *len = n;
    return GT_OK;
}

/* Loads and checks one report; on success *out holds the document. */
static gt_status load_report(const char *path, json_t **out) {
    char *buf = NULL;
    size_t len = 0;
    GT_TRY(read_file(path, &buf, &len));
    json_error_t je;
    json_t *root = json_loadb(buf, len, 0, &je);
    free(buf);
    if (!root) {
        if (len == 0) return GT_ERR(GT_ERR_INVALID, "'%s' is not JSON: the file is empty", path);
        return GT_ERR(GT_ERR_INVALID, "'%s' is not JSON: %s (line %d, column %d)", path, je.text,
                      je.line, je.column);
    }
    const char *why = NULL;
    json_t *ver = json_is_object(root) ? json_object_get(root, "schema_version") : NULL;
    if (!json_is_object(root))
        why = "the top level is not an object";
    else if (!json_is_integer(ver))
        why = "it has no integer \"schema_version\"";
    else if (!json_is_object(json_object_get(root, "run")))
        why = "it has no \"run\" object";
    else if (!json_is_array(json_object_get(root, "results")))
        why = "it has no \"results\" array";
    if (why) {
        json_decref(root);
        return GT_ERR(GT_ERR_INVALID, "'%s' is not a gauntlet report: %s", path, why);
    }
    json_int_t v = json_integer_value(ver);
    if (v > GT_REPORT_SCHEMA_VERSION) {
        json_decref(root);
        return GT_ERR(GT_ERR_INVALID,
                      "'%s' has schema_version %lld, newer than this gauntlet reads (%d): use "
                      "the gauntlet that wrote it, or a newer one",
                      path, (long long)v, GT_REPORT_SCHEMA_VERSION);
    }
    if (v < 1) {
        json_decref(root);
        return GT_ERR(GT_ERR_INVALID, "'%s' is not a gauntlet report: schema_version %lld", path,
                      (long long)v);
    }
    *out = root;
    return GT_OK;
}

gt_status gt_html_check_report(const char *path) {
    json_t *root = NULL;
    GT_TRY(load_report(path, &root));
    json_decref(root);
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

static void write_page(FILE *f, json_t *const *docs, const char *const *paths, int n,
                       const char *title) {
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
    for (int i = 0; i < n; i++) {
        char *text = json_dumps(docs[i], JSON_COMPACT);
        fprintf(f, "<script type=\"application/json\" id=\"report-%d\" data-file=\"", i);
        gt_xml_escape(f, paths[i]);
        fputs("\">", f);
        if (text) put_script_json(f, text);
        fputs("</script>\n", f);
        free(text);
    }
    fputs("<script>\n", f);
    fputs(g_js, f);
    fputs("</script>\n</body>\n</html>\n", f);
}

/* The page draws values, never the samples behind them: leaving them out
 * makes a collectives report's page a third smaller and faster to open. */
static void drop_samples(json_t *doc) {
    size_t i;
    json_t *res;
    json_array_foreach(json_object_get(doc, "results"), i, res) {
        const char *k;
        json_t *m;
        json_object_foreach(json_object_get(res, "metrics"), k, m) {
            if (json_is_object(m)) json_object_del(m, "samples");
        }
    }
}

gt_status gt_html_write(const char *out_path, const char *const *paths, int n, const char *title,
                        int full) {
    if (n < 1) return GT_ERR(GT_ERR_INVALID, "no report to show");
    if (!out_path || !out_path[0]) return GT_ERR(GT_ERR_INVALID, "no output file");
    if (!title || !title[0]) title = "gauntlet report";
    json_t **docs = calloc((size_t)n, sizeof *docs);
    if (!docs) return GT_ERR(GT_ERR_OOM, "no memory");
    gt_status s = GT_OK;
    for (int i = 0; i < n && s == GT_OK; i++) {
        s = load_report(paths[i], &docs[i]);
        if (s == GT_OK && !full) drop_samples(docs[i]);
    }
    if (s == GT_OK) {
        gt_atomic_file af;
        s = gt_atomic_open(out_path, "", "choose a writable --html path", &af);
        if (s == GT_OK) {
            write_page(af.f, docs, paths, n, title);
            s = gt_atomic_commit(&af);
        }
    }
    for (int i = 0; i < n; i++)
        json_decref(docs[i]);
    free(docs);
    return s;
}
