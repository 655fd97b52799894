#!/usr/bin/env bash
# An offline look at gauntlet's Chrome traces (docs/profile.md, "Looking at a
# trace"): writes one self-contained HTML page that embeds the trace files
# given and draws them on a canvas, a row per rank and track, the slices of
# the chosen steps with their names, a time axis in ms; with --png, headless
# Chromium (as harness/tests/html.sh runs it) screenshots the page.
# chrome://tracing and ui.perfetto.dev open the same files where they can be
# reached; this page is for a machine without either.
#
#   ci/trace_view.sh [--steps A-B] [--png OUT.png] OUT.html TRACE.json...
#
# --steps A-B: the steps drawn (default 2-3: the first is the warm-up).
set -euo pipefail
steps=2-3
png=
while [ $# -gt 0 ]; do
    case $1 in
        --steps) steps=$2; shift 2 ;;
        --png) png=$2; shift 2 ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) break ;;
    esac
done
if [ $# -lt 2 ]; then
    echo "usage: ci/trace_view.sh [--steps A-B] [--png OUT.png] OUT.html TRACE.json..." >&2
    exit 2
fi
out=$1
shift
[[ $steps =~ ^[0-9]+-[0-9]+$ ]] || { echo "trace_view: --steps '$steps': expected A-B, e.g. 2-3" >&2; exit 2; }
for t in "$@"; do
    [ -r "$t" ] || { echo "trace_view: cannot read '$t'" >&2; exit 2; }
done
{
    cat <<'EOF'
<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>gauntlet trace</title>
<style>body{margin:10px 14px;font:13px system-ui,'DejaVu Sans',Arial,sans-serif;color:#1d232b}
h1{font-size:16px;margin:0 0 4px}.sub{color:#5f6b7a;font-size:12px;margin-bottom:6px}
#err{color:#b3261e;white-space:pre-wrap}</style></head>
<body data-rendered="0"><h1>gauntlet trace</h1><div class="sub" id="sub"></div><pre id="err"></pre>
<canvas id="c"></canvas>
EOF
    i=0
    for t in "$@"; do
        printf '<script type="application/json" id="trace-%d" data-file="%s">' "$i" "$(basename "$t")"
        # JSON inside <script>: '<' only occurs in strings, where \u003c means the same
        sed 's/</\\u003c/g' "$t"
        printf '</script>\n'
        i=$((i + 1))
    done
    printf '<script>var STEPS = [%s, %s];\n' "${steps%-*}" "${steps#*-}"
    cat <<'EOF'
(function () {
  try {
    var ev = [], files = [];
    document.querySelectorAll('script[id^="trace-"]').forEach(function (n) {
      var t = JSON.parse(n.textContent);
      if (!Array.isArray(t)) t = t.traceEvents || [];
      files.push(n.getAttribute('data-file') + ' (' + t.length + ' events)');
      ev = ev.concat(t);
    });
    var pname = {}, tname = {}, rows = {}, order = [];
    ev.forEach(function (e) {
      if (e.ph === 'M' && e.name === 'process_name') pname[e.pid] = e.args.name;
      if (e.ph === 'M' && e.name === 'thread_name') tname[e.pid + ':' + e.tid] = e.args.name;
    });
    var xs = ev.filter(function (e) {
      return e.ph === 'X' && e.args && e.args.step >= STEPS[0] && e.args.step <= STEPS[1];
    });
    if (!xs.length) throw new Error('no slices of steps ' + STEPS[0] + '-' + STEPS[1]);
    var t0 = Infinity, t1 = -Infinity;
    xs.forEach(function (e) {
      t0 = Math.min(t0, e.ts); t1 = Math.max(t1, e.ts + e.dur);
      var k = e.pid + ':' + e.tid;
      if (!(k in rows)) { rows[k] = []; order.push(k); }
      rows[k].push(e);
    });
    order.sort(function (a, b) { var x = a.split(':'), y = b.split(':'); return x[0] - y[0] || x[1] - y[1]; });
    /* nesting within a row: a slice inside the one before it goes one level down */
    var lanes = 0, layout = [];
    order.forEach(function (k) {
      var s = rows[k].sort(function (a, b) { return a.ts - b.ts || b.dur - a.dur; }), stack = [], depth = 0;
      s.forEach(function (e) {
        while (stack.length && stack[stack.length - 1].ts + stack[stack.length - 1].dur <= e.ts) stack.pop();
        e._d = stack.length; depth = Math.max(depth, stack.length + 1); stack.push(e);
      });
      layout.push({k: k, first: lanes, n: depth, ev: s});
      lanes += depth;
    });
    var L = 250, W = 1500, LH = 20, top = 28, H = top + lanes * LH + 40 + layout.length * 6;
    var c = document.getElementById('c'), dpr = window.devicePixelRatio || 1;
    c.width = (L + W + 20) * dpr; c.height = H * dpr; c.style.width = (L + W + 20) + 'px'; c.style.height = H + 'px';
    var g = c.getContext('2d'); g.scale(dpr, dpr); g.font = '11px system-ui, DejaVu Sans, Arial, sans-serif';
    function X(t) { return L + (t - t0) / (t1 - t0) * W; }
    var PAL = ['#4e79a7','#f28e2b','#e15759','#76b7b2','#59a14f','#edc948','#b07aa1','#ff9da7','#9c755f','#bab0ac',
               '#1f77b4','#2ca02c','#d62728','#9467bd','#8c564b','#17becf'];
    function color(name) { if (/^step /.test(name)) return '#d5dbe3'; var h = 0; for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0; return PAL[h % PAL.length]; }
    /* time axis, ms from the first slice drawn */
    var span = (t1 - t0) / 1000, step = Math.pow(10, Math.floor(Math.log10(span / 8))), y = top - 8;
    if (span / step > 16) step *= 5; else if (span / step > 8) step *= 2;
    g.fillStyle = '#5f6b7a'; g.strokeStyle = '#e6e9ee';
    for (var v = 0; v <= span + 1e-9; v += step) {
      var x = X(t0 + v * 1000);
      g.beginPath(); g.moveTo(x, top - 4); g.lineTo(x, H - 30); g.stroke();
      g.fillText(+v.toFixed(3) + ' ms', x + 2, y);
    }
    var yy = top, drawn = 0;
    layout.forEach(function (r) {
      var parts = r.k.split(':');
      g.fillStyle = '#1d232b';
      g.fillText((pname[parts[0]] || 'pid ' + parts[0]) + ' / ' + (tname[r.k] || 'tid ' + parts[1]), 6, yy + 14);
      r.ev.forEach(function (e) {
        var x0 = X(e.ts), w = Math.max(1, X(e.ts + e.dur) - x0), ey = yy + e._d * LH;
        g.fillStyle = color(e.name); g.fillRect(x0, ey + 2, w, LH - 4);
        if (w > 40) {
          g.save(); g.beginPath(); g.rect(x0, ey, w, LH); g.clip();
          g.fillStyle = /^step /.test(e.name) ? '#1d232b' : '#fff';
          var label = e.name + (e.args && e.args.bytes !== undefined && e.cat === 'comm' ? ' ' + e.args.bytes + ' B' : '');
          g.fillText(label, x0 + 3, ey + 14); g.restore();
        }
        drawn++;
      });
      yy += r.n * LH + 6;
      g.strokeStyle = '#d5dbe3'; g.beginPath(); g.moveTo(0, yy - 3); g.lineTo(L + W + 20, yy - 3); g.stroke();
    });
    document.getElementById('sub').textContent = files.join(', ') + ': steps ' + STEPS[0] + '\u2013' + STEPS[1] +
      ', ' + drawn + ' slices, ' + (span).toFixed(3) + ' ms; each row a rank\u2019s track (Chrome trace pid / tid)';
    document.body.setAttribute('data-slices', String(drawn));
    document.body.setAttribute('data-rendered', '1');
  } catch (e) {
    document.getElementById('err').textContent = 'could not draw the trace: ' + e;
    document.body.setAttribute('data-rendered', 'error');
  }
})();
</script></body></html>
EOF
} >"$out"
echo "trace_view: $out"
if [ -n "$png" ]; then
    [ -x /usr/bin/chromium ] || { echo "trace_view: /usr/bin/chromium is absent: no --png" >&2; exit 2; }
    home=$(mktemp -d)
    trap 'rm -rf "$home"' EXIT
    HOME=$home timeout 90 /usr/bin/chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --no-first-run --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$home/p" --virtual-time-budget=5000 --window-size=1790,560 \
        --screenshot="$png" "file://$(realpath "$out")" 2>/dev/null >/dev/null
    HOME=$home timeout 90 /usr/bin/chromium --headless --no-sandbox --disable-gpu \
        --user-data-dir="$home/q" --virtual-time-budget=5000 --dump-dom "file://$(realpath "$out")" \
        2>/dev/null | grep -o 'data-rendered="[^"]*" data-slices="[0-9]*"\|data-slices="[0-9]*" data-rendered="[^"]*"\|data-rendered="error"' || true
    echo "trace_view: $png"
fi
