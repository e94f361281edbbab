/*
 * What every part of the inspector page draws with: building elements and SVG, and the way
 * ids, times and durations are written. Loaded first; the other scripts find these on
 * `globalThis.SwitchyardInspector`.
 */
((inspector) => {
  'use strict';

  const $ = (selector) => document.querySelector(selector);

  function fill(node, attrs, children, setAttribute) {
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'dataset') for (const [k, v] of Object.entries(value)) node.dataset[k] = String(v);
      else if (key.startsWith('on')) node.addEventListener(key.slice(2), value);
      else setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  /** Builds an element: h('div', { class: 'x', dataset: { a: 1 } }, child, 'text'). */
  function h(tag, attrs, ...children) {
    const node = document.createElement(tag);
    return fill(node, attrs, children, (key, value) => node.setAttribute(key, value));
  }

  /** Builds an SVG element the same way. */
  function svg(tag, attrs, ...children) {
    const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    return fill(node, attrs, children, (key, value) => node.setAttribute(key, value));
  }

  function shortId(id) {
    return id.length > 14 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id;
  }

  /** A duration as people say it: 340 ms, 4.2 s, 3 min 5 s, 2 h 10 min. */
  function formatDuration(ms) {
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
    if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
    return `${Math.floor(ms / 3_600_000)} h ${Math.round((ms % 3_600_000) / 60_000)} min`;
  }

  /** Local time of day for today's times, else the date too. */
  function formatTime(iso) {
    const date = new Date(iso);
    const sameDay = date.toDateString() === new Date().toDateString();
    const time = date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
    return sameDay ? time : `${date.toLocaleDateString([], { month: 'short', day: 'numeric' })} ${time}`;
  }

  Object.assign(inspector, { $, h, svg, shortId, formatDuration, formatTime });
})((globalThis.SwitchyardInspector ??= {}));
