// The audit trail in PostgreSQL during a failover: an append that finds the database away (the connection refused or
// cut, a demoted primary refusing the INSERT) is tried again a few times and then refused as StoreUnavailableError
// naming the trail; an append whose COMMIT went out unanswered is not tried again (its records may be in the table)
// and is refused at once. The pool is stubbed: each connection is a fake that fails where the test says.
import type { PoolClient } from 'pg';
import { PostgresAuditLog } from '../../src/audit/postgres';
import { StoreUnavailableError, unavailableStoreOf } from '../../src/audit/store-unavailable';

type Step = 'connect' | 'BEGIN' | 'lock' | 'tail' | 'INSERT' | 'COMMIT';
const refused = () => Object.assign(new Error('connect ECONNREFUSED 10.9.8.7:5432'), { code: 'ECONNREFUSED' });
const readOnly = () =>
  Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006', severity: 'ERROR' });
const cut = () => new Error('Connection terminated unexpectedly');

function stepOf(sql: string): Step {
  if (sql === 'BEGIN' || sql === 'COMMIT') return sql;
  if (sql.includes('pg_advisory_xact_lock')) return 'lock';
  if (sql.includes('clock_timestamp')) return 'tail';
  if (sql.startsWith('INSERT')) return 'INSERT';
  return 'BEGIN';
}

/** A trail whose connections fail as `plan` says for each attempt (undefined: the attempt goes through). */
function trailWith(plan: ({ at: Step; err: () => Error } | undefined)[]) {
  const log = new PostgresAuditLog({
    connectionString: 'postgres://writer:secret@10.9.8.7:5432/journeys',
    retry: { sleep: () => Promise.resolve() },
  });
  const seen = { attempts: 0, committed: 0, inserted: 0 };
  let seq = 0;
  jest.spyOn(log.pool, 'connect').mockImplementation((() => {
    const fault = plan[seen.attempts++];
    if (fault?.at === 'connect') return Promise.reject(fault.err());
    const client = {
      query: (sql: string) => {
        const step = stepOf(sql);
        if (sql === 'ROLLBACK') return Promise.resolve({ rows: [] });
        if (fault?.at === step) return Promise.reject(fault.err());
        if (step === 'tail') return Promise.resolve({ rows: [{ now: new Date(), seq: seq || null, hash: null }] });
        if (step === 'INSERT') seen.inserted++;
        if (step === 'COMMIT') {
          seen.committed++;
          seq++;
        }
        return Promise.resolve({ rows: [] });
      },
      release: () => undefined,
    } as unknown as PoolClient;
    return Promise.resolve(client);
  }) as never);
  return { log, seen };
}

const event = { action: 'patient-key.create', subject: 'patient-keys', roles: [], outcome: 'ok' };

describe('the audit trail in PostgreSQL while the database is away', () => {
  it.each<[string, { at: Step; err: () => Error }]>([
    ['a refused connection', { at: 'connect', err: refused }],
    ['a connection cut before the records went in', { at: 'lock', err: cut }],
    ['a demoted primary refusing the INSERT', { at: 'INSERT', err: readOnly }],
  ])('%s: tried again, appended once', async (_what, fault) => {
    const { log, seen } = trailWith([fault, fault]);
    const record = await log.append(event);
    expect(record).toMatchObject({ seq: 1, action: 'patient-key.create' });
    expect(seen).toEqual({ attempts: 3, committed: 1, inserted: 1 });
  });

  it('away for longer than its few tries: refused as the audit trail unavailable, no address in the message', async () => {
    const { log, seen } = trailWith(Array.from({ length: 10 }, () => ({ at: 'connect' as const, err: refused })));
    const err = await log.append(event).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(unavailableStoreOf(err)).toBe('audit-trail');
    expect((err as Error).message).not.toMatch(/10\.9\.8\.7|secret|ECONNREFUSED 10/);
    expect(seen.attempts).toBe(4);
  });

  it('a COMMIT that went unanswered is not tried again (its records may be in): refused at once', async () => {
    const { log, seen } = trailWith([{ at: 'COMMIT', err: cut }]);
    const err = await log.append(event).catch((e: unknown) => e);
    expect(unavailableStoreOf(err)).toBe('audit-trail');
    expect(seen.attempts).toBe(1);
  });

  it('another failure is not tried again and is not called unavailable', async () => {
    const denied = () => Object.assign(new Error('permission denied for table audit_trail'), { code: '42501' });
    const { log, seen } = trailWith([{ at: 'INSERT', err: denied }]);
    const err = await log.append(event).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(StoreUnavailableError);
    expect((err as Error).name).toBe('AuditStoreError');
    expect(seen.attempts).toBe(1);
  });
});
