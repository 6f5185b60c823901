// The what-if page's fixed parts: stylesheet and script. The script drives
// the simulator's WebAssembly module (wasm/sim_entry.cc): it builds `--set`
// overrides from the controls, runs the scenario in the page, and draws the
// summary. report/interactive.cc fills in the scenarios, presets and module.
#include "report/interactive.h"

#include <string>

namespace capplan::report {

const char* InteractiveCss() {
  return R"css(
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto;
       max-width: 1180px; padding: 12px 16px; color: #111; line-height: 1.35; }
h1 { font-size: 1.5em; margin: 0.2em 0; } h2 { font-size: 1.1em; margin: 0.8em 0 0.3em; }
p.note { color: #333; font-size: 0.9em; margin: 0.3em 0; }
div.layout { display: grid; gap: 12px 20px; grid-template-columns: minmax(0, 300px) minmax(0, 1fr); }
@media (max-width: 760px) { div.layout { grid-template-columns: minmax(0, 1fr); } }
fieldset { border: 1px solid #ccc; margin: 0 0 8px; padding: 6px 8px; min-width: 0; }
legend { font-weight: 600; font-size: 0.9em; }
label.ctl { display: grid; grid-template-columns: minmax(0, 1fr) 110px; gap: 6px; align-items: center;
            font-size: 0.88em; margin: 3px 0; }
label.ctl input, label.ctl select { width: 100%; box-sizing: border-box; font: inherit; }
label.ctl.wide { grid-template-columns: 64px minmax(0, 1fr); }
label.ctl.changed span { font-weight: 600; color: #0072B2; }
select.wide { width: 100%; font: inherit; }
#error { display: none; background: #fdecea; border-left: 4px solid #D55E00; padding: 6px 10px;
         font-family: ui-monospace, monospace; font-size: 0.88em; overflow-wrap: anywhere; }
#sets { font-family: ui-monospace, monospace; font-size: 0.82em; color: #333; overflow-wrap: anywhere; }
div.cards { display: grid; gap: 8px; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); }
div.card { border: 1px solid #ddd; border-radius: 4px; padding: 6px 8px; background: #fafafa; }
div.card .v { font-size: 1.3em; font-weight: 600; font-variant-numeric: tabular-nums; }
div.card .k { font-size: 0.8em; color: #444; }
div.card.bad .v { color: #D55E00; }
div.charts { display: grid; gap: 8px 16px; grid-template-columns: repeat(auto-fit, minmax(min(100%, 400px), 1fr)); }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart text { font-size: 11px; fill: #111; }
svg.chart .t { font-size: 13px; font-weight: 600; text-anchor: middle; }
svg.chart .m { text-anchor: middle; } svg.chart .e { text-anchor: end; }
svg.chart .grid { stroke: #e3e3e3; } svg.chart .slo { stroke: #D55E00; stroke-width: 1.5; stroke-dasharray: 6 4; }
svg.chart .iv { stroke: #222; stroke-width: 1.2; }
#busy { color: #555; font-size: 0.85em; }
.stale { opacity: 0.35; }
#capplan-whatif { display: none; }
)css";
}

namespace {

// The page's data (scenarios, presets and dtypes the report embeds), its state,
// and reading a dotted path of a scenario document.
constexpr char kScriptState[] = R"js(
'use strict';
const $ = (id) => document.getElementById(id);
const DATA = (id) => JSON.parse($(id).textContent);
const SCENARIOS = DATA('capplan-scenarios');  // [{path, text}]
const PRESETS = DATA('capplan-presets');      // [{label, scenario, values: {dotted: value}}]
const OPTIONS = DATA('capplan-options');      // {dtypes: [...]}
const COLORS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00'];
const state = { mod: null, scenario: null, doc: null, controls: [], history: [], runs: 0 };

function getPath(doc, dotted) {
  let v = doc;
  for (const k of dotted.split('.')) {
    if (v === null || typeof v !== 'object' || !(k in v)) return undefined;
    v = v[k];
  }
  return v;
}
function text(v) { return v === undefined || v === null ? '' : (typeof v === 'string' ? v : JSON.stringify(v)); }
)js";

// The controls: which `--set` paths this scenario offers, their inputs, and
// the overrides that differ from the scenario file.
constexpr char kScriptControls[] = R"js(
// The controls a planner changes, as `--set` paths of this scenario.
function controlsFor(doc) {
  const c = [];
  const w = doc.workload || {};
  if ('concurrency' in w) c.push(['Workload', 'workload.concurrency', 'Concurrency', 'number']);
  if ('request_rate' in w) c.push(['Workload', 'workload.request_rate', 'Request rate (req/s)', 'number']);
  const dt = OPTIONS.dtypes;
  const pools = doc.pd ? [['Prefill pool', 'pd.prefill'], ['Decode pool', 'pd.decode']]
                       : [['Deployment', 'deployment']];
  for (const [group, base] of pools) {
    c.push([group, base + '.replicas', 'Replicas', 'number']);
    c.push([group, base + '.gpus', 'GPUs per replica', 'number']);
    c.push([group, base + '.tp', 'Tensor parallel (TP)', 'number']);
    c.push([group, base + '.kv_cache', 'KV cache dtype', dt]);
    c.push([group, base + '.weights', 'Weights', ['default'].concat(dt)]);
    c.push([group, base + '.power_limit_w', 'Power limit per GPU (W)', 'number']);
  }
  c.push(['Cost and SLOs', 'cost.usd_per_gpu_hour', 'USD per GPU-hour', 'number']);
  c.push(['Cost and SLOs', 'cost.usd_per_kwh', 'USD per kWh', 'number']);
  c.push(['Cost and SLOs', 'cost.pue', 'PUE', 'number']);
  c.push(['Cost and SLOs', 'slo.ttft_ms', 'SLO: TTFT (ms)', 'number']);
  c.push(['Cost and SLOs', 'slo.tpot_ms', 'SLO: TPOT (ms)', 'number']);
  return c.map(([group, path, label, kind]) => ({ group, path, label, kind, initial: text(getPath(doc, path)) }));
}

function buildControls() {
  const box = $('controls');
  box.textContent = '';
  state.controls = controlsFor(state.doc);
  let fs = null;
  for (const c of state.controls) {
    if (!fs || fs.dataset.group !== c.group) {
      fs = document.createElement('fieldset');
      fs.dataset.group = c.group;
      const lg = document.createElement('legend');
      lg.textContent = c.group;
      fs.appendChild(lg);
      box.appendChild(fs);
    }
    const lab = document.createElement('label');
    lab.className = 'ctl';
    const span = document.createElement('span');
    span.textContent = c.label;
    let input;
    if (Array.isArray(c.kind)) {
      input = document.createElement('select');
      const opts = c.kind.includes(c.initial) || c.initial === '' ? c.kind : [c.initial].concat(c.kind);
      for (const o of opts) {
        const op = document.createElement('option');
        op.value = op.textContent = o;
        input.appendChild(op);
      }
    } else {
      input = document.createElement('input');
      input.type = 'number';
      input.step = 'any';
    }
    input.value = c.initial;
    input.dataset.path = c.path;
    input.addEventListener('change', run);
    c.input = input;
    c.label_el = lab;
    lab.append(span, input);
    fs.appendChild(lab);
  }
}

// One "--set path=value" per control that differs from the scenario file.
function currentSets() {
  const sets = [];
  for (const c of state.controls) {
    const v = String(c.input.value).trim();
    c.label_el.classList.toggle('changed', v !== c.initial);
    if (v !== c.initial && v !== '') sets.push(c.path + '=' + v);
  }
  return sets;
}
)js";

// Choosing a scenario or a preset, and setting a control by its path.
constexpr char kScriptScenario[] = R"js(
function selectScenario(path) {
  const s = SCENARIOS.find((x) => x.path === path) || SCENARIOS[0];
  state.scenario = s.path;
  state.doc = JSON.parse(s.text);
  $('scenario').value = s.path;
  $('description').textContent = state.doc.description || '';
  buildControls();
}

function setControl(path, value) {
  const c = state.controls.find((x) => x.path === path);
  if (!c) return false;
  if (c.input.tagName === 'SELECT' && ![...c.input.options].some((o) => o.value === String(value))) {
    const op = document.createElement('option');
    op.value = op.textContent = String(value);
    c.input.appendChild(op);
  }
  c.input.value = String(value);
  return true;
}

function applyPreset(i) {
  const p = PRESETS[i];
  selectScenario(p.scenario);
  for (const [k, v] of Object.entries(p.values)) setControl(k, text(v));
}
)js";

// The summary's headline figures as cards.
constexpr char kScriptCards[] = R"js(
const fmt = (v, d) => (v === undefined || v === null || !isFinite(v)) ? '-' :
  Number(v).toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

function cards(s) {
  const slo = (s.goodput && s.goodput.slo) || {};
  const items = [
    ['Output tokens/s', fmt(s.output_throughput, 1)],
    ['Output tokens/s per GPU', fmt(s.output_throughput_per_gpu, 1)],
    ['Total tokens/s', fmt(s.total_token_throughput, 1)],
    ['Requests/s', fmt(s.request_throughput, 3)],
    ['TTFT p50 / p99 (ms)', fmt(s.median_ttft_ms, 1) + ' / ' + fmt(s.p99_ttft_ms, 1), slo.ttft_ms !== undefined && s.p99_ttft_ms > slo.ttft_ms],
    ['TPOT p50 / p99 (ms)', fmt(s.median_tpot_ms, 2) + ' / ' + fmt(s.p99_tpot_ms, 2), slo.tpot_ms !== undefined && s.p99_tpot_ms > slo.tpot_ms],
    ['USD per M output tokens', '$' + fmt(s.cost_usd_per_million_output_tokens, 3)],
    ['USD per M total tokens', '$' + fmt(s.cost_usd_per_million_total_tokens, 4)],
    ['GPUs / USD per hour', s.gpus + ' / $' + fmt(s.gpus * s.usd_per_gpu_hour, 2)],
    ['Goodput (req/s, share in SLO)', s.goodput ? fmt(s.goodput.request_goodput, 3) + ', ' + fmt(100 * s.goodput.good_fraction, 0) + '%' : 'no SLO'],
    ['KV peak', s.peak_kv_fraction !== undefined ? fmt(100 * s.peak_kv_fraction, 1) + '%' + (s.kv_bound ? ' (KV-bound)' : '') : '-', s.kv_bound],
    ['Completed / failed', s.completed + ' / ' + s.failed, s.failed > 0],
  ];
  if (s.joules_per_output_token !== undefined) {
    items.push(
      ['J per output token (facility / GPUs)', fmt(s.joules_per_output_token, 3) + ' / ' + fmt(s.gpu_joules_per_output_token, 3)],
      ['kW per node (avg / peak)', fmt(s.avg_kw_per_node, 2) + ' / ' + fmt(s.peak_kw_per_node, 2)],
      ['Output tokens/s per provisioned MW', fmt(s.output_tokens_per_s_per_mw, 0)],
      ['Electricity USD per M output tokens', s.electricity_usd_per_million_output_tokens !== undefined ? '$' + fmt(s.electricity_usd_per_million_output_tokens, 4) : 'no cost.usd_per_kwh']);
  }
  $('cards').innerHTML = items.map(([k, v, bad]) =>
    `<div class="card${bad ? ' bad' : ''}"><div class="v">${v}</div><div class="k">${k}</div></div>`).join('');
}
)js";

// The SVG charts: throughput, latency per metric, and the session's
// throughput-latency trade-off.
constexpr char kScriptCharts[] = R"js(
function esc(t) { return String(t).replace(/&/g, '&amp;').replace(/</g, '&lt;'); }
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// One small bar chart per latency metric: p50/p90/p99, the SLO as a dashed
// line, prediction intervals as error bars where the summary has them.
function latencyChart(s, metric, title, sloKey) {
  const W = 280, H = 190, L = 52, B = 28, T = 24, R = 8;
  const stats = [['median', 'p50'], ['p90', 'p90'], ['p99', 'p99']];
  const slo = s.goodput && s.goodput.slo ? s.goodput.slo[sloKey] : undefined;
  let top = 0;
  for (const [k] of stats) top = Math.max(top, s[`${k}_${metric}_ms`] || 0, s[`${k}_${metric}_ms_hi`] || 0);
  if (slo !== undefined) top = Math.max(top, slo);
  top = niceMax(top * 1.05);
  const y = (v) => T + (H - T - B) * (1 - v / top);
  let g = `<svg class="chart lat" viewBox="0 0 ${W} ${H}" role="img"><text class="t" x="${W / 2}" y="15">${title}</text>`;
  for (let i = 0; i <= 4; ++i) {
    const v = top * i / 4;
    g += `<line class="grid" x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}"/><text class="e" x="${L - 4}" y="${y(v) + 4}">${fmt(v, v < 10 ? 1 : 0)}</text>`;
  }
  const bw = (W - L - R) / stats.length;
  stats.forEach(([k, name], i) => {
    const v = s[`${k}_${metric}_ms`];
    if (v === undefined) return;
    const x = L + i * bw + bw * 0.2;
    g += `<rect class="bar" x="${x}" y="${y(v)}" width="${bw * 0.6}" height="${Math.max(0.5, y(0) - y(v))}" fill="${COLORS[i]}"><title>${name}: ${fmt(v, 2)} ms</title></rect>`;
    g += `<text class="m" x="${x + bw * 0.3}" y="${H - 10}">${name}</text>`;
    const lo = s[`${k}_${metric}_ms_lo`], hi = s[`${k}_${metric}_ms_hi`];
    if (lo !== undefined && hi !== undefined) {
      const cx = x + bw * 0.3;
      g += `<path class="iv" d="M${cx} ${y(lo)}V${y(hi)}M${cx - 5} ${y(lo)}h10M${cx - 5} ${y(hi)}h10"/>`;
    }
  });
  if (slo !== undefined) {
    g += `<line class="slo" x1="${L}" x2="${W - R}" y1="${y(slo)}" y2="${y(slo)}"/><text class="e" x="${W - R}" y="${y(slo) - 3}" fill="#D55E00">SLO ${fmt(slo, 0)} ms</text>`;
  }
  return g + `<text x="4" y="${T - 8}">ms</text></svg>`;
}

// Every run of this session: output tokens/s per GPU against median TPOT,
// the current run ringed, so a planner sees the trade-off they walked.
function tradeoffChart() {
  const W = 560, H = 270, L = 60, B = 40, T = 40, R = 12;
  const pts = state.history;
  const xmax = niceMax(Math.max(...pts.map((p) => p.x)) * 1.1);
  const ymax = niceMax(Math.max(...pts.map((p) => p.y)) * 1.1);
  const X = (v) => L + (W - L - R) * v / xmax, Y = (v) => T + (H - T - B) * (1 - v / ymax);
  let g = `<svg class="chart tradeoff" viewBox="0 0 ${W} ${H}" role="img"><text class="t" x="${W / 2}" y="15">Throughput vs latency (every run of this page)</text>`;
  for (let i = 0; i <= 4; ++i) {
    g += `<line class="grid" x1="${L}" x2="${W - R}" y1="${Y(ymax * i / 4)}" y2="${Y(ymax * i / 4)}"/><text class="e" x="${L - 4}" y="${Y(ymax * i / 4) + 4}">${fmt(ymax * i / 4, 0)}</text>`;
    g += `<text class="m" x="${X(xmax * i / 4)}" y="${H - 22}">${fmt(xmax * i / 4, 1)}</text>`;
  }
  g += `<text class="m" x="${(L + W - R) / 2}" y="${H - 6}">median TPOT (ms)</text><text x="4" y="${T - 8}">output tok/s per GPU</text>`;
  pts.forEach((p, i) => {
    const last = i === pts.length - 1;
    g += `<circle class="pt" cx="${X(p.x)}" cy="${Y(p.y)}" r="${last ? 6 : 4}" fill="${last ? '#D55E00' : '#0072B2'}" fill-opacity="${last ? 1 : 0.5}"><title>${esc(p.label)}</title></circle>`;
  });
  return g + '</svg>';
}

function throughputChart(s) {
  const W = 280, H = 190, L = 60, B = 28, T = 24, R = 8;
  const bars = [['input', s.input_throughput], ['output', s.output_throughput], ['total', s.total_token_throughput]];
  const top = niceMax(Math.max(...bars.map((b) => b[1] || 0)) * 1.05);
  const y = (v) => T + (H - T - B) * (1 - v / top);
  let g = `<svg class="chart thr" viewBox="0 0 ${W} ${H}" role="img"><text class="t" x="${W / 2}" y="15">Throughput (tokens/s, all GPUs)</text>`;
  for (let i = 0; i <= 4; ++i) g += `<line class="grid" x1="${L}" x2="${W - R}" y1="${y(top * i / 4)}" y2="${y(top * i / 4)}"/><text class="e" x="${L - 4}" y="${y(top * i / 4) + 4}">${fmt(top * i / 4, 0)}</text>`;
  const bw = (W - L - R) / bars.length;
  bars.forEach(([name, v], i) => {
    const x = L + i * bw + bw * 0.2;
    g += `<rect class="bar" x="${x}" y="${y(v)}" width="${bw * 0.6}" height="${Math.max(0.5, y(0) - y(v))}" fill="${COLORS[i]}"><title>${name}: ${fmt(v, 1)} tok/s</title></rect><text class="m" x="${x + bw * 0.3}" y="${H - 10}">${name}</text>`;
  });
  return g + '</svg>';
}

function draw(s) {
  cards(s);
  $('charts').innerHTML = throughputChart(s) +
    latencyChart(s, 'ttft', 'Time to first token', 'ttft_ms') +
    latencyChart(s, 'tpot', 'Time per output token', 'tpot_ms') +
    latencyChart(s, 'itl', 'Inter-token latency', 'itl_ms') +
    latencyChart(s, 'e2el', 'End-to-end latency', 'e2el_ms');
  $('tradeoff').innerHTML = tradeoffChart();
}
)js";

// One simulation in the module with the current overrides, and its record.
constexpr char kScriptRun[] = R"js(
// Re-simulates with the current controls. The record in #capplan-whatif is
// what tests read: the overrides used and the summary text exactly as the
// module printed it (the same text as `capplan simulate --json`).
function run() {
  const sets = currentSets();
  $('sets').textContent = 'capplan simulate ' + state.scenario + sets.map((x) => ' --set ' + x).join('') + ' --json';
  const t0 = performance.now();
  const ptr = state.mod.ccall('capplan_simulate', 'number', ['string', 'string'], [state.scenario, JSON.stringify(sets)]);
  const out = state.mod.UTF8ToString(ptr);
  state.mod.ccall('capplan_free', null, ['number'], [ptr]);
  const ms = performance.now() - t0;
  state.runs += 1;
  const rec = { scenario: state.scenario, sets, runs: state.runs, ms: Math.round(ms) };
  const err = $('error');
  const open = out.indexOf('{"summary":');
  if (open === 0) {
    const textOut = out.slice(11, -1);
    const s = JSON.parse(textOut);
    rec.summary_text = textOut;
    err.style.display = 'none';
    $('results').classList.remove('stale');
    state.history.push({ x: s.median_tpot_ms, y: s.output_throughput_per_gpu, label: sets.join(' ') || state.scenario });
    draw(s);
    rec.drawn = { bars: document.querySelectorAll('#charts rect.bar').length,
                  slo_lines: document.querySelectorAll('#charts line.slo').length,
                  points: document.querySelectorAll('#tradeoff circle.pt').length };
  } else {
    const e = JSON.parse(out);
    rec.error = e.error;
    rec.exit_code = e.exit_code;
    err.textContent = e.error;
    err.style.display = 'block';
    $('results').classList.add('stale');
  }
  $('busy').textContent = `simulated in ${fmt(ms, 0)} ms (run ${state.runs})`;
  $('capplan-whatif').textContent = JSON.stringify(rec);
}
)js";

// Start-up: the URL hash, the scenario files in the module's file system,
// the pickers, and page errors.
constexpr char kScriptStartup[] = R"js(
// "#preset=N&scenario=PATH&dotted.path=value...": opens the page with those
// controls set (links and tests use it), then runs.
function applyHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.has('preset')) applyPreset(Number(h.get('preset')));
  else if (h.has('scenario')) selectScenario(h.get('scenario'));
  for (const [k, v] of h) if (k !== 'preset' && k !== 'scenario') setControl(k, v);
}

