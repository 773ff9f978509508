// An operator's Temporal visibility query, restricted to journeys (and to one clinic when given) before it reaches
// Temporal: the query is checked to be one expression (balanced parentheses outside quoted strings, every string
// closed, no backslash, no ORDER BY or GROUP BY), then wrapped in parentheses and ANDed with the workflow type and the
// clinic. Whatever the query says, it cannot widen what the restriction allows.

export const JOURNEY_WORKFLOW_TYPE = 'patientJourney';

export const MAX_QUERY_LENGTH = 2_000;

/** A Temporal query string literal (single quotes, backslash and quote escaped). */
export const quoted = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/** Why a query cannot be restricted, or undefined when it can. */
export function queryProblem(query: string): string | undefined {
  if (query.trim() === '') return 'is empty; give a condition, e.g. NeedsAttention = true';
  if (query.length > MAX_QUERY_LENGTH) return `is longer than ${MAX_QUERY_LENGTH} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(query.replace(/[\t\n\r]/g, ' '))) return 'holds a control character';
  // Escapes are where two parsers disagree about where a string ends: none are needed for search attribute values.
  if (query.includes('\\')) return 'holds a backslash; search attribute values do not need escapes';
  let depth = 0;
  let outside = '';
  for (let i = 0; i < query.length; i++) {
    const c = query[i]!;
    if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      for (;;) {
        if (j >= query.length) return `has a ${c} that is never closed`;
        if (query[j] === c) {
          // A doubled quote is a quote inside the string.
          if (query[j + 1] === c) {
            j += 2;
            continue;
          }
          break;
        }
        j++;
      }
      outside += ' ? ';
      i = j;
      continue;
    }
    if (c === '(') depth++;
    if (c === ')' && --depth < 0) return 'closes a parenthesis it never opened; give one expression';
    if (c === ';') return 'holds ";"; give one expression';
    outside += c;
  }
  if (depth > 0) return 'opens a parenthesis it never closes';
  if (/\border\s+by\b/i.test(outside)) return 'holds ORDER BY; journeys are listed newest first';
  if (/\bgroup\s+by\b/i.test(outside)) return 'holds GROUP BY; give a condition only';
  if (/\blimit\b/i.test(outside)) return "holds LIMIT; use pageSize (or the tool's --limit)";
  return undefined;
}

export class QueryError extends Error {
  override name = 'QueryError';
}

/**
 * `WorkflowType = 'patientJourney' [AND ClinicId = '<clinic>'] AND (<query>)` (plus `ExecutionStatus = 'Running'`
 * when only running journeys are wanted). Throws QueryError when the query is not one expression.
 */
export function restrictToJourneys(query: string, o: { clinicId?: string; runningOnly?: boolean } = {}): string {
  const problem = queryProblem(query);
  if (problem) throw new QueryError(problem);
  const clauses = [`WorkflowType = ${quoted(JOURNEY_WORKFLOW_TYPE)}`];
  if (o.clinicId !== undefined) clauses.push(`ClinicId = ${quoted(o.clinicId)}`);
  if (o.runningOnly) clauses.push(`ExecutionStatus = 'Running'`);
  clauses.push(`(${query.trim()})`);
  return clauses.join(' AND ');
}
