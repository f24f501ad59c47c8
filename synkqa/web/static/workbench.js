/* The program workbench (/): editor with completion and live type check, the program as a graph
   of steps, each step's intermediate result, the compiled SPARQL, runs with a cross-check, and
   questions answered by the best system. All state that matters is in the URL fragment:
     #program=…&backend=…&cross=0&step=N&q=…&run=1
   (step is 1-based; run=1 means the program was run, so opening the link runs it again). */
'use strict';

(() => {
  const {el, svg, clear, api, readHash, writeHash, fragment, seconds, plural, describeKB} = SynKQA;
  const $ = (id) => document.getElementById(id);

  const PAGE_SIZE = 20;
  const CHECK_DELAY = 250;
  const COMPLETE_DELAY = 120;
  const URL_DELAY = 300;
  const ANSWER_CHIPS = 100;

  /* Function argument kind → /api/complete kind. */
  const COMPLETION_KIND = {
    entity: 'entity', name: 'entity', relation: 'relation', attribute: 'attribute', key: 'attribute',
    qkey: 'qualifier', concept: 'concept', comparator: 'comparator', op: 'comparator', direction: 'direction',
  };
  /* KQA Pro's SelectBetween/SelectAmong take words, not comparators. */
  const SELECT_OPS = {SelectBetween: ['greater', 'less'], SelectAmong: ['largest', 'smallest']};
  const PLAIN_KINDS = new Set(['number', 'bool', 'count', 'verdict', 'value']);

  const editor = $('program');
  const backdrop = $('editor-backdrop');
  const popup = $('completion-popup');
  const list = $('completions');

  const state = {
    info: null,
    functions: new Map(),     // name → {name, args, takes, gives, doc}
    check: null,              // {text, result, failure}: the last /api/check answer
    run: null,                // {text, result, failure, status}: the last /api/execute answer
    selected: null,           // the selected step, 0-based
    page: 0,                  // page of the selected step's items
    completion: null,         // {items, active, ctx} while the list is shown
    suppressCompletion: false,
  };

  // ---- small helpers ---------------------------------------------------------------------------

  function debounce(fn, ms) {
    let timer = null;
    const wrapped = (...args) => { clearTimeout(timer); timer = setTimeout(() => fn(...args), ms); };
    wrapped.cancel = () => clearTimeout(timer);
    return wrapped;
  }

  function isKQAPro() { return state.info && state.info.language === 'kqapro'; }

  function looksLikeJSON(text) { return /^\s*[[{]/.test(text); }

  /* Whether a KQA Pro input can be written without quotes (kqapro/program.py's rule). */
  function bare(text) {
    if (!/^[^,();"\s](?:[^,;"]*[^,(;"\s])?$/.test(text)) return false;
    let depth = 0;
    for (const c of text) {
      if (c === '(') depth++;
      else if (c === ')' && --depth < 0) return false;
    }
    return depth === 0;
  }

  function formatArgument(value, detail, quoted) {
    if (isKQAPro()) return quoted || !bare(value) ? JSON.stringify(value) : value;
    // SynKQA-Pro text: a label with ( ) , ; cannot be written; its name can.
    if (/[(),;]/.test(value) && detail && /^\w+$/.test(detail)) return detail;
    return value;
  }

  function stepLabel(step) {
    return step.function + '(' + (step.inputs || []).join(', ') + ')';
  }

  function shorten(text, max) {
    return text.length > max ? text.slice(0, max - 1) + '…' : text;
  }

  function signatureOf(f) {
    return f.name + '(' + f.args.join(', ') + ') → ' + f.gives;
  }

  // ---- the editor: what is the caret in? -------------------------------------------------------

  /* The completion context at ``caret``: a function name at a step's start, an argument of a
     function, or null (inside JSON, after a step's ")", in a nested parenthesis). */
  function contextAt(text, caret) {
    if (looksLikeJSON(text)) return null;
    const quotes = isKQAPro();
    let stepStart = 0, depth = 0, inString = false, escaped = false, closed = false;
    let fn = null, argIndex = -1, argStart = -1;
    for (let i = 0; i < caret; i++) {
      const c = text[i];
      if (inString) {
        if (escaped) escaped = false;
        else if (c === '\\') escaped = true;
        else if (c === '"') inString = false;
        continue;
      }
      if (c === ';') {
        stepStart = i + 1; depth = 0; fn = null; argIndex = -1; closed = false;
      } else if (depth === 0) {
        if (c === '(' && !closed) { depth = 1; fn = text.slice(stepStart, i).trim(); argIndex = 0; argStart = i + 1; }
      } else if (c === '"' && quotes) {
        inString = true;
      } else if (c === '(') {
        depth++;
      } else if (c === ')') {
        depth--;
        if (depth === 0) { closed = true; argIndex = -1; }
      } else if (c === ',' && depth === 1) {
        argIndex++; argStart = i + 1;
      }
    }
    if (closed) return null;
    if (depth === 0) {
      const segment = text.slice(stepStart, caret);
      const lead = segment.length - segment.trimStart().length;
      const prefix = segment.slice(lead);
      if (!/^(?:[A-Za-z_]\w*)?$/.test(prefix)) return null;
      let to = caret;
      while (to < text.length && /\w/.test(text[to])) to++;
      return {type: 'function', key: 'function', prefix, from: stepStart + lead, to};
    }
    if (depth !== 1) return null;
    const f = state.functions.get(fn);
    if (!f) return null;
    const argKind = f.args[argIndex];
    const base = {fn: f, argIndex, argKind};
    if (argKind === undefined) return {type: 'none', ...base};
    const raw = text.slice(argStart, caret);
    const lead = raw.length - raw.trimStart().length;
    let prefix = raw.slice(lead);
    const from = argStart + lead;
    let quoted = false;
    if (quotes && prefix.startsWith('"')) {
      quoted = true;
      try { prefix = JSON.parse(prefix + '"'); } catch (exc) { prefix = prefix.slice(1); }
    }
    let to = caret;
    if (inString) {
      while (to < text.length && text[to] !== '"') to += text[to] === '\\' ? 2 : 1;
      if (to < text.length) to++;
    } else {
      while (to < text.length && !',();'.includes(text[to])) to++;
      while (to > caret && /\s/.test(text[to - 1])) to--;
    }
    let local = null;
    if (argKind === 'select_op' || (argKind === 'op' && SELECT_OPS[f.name])) {
      local = SELECT_OPS[f.name] || ['greater', 'less', 'largest', 'smallest'];
    }
    const kind = local ? 'local' : COMPLETION_KIND[argKind];
    if (!kind) return {type: 'none', ...base};
    return {type: 'arg', ...base, kind, local, prefix, from, to, quoted, key: f.name + '/' + argIndex};
  }

  // ---- the signature line under the editor -----------------------------------------------------

  function renderSignature(ctx) {
    const line = $('signature');
    clear(line);
    if (!ctx || ctx.type === 'function') {
      if (ctx && ctx.prefix && state.functions.has(ctx.prefix)) {
        const f = state.functions.get(ctx.prefix);
        line.append(signatureOf(f), f.doc ? ' — ' + f.doc : '');
      }
      return;
    }
    const f = ctx.fn;
    line.append(f.name + '(');
    f.args.forEach((arg, i) => {
      if (i) line.append(', ');
      line.append(i === ctx.argIndex ? el('b', {}, arg) : arg);
    });
    line.append(') → ' + f.gives + (f.doc ? ' — ' + f.doc : ''));
  }

  // ---- completion ------------------------------------------------------------------------------

  let completeSeq = 0;

  async function updateCompletions() {
    const caret = editor.selectionStart;
    const ctx = editor.selectionStart === editor.selectionEnd ? contextAt(editor.value, caret) : null;
    renderSignature(ctx);
    if (!ctx || ctx.type === 'none') { hideCompletions(); return; }
    const seq = ++completeSeq;
    let items;
    if (ctx.local) {
      const low = ctx.prefix.toLowerCase();
      items = ctx.local.filter((v) => v.startsWith(low)).map((v) => ({value: v, detail: ''}));
    } else {
      const kind = ctx.type === 'function' ? 'function' : ctx.kind;
      const r = await api('/api/complete?kind=' + encodeURIComponent(kind) + '&prefix='
                          + encodeURIComponent(ctx.prefix) + '&limit=30');
      if (seq !== completeSeq) return;
      items = r.ok && r.data && Array.isArray(r.data.items) ? r.data.items : [];
      if (ctx.type === 'function') {
        items = items.map((item) => {
          const f = state.functions.get(item.value);
          return f ? {value: item.value, detail: '(' + f.args.join(', ') + ') → ' + f.gives, doc: f.doc} : item;
        });
      }
    }
    // The text may have changed while the names were on their way: only show them if the
    // caret is still in the same place of the same kind.
    const now = editor.selectionStart === editor.selectionEnd ? contextAt(editor.value, editor.selectionStart) : null;
    if (!now || now.key !== ctx.key || now.prefix !== ctx.prefix || now.from !== ctx.from) return;
    if (!items.length || (items.length === 1 && items[0].value === ctx.prefix)) { hideCompletions(); return; }
    showCompletions(items, ctx);
  }

  const scheduleCompletions = debounce(updateCompletions, COMPLETE_DELAY);

  function showCompletions(items, ctx) {
    state.completion = {items, active: 0, ctx};
    clear(list);
    items.forEach((item, i) => {
      const li = el('li', {id: 'completion-' + i, role: 'option', 'data-index': i, 'data-value': item.value,
                           'aria-selected': i === 0 ? 'true' : 'false', title: item.doc || null},
        el('span', {class: 'value'}, item.value),
        item.detail && item.detail !== item.value ? el('span', {class: 'detail'}, item.detail) : null);
      li.addEventListener('mousedown', (event) => event.preventDefault());   // keep the editor's focus
      li.addEventListener('mousemove', () => setActive(i, false));
      li.addEventListener('click', () => accept(i));
      list.appendChild(li);
    });
    const sig = $('completion-signature');
    clear(sig);
    if (ctx.type === 'arg') sig.append(ctx.fn.name + ': ' + ctx.argKind);
    else sig.append('function');
    popup.hidden = false;
    placePopup(ctx.from);
    editor.setAttribute('aria-expanded', 'true');
    editor.setAttribute('aria-activedescendant', 'completion-0');
  }

  function hideCompletions() {
    completeSeq++;
    if (!state.completion && popup.hidden) return;
    state.completion = null;
    popup.hidden = true;
    clear(list);
    editor.setAttribute('aria-expanded', 'false');
    editor.removeAttribute('aria-activedescendant');
  }

  function setActive(i, scroll = true) {
    const c = state.completion;
    if (!c) return;
    c.active = (i + c.items.length) % c.items.length;
    for (const li of list.children) {
      li.setAttribute('aria-selected', Number(li.dataset.index) === c.active ? 'true' : 'false');
    }
    editor.setAttribute('aria-activedescendant', 'completion-' + c.active);
    if (scroll) list.children[c.active].scrollIntoView({block: 'nearest'});
  }

  /* Filter the shown names by what was typed since, until the server's answer arrives. */
  function narrowCompletions() {
    const c = state.completion;
    if (!c) return;
    const ctx = contextAt(editor.value, editor.selectionStart);
    if (!ctx || ctx.key !== c.ctx.key || ctx.from !== c.ctx.from) { hideCompletions(); return; }
    const low = ctx.prefix.toLowerCase();
    const items = c.items.filter((item) => item.value.toLowerCase().includes(low));
    if (!items.length) { hideCompletions(); return; }
    if (items.length !== c.items.length) showCompletions(items, ctx);
  }

  function accept(index) {
    const c = state.completion;
    if (!c) return;
    const item = c.items[index];
    const ctx = contextAt(editor.value, editor.selectionStart);
    hideCompletions();
    if (!item || !ctx || ctx.key !== c.ctx.key) return;
    let text;
    let reopen = false;
    if (ctx.type === 'function') {
      const f = state.functions.get(item.value);
      if (/^\s*\(/.test(editor.value.slice(ctx.to))) text = item.value;
      else if (f && f.args.length === 0) text = item.value + '()';
      else { text = item.value + '('; reopen = true; }
    } else {
      text = formatArgument(item.value, item.detail, ctx.quoted);
    }
    state.suppressCompletion = !reopen;
    replaceRange(ctx.from, ctx.to, text);
    state.suppressCompletion = false;
    renderSignature(contextAt(editor.value, editor.selectionStart));
  }

  /* Replace characters of the editor as typing would (so Ctrl+Z undoes it). */
  function replaceRange(from, to, text) {
    editor.focus();
    editor.setSelectionRange(from, to);
    let done = false;
    try { done = document.execCommand('insertText', false, text); } catch (exc) { done = false; }
    if (!done || editor.value.slice(from, from + text.length) !== text) {
      editor.setRangeText(text, from, to, 'end');
      editor.dispatchEvent(new Event('input', {bubbles: true}));
    }
  }

  /* Where the caret's character is drawn, relative to the editor box: a mirror of the text. */
  function caretPoint(pos) {
    const mirror = el('div', {class: 'editor-layer editor-mirror', 'aria-hidden': 'true'});
    mirror.append(editor.value.slice(0, pos));
    const marker = el('span', {}, editor.value.slice(pos, pos + 1) || '\u200b');
    mirror.append(marker);
    $('editor').appendChild(mirror);
    const point = {left: marker.offsetLeft, top: marker.offsetTop - editor.scrollTop,
                   height: marker.offsetHeight};
    mirror.remove();
    return point;
  }

  function placePopup(pos) {
    const point = caretPoint(pos);
    const box = $('editor');
    const width = popup.offsetWidth;
    const left = Math.max(0, Math.min(point.left, box.clientWidth - width));
    popup.style.left = left + 'px';
    popup.style.top = (point.top + point.height + 2) + 'px';
  }

  // ---- the layer behind the editor: error underline, selected step -----------------------------

  function currentError() {
    const text = editor.value;
    if (state.check && state.check.text === text && state.check.result && state.check.result.error) {
      return state.check.result.error;
    }
    if (state.run && state.run.text === text && state.run.result && state.run.result.error) {
      return state.run.result.error;
    }
    return null;
  }

  function currentSteps() {
    const text = editor.value;
    if (state.check && state.check.text === text && state.check.result && state.check.result.steps) {
      return state.check.result.steps;
    }
    if (state.run && state.run.text === text && state.run.result && state.run.result.steps) {
      return state.run.result.steps;
    }
    return null;
  }

  function renderBackdrop() {
    clear(backdrop);
    const text = editor.value;
    const marks = [];
    const steps = currentSteps();
    if (steps && state.selected !== null && steps[state.selected] && Array.isArray(steps[state.selected].span)) {
      const [s, e] = steps[state.selected].span;
      marks.push({start: s, end: e, cls: 'step'});
    }
    const error = currentError();
    let atEnd = false;
    if (error && Array.isArray(error.span)) {
      let [s, e] = error.span;
      s = Math.max(0, Math.min(s, text.length));
      e = Math.max(s, Math.min(e, text.length));
      if (s === e && s < text.length) e = s + 1;
      if (s === e) atEnd = true;
      else marks.push({start: s, end: e, cls: 'error'});
    }
    const cuts = new Set([0, text.length]);
    for (const m of marks) { cuts.add(m.start); cuts.add(m.end); }
    const points = [...cuts].filter((p) => p >= 0 && p <= text.length).sort((a, b) => a - b);
    for (let i = 0; i + 1 < points.length; i++) {
      const [s, e] = [points[i], points[i + 1]];
      const classes = marks.filter((m) => m.start <= s && m.end >= e).map((m) => m.cls);
      const piece = text.slice(s, e);
      backdrop.append(classes.length ? el('mark', {class: classes.join(' ')}, piece) : piece);
    }
    if (atEnd) backdrop.append(el('mark', {class: 'error at-end'}, '\u00a0'));
    if (text.endsWith('\n')) backdrop.append(' ');
    backdrop.scrollTop = editor.scrollTop;
  }

  function autosize() {
    editor.style.height = 'auto';
    editor.style.height = (editor.scrollHeight + 2) + 'px';
  }

  // ---- live type check -------------------------------------------------------------------------

  let checkSeq = 0;

  async function check() {
    const text = editor.value;
    const seq = ++checkSeq;
    if (!text.trim()) {
      state.check = null;
      renderAfterCheck();
      return;
    }
    const r = await api('/api/check', {method: 'POST', body: {program: text}});
    if (seq !== checkSeq) return;
    state.check = r.ok ? {text, result: r.data} : {text, result: null, failure: r.error};
    renderAfterCheck();
  }

  const scheduleCheck = debounce(check, CHECK_DELAY);

  function renderAfterCheck() {
    renderStatus();
    renderBackdrop();
    renderGraph();
    renderStepPanel();
    renderResultFreshness();
  }

  function renderStatus() {
    const box = $('check-status');
    clear(box);
    box.className = '';
    const tidy = $('tidy');
    tidy.disabled = true;
    const text = editor.value;
    if (!text.trim()) {
      box.className = 'hint';
      box.append('Type a program: a function name starts a step, ";" separates steps'
                 + (isKQAPro() ? ' (or paste KQA Pro JSON).' : '.'));
      return;
    }
    const c = state.check;
    if (!c || c.text !== text) return;                   // a check is on its way
    if (c.failure) {
      box.className = 'error';
      box.append(el('span', {class: 'kind'}, c.failure.kind + ':'), ' ' + c.failure.message);
      return;
    }
    const error = c.result.error;
    if (error) {
      box.className = 'error';
      box.append(el('span', {class: 'kind'}, (error.kind || 'error') + ':'), el('span', {id: 'check-message'}, error.message));
      if (error.step) box.append(el('span', {class: 'tag bad'}, 'step ' + error.step));
      const fix = quickFix(error, text);
      if (fix) {
        box.append(el('button', {type: 'button', id: 'quick-fix', class: 'small',
                                 onclick: () => replaceRange(fix.start, fix.end, fix.text)},
                      'Replace with ' + fix.label));
      }
      return;
    }
    box.className = 'ok';
    const n = c.result.steps ? c.result.steps.length : 0;
    box.append('✓ well-typed: ' + plural(n, 'step'));
    if (c.result.program && c.result.program !== text) tidy.disabled = false;
  }

  /* "unknown relation 'birthplace'; did you mean born_in?" with the span on 'birthplace':
     offer to replace it. */
  function quickFix(error, text) {
    if (!Array.isArray(error.span)) return null;
    const m = /unknown [\w ]+? '(.*)'; did you mean (.+)\?$/.exec(error.message || '');
    if (!m) return null;
    const [start, end] = error.span;
    const written = text.slice(start, end);
    let unquoted = written;
    if (written.startsWith('"')) { try { unquoted = JSON.parse(written); } catch (exc) { unquoted = written; } }
    if (unquoted.trim() !== m[1]) return null;
    return {start, end, label: m[2], text: formatArgument(m[2], null, written.startsWith('"'))};
  }

  // ---- running ---------------------------------------------------------------------------------

  let runSeq = 0;

  async function run() {
    const text = editor.value;
    hideCompletions();
    if (!text.trim()) {
      showResultMessage('Nothing to run: the program is empty.');
      return;
    }
    const seq = ++runSeq;
    const button = $('run');
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    clear(button).append(el('span', {class: 'spinner', 'aria-hidden': 'true'}), 'Running…');
    const r = await api('/api/execute', {method: 'POST', body: {program: text, backend: $('backend').value,
                                                                cross_check: $('cross-check').checked}});
    if (seq !== runSeq) return;
    button.disabled = false;
    button.removeAttribute('aria-busy');
    clear(button).append('Run');
    if (r.data && typeof r.data === 'object' && 'answer' in r.data) {
      state.run = {text, result: r.data, status: r.status};
    } else {
      state.run = {text, result: null, failure: r.error, status: r.status};
    }
    state.page = 0;
    const steps = state.run.result && state.run.result.steps;
    if (state.selected !== null && (!steps || state.selected >= steps.length)) state.selected = null;
    renderRun();
    renderBackdrop();
    renderGraph();
    renderStepPanel();
    renderSparql();
    writeState();
    document.body.dataset.runs = String(Number(document.body.dataset.runs || 0) + 1);
  }

  function runIsFresh() {
    return !!(state.run && state.run.text === editor.value);
  }

  function showResultMessage(message) {
    $('result').hidden = false;
    const err = $('run-error');
    err.hidden = false;
    err.textContent = message;
  }

  function renderRun() {
    const box = $('result');
    box.hidden = false;
    const run = state.run;
    const answer = $('answer');
    clear(answer);
    $('answer-kind').textContent = '';
    $('answer-kind').hidden = true;
    const badge = $('cross-check-badge');
    badge.hidden = true;
    const detail = $('cross-check-detail');
    detail.hidden = true;
    const err = $('run-error');
    err.hidden = true;
    err.textContent = '';
    $('timings').textContent = '';
    if (!run) { box.hidden = true; return; }
    if (run.failure || !run.result) {
      const f = run.failure || {kind: 'error', message: 'no answer'};
      showResultMessage(withKind(f));
      renderResultFreshness();
      return;
    }
    const res = run.result;
    if (res.error) {
      const limit = run.status === 503 ? ' (the server\'s limit is ' + state.info.limits.program_seconds + ' s)' : '';
      err.hidden = false;
      err.textContent = withKind(res.error) + limit;
    }
    if (res.answer !== null && res.answer !== undefined) {
      renderAnswer(answer, res.answer, res.kind);
      if (res.kind) { $('answer-kind').hidden = false; $('answer-kind').textContent = res.kind; }
    } else {
      answer.append(el('span', {class: 'plain'}, '—'));
    }
    const times = [];
    if (typeof res.seconds === 'number') times.push(res.backend + ' ' + seconds(res.seconds));
    if (res.cross_check && typeof res.cross_check.seconds === 'number') {
      times.push(res.cross_check.engine + ' ' + seconds(res.cross_check.seconds));
    }
    if (typeof res.total_seconds === 'number') times.push('total ' + seconds(res.total_seconds));
    $('timings').textContent = times.join(' · ');
    const cc = res.cross_check;
    if (cc) {
      badge.hidden = false;
      badge.className = 'badge';
      clear(detail);
      if (cc.error !== undefined && cc.error !== null) {
        badge.classList.add('error');
        badge.textContent = '! ' + cc.engine + ' failed';
        badge.title = cc.engine + ' failed: ' + cc.error;
        detail.hidden = false;
        detail.append(cc.engine + ' failed: ', el('code', {}, shorten(String(cc.error), 400)));
      } else if (cc.agree) {
        badge.classList.add('agree');
        badge.textContent = '✓ ' + cc.engine + ' agrees';
        badge.title = cc.engine + ' answered the same: ' + shorten(String(cc.answer), 300);
      } else {
        badge.classList.add('disagree');
        badge.textContent = '✗ ' + cc.engine + ' disagrees';
        badge.title = cc.engine + ' answered: ' + shorten(String(cc.answer), 300);
        detail.hidden = false;
        detail.append(cc.engine + ' answered: ', el('code', {}, shorten(String(cc.answer), 400)));
      }
      badge.setAttribute('aria-label', badge.title);
    }
    renderResultFreshness();
  }

  /* "kind: message", unless the message already starts with its kind. */
  function withKind(error) {
    const kind = error.kind || 'error';
    const message = String(error.message || '');
    return message.toLowerCase().startsWith(kind.toLowerCase()) ? message : kind + ': ' + message;
  }

  function renderAnswer(box, answer, kind) {
    const text = String(answer);
    if (text === '') { box.append(el('span', {class: 'plain'}, '(empty)')); return; }
    const parts = (kind === 'entities' || kind === 'names') ? text.split('|') : [text];
    if (parts.length === 1) { box.append(el('span', {class: 'plain'}, text)); return; }
    for (const part of parts.slice(0, ANSWER_CHIPS)) box.append(el('span', {class: 'chip'}, part));
    if (parts.length > ANSWER_CHIPS) {
      box.append(el('span', {class: 'hint'}, '… and ' + (parts.length - ANSWER_CHIPS).toLocaleString('en') + ' more'));
    }
    box.title = plural(parts.length, 'item');
  }

  function renderResultFreshness() {
    const stale = !!state.run && !runIsFresh();
    $('result').classList.toggle('stale', stale);
    $('stale-note').hidden = !stale;
    $('sparql').classList.toggle('stale', stale && !!(state.run.result && state.run.result.sparql));
  }

  // ---- the graph of steps ----------------------------------------------------------------------

  const NODE_H = 44;
  const ROW_GAP = 30;
  const COL_GAP = 18;
  const PAD = 14;
  const LABEL_MAX = 40;

  function graphData() {
    const text = editor.value;
    const fresh = runIsFresh() && state.run.result && state.run.result.steps;
    const steps = fresh ? state.run.result.steps : currentSteps();
    const trace = fresh ? state.run.result.trace : null;
    const failedStep = fresh && state.run.result.error && state.run.result.error.step ? state.run.result.error.step - 1 : null;
    return {steps: steps || null, trace: trace || null, failedStep, text};
  }

  function summary(t) {
    if (!t) return '';
    if (t.size === 1 && t.items && t.items.length) {
      return (t.kind === 'entities' ? '' : t.kind + ': ') + t.items[0];
    }
    if (t.kind === 'entities') return plural(t.size, 'entity', 'entities');
    return plural(t.size, 'item') + ' (' + t.kind + ')';
  }

  let charWidth = 0;

  function measureChar(root) {
    if (charWidth) return charWidth;
    const probe = svg('text', {class: 'label', x: 0, y: 0}, 'MMMMMMMMMMMMMMMMMMMM');
    const g = svg('g', {class: 'node'}, probe);
    root.appendChild(g);
    const w = probe.getComputedTextLength();
    g.remove();
    charWidth = w > 0 ? w / 20 : 7.3;
    return charWidth;
  }

  function renderGraph() {
    const box = $('graph');
    const {steps, trace, failedStep} = graphData();
    clear(box);
    if (!steps || !steps.length) {
      box.append(el('p', {class: 'empty'}, editor.value.trim() ? 'The steps are drawn when the program type-checks.'
                                                              : 'The program\'s steps are drawn here.'));
      return;
    }
    const root = svg('svg', {role: 'group', 'aria-label': 'Program steps: ' + plural(steps.length, 'step'),
                             xmlns: 'http://www.w3.org/2000/svg'});
    box.append(root);
    const cw = measureChar(root);
    const n = steps.length;
    const labels = steps.map((s) => shorten(stepLabel(s), LABEL_MAX));
    const summaries = steps.map((s, i) => summary(trace && trace[i]));
    const width = steps.map((s, i) => Math.max(90, Math.ceil((3 + Math.max(labels[i].length, shorten(summaries[i], LABEL_MAX).length)) * cw) + 18));
    // Rows: a step sits one row below the lowest of its inputs.
    const row = new Array(n).fill(0);
    const users = steps.map(() => []);
    steps.forEach((s, i) => {
      for (const d of s.dependencies || []) {
        if (d >= 0 && d < i) { row[i] = Math.max(row[i], row[d] + 1); users[d].push(i); }
      }
    });
    // Columns: each input's subtree side by side, a step centred over its inputs.
    const x = new Array(n).fill(null);
    const placed = new Array(n).fill(false);
    function subtree(i, out = []) {
      out.push(i);
      for (const d of steps[i].dependencies || []) if (d >= 0 && d < i) subtree(d, out);
      return out;
    }
    function place(i, left) {
      placed[i] = true;
      const deps = (steps[i].dependencies || []).filter((d) => d >= 0 && d < i && !placed[d]);
      let right = left;
      if (!deps.length) {
        x[i] = left + width[i] / 2;
        return left + width[i];
      }
      let cursor = left;
      for (const d of deps) { right = place(d, cursor); cursor = right + COL_GAP; }
      x[i] = (x[deps[0]] + x[deps[deps.length - 1]]) / 2;
      const overhang = left - (x[i] - width[i] / 2);
      if (overhang > 0) {
        for (const j of subtree(i)) x[j] += overhang;
        right += overhang;
      }
      return Math.max(right, x[i] + width[i] / 2);
    }
    let cursor = PAD;
    for (let i = n - 1; i >= 0; i--) {
      if (!users[i].length && !placed[i]) cursor = place(i, cursor) + COL_GAP * 2;
    }
    for (let i = 0; i < n; i++) if (!placed[i]) cursor = place(i, cursor) + COL_GAP * 2;
    const totalW = Math.max(...steps.map((s, i) => x[i] + width[i] / 2)) + PAD;
    const rows = Math.max(...row) + 1;
    const totalH = PAD * 2 + rows * NODE_H + (rows - 1) * ROW_GAP;
    const y = row.map((r) => PAD + r * (NODE_H + ROW_GAP));
    root.setAttribute('width', Math.ceil(totalW));
    root.setAttribute('height', Math.ceil(totalH));
    root.setAttribute('viewBox', '0 0 ' + Math.ceil(totalW) + ' ' + Math.ceil(totalH));
    root.append(svg('defs', {}, svg('marker', {id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7,
                                              markerHeight: 7, orient: 'auto-start-reverse'},
                                   svg('path', {d: 'M 0 0 L 10 5 L 0 10 z'}))));
    const edges = svg('g', {class: 'edges'});
    root.append(edges);
    steps.forEach((s, i) => {
      const deps = (s.dependencies || []).filter((d) => d >= 0 && d < i);
      deps.forEach((d, k) => {
        const x1 = x[d], y1 = y[d] + NODE_H;
        const x2 = x[i] + (deps.length > 1 ? (k - (deps.length - 1) / 2) * 16 : 0), y2 = y[i] - 1;
        const mid = (y1 + y2) / 2;
        edges.append(svg('path', {class: 'edge', 'data-from': d + 1, 'data-to': i + 1, 'marker-end': 'url(#arrow)',
                                  d: `M ${x1} ${y1} C ${x1} ${mid} ${x2} ${mid} ${x2} ${y2}`}));
      });
    });
    steps.forEach((s, i) => {
      const left = x[i] - width[i] / 2;
      const full = stepLabel(s);
      const classes = ['node'];
      if (state.selected === i) classes.push('selected');
      if (trace && trace[i]) classes.push('has-result');
      if (failedStep === i) classes.push('failed');
      if (!users[i].length) classes.push('last');
      const aria = 'Step ' + (i + 1) + ': ' + full + (summaries[i] ? ', ' + summaries[i] : '');
      const g = svg('g', {class: classes.join(' '), 'data-step': i + 1, tabindex: 0, role: 'button',
                          'aria-pressed': state.selected === i ? 'true' : 'false', 'aria-label': aria,
                          transform: `translate(${left} ${y[i]})`},
        svg('title', {}, aria),
        svg('rect', {width: width[i], height: NODE_H, rx: 6, ry: 6}),
        svg('text', {class: 'index', x: 8, y: 17}, String(i + 1)),
        svg('text', {class: 'label', x: 8 + 3 * cw, y: 17}, labels[i]),
        svg('text', {class: 'summary', x: 8 + 3 * cw, y: 35}, shorten(summaries[i] || (trace ? '—' : ''), LABEL_MAX)));
      g.addEventListener('click', () => selectStep(i));
      g.addEventListener('keydown', (event) => {
        if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); selectStep(i); }
        else if (event.key === 'ArrowDown' || event.key === 'ArrowRight') { event.preventDefault(); focusStep(i + 1); }
        else if (event.key === 'ArrowUp' || event.key === 'ArrowLeft') { event.preventDefault(); focusStep(i - 1); }
      });
      root.append(g);
    });
  }

  function focusStep(i) {
    const node = document.querySelector('#graph .node[data-step="' + (i + 1) + '"]');
    if (node) node.focus();
  }

  function selectStep(i) {
    state.selected = i;
    state.page = 0;
    for (const node of document.querySelectorAll('#graph .node')) {
      const on = Number(node.dataset.step) - 1 === state.selected;
      node.classList.toggle('selected', on);
      node.setAttribute('aria-pressed', on ? 'true' : 'false');
    }
    renderStepPanel();
    renderBackdrop();
    writeState();
  }

  // ---- the selected step's intermediate result -------------------------------------------------

  function renderStepPanel() {
    const title = $('step-title'), meta = $('step-meta'), value = $('step-value'), items = $('step-items');
    const pager = $('step-pager'), note = $('step-note');
    title.textContent = '';
    value.hidden = true;
    items.hidden = true;
    pager.hidden = true;
    note.hidden = true;
    clear(items);
    const {steps, trace} = graphData();
    const i = state.selected;
    if (!steps || i === null || !steps[i]) {
      meta.textContent = steps ? 'Click a step in the graph to see its intermediate result.'
                               : 'Run the program, then click a step.';
      return;
    }
    const step = steps[i];
    title.textContent = 'Step ' + (i + 1) + ' · ' + stepLabel(step);
    const inputs = (step.dependencies || []).map((d) => 'step ' + (d + 1));
    const t = trace && trace[i];
    if (!t) {
      const failed = runIsFresh() && state.run.result && state.run.result.error
        && state.run.result.error.step === i + 1;
      meta.textContent = (inputs.length ? 'input: ' + inputs.join(', ') + ' · ' : '')
        + (failed ? 'this step failed: ' + state.run.result.error.message
                  : runIsFresh() ? 'no result (the run stopped before this step)' : 'run the program to see its result');
      return;
    }
    meta.textContent = t.kind + ' · ' + plural(t.size, 'item') + (inputs.length ? ' · input: ' + inputs.join(', ') : '');
    const shown = t.items || [];
    if (t.size === 1 && shown.length === 1 && (PLAIN_KINDS.has(t.kind) || !/s$/.test(t.kind))) {
      value.hidden = false;
      value.textContent = shown[0];
      return;
    }
    if (!t.size) {
      value.hidden = false;
      value.textContent = '∅';
      value.title = 'empty';
      note.hidden = false;
      note.textContent = 'The step\'s value is empty.';
      return;
    }
    const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
    state.page = Math.max(0, Math.min(state.page, pages - 1));
    const start = state.page * PAGE_SIZE;
    const end = Math.min(shown.length, start + PAGE_SIZE);
    items.hidden = false;
    items.setAttribute('start', String(start + 1));
    for (const item of shown.slice(start, end)) items.append(el('li', {}, item));
    if (shown.length > PAGE_SIZE) {
      pager.hidden = false;
      $('step-range').textContent = (start + 1) + '–' + end + ' of ' + shown.length.toLocaleString('en')
        + (shown.length < t.size ? ' listed' : '');
      $('step-prev').disabled = state.page === 0;
      $('step-next').disabled = state.page >= pages - 1;
    }
    if (shown.length < t.size) {
      note.hidden = false;
      note.textContent = 'The server lists ' + shown.length.toLocaleString('en') + ' of the '
        + t.size.toLocaleString('en') + ' items (at most 1,000 are sent'
        + (isKQAPro() ? '; entities sharing a name are listed once' : '') + ').';
    }
  }

  function turnPage(delta) {
    state.page += delta;
    renderStepPanel();
  }

  // ---- compiled SPARQL -------------------------------------------------------------------------

  function renderSparql() {
    const pre = $('sparql');
    const link = $('open-query');
    const copy = $('copy-sparql');
    const res = state.run && state.run.result;
    pre.classList.remove('placeholder');
    if (res && res.sparql) {
      pre.textContent = res.sparql;
      link.href = '/query#' + fragment([['query', res.sparql]]);
      link.removeAttribute('aria-disabled');
      copy.disabled = false;
    } else {
      pre.classList.add('placeholder');
      pre.textContent = res && res.sparql_error ? 'No SPARQL: ' + res.sparql_error
        : 'Run the program to see the SPARQL query it compiles to.';
      link.removeAttribute('href');
      link.setAttribute('aria-disabled', 'true');
      copy.disabled = true;
    }
    renderResultFreshness();
  }

  async function copySparql() {
    const text = $('sparql').textContent;
    try {
      await navigator.clipboard.writeText(text);
      $('copy-sparql').textContent = 'Copied';
    } catch (exc) {
      const range = document.createRange();
      range.selectNodeContents($('sparql'));
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      $('copy-sparql').textContent = 'Selected';
    }
    setTimeout(() => { $('copy-sparql').textContent = 'Copy'; }, 1500);
  }

  // ---- questions -------------------------------------------------------------------------------

  let askTimer = null;

  async function ask(event) {
    if (event) event.preventDefault();
    const question = $('question').value.trim();
    if (!question || !state.info || !state.info.questions) return;
    writeState();
    const button = $('ask');
    button.disabled = true;
    const progress = $('ask-progress');
    progress.hidden = false;
    const started = Date.now();
    const tick = () => {
      const s = Math.round((Date.now() - started) / 1000);
      $('ask-progress-text').textContent = 'Asking… ' + s + ' s'
        + (s >= 3 ? ' (the first question loads or trains the model: up to a minute or two)' : '');
    };
    tick();
    clearInterval(askTimer);
    askTimer = setInterval(tick, 1000);
    const r = await api('/api/ask', {method: 'POST', body: {question}});
    clearInterval(askTimer);
    progress.hidden = true;
    button.disabled = false;
    renderAsk(r);
  }

  function renderAsk(r) {
    const box = $('ask-result');
    box.hidden = false;
    const err = $('ask-error');
    const body = $('candidates').querySelector('tbody');
    clear(body);
    if (!r.ok || !r.data) {
      err.hidden = false;
      err.textContent = (r.error ? r.error.kind + ': ' + r.error.message : 'no answer');
      $('ask-summary').textContent = '';
      $('chosen-program').textContent = '—';
      $('use-chosen').disabled = true;
      $('candidates-wrap').hidden = true;
      return;
    }
    err.hidden = true;
    const d = r.data;
    $('ask-summary').textContent = d.system + (d.selected_rank ? ' chose candidate ' + d.selected_rank : ' chose no candidate')
      + (d.fallback ? ' (a fallback: no candidate passed)' : '') + ' · answer: ' + (d.answer === null || d.answer === undefined ? '—' : shorten(String(d.answer), 200))
      + ' · ' + seconds(d.seconds);
    $('chosen-program').textContent = d.program || '—';
    $('use-chosen').disabled = !d.program;
    $('use-chosen').onclick = () => loadProgram(d.program);
    $('candidates-wrap').hidden = !(d.candidates && d.candidates.length);
    for (const c of d.candidates || []) {
      const chosen = c.rank === d.selected_rank;
      const passed = c.verdict === 'passed';
      body.append(el('tr', {class: chosen ? 'chosen' : null, 'data-rank': c.rank, 'aria-current': chosen ? 'true' : null},
        el('td', {class: 'num'}, String(c.rank), chosen ? el('span', {class: 'tag ok', title: 'the chosen program'}, ' chosen') : null),
        el('td', {}, el('code', {}, c.program || '—')),
        el('td', {class: 'num'}, typeof c.score === 'number' ? c.score.toFixed(3) : '—'),
        el('td', {}, c.answer === null || c.answer === undefined ? '—' : shorten(String(c.answer), 120)),
        el('td', {}, el('span', {class: 'tag ' + (passed ? 'ok' : (c.verdict === 'not-examined' ? '' : 'bad'))}, c.verdict || '—')),
        el('td', {}, c.program ? el('button', {type: 'button', class: 'small edit-candidate',
                                               'aria-label': 'Edit candidate ' + c.rank + ' in the program editor',
                                               onclick: () => loadProgram(c.program)}, 'Edit') : null)));
    }
  }

  function loadProgram(text) {
    editor.value = text;
    state.selected = null;
    state.page = 0;
    hideCompletions();
    autosize();
    renderBackdrop();
    check();
    writeState();
    editor.focus();
    editor.setSelectionRange(text.length, text.length);
    editor.scrollIntoView({block: 'nearest'});
  }

  // ---- URL state -------------------------------------------------------------------------------

  function writeState() {
    if (!state.info) return;
    const pairs = [['program', editor.value.trim() ? editor.value : null]];
    if ($('backend').value && $('backend').value !== state.info.backends[0]) pairs.push(['backend', $('backend').value]);
    if (!$('cross-check').checked) pairs.push(['cross', '0']);
    if (state.selected !== null) pairs.push(['step', String(state.selected + 1)]);
    const q = $('question').value.trim();
    if (q) pairs.push(['q', q]);
    if (runIsFresh() && editor.value.trim()) pairs.push(['run', '1']);
    writeHash(pairs);
  }

  const scheduleWriteState = debounce(writeState, URL_DELAY);

  async function restoreState() {
    const h = readHash();
    editor.value = h.program || '';
    if (h.backend && state.info.backends.includes(h.backend)) $('backend').value = h.backend;
    else $('backend').value = state.info.backends[0];
    $('cross-check').checked = h.cross !== '0';
    $('question').value = h.q || '';
    const step = parseInt(h.step, 10);
    state.selected = Number.isFinite(step) && step >= 1 ? step - 1 : null;
    state.page = 0;
    state.run = null;
    renderRun();
    renderSparql();
    autosize();
    renderBackdrop();
    await check();
    if (h.run === '1' && editor.value.trim()) await run();
    else writeState();
  }

  // ---- wiring ----------------------------------------------------------------------------------

  function onInput() {
    autosize();
    renderBackdrop();
    renderResultFreshness();
    if (state.suppressCompletion) hideCompletions();
    else { narrowCompletions(); scheduleCompletions(); }
    scheduleCheck();
    scheduleWriteState();
  }

  function onKeyDown(event) {
    if ((event.ctrlKey || event.metaKey) && event.key === 'Enter') {
      event.preventDefault();
      run();
      return;
    }
    if (event.ctrlKey && (event.key === ' ' || event.code === 'Space')) {
      event.preventDefault();
      scheduleCompletions.cancel();
      updateCompletions();
      return;
    }
    const c = state.completion;
    if (!c) return;
    if (event.key === 'ArrowDown') { event.preventDefault(); setActive(c.active + 1); }
    else if (event.key === 'ArrowUp') { event.preventDefault(); setActive(c.active - 1); }
    else if (event.key === 'PageDown') { event.preventDefault(); setActive(Math.min(c.items.length - 1, c.active + 8)); }
    else if (event.key === 'PageUp') { event.preventDefault(); setActive(Math.max(0, c.active - 8)); }
    else if ((event.key === 'Enter' || event.key === 'Tab') && !event.shiftKey && !event.altKey) {
      event.preventDefault();
      accept(c.active);
    } else if (event.key === 'Escape') {
      event.preventDefault();
      hideCompletions();
    }
  }

  function onCaretMove(event) {
    if (event && event.type === 'keyup' && !['ArrowLeft', 'ArrowRight', 'Home', 'End', 'ArrowUp', 'ArrowDown'].includes(event.key)) return;
    if (event && event.type === 'keyup' && state.completion && (event.key === 'ArrowUp' || event.key === 'ArrowDown')) return;
    const ctx = editor.selectionStart === editor.selectionEnd ? contextAt(editor.value, editor.selectionStart) : null;
    renderSignature(ctx);
    if (state.completion && (!ctx || ctx.key !== state.completion.ctx.key || ctx.from !== state.completion.ctx.from)) {
      hideCompletions();
    }
  }

  function wire() {
    editor.addEventListener('input', onInput);
    editor.addEventListener('keydown', onKeyDown);
    editor.addEventListener('keyup', onCaretMove);
    editor.addEventListener('click', onCaretMove);
    editor.addEventListener('blur', () => setTimeout(() => { if (document.activeElement !== editor) hideCompletions(); }, 150));
    editor.addEventListener('scroll', () => {
      backdrop.scrollTop = editor.scrollTop;
      if (state.completion) placePopup(state.completion.ctx.from);
    });
    new ResizeObserver(() => renderBackdrop()).observe(editor);
    $('run').addEventListener('click', run);
    $('backend').addEventListener('change', writeState);
    $('cross-check').addEventListener('change', writeState);
    $('ask-form').addEventListener('submit', ask);
    $('question').addEventListener('input', scheduleWriteState);
    $('step-prev').addEventListener('click', () => turnPage(-1));
    $('step-next').addEventListener('click', () => turnPage(1));
    $('copy-sparql').addEventListener('click', copySparql);
    $('tidy').addEventListener('click', () => {
      const c = state.check;
      if (c && c.text === editor.value && c.result && c.result.program) {
        replaceRange(0, editor.value.length, c.result.program);
      }
    });
    document.addEventListener('keydown', (event) => {
      if ((event.ctrlKey || event.metaKey) && event.key === 'Enter' && event.target !== editor
          && event.target !== $('question')) {
        event.preventDefault();
        run();
      }
    });
    window.addEventListener('hashchange', () => restoreState());
  }

  async function start() {
    wire();
    const r = await api('/api/info');
    if (!r.ok) {
      $('kb-name').textContent = 'the server did not describe its KB';
      $('check-status').className = 'error';
      $('check-status').textContent = (r.error ? r.error.kind + ': ' + r.error.message : 'no /api/info');
      return;
    }
    const info = r.data;
    state.info = info;
    for (const f of info.functions || []) state.functions.set(f.name, f);
    $('kb-name').textContent = describeKB(info);
    $('kb-name').title = describeKB(info);
    const select = $('backend');
    clear(select);
    for (const b of info.backends) select.append(el('option', {value: b}, b));
    if (info.language === 'kqapro') {
      editor.placeholder = 'FindAll();FilterConcept(human);Count()   or KQA Pro JSON: [{"function": "FindAll", …}]';
      $('question').placeholder = '';
    }
    if (!info.questions) {
      $('question').disabled = true;
      $('ask').disabled = true;
      const note = $('question-note');
      note.hidden = false;
      note.textContent = 'Questions are answered on the SynKQA-Pro KB only (its parsers are trained on its '
        + 'benchmark); this server runs ' + (info.language === 'kqapro' ? 'a KQA Pro KB' : 'another KB or has them turned off')
        + '. Write programs below.';
    }
    document.body.dataset.ready = 'true';
    await restoreState();
    document.body.dataset.ready = 'restored';
  }

  start();
})();
