// The worker's log lines as JSON, one object per line, with the fields pino gives the API's lines (numeric `level`,
// `time` in epoch milliseconds, `msg`), so one reader takes the whole stack's output. The SDK's attributes come as
// fields: workflowId, runId, workflowType, activityType, taskQueue, namespace, sdkComponent. Ids only: the SDK never
// puts a workflow's or an activity's arguments in its log attributes, and the engine logs ids and kinds.
import { hostname } from 'node:os';
import { DefaultLogger, type LogEntry, type LogLevel } from '@temporalio/worker';

/** pino's level numbers. */
const LEVEL_NUMBER: Record<LogLevel, number> = { TRACE: 10, DEBUG: 20, INFO: 30, WARN: 40, ERROR: 50 };
const RESERVED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'service']);

function jsonValue(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) {
    return {
      type: value.name,
      message: value.message,
      ...(value.stack ? { stack: value.stack } : {}),
      ...((value as { type?: unknown }).type !== undefined ? { failureType: (value as { type?: unknown }).type } : {}),
    };
  }
  return value;
}

/** One entry of the SDK's logger as a JSON line (ending with a newline). */
export function jsonLogLine(entry: LogEntry, base: { service: string; pid?: number; hostname?: string }): string {
  const fields: Record<string, unknown> = {
    level: LEVEL_NUMBER[entry.level],
    time: Number(entry.timestampNanos / 1_000_000n),
    pid: base.pid ?? process.pid,
    hostname: base.hostname ?? hostname(),
    service: base.service,
  };
  for (const [key, value] of Object.entries(entry.meta ?? {})) {
    if (value !== undefined) fields[RESERVED.has(key) ? `meta.${key}` : key] = jsonValue(value);
  }
  fields.msg = entry.message;
  try {
    return `${JSON.stringify(fields, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}\n`;
  } catch {
    // A circular attribute: the line without the attributes rather than no line.
    const { level, time, pid, hostname: host, service, msg } = fields;
    return `${JSON.stringify({ level, time, pid, hostname: host, service, msg, attributesDropped: true })}\n`;
  }
}

/** The Runtime's logger: JSON lines at the given level, to stdout or to `write` (which may format them). */
export function jsonLogger(
  level: LogLevel,
  service: string,
  write: (line: string) => void = (line) => process.stdout.write(line),
): DefaultLogger {
  const base = { service, pid: process.pid, hostname: hostname() };
  return new DefaultLogger(level, (entry) => write(jsonLogLine(oneLineReport(entry), base)));
}

const WEBPACK_DONE = /^webpack (\S+) compiled (.+) in (\d+) ms$/m;
const WEBPACK_ASSET = /^asset \S+ ([\d.]+ [KMG]?i?B)/m;

/**
 * The bundler's webpack report (dozens of lines) as one line with the bundle's size; a failed build keeps its whole
 * report, which names what went wrong.
 */
export function oneLineReport(entry: LogEntry): LogEntry {
  const done = entry.level === 'ERROR' ? null : WEBPACK_DONE.exec(entry.message);
  if (!done || !entry.message.includes('\n')) return entry;
  const size = WEBPACK_ASSET.exec(entry.message)?.[1];
  const message = `workflow bundle${size ? ` ${size}` : ''}: webpack ${done[1]} compiled ${done[2]} in ${done[3]} ms`;
  return { ...entry, message };
}
