// The SVG charts: throughput, latency per metric, and the session's
// throughput-latency trade-off.
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
