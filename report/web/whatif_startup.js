// Start-up: the URL hash, the scenario files in the module's file system,
// the pickers, and page errors.
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
