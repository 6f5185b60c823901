// Choosing a scenario or a preset, and setting a control by its path.
// The formats the module says each pool of the scenario accepts; {} when
// it cannot load the scenario (the run then shows the CLI's error).
function scenarioChoices(path) {
  const ptr = state.mod.ccall('capplan_choices', 'number', ['string', 'string'], [path, '[]']);
  const out = JSON.parse(state.mod.UTF8ToString(ptr));
  state.mod.ccall('capplan_free', null, ['number'], [ptr]);
  return out.choices || {};
}

function selectScenario(path) {
  const s = SCENARIOS.find((x) => x.path === path) || SCENARIOS[0];
  state.scenario = s.path;
  state.doc = JSON.parse(s.text);
  state.choices = scenarioChoices(s.path);
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
