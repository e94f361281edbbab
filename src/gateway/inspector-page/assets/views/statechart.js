// @ts-check
/*
 * The statechart of the selected actor (or the replayed run), with the states it is in lit up.
 * The chart's SVG (laid out by the gateway, /inspect/machines.json) is put in once per machine;
 * after that only the classes of its state nodes change, so the chart does not flicker and
 * stays where it was scrolled.
 */
import { html, render } from '../vendor/lit-html/lit-html.js';
import { leafPaths, selectedActor, stateText } from '../selectors.js';

/**
 * Scrolls the chart so the state the actor is in stays visible (unless the whole chart fits).
 * @param {HTMLElement} box
 * @param {Element} node
 */
function revealInChart(box, node) {
  const view = box.getBoundingClientRect();
  const target = node.getBoundingClientRect();
  const margin = 24;
  if (target.top >= view.top + margin && target.bottom <= view.bottom - margin) return;
  const top = box.scrollTop + (target.top - view.top) - (view.height - target.height) / 2;
  box.scrollTo({ top: Math.max(0, top), behavior: 'smooth' });
}

/**
 * @param {{ box: HTMLElement, meta: HTMLElement, fit: HTMLButtonElement, store: import('../store.js').Store }} options
 */
export function createStatechart({ box, meta, fit, store }) {
  /** The machine whose SVG the box holds. */
  let shownMachine = '';
  fit.addEventListener('click', () => {
    const fitted = box.classList.toggle('fit');
    fit.textContent = fitted ? 'fit width' : 'whole chart';
    fit.setAttribute('aria-pressed', String(fitted));
  });
  return {
    render() {
      const state = store.state;
      const actor = selectedActor(state);
      const machine = actor && actor.machineId ? state.machines.get(actor.machineId) : undefined;
      if (!actor || !machine) {
        box.dataset['machine'] = '';
        shownMachine = '';
        const text = state.machines.size ? 'Waiting for actors…' : 'Loading statecharts…';
        if (box.textContent !== text)
          box.replaceChildren(Object.assign(document.createElement('p'), { className: 'empty', textContent: text }));
        render(html``, meta);
        return;
      }
      if (shownMachine !== machine.machineId || !box.querySelector('svg')) {
        // The gateway's own SVG (src/diagrams/), served from this origin.
        box.innerHTML = machine.svg;
        shownMachine = machine.machineId;
      }
      box.dataset['machine'] = machine.name;
      box.dataset['actorId'] = actor.id;
      const leaves = leafPaths(actor.value, '');
      const active = new Set(['']);
      for (const leaf of leaves) {
        const parts = leaf.split('.');
        for (let i = 1; i <= parts.length; i++) active.add(parts.slice(0, i).join('.'));
      }
      /** @param {string} path */
      const idOf = (path) => machine.states[path];
      const activeIds = new Set([...active].map(idOf).filter(Boolean));
      const currentIds = new Set(leaves.map(idOf).filter(Boolean));
      for (const node of box.querySelectorAll('[data-state-id]')) {
        const id = node.getAttribute('data-state-id');
        node.classList.toggle('sc-active', activeIds.has(id ?? undefined) && !node.classList.contains('sc-machine'));
        node.classList.toggle('sc-current', currentIds.has(id ?? undefined));
      }
      for (const node of box.querySelectorAll('[data-heading-of]')) {
        const of = node.getAttribute('data-heading-of') ?? undefined;
        node.classList.toggle('sc-active', activeIds.has(of) && !node.classList.contains('sc-machine'));
      }
      const current = [...currentIds].join(' ');
      if (box.dataset['current'] !== current) {
        box.dataset['current'] = current;
        const node = box.querySelector('.sc-current');
        if (node && currentIds.size > 0) revealInChart(box, node);
      }
      render(
        html`<span class="pill machine">${machine.name}</span
          ><span class="chart-actor" title=${actor.id}>${actor.id}</span
          ><span class="pill status status-${actor.status}">${actor.status}</span
          ><span class="pill state" data-testid="chart-state">${stateText(actor)}</span>`,
        meta,
      );
    },
  };
}
