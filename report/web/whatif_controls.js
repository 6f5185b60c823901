// The controls: which `--set` paths this scenario offers, their inputs, and
// the overrides that differ from the scenario file.
// The controls a planner changes, as `--set` paths of this scenario.
function controlsFor(doc) {
  const c = [];
  const w = doc.workload || {};
  if ('concurrency' in w) c.push(['Workload', 'workload.concurrency', 'Concurrency', 'number']);
  if ('request_rate' in w) c.push(['Workload', 'workload.request_rate', 'Request rate (req/s)', 'number']);
  // Empty: the scenario's own run length (a steady-state window when it
  // gives none); a preset fills in the length its result ran.
  c.push(['Workload', 'workload.num_requests', 'Requests (empty: scenario)', 'number']);
  c.push(['Workload', 'workload.warmup_requests', 'Warm-up requests', 'number']);
  const pools = doc.pd ? [['Prefill pool', 'pd.prefill'], ['Decode pool', 'pd.decode']]
                       : [['Deployment', 'deployment']];
  for (const [group, base] of pools) {
    // The formats this pool's model card and GPU accept (the module's
    // capplan_choices); every name when it could not say.
    const ch = state.choices[base] || { weights: ['default'].concat(OPTIONS.weights), kv_cache: OPTIONS.kv_cache };
    c.push([group, base + '.replicas', 'Replicas', 'number']);
    c.push([group, base + '.gpus', 'GPUs per replica', 'number']);
    c.push([group, base + '.tp', 'Tensor parallel (TP)', 'number']);
    c.push([group, base + '.kv_cache', 'KV cache dtype', ch.kv_cache]);
    c.push([group, base + '.weights', 'Weights', ch.weights]);
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
