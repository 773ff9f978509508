// How log records reach a person or a machine: JSON lines (pino's fields) everywhere, except on a terminal, where each
// record is one short line: time, part, level, message, the journey id where there is one.
import type { Writable } from 'node:stream';

export type LogFormat = 'json' | 'pretty';

/** LOG_FORMAT when set (json or pretty), else pretty on a terminal and JSON into a pipe, a file or a collector. */
export function logFormatOf(logFormat: string | undefined, out: { isTTY?: boolean }): LogFormat {
  const given = logFormat?.trim().toLowerCase();
  if (given === 'json' || given === 'pretty') return given;
  if (given) throw new Error('LOG_FORMAT must be json or pretty');
  return out.isTTY ? 'pretty' : 'json';
}

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
const JOURNEY_WORKFLOW_ID = /^journey-(j[a-z2-7]{26})$/;

/** One JSON log record as a terminal line; a line that is not a JSON record comes back with the part in front. */
export function prettyLine(line: string, part?: string): string {
  const record = parseRecord(line);
  if (!record) return part ? `${clock(Date.now())} ${part.padEnd(8)} ${line}` : line;
  const level = levelName(record.level);
  const name = part ?? (typeof record.service === 'string' ? record.service : '-');
  const journey = journeyOf(record);
  const err = errorMessage(record.err ?? record.error);
  const message = [
    typeof record.msg === 'string' ? record.msg.replace(/\n/g, '\n    ') : '',
    detailOf(record),
    err ? `(${err})` : '',
    journey ? `[${journey}]` : '',
  ]
    .filter(Boolean)
    .join(' ');
  return `${clock(timeOf(record))} ${name.padEnd(8)} ${level.padEnd(5)} ${message}`;
}

/**
 * A part's line as a JSON record that names the part: a record without a `service` gets the part's name, and a line
 * that is not JSON (a Go server's text, a tool's report) becomes the record's message.
 */
export function jsonRecordOf(line: string, part: string, level = 30): string {
  const record = parseRecord(line);
  if (!record) return JSON.stringify({ level, time: Date.now(), service: part, msg: line });
  return typeof record.service === 'string' ? line : JSON.stringify({ service: part, ...record });
}

/** A stream for pino that writes each JSON record as a terminal line. */
export function prettyStream(out: Pick<Writable, 'write'> = process.stdout): { write(chunk: string): void } {
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line.trim() !== '') out.write(`${prettyLine(line)}\n`);
    },
  };
}

/** The few fields a person wants on the line: a request's method, route, status and time; a worker's new state. */
function detailOf(record: Record<string, unknown>): string {
  const req = record.req as { method?: unknown; route?: unknown } | undefined;
  const res = record.res as { statusCode?: unknown } | undefined;
  const parts = [
    typeof req?.method === 'string' ? req.method : '',
    typeof req?.route === 'string' ? req.route : '',
    typeof res?.statusCode === 'number' ? String(res.statusCode) : '',
    typeof record.responseTime === 'number' ? `${record.responseTime.toFixed(1)} ms` : '',
    typeof record.state === 'string' ? record.state : '',
  ].filter(Boolean);
  return parts.join(' ');
}

function parseRecord(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** pino's `time` (epoch ms), or a Go server's `ts` (epoch seconds, or an ISO time). */
function timeOf(record: Record<string, unknown>): number {
  if (typeof record.time === 'number') return record.time;
  if (typeof record.ts === 'number') return record.ts * 1000;
  const parsed = typeof record.ts === 'string' ? Date.parse(record.ts) : NaN;
  return Number.isNaN(parsed) ? Date.now() : parsed;
}

function levelName(level: unknown): string {
  if (typeof level === 'number') return LEVEL_NAMES[level] ?? String(level);
  return typeof level === 'string' ? level.toUpperCase() : 'INFO';
}

function journeyOf(record: Record<string, unknown>): string | undefined {
  if (typeof record.journeyId === 'string') return record.journeyId;
  const workflowId = typeof record.workflowId === 'string' ? JOURNEY_WORKFLOW_ID.exec(record.workflowId) : null;
  return workflowId?.[1];
}

function errorMessage(err: unknown): string | undefined {
  if (typeof err === 'string') return err;
  if (err && typeof err === 'object' && typeof (err as { message?: unknown }).message === 'string') {
    return (err as { message: string }).message;
  }
  return undefined;
}

/** Local wall-clock time with milliseconds: the date is the terminal's day. */
function clock(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}
