/* Shared by the workbench (/) and the query page (/query): building DOM nodes (text only, never
   HTML from data), calling the JSON API, and keeping a page's state in the URL fragment. */
'use strict';

const SynKQA = (() => {
  /** An element: el('li', {class: 'x', 'data-step': 2, onclick: fn}, 'text', childNode, …).
      Strings become text nodes, so KB names are never parsed as HTML. */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  const SVG_NS = 'http://www.w3.org/2000/svg';

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    setAttrs(node, attrs);
    append(node, children);
    return node;
  }

  function setAttrs(node, attrs) {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith('on') && typeof value === 'function') node.addEventListener(key.slice(2), value);
      else if (key === 'text') node.textContent = String(value);
      else node.setAttribute(key, value === true ? '' : String(value));
    }
  }

  function append(node, children) {
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  /** fetch + JSON: {ok, status, data, error, headers}. ``error`` is the API's {kind, message}
      (or one made up for a network failure or a non-JSON answer). */
  async function api(path, options = {}) {
    const init = {method: options.method || 'GET', headers: Object.assign({}, options.headers)};
    if (options.body !== undefined) {
      init.body = JSON.stringify(options.body);
      init.headers['Content-Type'] = 'application/json';
    }
    if (options.signal) init.signal = options.signal;
    let response;
    try {
      response = await fetch(path, init);
    } catch (exc) {
      if (exc && exc.name === 'AbortError') throw exc;
      return {ok: false, status: 0, data: null, headers: null,
              error: {kind: 'network', message: 'the server did not answer (' + exc.message + ')'}};
    }
    const text = await response.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (exc) { data = null; }
    let error = null;
    if (!response.ok) {
      error = data && data.error && typeof data.error === 'object' ? data.error
        : {kind: 'HTTP ' + response.status, message: text.slice(0, 500) || response.statusText};
    }
    return {ok: response.ok, status: response.status, data, error, headers: response.headers};
  }

  // ---- state in the URL fragment: #key=value&key=value -----------------------------------------
  // Values are percent-encoded except for characters that are safe in a fragment and common in
  // programs and queries (; , : / ? @ ( )), so a shared link stays readable.

  function encodeValue(value) {
    return encodeURIComponent(value)
      .replace(/%3B/gi, ';').replace(/%2C/gi, ',').replace(/%3A/gi, ':')
      .replace(/%2F/gi, '/').replace(/%3F/gi, '?').replace(/%40/gi, '@');
  }

  function decodeValue(value) {
    try { return decodeURIComponent(value.replace(/\+/g, '%20')); } catch (exc) { return value; }
  }

  function fragment(pairs) {
    return pairs.filter(([, v]) => v !== null && v !== undefined && v !== '')
      .map(([k, v]) => encodeURIComponent(k) + '=' + encodeValue(String(v))).join('&');
  }

  function readHash(hash = window.location.hash) {
    const out = {};
    const body = hash.startsWith('#') ? hash.slice(1) : hash;
    for (const part of body.split('&')) {
      if (!part) continue;
      const at = part.indexOf('=');
      const key = decodeValue(at < 0 ? part : part.slice(0, at));
      out[key] = at < 0 ? '' : decodeValue(part.slice(at + 1));
    }
    return out;
  }

  function writeHash(pairs) {
    const body = fragment(pairs);
    const url = window.location.pathname + window.location.search + (body ? '#' + body : '');
    if (url !== window.location.pathname + window.location.search + window.location.hash) {
      window.history.replaceState(null, '', url);
    }
  }

  function seconds(value) {
    if (typeof value !== 'number' || !isFinite(value)) return '–';
    if (value < 0.001) return (value * 1e6).toFixed(0) + ' µs';
    if (value < 1) return (value * 1000).toFixed(value < 0.01 ? 2 : 1) + ' ms';
    return value.toFixed(2) + ' s';
  }

  function plural(n, one, many) {
    return n.toLocaleString('en') + ' ' + (n === 1 ? one : (many || one + 's'));
  }

  /** The page header's KB line from /api/info. */
  function describeKB(info) {
    const counts = info.counts || {};
    const bits = [info.kb, info.language === 'kqapro' ? 'KQA Pro KoPL' : 'SynKQA-Pro KoPL'];
    if (counts.entity !== undefined) {
      bits.push(info.language === 'kqapro' ? plural(counts.entity, 'entity name')
                                           : plural(counts.entity, 'entity', 'entities'));
    }
    if (counts.relation !== undefined) bits.push(plural(counts.relation, 'relation'));
    return bits.join(' · ');
  }

  return {el, svg, clear, api, readHash, writeHash, fragment, encodeValue, seconds, plural, describeKB};
})();
