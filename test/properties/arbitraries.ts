// Generators of hostile input for the property tests, the fast-check settings (a fixed seed unless FC_SEED is set,
// FC_RUNS to run more), and the checks every refusal must pass: a 4xx problem+json with a detail, fields named for
// validation, nothing internal in it.
import { parse as parseQuery } from 'node:querystring';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import type { z } from 'zod';

function intEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value)) throw new Error(`${name} must be an integer, got ${raw}`);
  return value;
}

/** Fixed by default so a run is reproducible; fast-check prints the seed and path of any failure. */
export const FC_SEED = intEnv('FC_SEED', 20_251_121);
/** Runs per property (scaled per property). Raise it for a longer hunt: FC_RUNS=1000 npx jest test/properties. */
export const FC_RUNS = intEnv('FC_RUNS', 40);

export function fcOptions(scale = 1): fc.Parameters<unknown> {
  return { seed: FC_SEED, numRuns: Math.max(5, Math.round(FC_RUNS * scale)) };
}

// ---- strings -----------------------------------------------------------------------------------------------------

const NASTY_STRINGS = [
  '',
  ' ',
  '\u0000',
  'nul\u0000inside',
  '\ud800',
  '\udfff',
  'lone \ud83d surrogate',
  '\u202egnp.exe',
  '\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd',
  '\u0645\u0631\u062d\u0628\u0627\u200f',
  '\u200b\u200d\ufeff',
  '\ud83e\uddea\ud83e\ude7a\ud83d\udc8a',
  'e\u0301\u0301\u0301',
  '%00',
  '%',
  '%ZZ',
  '../../etc/passwd',
  '..\\..\\boot.ini',
  '<script>alert(1)</script>',
  "' OR '1'='1",
  '"; DROP TABLE journeys; --',
  '${jndi:ldap://x/a}',
  '{{7*7}}',
  '__proto__',
  'constructor',
  'prototype',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  '-0',
  '1e400',
  '0x10',
  '9007199254740993',
  'true',
  '\r\n\r\n',
  '\t',
  'A'.repeat(256),
];

/** Long enough to pass every field's maximum; some of them over the body limit (the 413 path). */
export const hugeString: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 5_000, max: 150_000 }), fc.constantFrom('x', '\u00e9', '\ud83e\uddea', '\u0000', '\ud800'))
  .map(([n, c]) => c.repeat(n));

const oddUnits = fc.constantFrom(
  '\ud800',
  '\udc00',
  '\u0000',
  '\u202e',
  '\u05d0',
  '\u0627',
  '\u200d',
  'a',
  '"',
  '\\',
  '/',
);

export const nastyString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...NASTY_STRINGS), weight: 4 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 30 }), weight: 2 },
  { arbitrary: fc.string({ unit: oddUnits, maxLength: 30 }), weight: 2 },
  { arbitrary: hugeString, weight: 1 },
);

/** Keys an object may carry: prototype-polluting ones, the schemas' own, and odd ones. */
export const nastyKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'valueOf',
    '__defineGetter__',
    'patient',
    'exams',
    'scenario',
    'clinicId',
    'journeyId',
    'patientExamId',
    'event',
    'patient_exam_id',
    'type',
    '',
  ),
  fc.string({ unit: 'binary', maxLength: 12 }),
);

// ---- JSON --------------------------------------------------------------------------------------------------------

const jsonLeaf: fc.Arbitrary<unknown> = fc.oneof(
  nastyString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(0, -1, 1e308, Number.MAX_SAFE_INTEGER + 2, 0.5, 101, 102, 201, 90_001),
);

/** Any JSON value: unicode strings, odd numbers, prototype keys, a few levels deep. */
export const jsonValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown; array: unknown[]; object: object }>(
  (tie) => ({
    value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, jsonLeaf, tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 6 }),
    object: fc.dictionary(nastyKey, tie('value'), { maxKeys: 6 }),
  }),
).value;

/** A deeply nested JSON text (arrays, objects, or objects under a "constructor" key), up to 40,000 levels. */
export const deeplyNestedText: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 20, max: 40_000 }), fc.constantFrom('array', 'object', 'constructor', 'patient'))
  .map(([depth, shape]) => {
    switch (shape) {
      case 'array':
        return '['.repeat(depth) + ']'.repeat(depth);
      case 'object':
        return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
      case 'constructor':
        return '{"constructor":'.repeat(depth) + '{"prototype":{}}' + '}'.repeat(depth);
      default:
        return '{"patient":' + '{"firstName":'.repeat(depth) + '"x"' + '}'.repeat(depth) + ',"exams":[101]}';
    }
  });

