/*
 * The engine's figures at scrape time, read from engine.snapshot() and the pending approvals
 * when Prometheus asks: permits against their limits, running runs by agent, the lanes, the
 * approvals waiting for a person. Nothing is kept between scrapes.
 */
import { Gauge, type Registry } from 'prom-client';
import type { Engine } from '../engine/index.js';
import { LabelBudget } from './label-budget.js';

export type EngineFigures = Pick<Engine, 'snapshot' | 'status' | 'pendingApprovals' | 'currentConfig'>;

export function registerEngineGauges(registry: Registry, engine: EngineFigures): void {
  const registers = [registry];
  const agents = new LabelBudget(50);
  const snapshot = () => engine.snapshot();
  const gauge = (name: string, help: string, read: (g: Gauge) => void, labelNames: string[] = []) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      collect() {
        read(this);
      },
    });

  gauge('switchyard_permits_in_use', 'Run permits held now, across all agents.', (g) => g.set(snapshot().global.inUse));
  gauge('switchyard_permits_limit', 'Run permits there are ([execution] max_runs_global).', (g) =>
    g.set(snapshot().global.max),
  );
  gauge('switchyard_agent_permits_limit', 'Run permits each agent may hold ([execution] max_runs_per_agent).', (g) =>
    g.set(engine.currentConfig().execution.max_runs_per_agent),
  );
  gauge(
    'switchyard_agent_permits_in_use',
    'Run permits held now, by agent.',
    (g) => {
      g.reset();
      for (const [agent, { inUse }] of Object.entries(snapshot().perAgent)) g.inc({ agent: agents.of(agent) }, inUse);
    },
    ['agent'],
  );
  gauge(
    'switchyard_runs_running',
    "Runs running now, by agent (delegated runs included: they work under their parent's permit).",
    (g) => {
      g.reset();
      for (const runId of snapshot().running) g.inc({ agent: agents.of(engine.status(runId)?.agentId ?? 'unknown') });
    },
    ['agent'],
  );
  gauge('switchyard_lane_messages', 'Messages waiting in the wait lanes of all sessions.', (g) =>
    g.set(snapshot().sessions.reduce((n, s) => n + s.laneDepth, 0)),
  );
  gauge('switchyard_lane_depth_max', 'The deepest wait lane of any session now.', (g) =>
    g.set(Math.max(0, ...snapshot().sessions.map((s) => s.laneDepth))),
  );
  gauge(
    'switchyard_sessions_active',
    'Sessions the engine holds in memory now (running a run or with messages waiting).',
    (g) => g.set(snapshot().sessions.length),
  );
  gauge('switchyard_approvals_pending', "Tool calls waiting for a person's approval now.", (g) =>
    g.set(engine.pendingApprovals().length),
  );
}
