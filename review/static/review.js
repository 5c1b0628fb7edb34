// Strata review page: live updates of the plan queue, and expanding or collapsing a diff. The pages work without
// this script; it only saves reloading. It runs under a Content-Security-Policy that allows no inline script and no
// other origin, and it never inserts text as HTML except the server's own pages, fetched from this server.
'use strict';
(function () {
  const live = document.getElementById('live');
  function say(text) {
    if (live) {
      live.textContent = text;
    }
  }

  // Expand all / Collapse all above a diff.
  for (const tools of document.querySelectorAll('.diff-tools')) {
    const section = tools.closest('.diff');
    const all = (open) => {
      for (const d of section.querySelectorAll('details')) {
        d.open = open;
      }
    };
    for (const [label, open] of [['Expand all', true], ['Collapse all', false]]) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = label;
      b.addEventListener('click', () => all(open));
      tools.appendChild(b);
    }
    tools.hidden = false;
  }

  // New plans without reloading: the server sends an event when the pending plans change.
  const badge = document.getElementById('pending-count');
  if (!badge || typeof EventSource !== 'function') {
    return;
  }
  const queue = document.getElementById('queue');
  let shown = queue ? queue.dataset.fingerprint : null;
  let first = true;
  async function refreshQueue() {
    const r = await fetch('/ui/plans', { credentials: 'same-origin', headers: { Accept: 'text/html' } });
    if (!r.ok) {
      return;
    }
    const doc = new DOMParser().parseFromString(await r.text(), 'text/html');
    for (const id of ['queue', 'settled']) {
      const fresh = doc.getElementById(id);
      const old = document.getElementById(id);
      if (fresh && old) {
        old.replaceWith(document.importNode(fresh, true));
      }
    }
    const q = document.getElementById('queue');
    shown = q ? q.dataset.fingerprint : shown;
  }
  const es = new EventSource('/ui/events');
  es.addEventListener('plans', async (ev) => {
    let msg;
    try {
      msg = JSON.parse(ev.data);
    } catch {
      return;
    }
    badge.textContent = `${msg.pending} pending`;
    if (queue && msg.fingerprint !== shown) {
      await refreshQueue();
      say(`The plan queue changed: ${msg.pending} pending.`);
    } else if (!first) {
      badge.classList.add('new');
      say(`The plan queue changed: ${msg.pending} pending.`);
    }
    first = false;
  });
  es.addEventListener('signed-out', () => es.close());
})();
