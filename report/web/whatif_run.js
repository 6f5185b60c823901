// One simulation in the module with the current overrides, and its record.
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
