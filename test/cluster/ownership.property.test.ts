/*
 * The ownership protocol as a model-based property (fast-check commands): three processes take,
 * renew, release and lose leases on two sessions and write for them through the Redis store,
 * while a simulated clock jumps ahead — the real Lua scripts on a real Redis, fed the simulated
 * time. After every step: the lease Redis reports is the model's; a write lands exactly when it
 * carries the session's current fence; and at no moment may two processes act for one session.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ClusterKeys, SessionLeases } from '../../src/cluster/index.js';
import { RedisStore } from '../../src/store/redis-store.js';
import { redisFixture } from './redis-fixture.js';

const redis = redisFixture('the ownership property');

const NODES = ['n0', 'n1', 'n2'] as const;
const SESSIONS = ['s0', 's1'] as const;
const LEASE_MS = 1000;
/** The share of a lease a process counts as valid locally (session-leases.ts). */
const LOCAL_VALIDITY = 0.9;

type Node = (typeof NODES)[number];
type Session = (typeof SESSIONS)[number];

interface Model {
  now: number;
  fence: Record<Session, number>;
  lease: Partial<Record<Session, { node: Node; until: number }>>;
  /** What each process believes it holds: its token and until when it may act. */
  held: Record<Node, Partial<Record<Session, { token: number; validUntil: number }>>>;
}

interface Real {
  clock: { now: number };
  leases: Record<Node, SessionLeases>;
  stores: Record<Node, RedisStore>;
}

type Command = fc.AsyncCommand<Model, Real>;

function liveLease(m: Model, s: Session) {
  const lease = m.lease[s];
  return lease && lease.until > m.now ? lease : undefined;
}

class Acquire implements Command {
  constructor(
    readonly n: Node,
    readonly s: Session,
  ) {}
  check = (m: Readonly<Model>) => m.held[this.n][this.s] === undefined;
  async run(m: Model, r: Real) {
    const result = await r.leases[this.n].acquire(this.s);
    const holder = liveLease(m, this.s);
    if (holder) {
      expect(result).toEqual({ acquired: false, owner: holder.node });
      return;
    }
    m.fence[this.s] += 1;
    m.lease[this.s] = { node: this.n, until: m.now + LEASE_MS };
    m.held[this.n][this.s] = { token: m.fence[this.s], validUntil: m.now + LEASE_MS * LOCAL_VALIDITY };
    expect(result).toEqual({ acquired: true, token: String(m.fence[this.s]) });
  }
  toString = () => `acquire(${this.n}, ${this.s})`;
}

class Renew implements Command {
  constructor(
    readonly n: Node,
    readonly s: Session,
  ) {}
  check = (m: Readonly<Model>) => m.held[this.n][this.s] !== undefined;
  async run(m: Model, r: Real) {
    const mine = m.held[this.n][this.s]!;
    const renewed = await r.leases[this.n].renew(this.s);
    // Also after it ran out, as long as nobody took the session since.
    const expected = m.fence[this.s] === mine.token;
    expect(renewed).toBe(expected);
    if (expected) {
      m.lease[this.s] = { node: this.n, until: m.now + LEASE_MS };
      mine.validUntil = m.now + LEASE_MS * LOCAL_VALIDITY;
    } else {
      delete m.held[this.n][this.s];
    }
  }
  toString = () => `renew(${this.n}, ${this.s})`;
}

class Release implements Command {
  constructor(
    readonly n: Node,
    readonly s: Session,
  ) {}
  check = (m: Readonly<Model>) => m.held[this.n][this.s] !== undefined;
  async run(m: Model, r: Real) {
    const mine = m.held[this.n][this.s]!;
    await r.leases[this.n].release(this.s);
    if (m.fence[this.s] === mine.token) delete m.lease[this.s];
    delete m.held[this.n][this.s];
  }
  toString = () => `release(${this.n}, ${this.s})`;
}

