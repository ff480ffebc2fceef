// The style sheet and timeline script of the HTML report. The script is plain ES5-level JavaScript
// with no dependencies: it draws only the visible time range, coalesces boxes narrower than a pixel
// into runs, and finds the box under the mouse by binary search, so 100k+ events stay interactive.
#include "targets/nc/profile/report_page.h"

namespace tessel::nc {

std::string_view reportStyle() {
  return R"css(body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 16px 20px; color: #222; }
h1 { font-size: 20px; margin: 0 0 4px 0; }
.subtitle { color: #666; margin: 0 0 12px 0; }
.tables { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
table { border-collapse: collapse; font-size: 13px; margin-bottom: 12px; }
th, td { padding: 3px 10px; border-bottom: 1px solid #e3e3e8; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
th { background: #f0f0f4; font-weight: 600; }
details { margin-bottom: 12px; font-size: 13px; }
#toolbar { margin: 8px 0; font-size: 13px; }
#toolbar .hint { color: #777; margin-left: 12px; }
#range { font-family: ui-monospace, Menlo, Consolas, monospace; margin-left: 8px; }
#note { color: #8a5300; font-size: 13px; margin: 4px 0; }
#note:empty { display: none; }
#legend { font-size: 12px; margin: 4px 0 6px 0; }
#legend span.swatch { display: inline-block; width: 12px; height: 12px; margin: 0 4px -2px 12px; border-radius: 2px; }
#timeline { position: relative; border: 1px solid #d0d0d8; user-select: none; }
#timeline-canvas { display: block; width: 100%; cursor: grab; }
#timeline-canvas.dragging { cursor: grabbing; }
#tooltip { position: absolute; pointer-events: none; background: rgba(255, 255, 255, 0.97); border: 1px solid #aaa;
  border-radius: 4px; padding: 6px 8px; font-size: 12px; max-width: 640px;
  box-shadow: 0 2px 6px rgba(0, 0, 0, 0.2); z-index: 2; }
#tooltip .title { font-weight: 600; }
#tooltip .insn { font-family: ui-monospace, Menlo, Consolas, monospace; white-space: pre-wrap; word-break: break-all;
  margin-top: 4px; }
)css";
}

std::string_view reportScript() {
  return R"js((function () {
  'use strict';
  var data = JSON.parse(document.getElementById('profile-data').textContent);
  var ev = data.events;
  var count = ev.start.length;
  var COLORS = { PE: '#4e79a7', ACT: '#f28e2b', DVE: '#59a14f', POOL: '#b07aa1', SP: '#9c755f', DMA: '#e15759' };
  var OTHER_COLOR = '#79706e';
  var LABEL_W = 160, AXIS_H = 24, LANE_H = 18, ROW_PAD = 3, MIN_LABEL_PX = 48, MIN_GAP_PX = 4;

  var start = new Float64Array(count), end = new Float64Array(count);
  for (var i = 0; i < count; i++) { start[i] = ev.start[i]; end[i] = ev.start[i] + ev.dur[i]; }

  // Rows: one per track, one lane per set of overlapping events; lanes hold event indices by start.
  var rows = [], y = AXIS_H;
  data.tracks.forEach(function (t) {
    var row = { name: t.name, engine: t.engine, lanes: [], y: y, h: t.lanes * LANE_H + 2 * ROW_PAD };
    for (var l = 0; l < t.lanes; l++) row.lanes.push([]);
    rows.push(row);
    y += row.h;
  });
  var height = y + 2;
  for (i = 0; i < count; i++) rows[ev.track[i]].lanes[ev.lane[i]].push(i);
  rows.forEach(function (row) { row.lanes = row.lanes.map(function (l) { return Int32Array.from(l); }); });

  var fullEnd = data.totalNs > 0 ? data.totalNs : 1;
  for (i = 0; i < count; i++) if (end[i] > fullEnd) fullEnd = end[i];
  var view = { t0: 0, t1: fullEnd };
  var canvas = document.getElementById('timeline-canvas');
  var ctx = canvas.getContext('2d');
  var tooltip = document.getElementById('tooltip');
  var container = document.getElementById('timeline');
  document.getElementById('note').textContent = data.note || '';

  var legend = document.getElementById('legend');
  var seen = {};
  rows.forEach(function (row) {
    if (seen[row.engine]) return;
    seen[row.engine] = true;
    var swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = COLORS[row.engine] || OTHER_COLOR;
    legend.appendChild(swatch);
    legend.appendChild(document.createTextNode(row.engine));
  });

  function plotWidth() { return Math.max(canvas.clientWidth - LABEL_W, 10); }
  function nsPerPx() { return (view.t1 - view.t0) / plotWidth(); }

  // First position in a lane whose event ends at or after t (ends increase along a lane).
  function firstEndingAfter(lane, t) {
    var lo = 0, hi = lane.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (end[lane[mid]] < t) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  function formatNs(ns) {
    var a = Math.abs(ns);
    if (a === 0) return '0';
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(3) + ' us';
    return ns.toFixed(a >= 10 ? 1 : 3) + ' ns';
  }

  function tickStep(span, ticks) {
    var raw = span / Math.max(ticks, 1);
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }

  function draw() {
    var dpr = window.devicePixelRatio || 1;
    var w = canvas.clientWidth || 800;
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.height = height + 'px';
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, height);
    var pw = Math.max(w - LABEL_W, 10);
    var scale = pw / (view.t1 - view.t0);
    ctx.font = '12px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    rows.forEach(function (row, k) {
      ctx.fillStyle = k % 2 ? '#f6f6f9' : '#ffffff';
      ctx.fillRect(0, row.y, w, row.h);
      ctx.fillStyle = '#222';
      ctx.fillText(row.name, 8, row.y + row.h / 2);
    });
    ctx.fillStyle = '#f0f0f4';
    ctx.fillRect(0, 0, w, AXIS_H);
    var step = tickStep(view.t1 - view.t0, pw / 110);
    ctx.strokeStyle = '#e0e0e6';
    ctx.fillStyle = '#555';
    ctx.lineWidth = 1;
    for (var t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
      var tx = Math.round(LABEL_W + (t - view.t0) * scale) + 0.5;
      ctx.beginPath(); ctx.moveTo(tx, AXIS_H - 5); ctx.lineTo(tx, height); ctx.stroke();
      var tick = formatNs(t);
      if (tx + 3 + ctx.measureText(tick).width < w) ctx.fillText(tick, tx + 3, AXIS_H / 2);
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, AXIS_H, pw, height - AXIS_H);
    ctx.clip();
    var stalls = [], labels = [];
    rows.forEach(function (row) {
      var color = COLORS[row.engine] || OTHER_COLOR;
      row.lanes.forEach(function (lane, l) {
        var y0 = row.y + ROW_PAD + l * LANE_H + 1, h = LANE_H - 2;
        var runA = -1, runB = -1;
        ctx.fillStyle = color;
        for (var p = firstEndingAfter(lane, view.t0); p < lane.length; p++) {
          var e = lane[p];
          if (start[e] > view.t1) break;
          var x0 = LABEL_W + (start[e] - view.t0) * scale, x1 = LABEL_W + (end[e] - view.t0) * scale;
          if (x1 - x0 < 1) x1 = x0 + 1;
          if (ev.insn[e] >= 0 && ev.stallNs[e] * scale >= 3) stalls.push([e, y0 + h / 2]);
          if (x1 - x0 >= MIN_LABEL_PX) labels.push([e, x0, x1, y0 + h / 2]);
          if (x1 - x0 >= MIN_GAP_PX) {
            // Wide enough to show its own edges: a 1 px gap keeps back-to-back boxes apart.
            if (runB >= 0) ctx.fillRect(runA, y0, runB - runA, h);
            runB = -1;
            ctx.fillRect(x0, y0, x1 - x0 - 1, h);
            continue;
          }
          if (runB >= 0 && x0 <= runB + 0.5) { if (x1 > runB) runB = x1; continue; }
          if (runB >= 0) ctx.fillRect(runA, y0, runB - runA, h);
          runA = x0; runB = x1;
        }
        if (runB >= 0) ctx.fillRect(runA, y0, runB - runA, h);
      });
    });
    ctx.fillStyle = 'rgba(90, 90, 90, 0.45)';
    stalls.forEach(function (s) {
      var e = s[0], x1 = LABEL_W + (start[e] - view.t0) * scale, x0 = x1 - ev.stallNs[e] * scale;
      ctx.fillRect(x0, s[1] - 1, x1 - x0, 2);
    });
    ctx.fillStyle = '#ffffff';
    ctx.font = '11px system-ui, sans-serif';
    labels.forEach(function (b) {
      var left = Math.max(b[1], LABEL_W) + 3, room = Math.min(b[2], LABEL_W + pw) - left - 3;
      if (room < 20) return;
      var text = data.strings[ev.name[b[0]]];
      while (text.length > 1 && ctx.measureText(text).width > room) text = text.slice(0, -2) + '\u2026';
      ctx.fillText(text, left, b[3]);
    });
    ctx.restore();
    ctx.strokeStyle = '#c8c8d0';
    ctx.beginPath(); ctx.moveTo(LABEL_W + 0.5, 0); ctx.lineTo(LABEL_W + 0.5, height); ctx.stroke();
    document.getElementById('range').textContent =
        formatNs(view.t0) + ' \u2013 ' + formatNs(view.t1) + '  (' + formatNs(view.t1 - view.t0) + ')';
  }

