// The bernstein dashboard (docs/dashboard.md): plain JavaScript, no
// dependencies, nothing fetched but this server's /api. The token comes
// from the URL's fragment (#token=..., never sent to a server) or the
// form, is kept in sessionStorage, and goes in an Authorization header:
// no cookie, so no cross-site request can carry it.
'use strict';

const COLUMNS = [
  ['pending', ['pending', 'blocked']],
  ['running', ['running', 'completing', 'merging', 'rebasing', 'resolving']],
  ['review', ['review']],
  ['done', ['done', 'no_changes']],
  ['stopped', ['failed', 'refused', 'conflict', 'cancelled', 'interrupted']],
];

const $ = (id) => document.getElementById(id);
let token = '';
let runId = '';
let boardAbort = null;
let eventsAbort = null;
let openTask = '';
let picked = false; // the user chose a run: no longer jump to the latest
let latest = '';

function takeToken() {
  const m = /(?:^#|&)token=([0-9a-f]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem('bernstein-token', m[1]);
    history.replaceState(null, '', location.pathname);
  }
  token = sessionStorage.getItem('bernstein-token') || '';
}

function showError(msg) {
  const e = $('error');
  e.textContent = msg || '';
  e.hidden = !msg;
}

async function api(path, opts = {}) {
  const headers = Object.assign({ Authorization: 'Bearer ' + token }, opts.headers || {});
  const r = await fetch(path, Object.assign({}, opts, { headers, cache: 'no-store' }));
  if (r.status === 401) {
    sessionStorage.removeItem('bernstein-token');
    $('login').hidden = false;
    throw new Error('the token was refused');
  }
  const body = await r.json().catch(() => ({}));
  if (!r.ok && !opts.allowError) throw new Error(body.error || ('HTTP ' + r.status));
  return body;
}

// Server-Sent Events over fetch (EventSource cannot send a header).
async function stream(path, signal, onEvent) {
  const r = await fetch(path, { headers: { Authorization: 'Bearer ' + token }, signal, cache: 'no-store' });
  if (!r.ok || !r.body) throw new Error('stream: HTTP ' + r.status);
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let ev = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) ev = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      if (data.length) onEvent(ev, data.join('\n'));
    }
  }
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function renderBoard(snap) {
  const board = $('board');
  board.textContent = '';
  $('run-state').textContent = snap.run.state + (snap.run.live ? ' (live)' : '');
  for (const [name, states] of COLUMNS) {
    const col = el('section', 'col');
    col.dataset.column = name;
    const tasks = snap.tasks.filter((t) => states.includes(t.state));
    col.appendChild(el('h3', '', name + ' (' + tasks.length + ')'));
    for (const t of tasks) {
      const card = el('div', 'card');
      card.dataset.task = t.id;
      card.dataset.state = t.state;
      card.tabIndex = 0;
      card.appendChild(el('div', 'id', t.id));
      if (t.title) card.appendChild(el('div', '', t.title));
      card.appendChild(el('div', 'sub', [t.state, t.adapter || '', 'attempts ' + t.attempts].join(' · ')));
      card.addEventListener('click', () => openDrawer(t.id));
      card.addEventListener('keydown', (e) => { if (e.key === 'Enter') openDrawer(t.id); });
      col.appendChild(card);
    }
    board.appendChild(col);
  }
}

async function follow(id) {
  if (boardAbort) boardAbort.abort();
  const ctl = new AbortController();
  boardAbort = ctl;
  runId = id;
  try {
    const run = await api('/api/runs/' + id);
    renderBoard({ run, tasks: run.tasks });
    await stream('/api/runs/' + id + '/stream', ctl.signal, (ev, data) => {
      if (ev === 'tasks') renderBoard(JSON.parse(data));
    });
    if (!ctl.signal.aborted) loadAudit(); // the run ended: its last records
  } catch (e) {
    if (!ctl.signal.aborted) showError(e.message);
  }
  if (openTask && !ctl.signal.aborted) loadTask(openTask);
}

// The runs, again every 2 s: a run started after the page was opened is
// followed at once (unless the user chose another).
async function loadRuns() {
  const { runs } = await api('/api/runs');
  const sel = $('runs');
  if (runs.length && runs[0].id === latest) return;
  sel.textContent = '';
  for (const r of runs) {
    const o = el('option', '', r.id + (r.name ? ' ' + r.name : '') + ' [' + r.state + ']');
    o.value = r.id;
    sel.appendChild(o);
  }
  if (!runs.length) {
    $('board').textContent = 'no runs yet';
    return;
  }
  latest = runs[0].id;
  loadAudit();
  if (!picked) follow(latest);
  else sel.value = runId;
}

async function loadAudit() {
  try {
    const a = await api('/api/audit');
    const ok = a.exit_code === 0;
    $('audit').textContent = 'audit: ' + (ok ? 'intact' : 'broken');
    $('audit').className = 'pill ' + (ok ? 'ok' : 'bad');
  } catch (e) {
    $('audit').textContent = 'audit: ?';
  }
}

