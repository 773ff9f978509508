// What a stack prints: its own lines and each part's, pretty on a terminal (time, part, level, message, journey id)
// and JSON lines anywhere else (LOG_FORMAT=json|pretty overrides). The parts always write JSON to the stack.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { jsonRecordOf, logFormatOf, prettyLine, type LogFormat } from '../../src/observability/log-format';

export class StackLog {
  readonly format: LogFormat;

  constructor(
    env: NodeJS.ProcessEnv = process.env,
    private readonly out: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout,
    private readonly err: NodeJS.WritableStream = process.stderr,
  ) {
    this.format = logFormatOf(env.LOG_FORMAT, out);
    // A closed terminal (SIGHUP) fails every later write with EIO: the stack keeps stopping its parts all the same.
    for (const stream of [out, err]) stream.on('error', () => undefined);
  }

  /** One of the stack's own lines. */
  say(message: string, level: 'info' | 'warn' | 'error' = 'info'): void {
    const record = JSON.stringify({ level: LEVELS[level], time: Date.now(), service: 'stack', msg: message });
    (level === 'info' ? this.out : this.err).write(`${this.line(record, 'stack')}\n`);
  }

  /** Prints each line of a part's output (stdout, or stderr, whose plain lines count as warnings). */
  follow(part: string, stream: Readable, kind: 'stdout' | 'stderr'): void {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (text) => {
      if (text.trim() === '') return;
      const line = this.format === 'json' ? jsonRecordOf(text, part, kind === 'stderr' ? 40 : 30) : text;
      (kind === 'stderr' ? this.err : this.out).write(`${this.line(line, part)}\n`);
    });
  }

  /** Runs a command to its end with its output followed live as the part's (an install step); resolves its status. */
  run(part: string, command: string, args: string[]): Promise<number | null> {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.follow(part, child.stdout, 'stdout');
    this.follow(part, child.stderr, 'stderr');
    return new Promise((resolve) => {
      child.once('error', () => resolve(null));
      child.once('close', (code) => resolve(code));
    });
  }

  private line(record: string, part: string): string {
    return this.format === 'pretty' ? prettyLine(record, part) : record;
  }
}

const LEVELS = { info: 30, warn: 40, error: 50 } as const;

/** The environment a stack gives each part: JSON lines, which the stack prints as it prints its own. */
export const PART_LOG_ENV = { LOG_FORMAT: 'json' } as const;

/** What a stack tells each part: its pid, so an engine process stops when the stack is gone (src/part-lifecycle.ts). */
export const partEnv = (): Record<string, string> => ({ ...PART_LOG_ENV, STACK_PID: String(process.pid) });

/** The stack's log; a stack that cannot run here (a LOG_FORMAT it does not know, an old Node.js) exits 2 saying why. */
export function openStackLog(label: string): StackLog {
  let log: StackLog;
  try {
    log = new StackLog();
  } catch (err) {
    console.error(`[${label}] ${err instanceof Error ? err.message : String(err)}`);
    return process.exit(2);
  }
  const unsupported = unsupportedNode();
  if (unsupported) {
    log.say(unsupported, 'error');
    return process.exit(2);
  }
  return log;
}

/** Why this Node.js cannot run the stack (the project supports Node.js 24 LTS from 24.11), or undefined. */
export function unsupportedNode(version: string = process.versions.node): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > 24 || (major === 24 && minor >= 11)) return undefined;
  return (
    `Node.js v${version} is not supported: the engine runs on Node.js 24 LTS (24.11 or newer). ` +
    '`. scripts/use-node.sh` installs it into .tools/node from the npm registry and puts it first on PATH.'
  );
}