  var drawQueued = false;
  function requestDraw() {
    if (drawQueued) return;
    drawQueued = true;
    window.requestAnimationFrame(function () { drawQueued = false; draw(); });
  }

  function setView(t0, t1) {
    var full = fullEnd, span = Math.min(Math.max(t1 - t0, Math.max(full * 1e-9, 1e-3)), full);
    t0 = Math.min(Math.max(t0, 0), full - span);
    view = { t0: t0, t1: t0 + span };
    requestDraw();
  }

  function eventAt(clientX, clientY) {
    var rect = canvas.getBoundingClientRect();
    var x = clientX - rect.left, yy = clientY - rect.top;
    if (x < LABEL_W) return -1;
    for (var r = 0; r < rows.length; r++) {
      var row = rows[r];
      if (yy < row.y + ROW_PAD || yy >= row.y + row.h - ROW_PAD) continue;
      var lane = row.lanes[Math.floor((yy - row.y - ROW_PAD) / LANE_H)];
      if (!lane) return -1;
      var t = view.t0 + (x - LABEL_W) * nsPerPx(), tol = 2 * nsPerPx();
      var p = firstEndingAfter(lane, t - tol);
      return p < lane.length && start[lane[p]] <= t + tol ? lane[p] : -1;
    }
    return -1;
  }