function money(v) { return v === null || v === undefined ? '?' : '$' + v.toFixed(4); }

async function loadTask(id) {
  const t = await api('/api/runs/' + runId + '/tasks/' + id);
  $('d-title').textContent = t.id + (t.title ? ': ' + t.title : '');
  $('d-meta').textContent = t.state + (t.reason ? ' — ' + t.reason : '');
  $('d-meta').dataset.state = t.state;
  const tb = $('d-attempts').querySelector('tbody');
  tb.textContent = '';
  for (const a of t.attempts) {
    const tr = el('tr');
    for (const v of [a.n, a.adapter, a.model, a.outcome || 'running',
      (a.input_tokens ?? '?') + ' / ' + (a.output_tokens ?? '?'), money(a.cost_usd)]) {
      tr.appendChild(el('td', '', String(v ?? '')));
    }
    tb.appendChild(tr);
  }
  return t;
}

async function openDrawer(id) {
  openTask = id;
  $('drawer').hidden = false;
  $('d-result').textContent = '';
  $('d-events').textContent = '';
  $('d-diff').textContent = '';
  $('d-gates').textContent = '';
  $('drawer').dataset.task = id;
  try { await loadTask(id); } catch (e) { showError(e.message); return; }
  if (eventsAbort) eventsAbort.abort();
  const ctl = new AbortController();
  eventsAbort = ctl;
  stream('/api/runs/' + runId + '/tasks/' + id + '/events', ctl.signal, (ev, data) => {
    if (ev === 'message') {
      let line = data;
      try {
        const o = JSON.parse(data);
        line = [o.ts || '', o.type || o.kind || '', o.text || o.message || o.tool || ''].join(' ');
      } catch (e) { /* shown as it is */ }
      $('d-events').textContent += line + '\n';
    } else if (ev === 'attempt') {
      $('d-events').textContent += '--- attempt ' + JSON.parse(data).attempt + ' ---\n';
    }
  }).catch(() => {});
  api('/api/runs/' + runId + '/tasks/' + id + '/diff', { allowError: true })
    .then((d) => { $('d-diff').textContent = d.patch || d.error || '(no diff)'; })
    .catch((e) => { $('d-diff').textContent = e.message; });
  api('/api/runs/' + runId + '/tasks/' + id + '/gates').then((g) => {
    for (const x of g.gates) {
      const h = el('h4', '', 'attempt ' + x.attempt + ': ' + x.name);
      $('d-gates').appendChild(h);
      $('d-gates').appendChild(el('pre', '', x.log || ''));
    }
    if (!g.gates.length) $('d-gates').textContent = '(no gate ran)';
  }).catch(() => {});
}

async function act(op, body) {
  const path = op === 'stop' ? '/api/runs/' + runId + '/stop'
    : '/api/runs/' + runId + '/tasks/' + openTask + '/' + op;
  const r = await api(path, {
    method: 'POST', allowError: true,
    headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body || {}),
  });
  let msg = r.ok ? op + ': ' + (r.tasks || []).map((t) => t.id + ' ' + t.state).join(', ')
    : op + ' refused: ' + r.error;
  // a run that was not live: changed, then resumed in the background (202)
  if (r.ok && 'resumed' in r) {
    msg += r.resumed ? ' (run resumed in the background)' : ' (not resumed: ' + r.resume_error + ')';
  }
  $('d-result').textContent = msg;
  if (r.ok && r.resumed) follow(runId); // its board ended with the run: follow the resume
  else if (openTask) loadTask(openTask).catch(() => {});
}

function main() {
  takeToken();
  $('login').addEventListener('submit', (e) => {
    e.preventDefault();
    token = $('token').value.trim();
    sessionStorage.setItem('bernstein-token', token);
    $('login').hidden = true;
    start();
  });
  $('runs').addEventListener('change', (e) => { picked = true; follow(e.target.value); });
  $('d-close').addEventListener('click', () => {
    $('drawer').hidden = true;
    openTask = '';
    if (eventsAbort) eventsAbort.abort();
  });
  $('btn-cancel').addEventListener('click', () => act('cancel'));
  $('btn-retry').addEventListener('click', () => act('retry'));
  $('btn-approve').addEventListener('click', () => act('approve'));
  $('btn-reject').addEventListener('click', () => {
    const fb = window.prompt('feedback for the next attempt');
    if (fb) act('reject', { feedback: fb });
  });
  $('stop').addEventListener('click', () => { if (runId) act('stop'); });
  if (!token) { $('login').hidden = false; return; }
  start();
}

function start() {
  showError('');
  loadRuns().catch((e) => showError(e.message));
  loadAudit();
  setInterval(() => loadRuns().catch(() => {}), 2000);
}

main();
