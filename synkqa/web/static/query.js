/* The SPARQL query page (/query): a query (from the URL fragment, else the KB's prefixes and a
   sample), a result format, and the answer of /sparql as a table (JSON) or as text.
   URL state: #query=…&format=csv&run=1 (run=1: opening the link runs the query). */
'use strict';

(() => {
  const {el, clear, api, readHash, writeHash, seconds, plural, describeKB} = SynKQA;
  const $ = (id) => document.getElementById(id);

  const TABLE_ROWS = 2000;      // rows drawn as a table; the rest are counted, not drawn
  /* Format → Accept header. A CONSTRUCT/DESCRIBE answer is RDF, so every format names an RDF
     type too (at lower priority), and a SELECT/ASK asked for as RDF falls back to JSON. */
  const ACCEPT = {
    json: 'application/sparql-results+json, text/turtle;q=0.8',
    xml: 'application/sparql-results+xml, text/turtle;q=0.8',
    csv: 'text/csv, text/turtle;q=0.8',
    tsv: 'text/tab-separated-values, text/turtle;q=0.8',
    turtle: 'text/turtle, application/sparql-results+json;q=0.8',
    ntriples: 'application/n-triples, application/sparql-results+json;q=0.8',
  };
  const XSD_STRING = 'http://www.w3.org/2001/XMLSchema#string';

  const query = $('query');
  let info = null;
  let prefixes = [];          // [[prefix, namespace]], longest namespace first
  let runSeq = 0;

  function sample() {
    const lines = Object.entries(info.prefixes || {}).map(([p, ns]) => 'PREFIX ' + p + ': <' + ns + '>');
    if (info.base_iri) lines.unshift('BASE <' + info.base_iri + '>');
    return lines.join('\n') + (lines.length ? '\n\n' : '')
      + 'SELECT ?subject ?predicate ?object WHERE {\n  ?subject ?predicate ?object .\n}\nLIMIT 20\n';
  }

  function short(iri) {
    for (const [p, ns] of prefixes) {
      if (iri.startsWith(ns)) {
        const local = iri.slice(ns.length);
        if (/^[\w.-]*$/.test(local) && !local.endsWith('.')) return p + ':' + local;
      }
    }
    return '<' + iri + '>';
  }

  function cell(term) {
    if (!term) return el('td', {});
    if (term.type === 'uri') return el('td', {title: term.value}, short(term.value));
    if (term.type === 'bnode') return el('td', {}, '_:' + term.value);
    if (term.type === 'triple') return el('td', {}, '<< … >>');
    const td = el('td', {}, term.value);
    if (term['xml:lang']) td.append(el('span', {class: 'lang'}, '@' + term['xml:lang']));
    else if (term.datatype && term.datatype !== XSD_STRING) {
      td.append(el('span', {class: 'dt', title: term.datatype}, '^^' + short(term.datatype)));
    }
    return td;
  }

  function resetResults() {
    for (const id of ['truncated', 'query-error', 'boolean-answer', 'results-wrap', 'results-note', 'raw', 'results-empty']) {
      $(id).hidden = true;
    }
    clear($('results').querySelector('thead'));
    clear($('results').querySelector('tbody'));
    $('raw').textContent = '';
    $('query-status').textContent = '';
  }

  function saveState(ran) {
    const format = $('format').value;
    writeHash([['query', query.value], ['format', format === 'json' ? null : format], ['run', ran ? '1' : null]]);
  }

  async function runQuery() {
    const text = query.value;
    if (!text.trim()) return;
    const seq = ++runSeq;
    saveState(true);
    resetResults();
    const button = $('run-query');
    button.disabled = true;
    clear(button).append(el('span', {class: 'spinner', 'aria-hidden': 'true'}), 'Running…');
    $('query-status').textContent = 'running…';
    const started = performance.now();
    let response = null, body = '', failure = null;
    try {
      response = await fetch('/sparql', {
        method: 'POST',
        headers: {'Content-Type': 'application/x-www-form-urlencoded', Accept: ACCEPT[$('format').value] || ACCEPT.json},
        body: new URLSearchParams({query: text}),
      });
      body = await response.text();
    } catch (exc) {
      failure = 'the server did not answer (' + exc.message + ')';
    }
    if (seq !== runSeq) return;
    const took = (performance.now() - started) / 1000;
    button.disabled = false;
    clear(button).append('Run');
    if (failure) { showError('network', failure); return; }
    const type = (response.headers.get('content-type') || '').split(';')[0].trim();
    if (!response.ok) {
      let error = null;
      try { error = JSON.parse(body).error; } catch (exc) { error = null; }
      showError(error ? error.kind : 'HTTP ' + response.status,
                error ? error.message : body.slice(0, 1000) || response.statusText, response.status);
      $('query-status').textContent = 'failed after ' + seconds(took);
      return;
    }
    const rowsHeader = response.headers.get('X-SPARQL-Rows');
    const truncated = response.headers.get('X-SPARQL-Truncated');
    let rows = rowsHeader !== null ? Number(rowsHeader) : null;
    if (type === 'application/sparql-results+json' || type === 'application/json') {
      let data = null;
      try { data = JSON.parse(body); } catch (exc) { data = null; }
      if (data && typeof data.boolean === 'boolean') {
        $('boolean-answer').hidden = false;
        $('boolean-answer').textContent = data.boolean ? 'true' : 'false';
        rows = null;
      } else if (data && data.head && data.results) {
        rows = data.results.bindings.length;
        drawTable(data.head.vars || [], data.results.bindings);
      } else {
        showRaw(body);
      }
    } else {
      showRaw(body);
    }
    const bits = [];
    if (rows !== null && !Number.isNaN(rows)) bits.push(plural(rows, type.startsWith('text/turtle') || type === 'application/n-triples' ? 'triple' : 'row'));
    bits.push(type || 'no content type');
    bits.push(seconds(took));
    $('query-status').textContent = bits.join(' · ');
    if (truncated) {
      const note = $('truncated');
      note.hidden = false;
      note.textContent = 'The answer was cut: the server returns at most ' + info.limits.rows.toLocaleString('en')
        + ' rows (X-SPARQL-Truncated: ' + truncated + '). Add a LIMIT or narrow the query.';
    }
  }

  function showError(kind, message, status) {
    const box = $('query-error');
    box.hidden = false;
    clear(box).append(el('span', {class: 'kind'}, kind + (status ? ' (' + status + ')' : '') + ': '), message);
  }

  function showRaw(text) {
    const pre = $('raw');
    pre.hidden = false;
    pre.textContent = text;
  }

  function drawTable(vars, bindings) {
    const head = $('results').querySelector('thead');
    const body = $('results').querySelector('tbody');
    head.append(el('tr', {}, el('th', {class: 'row-number', scope: 'col'}, '#'),
                   vars.map((v) => el('th', {scope: 'col'}, '?' + v))));
    const fragmentRows = document.createDocumentFragment();
    bindings.slice(0, TABLE_ROWS).forEach((b, i) => {
      fragmentRows.append(el('tr', {}, el('td', {class: 'row-number'}, String(i + 1)), vars.map((v) => cell(b[v]))));
    });
    body.append(fragmentRows);
    $('results-wrap').hidden = false;
    if (bindings.length > TABLE_ROWS) {
      const note = $('results-note');
      note.hidden = false;
      note.textContent = 'The table shows the first ' + TABLE_ROWS.toLocaleString('en') + ' of '
        + bindings.length.toLocaleString('en') + ' rows; choose CSV or TSV to see them all.';
    }
    if (!bindings.length) {
      const note = $('results-note');
      note.hidden = false;
      note.textContent = 'No rows.';
    }
  }

  async function start() {
    const r = await api('/api/info');
    if (!r.ok) {
      $('kb-name').textContent = 'the server did not describe its KB';
      showError(r.error ? r.error.kind : 'error', r.error ? r.error.message : 'no /api/info');
      return;
    }
    info = r.data;
    prefixes = Object.entries(info.prefixes || {}).sort((a, b) => b[1].length - a[1].length);
    $('kb-name').textContent = describeKB(info);
    $('query-limits').textContent = 'limits: ' + info.limits.query_seconds + ' s, '
      + info.limits.rows.toLocaleString('en') + ' rows';
    const h = readHash();
    if (h.format && ACCEPT[h.format]) $('format').value = h.format;
    query.value = h.query || new URLSearchParams(window.location.search).get('query') || sample();
    query.addEventListener('keydown', (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key === 'Enter') { event.preventDefault(); runQuery(); }
    });
    let timer = null;
    query.addEventListener('input', () => { clearTimeout(timer); timer = setTimeout(() => saveState(false), 300); });
    $('format').addEventListener('change', () => saveState(false));
    $('run-query').addEventListener('click', runQuery);
    $('reset-query').addEventListener('click', () => { query.value = sample(); saveState(false); query.focus(); });
    document.body.dataset.ready = 'true';
    if (h.run === '1' && query.value.trim()) await runQuery();
  }

  start();
})();
