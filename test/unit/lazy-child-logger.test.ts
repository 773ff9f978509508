// A request's logger made at its first line (src/observability/request-log.ts): none for a request that writes none,
// and the same lines as pino's child when it writes.
import { Writable } from 'node:stream';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { LazyChildLogger } from '../../src/observability/request-log';

function logger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const root = pino({ level, base: undefined, timestamp: false }, stream);
  const children: unknown[] = [];
  // Every child made, of the root or of a child (they share the root's child method).
  const made = root.child;
  root.child = function (this: typeof root, ...args: Parameters<typeof made>) {
    const c = made.apply(this, args);
    children.push(c);
    return c;
  } as typeof root.child;
  return { root: root as unknown as FastifyBaseLogger, lines, children };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('LazyChildLogger', () => {
  it('makes no child while nothing is written at its level', async () => {
    const { root, lines, children } = logger('warn');
    const log = new LazyChildLogger(root, { reqId: 'req-1', journeyId: 'j1' });
    log.trace('t');
    log.debug('d');
    log.info({ res: 1 }, 'request completed');
    log.silent();
    expect(log.level).toBe('warn');
    await flush();
    expect(children).toHaveLength(0);
    expect(lines).toEqual([]);
  });

  it("writes a line as pino's child would, bindings first, and makes the child once", async () => {
    const { root, lines, children } = logger('warn');
    const log = new LazyChildLogger(root, { reqId: 'req-2', journeyId: 'j2', workflowId: 'journey-j2' });
    log.warn({ refusal: 'unreadable' }, 'callback kept as a dead letter');
    log.error(new Error('boom'), 'not stored');
    log.info('still below the level');
    await flush();
    expect(children).toHaveLength(1);
    expect(lines.map((l) => [l.level, l.msg, l.reqId, l.journeyId, l.workflowId, l.refusal])).toEqual([
      [40, 'callback kept as a dead letter', 'req-2', 'j2', 'journey-j2', 'unreadable'],
      [50, 'not stored', 'req-2', 'j2', 'journey-j2', undefined],
    ]);
    expect(Object.keys(lines[0]!).slice(0, 4)).toEqual(['level', 'reqId', 'journeyId', 'workflowId']);
  });

  it('follows a level set on it, and its children carry its bindings and their own', async () => {
    const { root, lines } = logger('warn');
    const log = new LazyChildLogger(root, { reqId: 'req-3' });
    log.level = 'info';
    log.info('now written');
    log.child({ part: 'upload' }).warn('from a child');
    await flush();
    expect(lines.map((l) => [l.msg, l.reqId, l.part])).toEqual([
      ['now written', 'req-3', undefined],
      ['from a child', 'req-3', 'upload'],
    ]);
  });

  it("leaves a level it does not know (silent) to pino's child", async () => {
    const { root, lines, children } = logger('silent');
    const log = new LazyChildLogger(root, { reqId: 'req-4' });
    log.fatal('nothing at silent');
    await flush();
    expect(children).toHaveLength(0);
    expect(lines).toEqual([]);
  });
});
