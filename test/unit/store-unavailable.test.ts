// The one classifier of "the database is away or may not write now" (src/audit/store-unavailable.ts), read from the
// errors node-postgres really raises: a refused, cut or silent connection, a pool that cannot connect in time, and a
// server that answers with a SQLSTATE (a tiny server here speaks just enough of the protocol to refuse as PostgreSQL
// does: starting up, shutting down, a read-only transaction after a demotion, a serialization failure). Then the retry
// around it: a bounded few tries, only for unavailability.
import net from 'node:net';
import { Client, Pool } from 'pg';
import {
  isUnavailable,
  retryWhileUnavailable,
  StoreUnavailableError,
  unavailableStoreOf,
} from '../../src/audit/store-unavailable';

const servers: net.Server[] = [];
const sockets = new Set<net.Socket>();

function listen(handler: (s: net.Socket) => void): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
      handler(s);
    });
    servers.push(server);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
  });
}

async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** A backend message: its type, its length, its body. */
function message(type: string, body: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeInt32BE(body.length + 4);
  return Buffer.concat([Buffer.from(type), len, body]);
}

/** PostgreSQL's ErrorResponse with a severity, a SQLSTATE and a message. */
function errorResponse(severity: string, code: string, text: string): Buffer {
  const field = (t: string, v: string) => Buffer.concat([Buffer.from(t), Buffer.from(v), Buffer.from([0])]);
  return message(
    'E',
    Buffer.concat([field('S', severity), field('V', severity), field('C', code), field('M', text), Buffer.from([0])]),
  );
}

const authOk = () => message('R', Buffer.from([0, 0, 0, 0]));
const ready = () => message('Z', Buffer.from('I'));

/**
 * A server that refuses at startup with `code` (FATAL), or (`onQuery`) accepts the connection and answers every
 * query with that error, as PostgreSQL does (the error, then ready for the next).
 */
function pgServer(code: string, text: string, o: { onQuery?: boolean } = {}): Promise<number> {
  return listen((s) => {
    let started = false;
    let buf = Buffer.alloc(0);
    s.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (!started) {
        if (buf.length < 4 || buf.length < buf.readInt32BE(0)) return;
        buf = buf.subarray(buf.readInt32BE(0));
        started = true;
        if (!o.onQuery) {
          s.end(errorResponse('FATAL', code, text));
          return;
        }
        s.write(Buffer.concat([authOk(), ready()]));
      }
      while (buf.length >= 5 && buf.length >= 1 + buf.readInt32BE(1)) {
        const type = String.fromCharCode(buf[0]!);
        buf = buf.subarray(1 + buf.readInt32BE(1));
        if (type === 'Q' || type === 'S') s.write(Buffer.concat([errorResponse('ERROR', code, text), ready()]));
        if (type === 'X') s.end();
      }
    });
  });
}

const connectError = async (port: number, o: { connectionTimeoutMillis?: number } = {}) => {
  const c = new Client({ host: '127.0.0.1', port, user: 'u', database: 'd', ...o });
  try {
    await c.connect();
  } catch (err) {
    await c.end().catch(() => undefined);
    return err;
  }
  throw new Error('connected');
};

const queryError = async (port: number, sql = 'INSERT INTO t VALUES ($1)', params: unknown[] = [1]) => {
  const pool = new Pool({ host: '127.0.0.1', port, user: 'u', database: 'd', connectionTimeoutMillis: 500 });
  try {
    await pool.query(sql, params);
  } catch (err) {
    return err;
  } finally {
    await pool.end().catch(() => undefined);
  }
  throw new Error('answered');
};

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