/** Sets (or deletes) a value at a path in a copy of `base`; own properties only, so "__proto__" is a plain key. */
export function setAt(base: unknown, path: (string | number)[], value: unknown, remove = false): unknown {
  if (path.length === 0) return remove ? undefined : value;
  const copy: unknown = Array.isArray(base) ? [...(base as unknown[])] : { ...(base as object) };
  const [head, ...rest] = path;
  const container = copy as Record<string | number, unknown>;
  if (rest.length === 0 && remove) {
    if (Array.isArray(copy)) copy.splice(Number(head), 1);
    else delete container[head!];
    return copy;
  }
  Object.defineProperty(copy, head!, {
    value: setAt(container[head!], rest, value, remove),
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return copy;
}

/** Every path to a value in a JSON value (the root included). */
export function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const out = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...pathsOf(v, [...prefix, i])));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) out.push(...pathsOf(v, [...prefix, k]));
  }
  return out;
}

/** One change to a valid value: a field removed, retyped, huge, nested deep, wrapped, or an unknown key added. */
export function mutationOf(base: unknown): fc.Arbitrary<unknown> {
  const paths = pathsOf(base);
  const objectPaths = paths.filter((p) => {
    let v: unknown = base;
    for (const k of p) v = (v as Record<string | number, unknown>)[k];
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  });
  const replace = fc
    .tuple(
      fc.constantFrom(...paths),
      fc.oneof(
        jsonValue,
        nastyString,
        fc.constantFrom<unknown>(null, true, -1, 0, 1.5, 2 ** 53, '', [], {}, ['x'], { '': '' }),
        fc.integer({ min: 21, max: 5_000 }).map((n) => Array.from({ length: n }, (_, i) => i + 1)),
      ),
    )
    .map(([path, value]) => setAt(base, path, value));
  const remove = fc
    .constantFrom(...paths.filter((p) => p.length > 0))
    .map((path) => setAt(base, path, undefined, true));
  const addKey = fc
    .tuple(fc.constantFrom(...objectPaths), nastyKey, jsonValue)
    .map(([path, key, value]) => setAt(base, [...path, key], value));
  const wrap = fc.constantFrom(...paths).map((path) => {
    let v: unknown = base;
    for (const k of path) v = (v as Record<string | number, unknown>)[k];
    return setAt(base, path, [v]);
  });
  return fc.oneof(replace, remove, addKey, wrap);
}

/** What Fastify's JSON parser refuses besides bad syntax: a "__proto__" key, or "constructor" holding "prototype". */
export function poisoned(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(poisoned);
  if (value === null || typeof value !== 'object') return false;
  for (const [k, v] of Object.entries(value)) {
    if (k === '__proto__') return true;
    if (k === 'constructor' && v !== null && typeof v === 'object' && Object.hasOwn(v, 'prototype')) return true;
    if (poisoned(v)) return true;
  }
  return false;
}

/** The JSON value the server sees for a text, or `undefined` when it is not JSON (or poisoned). */
export function serverJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    // Fastify's parser (secure-json-parse) drops a leading byte order mark.
    const value: unknown = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    return poisoned(value) ? { ok: false } : { ok: true, value };
  } catch {
    return { ok: false };
  }
}

/** True when the route's schema takes this JSON text as its body. */
export function schemaAccepts(schema: z.ZodType, text: string): boolean {
  const parsed = serverJson(text);
  return parsed.ok && schema.safeParse(parsed.value).success;
}

/** A JSON text cut short. */
export function truncated(text: string): fc.Arbitrary<string> {
  return fc.nat({ max: Math.max(0, text.length - 1) }).map((n) => text.slice(0, n));
}

/** Body texts the schema refuses: random JSON, one change to a valid body, cut-off or deep texts, non-JSON. */
export function refusedBodyText(schema: z.ZodType, valid: unknown): fc.Arbitrary<string> {
  const validText = JSON.stringify(valid);
  return fc
    .oneof(
      { arbitrary: jsonValue.map((v) => JSON.stringify(v) ?? 'null'), weight: 3 },
      { arbitrary: mutationOf(valid).map((v) => (v === undefined ? '' : JSON.stringify(v))), weight: 6 },
      { arbitrary: truncated(validText), weight: 2 },
      { arbitrary: deeplyNestedText, weight: 1 },
      { arbitrary: nastyString, weight: 1 },
      {
        arbitrary: fc.constantFrom('', 'null', '[]', '{}', '""', '0', '{"a":1,}', "{'a':1}", '{"a":1}{"b":2}'),
        weight: 1,
      },
    )
    .filter((text) => !schemaAccepts(schema, text));
}

export const JSON_CONTENT_TYPES = ['application/json', 'application/json; charset=utf-8'] as const;
/** Media types a JSON route does not read as JSON. */
export const NON_JSON_CONTENT_TYPES = [
  'text/plain',
  'text/html',
  'application/xml',
  'application/x-www-form-urlencoded',
  'application/octet-stream',
  'multipart/form-data; boundary=zzz',
  'multipart/form-data',
  'image/png',
  'garbage',
] as const;
export const anyContentType: fc.Arbitrary<string | undefined> = fc.constantFrom(
  undefined,
  ...JSON_CONTENT_TYPES,
  ...NON_JSON_CONTENT_TYPES,
  'application/json; charset=utf-16',
  'application/vnd.api+json',
  'application/problem+json',
  '*/*',
  '',
);

