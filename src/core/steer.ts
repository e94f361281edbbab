/*
 * A steer: a message accepted into a running run, read at its next turn boundary. It is a
 * record of its own (not a run): waiting for the run, read by it, or — when the run ended
 * first — carried by a follow-up run at the front of the lane.
 */

/**
 * - `pending`: accepted, the run has not read it yet;
 * - `consumed`: the run read it at `consumedAtTurn` (its `run.steered` event says so);
 * - `requeued`: the run ended first; the steer became the follow-up run with the steer's own id;
 * - `merged`: the run ended first; the steer went into the follow-up run `followUp`.
 */
export type SteerState = 'pending' | 'consumed' | 'requeued' | 'merged';

export interface SteerFields {
  steerId: string;
  sessionId: string;
  /** The running run it was steered into. */
  into: string;
  state: SteerState;
  createdAt: string;
  consumedAtTurn?: number;
  /** requeued / merged: the follow-up run that carries it. */
  followUp?: string;
}

/** The run a steer's id answers for: the run that read it, or the follow-up that carries it. */
export function runOfSteer(steer: SteerFields): string {
  return steer.state === 'requeued' || steer.state === 'merged' ? (steer.followUp ?? steer.steerId) : steer.into;
}

/** The steer's own fields, without whatever else its record carries. */
export function steerFields(steer: SteerFields): SteerFields {
  const { steerId, sessionId, into, state, createdAt, consumedAtTurn, followUp } = steer;
  return {
    steerId,
    sessionId,
    into,
    state,
    createdAt,
    ...(consumedAtTurn !== undefined ? { consumedAtTurn } : {}),
    ...(followUp !== undefined ? { followUp } : {}),
  };
}