describe('what node-postgres raises when the database is away', () => {
  it('a refused connection (ECONNREFUSED)', async () => {
    const err = await connectError(await closedPort());
    expect(err).toMatchObject({ code: 'ECONNREFUSED' });
    expect(isUnavailable(err)).toBe(true);
  });

  it('a connection cut by the other end ("Connection terminated unexpectedly")', async () => {
    const err = await connectError(await listen((s) => s.destroy()));
    expect((err as Error).message).toBe('Connection terminated unexpectedly');
    expect(isUnavailable(err)).toBe(true);
  });

  it('a server that never answers: the pool gives up connecting', async () => {
    const silent = await listen(() => undefined);
    const err = await queryError(silent);
    expect((err as Error).message).toBe('Connection terminated due to connection timeout');
    expect(isUnavailable(err)).toBe(true);
    expect(isUnavailable(await connectError(silent, { connectionTimeoutMillis: 100 }))).toBe(true);
  });

  it('a pool whose connections are all taken and none comes in time ("timeout exceeded when trying to connect")', async () => {
    const silent = await listen(() => undefined);
    const pool = new Pool({ host: '127.0.0.1', port: silent, user: 'u', max: 1, connectionTimeoutMillis: 300 });
    const first = pool.query('SELECT 1').catch((e: unknown) => e);
    const second = pool.query('SELECT 2').catch((e: unknown) => e);
    const errors = [await first, await second] as Error[];
    await pool.end().catch(() => undefined);
    expect(errors.every((e) => isUnavailable(e))).toBe(true);
    expect(errors.map((e) => e.message)).toContain('timeout exceeded when trying to connect');
  });

  it.each([
    ['57P03', 'the database system is starting up'],
    ['57P03', 'the database system is in recovery mode'],
    ['57P01', 'terminating connection due to administrator command'],
    ['57P02', 'terminating connection because of crash of another server process'],
    ['08006', 'connection failure'],
    ['08P01', 'invalid frontend message type'],
  ])('a server refusing at connect with %s (%s)', async (code, text) => {
    const err = await connectError(await pgServer(code, text));
    expect(err).toMatchObject({ code, message: text });
    expect(isUnavailable(err)).toBe(true);
  });

  it('a write to a demoted primary: 25006, read-only transaction', async () => {
    const err = await queryError(
      await pgServer('25006', 'cannot execute INSERT in a read-only transaction', { onQuery: true }),
    );
    expect(err).toMatchObject({ code: '25006', severity: 'ERROR' });
    expect(isUnavailable(err)).toBe(true);
  });

  it.each([
    ['40001', 'could not serialize access due to concurrent update'],
    ['40P01', 'deadlock detected'],
    ['23505', 'duplicate key value violates unique constraint "patient_keys_pkey"'],
    ['42501', 'permission denied for table patient_keys'],
    ['57014', 'canceling statement due to statement timeout'],
  ])('not unavailability: %s (%s)', async (code, text) => {
    const err = await queryError(await pgServer(code, text, { onQuery: true }));
    expect(err).toMatchObject({ code });
    expect(isUnavailable(err)).toBe(false);
  });

  it('reads the causes of a store error, and an AggregateError of refusals', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' });
    expect(isUnavailable(new Error('a patient key could not be read', { cause: refused }))).toBe(true);
    expect(isUnavailable(new AggregateError([refused], 'all refused'))).toBe(true);
    expect(isUnavailable(new Error('a patient key could not be read', { cause: new Error('boom') }))).toBe(false);
    expect(isUnavailable(undefined)).toBe(false);
    expect(isUnavailable('ECONNREFUSED')).toBe(false);
    // gRPC's numeric codes (Temporal) are not a database's.
    expect(isUnavailable(Object.assign(new Error('14 UNAVAILABLE: no connection'), { code: 14 }))).toBe(false);
  });

  it("an object store's server error after the S3 client's retries, not its refusal of the request", () => {
    const starting = Object.assign(new Error('Server not initialized yet, please try again.'), {
      name: 'XMinioServerNotInitialized',
      $metadata: { httpStatusCode: 503 },
    });
    expect(isUnavailable(starting)).toBe(true);
    expect(
      isUnavailable(
        Object.assign(new Error('We encountered an internal error'), { $metadata: { httpStatusCode: 500 } }),
      ),
    ).toBe(true);
    expect(isUnavailable(Object.assign(new Error('Access Denied.'), { $metadata: { httpStatusCode: 403 } }))).toBe(
      false,
    );
    expect(
      isUnavailable(
        Object.assign(new Error('The specified key does not exist.'), { $metadata: { httpStatusCode: 404 } }),
      ),
    ).toBe(false);
  });

  it('names the store of a StoreUnavailableError, also under another error', () => {
    const e = new StoreUnavailableError('patient-keys');
    expect(unavailableStoreOf(e)).toBe('patient-keys');
    expect(unavailableStoreOf(new Error('update failed', { cause: e }))).toBe('patient-keys');
    expect(unavailableStoreOf(new Error('other'))).toBeUndefined();
    expect(isUnavailable(e)).toBe(true);
  });
});

describe('retryWhileUnavailable', () => {
  const instant = { sleep: () => Promise.resolve() };
  const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });

  it('tries again while the store is away, then answers', async () => {
    let n = 0;
    const out = await retryWhileUnavailable(() => (++n < 3 ? Promise.reject(reset()) : Promise.resolve('ok')), instant);
    expect({ out, n }).toEqual({ out: 'ok', n: 3 });
  });

  it('stops after the attempts it is given, with the last error', async () => {
    let n = 0;
    const err = await retryWhileUnavailable(() => {
      n++;
      return Promise.reject(reset());
    }, instant).catch((e: unknown) => e);
    expect(n).toBe(4);
    expect(err).toMatchObject({ code: 'ECONNRESET' });
  });

  it('stops once its time is spent', async () => {
    let n = 0;
    const began = Date.now();
    await retryWhileUnavailable(
      () => {
        n++;
        return Promise.reject(reset());
      },
      { attempts: 100, firstBackoffMs: 20, budgetMs: 150 },
    ).catch(() => undefined);
    expect(n).toBeLessThan(100);
    expect(Date.now() - began).toBeLessThan(1_000);
  });

  it('does not try again what is not unavailability', async () => {
    let n = 0;
    const conflict = Object.assign(new Error('could not serialize access'), { code: '40001' });
    await expect(
      retryWhileUnavailable(() => {
        n++;
        return Promise.reject(conflict);
      }, instant),
    ).rejects.toBe(conflict);
    expect(n).toBe(1);
  });
});
