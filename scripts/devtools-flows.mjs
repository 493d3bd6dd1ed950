// How many of a chorus trace's arrows Chrome DevTools binds, and whether each runs
// from a `send` holder to a `recv` holder inside an entry, using the Performance
// panel's own trace engine:
//
//   npm install @paulirish/trace_engine@0.0.65      # in this directory or any parent
//   node scripts/devtools-flows.mjs trace.json
//
// Exit status 1 when some arrow is not bound that way.
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const engine = process.env.TRACE_ENGINE ??
    path.resolve('node_modules/@paulirish/trace_engine/analyze-trace.mjs');
const {analyzeEvents} = await import(pathToFileURL(engine).href);
const file = process.argv[2];
if (!file) {
  console.error('usage: node scripts/devtools-flows.mjs TRACE.json');
  process.exit(2);
}
const events = JSON.parse(fs.readFileSync(file, 'utf8')).traceEvents;
const arrows = events.filter(e => e.ph === 's').length;
const {parsedTrace} = await analyzeEvents(events);
const flows = parsedTrace.data.Flows.flows;
const entries = new Map();
for (const e of events.filter(e => e.ph === 'X' && e.cat === 'entry')) {
  const key = `${e.pid}/${e.tid}`;
  if (!entries.has(key)) entries.set(key, []);
  entries.get(key).push(e);
}
const inside = h => (entries.get(`${h.pid}/${h.tid}`) ?? [])
    .some(en => en.ts < h.ts && h.ts + h.dur < en.ts + en.dur);
let good = 0;
for (const [a, b, ...rest] of flows) {
  if (rest.length === 0 && a?.name === 'send' && b?.name === 'recv' && inside(b)) good++;
}
console.log(`${file}: ${arrows} arrows written, DevTools bound ${flows.length}, ` +
            `${good} from a send holder to a recv holder inside an entry`);
process.exit(good === arrows ? 0 : 1);
