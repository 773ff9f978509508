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

/** The Runtime's logger: JSON lines on stdout at the given level. */
export function jsonLogger(
  level: LogLevel,
  service: string,
  write: (line: string) => void = (line) => process.stdout.write(line),
): DefaultLogger {
  const base = { service, pid: process.pid, hostname: hostname() };
  return new DefaultLogger(level, (entry) => write(jsonLogLine(entry, base)));
}
