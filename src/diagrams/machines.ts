/*
 * The five statecharts the inspector draws, by the name their SVG file and the page use.
 */
import type { AnyStateMachine } from 'xstate';
import { actMachine } from '../../machines/act.machine.js';
import { runMachine } from '../../machines/run.machine.js';
import { sessionMachine } from '../../machines/session.machine.js';
import { limiterMachine } from '../../machines/limiter.machine.js';
import { toolCallMachine } from '../../machines/tool-call.machine.js';

export const inspectedMachines: readonly { name: string; machine: AnyStateMachine }[] = [
  { name: 'limiter', machine: limiterMachine },
  { name: 'session', machine: sessionMachine },
  { name: 'run', machine: runMachine },
  { name: 'act', machine: actMachine },
  { name: 'tool-call', machine: toolCallMachine },
];
