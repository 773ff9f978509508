// A stack: parts started in dependency order (those of one step together, each waited for until ready) and stopped in
// the reverse one, the last started first. A part that dies on its own stops the whole stack, unless it is supervised
// (started again a second later, as an orchestrator would). runStack is a stack run from the command line.
import { ManagedProcess } from '../processes';
import { claimStack, type StackPort } from '../stack-guard';
import type { StackLog } from '../stack-log';
import { describeStarter, stopWhenStarterGone } from '../stack-starter';
import type { PartSpec } from './parts';

/** Something a stack stops: a process, a server with its own start (PostgreSQL), a group of processes. */
export interface Part {
  readonly name: string;
  stop(): Promise<void>;
}

export interface StackOptions {
  /** Each process's output goes to <logDir>/<name>.log (none: only through `echo`). */
  logDir?: string;
  /** Print every part's output through this log. */
  echo?: StackLog;
  log?: (line: string) => void;
  /** A part that is not supervised died on its own: the stack cannot work without it. */
  onFatal?: (why: string) => void;
}

export class Stack {
  #parts: Part[] = [];
  #stopping = false;

  constructor(readonly o: StackOptions) {}

  get stopping(): boolean {
    return this.#stopping;
  }

  #log(line: string) {
    this.o.log?.(line);
  }

  /**
   * A process of this stack, not started yet. Dying on its own, it stops the stack (`fatal`), is started again a
   * second later (`supervise`, as an orchestrator would) or is let be (`ignore`: a fault drill's worker or replica).
   */
  process(spec: PartSpec, onExit: 'fatal' | 'supervise' | 'ignore' = 'fatal'): ManagedProcess {
    return new ManagedProcess({
      ...spec,
      logDir: this.o.logDir,
      echo: this.o.echo,
      log: (line) => this.#log(line),
      ...(onExit === 'supervise' ? { restartAfterMs: 1_000 } : {}),
      onUnexpectedExit: (why) => {
        if (this.#stopping || onExit === 'ignore') return;
        if (onExit === 'supervise') this.#log(`${why}; starting it again`);
        else if (this.o.onFatal) this.o.onFatal(why);
        else this.#log(why);
      },
    });
  }

  /** Starts these together and resolves once each is ready; each stops with the stack (see stop). */
  async up(...parts: (ManagedProcess | PartSpec)[]): Promise<ManagedProcess[]> {
    const procs = parts.map((p) => (p instanceof ManagedProcess ? p : this.process(p)));
    for (const p of procs) this.add(p.start());
    await Promise.all(procs.map((p) => p.ready()));
    return procs;
  }

  /** A part started by other means, stopped with the stack. */
  add<P extends Part>(part: P): P {
    this.#parts.push(part);
    return part;
  }

  /** Stops every part in the reverse order of their start, each said when stopped. */
  async stop(): Promise<void> {
    this.#stopping = true;
    for (const part of this.#parts.reverse()) {
      try {
        await part.stop();
        this.#log(`${part.name} stopped`);
      } catch (err) {
        this.#log(`${part.name} did not stop cleanly: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    this.#parts = [];
  }
}

/**
 * A stack run from the command line (`npm start`, `npm run start:production`): its ports and data folder checked
 * first, what it needs installed, then `up`. Ctrl-C, a kill, the terminal closing (SIGHUP, as when an SSH session
 * drops), the end of whoever started it, a part dying or a failed start: every part stops in order, then it exits.
 */
export async function runStack<S extends { stop(): Promise<void> }>(o: {
  log: StackLog;
  dataDir: string;
  ports: StackPort[];
  install: { part: string; command: string[]; checking: string; failed: string };
  /** What it says as it stops. */
  stopping: string;
  make: (onFatal: (why: string) => void) => S;
  up: (stack: S) => Promise<void>;
}): Promise<void> {
  const say = (line: string) => o.log.say(line);
  let stopping: Promise<void> | undefined;
  const stop = (code: number) =>
    (stopping ??= (async () => {
      say(o.stopping);
      await stack.stop();
      say('stopped');
      process.exit(code);
    })());
  const stack = o.make((why) => {
    say(`${why}; stopping the stack`);
    void stop(1);
  });
  try {
    await claimStack(o.dataDir, o.ports, (m, level) => o.log.say(m, level));
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => void stop(0));
    // Whoever started the stack gone (SIGTERM to `npm start`, npm or what ran it killed): the same.
    stopWhenStarterGone((starter) => {
      say(`${describeStarter(starter)}, which the stack was started under, is gone: stopping`);
      void stop(0);
    });
    say(o.install.checking);
    const [command, ...args] = o.install.command;
    if ((await o.log.run(o.install.part, command!, args)) !== 0) throw new Error(o.install.failed);
    await o.up(stack);
  } catch (err) {
    o.log.say(`could not start: ${err instanceof Error ? err.message : String(err)}`, 'error');
    await stop(1);
  }
}
