// @ts-check
/*
 * Where the page is, in the top bar: live, a run's replay or a session's story.
 */
import { html, render } from '../vendor/lit-html/lit-html.js';
import { shortId } from '../format.js';
import { links } from '../routes.js';

/** @param {HTMLElement} box @param {Readonly<import('../store.js').State>} state */
export function renderWhere(box, state) {
  const route = state.route;
  const crumbs =
    route.view === 'run'
      ? html`<a href=${links.live()}>live</a> › replay of run <b title=${route.runId}>${shortId(route.runId)}</b>`
      : route.view === 'session'
        ? html`<a href=${links.live()}>live</a> › session <b>${route.sessionId}</b>`
        : html`live`;
  render(crumbs, box);
}
