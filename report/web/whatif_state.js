// The page's data (scenarios, presets and dtypes the report embeds), its state,
// and reading a dotted path of a scenario document.
'use strict';
const $ = (id) => document.getElementById(id);
const DATA = (id) => JSON.parse($(id).textContent);
const SCENARIOS = DATA('capplan-scenarios');  // [{path, text}]
const PRESETS = DATA('capplan-presets');      // [{label, scenario, values: {dotted: value}}]
// Every weight and KV format name (hw/formats.json weight_choices and
// kv_cache), for a scenario the module cannot say more about.
const OPTIONS = DATA('capplan-options');      // {weights: [...], kv_cache: [...]}
const COLORS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00'];
// choices: the formats each pool's pickers offer ({"deployment": {weights, kv_cache}}).
const state = { mod: null, scenario: null, doc: null, choices: {}, controls: [], history: [], runs: 0 };

function getPath(doc, dotted) {
  let v = doc;
  for (const k of dotted.split('.')) {
    if (v === null || typeof v !== 'object' || !(k in v)) return undefined;
    v = v[k];
  }
  return v;
}
function text(v) { return v === undefined || v === null ? '' : (typeof v === 'string' ? v : JSON.stringify(v)); }