  function line(parent, className, text) {
    var div = document.createElement('div');
    if (className) div.className = className;
    div.textContent = text;
    parent.appendChild(div);
  }

  function showTooltip(e, clientX, clientY) {
    tooltip.textContent = '';
    var insn = ev.insn[e];
    line(tooltip, 'title', data.strings[ev.name[e]] + (insn >= 0 ? '  #' + insn : ''));
    line(tooltip, '', data.tracks[ev.track[e]].name + ': ' + formatNs(start[e]) + ' \u2192 ' + formatNs(end[e]) +
         '  (' + formatNs(end[e] - start[e]) + ')');
    if (insn < 0 && ev.stallNs[e] > 0) line(tooltip, '', 'stalls: ' + formatNs(ev.stallNs[e]) + ' in total');
    else if (ev.stallNs[e] > 0 || ev.stall[e] > 0)
      line(tooltip, '', 'stall: ' + data.stallReasons[ev.stall[e]] + ', ' + formatNs(ev.stallNs[e]));
    if (ev.wait[e] >= 0) line(tooltip, '', 'waited on ' + data.strings[ev.wait[e]]);
    if (ev.text[e] >= 0) line(tooltip, 'insn', data.strings[ev.text[e]]);
    tooltip.hidden = false;
    var box = container.getBoundingClientRect();
    var left = clientX - box.left + 14, top = clientY - box.top + 14;
    if (left + tooltip.offsetWidth > box.width) left = Math.max(0, clientX - box.left - tooltip.offsetWidth - 14);
    tooltip.style.left = left + 'px';
    tooltip.style.top = top + 'px';
  }