class Advance implements Command {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real) {
    m.now += this.ms;
    r.clock.now = m.now;
  }
  toString = () => `advance(${this.ms})`;
}

class Write implements Command {
  constructor(
    readonly n: Node,
    readonly s: Session,
  ) {}
  check = () => true;
  async run(m: Model, r: Real) {
    const mine = m.held[this.n][this.s];
    const write = r.stores[this.n].saveLane(this.s, [{ runId: `${this.n}-${m.now}`, viaInterrupt: false }]);
    if (mine !== undefined && mine.token === m.fence[this.s]) await expect(write).resolves.toBeUndefined();
    else await expect(write).rejects.toMatchObject({ code: 'fenced' });
  }
  toString = () => `write(${this.n}, ${this.s})`;
}

class Owner implements Command {
  constructor(readonly s: Session) {}
  check = () => true;
  async run(m: Model, r: Real) {
    expect(await r.leases.n0.ownerOf(this.s)).toBe(liveLease(m, this.s)?.node);
  }
  toString = () => `owner(${this.s})`;
}

/** At no moment may two processes act for one session, and one that may act holds the live lease. */
function assertExclusive(m: Model, r: Real): void {
  for (const s of SESSIONS) {
    const acting = NODES.filter((n) => r.leases[n].mayAct(s));
    expect(acting.length, `${acting.join(', ')} may all act for ${s}`).toBeLessThanOrEqual(1);
    for (const n of acting) expect(liveLease(m, s)?.node).toBe(n);
  }
}

const node = fc.constantFrom(...NODES);
const session = fc.constantFrom(...SESSIONS);
const commands = fc.commands(
  [
    fc.tuple(node, session).map(([n, s]) => new Acquire(n, s)),
    fc.tuple(node, session).map(([n, s]) => new Renew(n, s)),
    fc.tuple(node, session).map(([n, s]) => new Release(n, s)),
    fc.tuple(node, session).map(([n, s]) => new Write(n, s)),
    session.map((s) => new Owner(s)),
    fc.integer({ min: 0, max: 2 * LEASE_MS }).map((ms) => new Advance(ms)),
    fc.constantFrom(LEASE_MS * LOCAL_VALIDITY, LEASE_MS - 1, LEASE_MS).map((ms) => new Advance(ms)),
  ],
  { maxCommands: 60, size: 'max' },
);

describe.skipIf(!redis.available)(
  'the ownership protocol (lease, renew, expire, steal, fence) on a simulated clock',
  () => {
    it('keeps one owner per session, and lets only the current fence write', async () => {
      await fc.assert(
        fc.asyncProperty(commands, async (cmds) => {
          const keyPrefix = `o${randomUUID().slice(0, 8)}:`;
          const keys = new ClusterKeys(keyPrefix);
          const clock = { now: 1_000_000 };
          const leases = {} as Record<Node, SessionLeases>;
          const stores = {} as Record<Node, RedisStore>;
          for (const n of NODES) {
            leases[n] = new SessionLeases({
              client: redis.client,
              keys,
              nodeId: n,
              leaseMs: LEASE_MS,
              now: () => clock.now,
              monotonic: () => clock.now,
            });
            stores[n] = await RedisStore.open({ client: redis.client, keyPrefix, fencing: leases[n] });
          }
          const model: Model = { now: clock.now, fence: { s0: 0, s1: 0 }, lease: {}, held: { n0: {}, n1: {}, n2: {} } };
          const real: Real = { clock, leases, stores };
          await fc.asyncModelRun(
            () => ({ model, real }),
            [...cmds].map((command) => ({
              check: (m: Readonly<Model>) => command.check(m),
              run: async (m: Model, r: Real) => {
                await command.run(m, r);
                assertExclusive(m, r);
              },
              toString: () => command.toString(),
            })),
          );
        }),
        { numRuns: 100 },
      );
    }, 120_000);
  },
);