// ---- URLs --------------------------------------------------------------------------------------------------------

/** Percent-encodes the UTF-8 bytes of a string (a lone surrogate goes as U+FFFD, as any client would send it). */
export function encodeSegment(s: string): string {
  return [...Buffer.from(s, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9\-._~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).padStart(2, '0')}`,
    )
    .join('');
}

const RAW_SEGMENT_CHARS = fc.constantFrom(..."abcXYZ019-._~!$&'()*+,;=:@%".split(''));

/** A path segment as sent: well-formed encodings of hostile strings, malformed percent-encoding, dot segments, long. */
export const pathSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '%',
    '%ZZ',
    '%ED%A0%80',
    '%00',
    '%2F',
    '%2f..%2f',
    '..',
    '.',
    '%2e%2e',
    'a%00b',
    '%C0%AF',
    '%FF',
    '%E2%80%AE',
    '%20',
    'j'.repeat(64),
    'j'.repeat(65),
    'x'.repeat(101),
    'x'.repeat(3000),
    '__proto__',
    'constructor',
    'prototype',
  ),
  nastyString.filter((s) => s.length < 500).map(encodeSegment),
  fc.string({ unit: RAW_SEGMENT_CHARS, minLength: 1, maxLength: 40 }),
);

export interface QueryCase {
  /** What follows the "?" (may be empty). */
  text: string;
  /** The parsed query when the text is well-formed (every pair encoded), for the schema to judge; else undefined. */
  parsed: Record<string, unknown> | undefined;
}

/** Query strings from well-formed pairs (the route's own keys with hostile values, odd keys) or raw malformed text. */
export function queryCase(knownKeys: string[], knownValues: string[] = []): fc.Arbitrary<QueryCase> {
  const key = fc.oneof({ arbitrary: fc.constantFrom(...knownKeys), weight: 3 }, { arbitrary: nastyKey, weight: 1 });
  const value = fc.oneof(
    { arbitrary: fc.constantFrom(...knownValues, '', '1', '0', '-1', '101', '100', '101', 'true'), weight: 2 },
    { arbitrary: nastyString.filter((s) => s.length < 5_000), weight: 2 },
  );
  const wellFormed = fc.array(fc.tuple(key, value), { maxLength: 5 }).map((pairs) => {
    const text = pairs.map(([k, v]) => `${encodeSegment(k)}=${encodeSegment(v)}`).join('&');
    return { text, parsed: { ...parseQuery(text) } };
  });
  const malformed = fc
    .oneof(
      fc.constantFrom('%', '&&&', '=', '==', 'a=%', 'a[b]=c', 'a[]=1&a[]=2', '%E0%A4%A=1', '+=+', '?=?', ';;'),
      fc.string({ unit: RAW_SEGMENT_CHARS, maxLength: 60 }),
    )
    .map((text) => ({ text, parsed: undefined }));
  return fc.oneof({ arbitrary: wellFormed, weight: 3 }, { arbitrary: malformed, weight: 1 });
}

// ---- checks ------------------------------------------------------------------------------------------------------

const PROBLEM_TYPE = /^urn:patient-journeys:problem:[a-z-]+$/;

/**
 * A refusal as the API promises it: a 4xx, application/problem+json with type, title, status and a detail; a
 * validation problem names the fields. Nothing internal in it (no stack, no secret).
 */
export function expectRefusal(res: LightMyRequestResponse, secrets: string[] = []): Record<string, any> {
  if (res.statusCode < 400 || res.statusCode >= 500) {
    throw new Error(`expected a 4xx problem, got ${res.statusCode} ${res.body.slice(0, 500)}`);
  }
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json<Record<string, any>>();
  expect(body).toEqual(
    expect.objectContaining({
      type: expect.stringMatching(PROBLEM_TYPE),
      title: expect.any(String),
      status: res.statusCode,
      detail: expect.any(String),
    }),
  );
  expect(body.detail.length).toBeGreaterThan(0);
  if (/:(validation|malformed-json)$/.test(body.type)) {
    expect(body.errors).toEqual(
      expect.arrayContaining([{ field: expect.stringMatching(/./), message: expect.any(String) }]),
    );
  }
  expect(res.body).not.toMatch(/\n\s+at |node_modules|Error: /);
  for (const s of secrets) expect(res.body).not.toContain(s);
  return body;
}

/** Never a server error, whatever the answer. */
export function expectNoServerError(res: LightMyRequestResponse): void {
  if (res.statusCode >= 500) throw new Error(`server error ${res.statusCode}: ${res.body.slice(0, 500)}`);
}