  var drag = null;
  canvas.addEventListener('wheel', function (e) {
    e.preventDefault();
    var rect = canvas.getBoundingClientRect();
    var x = Math.max(e.clientX - rect.left - LABEL_W, 0);
    var tm = view.t0 + x * nsPerPx();
    var delta = e.deltaMode === 1 ? e.deltaY * 33 : e.deltaMode === 2 ? e.deltaY * 400 : e.deltaY;
    var f = Math.exp(delta * 0.0015);
    setView(tm - (tm - view.t0) * f, tm + (view.t1 - tm) * f);
  }, { passive: false });
  canvas.addEventListener('mousedown', function (e) {
    drag = { x: e.clientX, t0: view.t0, t1: view.t1, perPx: nsPerPx() };
    canvas.classList.add('dragging');
    tooltip.hidden = true;
  });
  window.addEventListener('mouseup', function () { drag = null; canvas.classList.remove('dragging'); });
  window.addEventListener('mousemove', function (e) {
    if (drag) {
      var dt = (e.clientX - drag.x) * drag.perPx;
      setView(drag.t0 - dt, drag.t1 - dt);
      return;
    }
    if (e.target !== canvas) { tooltip.hidden = true; return; }
    var hit = eventAt(e.clientX, e.clientY);
    if (hit < 0) tooltip.hidden = true; else showTooltip(hit, e.clientX, e.clientY);
  });
  canvas.addEventListener('mouseleave', function () { tooltip.hidden = true; });
  canvas.addEventListener('dblclick', function () { setView(0, fullEnd); });
  document.getElementById('reset-zoom').addEventListener('click', function () { setView(0, fullEnd); });
  window.addEventListener('resize', requestDraw);

  draw();
  var marker = document.createElement('div');
  marker.id = 'tracks-drawn';
  marker.hidden = true;
  marker.setAttribute('data-tracks', String(rows.length));
  marker.setAttribute('data-events', String(count));
  if (window.location.hash === '#selftest') selfTest(marker);
  document.body.appendChild(marker);

  // Used by the headless-browser test: hovers the first event, zooms and pans with synthetic
  // events, and records what happened on the marker.
  function selfTest(out) {
    var rect = canvas.getBoundingClientRect(), scale = plotWidth() / (view.t1 - view.t0);
    for (var r = 0; r < rows.length; r++) {
      if (!rows[r].lanes[0].length) continue;
      var e = rows[r].lanes[0][0];
      var x = rect.left + LABEL_W + ((start[e] + end[e]) / 2 - view.t0) * scale;
      var yy = rect.top + rows[r].y + ROW_PAD + LANE_H / 2;
      canvas.dispatchEvent(new MouseEvent('mousemove', { clientX: x, clientY: yy, bubbles: true }));
      out.setAttribute('data-hover', tooltip.hidden ? '' : tooltip.textContent);
      break;
    }
    var span = view.t1 - view.t0, cx = rect.left + LABEL_W + plotWidth() / 2, cy = rect.top + AXIS_H + 4;
    canvas.dispatchEvent(new WheelEvent('wheel',
        { clientX: cx, clientY: cy, deltaY: -400, bubbles: true, cancelable: true }));
    out.setAttribute('data-zoom', String(span / (view.t1 - view.t0)));
    var t0 = view.t0;
    canvas.dispatchEvent(new MouseEvent('mousedown', { clientX: cx, clientY: cy, bubbles: true }));
    window.dispatchEvent(new MouseEvent('mousemove', { clientX: cx - 100, clientY: cy, bubbles: true }));
    window.dispatchEvent(new MouseEvent('mouseup', { clientX: cx - 100, clientY: cy, bubbles: true }));
    out.setAttribute('data-pan', String(view.t0 > t0));
    draw();
  }
})();
)js";
}

}  // namespace tessel::nc
