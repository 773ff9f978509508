import type { z } from 'zod';
import { type ErrorBody, firstIssueField } from '../exam-service/schemas';

/** An answer of the simulated service other than 200, in the contract's ErrorBody shape. */
export class ServiceError extends Error {
  constructor(
    readonly httpStatus: 400 | 401 | 500,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }

  body(): ErrorBody {
    return {
      http_code: this.httpStatus,
      error_message: this.message,
      ...(this.field === undefined ? {} : { field: this.field }),
    };
  }
}

export const UNAUTHORIZED = 'Unauthorized access.';

export function badRequest(field: string, message: string): ServiceError {
  return new ServiceError(400, message, field);
}

/**
 * Validates a request body with the contract's schema; the 400 names the first failing field. Messages never
 * echo the value that was sent.
 */
export function parseRequest<S extends z.ZodType>(schema: S, body: Record<string, unknown>): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const unrecognized = parsed.error.issues.find((i) => i.code === 'unrecognized_keys');
  if (unrecognized?.code === 'unrecognized_keys') {
    const [first = 'body'] = unrecognized.keys;
    throw badRequest(first, `${unrecognized.keys.join(', ')}: not a field of this request.`);
  }
  const field = firstIssueField(parsed.error) ?? 'body';
  const issue = parsed.error.issues.find((i) => i.path.map(String).join('.') === field) ?? parsed.error.issues[0];
  const missing = issue?.code === 'invalid_type' && !field.includes('.') && body[field] === undefined;
  const message = missing ? 'is required' : (issue?.message ?? 'is invalid');
  throw badRequest(field, `${field}: ${message.replace(/\.$/, '')}.`);
}