function init(mod) {
  state.mod = mod;
  for (const s of SCENARIOS) {
    if (s.path.startsWith('scenarios/') && mod.FS.analyzePath('/data/' + s.path).exists) {
      const have = new TextDecoder().decode(mod.FS.readFile('/data/' + s.path));
      if (have === s.text) continue;
    }
    const dir = ('/data/' + s.path).replace(/\/[^/]*$/, '');
    mod.FS.mkdirTree(dir);
    mod.FS.writeFile('/data/' + s.path, s.text);
  }
  const sel = $('scenario');
  for (const s of SCENARIOS) {
    const op = document.createElement('option');
    op.value = op.textContent = s.path;
    sel.appendChild(op);
  }
  sel.addEventListener('change', () => { selectScenario(sel.value); run(); });
  const ps = $('preset');
  PRESETS.forEach((p, i) => {
    const op = document.createElement('option');
    op.value = String(i);
    op.textContent = p.label;
    ps.appendChild(op);
  });
  if (!PRESETS.length) ps.parentElement.style.display = 'none';
  ps.addEventListener('change', () => { if (ps.value !== '') { applyPreset(Number(ps.value)); run(); } });
  if (PRESETS.length) applyPreset(0); else selectScenario(SCENARIOS[0].path);
  applyHash();
  run();
}

function pageError(message) {
  $('error').textContent = 'page error: ' + message;
  $('error').style.display = 'block';
  $('capplan-whatif').textContent = JSON.stringify({ page_error: String(message) });
}
window.addEventListener('error', (e) => pageError(e.message));
CapplanSim().then(init).catch((e) => pageError(e && e.stack ? e.stack : e));
)js";

}  // namespace

const char* InteractiveScript() {
  // Joined once; the page embeds the parts in this order.
  static const std::string script = [] {
    std::string s;
    for (const char* part : {kScriptState, kScriptControls, kScriptScenario,
                             kScriptCards, kScriptCharts, kScriptRun, kScriptStartup}) {
      s += part;
    }
    return s;
  }();
  return script.c_str();
}

}  // namespace capplan::report
