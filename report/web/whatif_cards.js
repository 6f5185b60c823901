// The summary's headline figures as cards.
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
