import { SandboxClock } from '../../src/sandbox/clock';
import { resolveSandboxConfig, sandboxConfigFromEnv } from '../../src/sandbox/config';
import { SandboxRandom } from '../../src/sandbox/random';

describe('SandboxClock', () => {
  const start = new Date('2025-03-01T12:00:00.000Z');

  it('manual mode: advance(ms) fires due actions in due order, including ones they schedule', async () => {
    const clock = new SandboxClock('manual', start);
    const fired: string[] = [];
    clock.schedule(300, () => void fired.push(`c@${clock.now().toISOString()}`));
    clock.schedule(100, () => {
      fired.push('a');
      clock.schedule(50, () => void fired.push('a+50'));
    });
    clock.schedule(200, () => void fired.push('b'));
    clock.schedule(1_000, () => void fired.push('late'));

    await clock.advance(299);
    expect(fired).toEqual(['a', 'a+50', 'b']);
    await clock.advance(1);
    expect(fired).toEqual(['a', 'a+50', 'b', 'c@2025-03-01T12:00:00.300Z']);
    expect(clock.now().toISOString()).toBe('2025-03-01T12:00:00.300Z');
    expect(clock.pending().map((p) => p.due_at)).toEqual(['2025-03-01T12:00:01.000Z']);
  });

  it('manual mode: a cancelled action never fires and time does not move without advance', async () => {
    const clock = new SandboxClock('manual', start);
    let fired = false;
    const handle = clock.schedule(10, () => {
      fired = true;
    });
    clock.cancel(handle);
    await clock.advance(100);
    expect(fired).toBe(false);
    expect(clock.nowMs()).toBe(start.getTime() + 100);
  });

  it('manual mode: advance awaits async actions before firing the next', async () => {
    const clock = new SandboxClock('manual', start);
    const order: string[] = [];
    clock.schedule(10, async () => {
      await new Promise((r) => setTimeout(r, 20));
      order.push('slow');
    });
    clock.schedule(10, () => void order.push('next'));
    await clock.advance(10);
    expect(order).toEqual(['slow', 'next']);
  });

  it('real mode: actions fire on real timers and advance() is refused', async () => {
    const clock = new SandboxClock('real');
    const fired = new Promise<number>((resolve) => clock.schedule(15, () => resolve(Date.now())));
    const before = Date.now();
    expect(await fired).toBeGreaterThanOrEqual(before + 10);
    await expect(clock.advance(10)).rejects.toThrow(/manual/);
  });

  it('an action that throws is reported and does not stop the clock', async () => {
    const errors: string[] = [];
    const clock = new SandboxClock('manual', start, (_err, label) => errors.push(label));
    let after = false;
    clock.schedule(
      1,
      () => {
        throw new Error('boom');
      },
      'exploding',
    );
    clock.schedule(2, () => {
      after = true;
    });
    await clock.advance(5);
    expect(errors).toEqual(['exploding']);
    expect(after).toBe(true);
  });
});

describe('SandboxRandom', () => {
  it('replays the same sequence for the same seed', () => {
    const a = new SandboxRandom(42);
    const b = new SandboxRandom(42);
    const seqA = Array.from({ length: 5 }, () => a.next());
    expect(Array.from({ length: 5 }, () => b.next())).toEqual(seqA);
    expect(new SandboxRandom(43).next()).not.toBe(seqA[0]);
    expect(a.uuid()).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('sandbox configuration', () => {
  it('reads SANDBOX_* variables, with the documented defaults', () => {
    const config = resolveSandboxConfig(
      sandboxConfigFromEnv({
        SANDBOX_PORT: '4555',
        SANDBOX_HOST: '0.0.0.0',
        SANDBOX_CLOCK: 'manual',
        SANDBOX_PROVIDER_WAIT_MS: '500',
        SANDBOX_FAULTS: '{"errorRate":0.25,"duplicateCallbacks":2}',
      }),
    );
    expect(config).toMatchObject({ port: 4555, host: '0.0.0.0', clockMode: 'manual', providerWaitMs: 500 });
    expect(config.faults).toMatchObject({ errorRate: 0.25, duplicateCallbacks: 2, latencyMs: 0 });

    const defaults = resolveSandboxConfig(sandboxConfigFromEnv({}));
    expect(defaults).toMatchObject({
      port: 4010,
      host: '127.0.0.1',
      clockMode: 'real',
      providerWaitMs: 180_000,
      slowCallbackMs: 100,
      attachmentMaxBytes: 5 * 1024 * 1024,
    });
  });

  it('rejects bad values with a readable message', () => {
    expect(() => resolveSandboxConfig(sandboxConfigFromEnv({ SANDBOX_CLOCK: 'sometimes' }))).toThrow(/clockMode/);
    expect(() => sandboxConfigFromEnv({ SANDBOX_FAULTS: '{nope' })).toThrow(/SANDBOX_FAULTS must be JSON/);
    expect(() => resolveSandboxConfig({ faults: { errorRate: 2 } })).toThrow(/faults.errorRate/);
  });
});
