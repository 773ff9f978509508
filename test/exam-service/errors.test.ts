import {
  ACCOUNT_SETUP_MESSAGES,
  CANCEL_FINAL_MESSAGES,
  ExamServiceError,
  classifyServiceAnswer,
  classifyTransportError,
  isRetryable,
  type AccountSetupCode,
  type ExamServiceErrorKind,
  type FinalExamStatus,
  type ServiceAnswer,
} from '../../src/exam-service/errors';

function failure(answer: ServiceAnswer): ExamServiceError {
  const outcome = classifyServiceAnswer(answer);
  if (outcome.type !== 'failure') throw new Error(`expected a failure, got ${outcome.type}`);
  return outcome.error;
}

const errorBody = (http_code: number, error_message: string, extra: Record<string, unknown> = {}) => ({
  http_code,
  error_message,
  ...extra,
});

describe('classifyServiceAnswer', () => {
  it('2xx with no error in the body is a success', () => {
    expect(classifyServiceAnswer({ operation: 'exam_list', httpStatus: 200, body: { exams: [] } })).toEqual({
      type: 'success',
    });
    expect(classifyServiceAnswer({ operation: 'exam_invite', httpStatus: 200, body: { http_code: 200 } })).toEqual({
      type: 'success',
    });
  });

  it('401 Unauthorized access. is unauthorized, on any operation', () => {
    for (const operation of ['exam_list', 'exam_invite', 'exam_invite_cancel'] as const) {
      const err = failure({ operation, httpStatus: 401, body: errorBody(401, 'Unauthorized access.') });
      expect(err).toMatchObject({
        kind: 'unauthorized',
        httpStatus: 401,
        serviceMessage: 'Unauthorized access.',
        operation,
      });
    }
    expect(failure({ operation: 'exam_list', httpStatus: 403, body: {} }).kind).toBe('unauthorized');
  });

  it.each(Object.entries(ACCOUNT_SETUP_MESSAGES) as [AccountSetupCode, string][])(
    '401 onboarding message is account_setup %s',
    (setupCode, message) => {
      const err = failure({ operation: 'exam_invite', httpStatus: 401, body: errorBody(401, message) });
      expect(err).toMatchObject({ kind: 'account_setup', setupCode, serviceMessage: message });
    },
  );

  it.each([
    ['need to add patient care provider via the portal', 'no_provider_for_state'],
    ['You need to sign DocuSign and the RX agreement.', 'agreements_unsigned'],
    ['NEED TO SIGN PRESCRIPTIVE SERVICES CONTRACT', 'prescriptive_contract_unsigned'],
  ])('onboarding messages match leniently: "%s"', (message, setupCode) => {
    expect(failure({ operation: 'exam_invite', httpStatus: 401, body: { message } })).toMatchObject({
      kind: 'account_setup',
      setupCode,
    });
  });

  it('400 on exam_invite is validation, with the field from the body', () => {
    expect(
      failure({ operation: 'exam_invite', httpStatus: 400, body: errorBody(400, 'Invalid value', { field: 'dob' }) }),
    ).toMatchObject({ kind: 'validation', field: 'dob', httpStatus: 400 });
    expect(
      failure({ operation: 'exam_invite', httpStatus: 400, body: { errors: { email: ['The email is invalid.'] } } }),
    ).toMatchObject({ kind: 'validation', field: 'email' });
  });

  it.each([
    ['The dob must be in YYYY-MM-DD format.', 'dob'],
    ['Invalid phone number.', 'phone_number'],
    ['phone_number is invalid', 'phone_number'],
    ['The tele_state field is invalid.', 'tele_state'],
    ['first_name is required', 'first_name'],
    ['The exams field is required.', 'exams'],
  ])('400 on exam_invite finds the field in the message "%s"', (message, field) => {
    expect(failure({ operation: 'exam_invite', httpStatus: 400, body: errorBody(400, message) })).toMatchObject({
      kind: 'validation',
      field,
    });
  });

  it('400 without a recognisable field is still validation, without field', () => {
    const err = failure({ operation: 'exam_invite', httpStatus: 400, body: errorBody(400, 'Bad request') });
    expect(err.kind).toBe('validation');
    expect(err.field).toBeUndefined();
  });

  it.each(Object.entries(CANCEL_FINAL_MESSAGES) as [FinalExamStatus, string][])(
    'cancel refused because the exam is %s is already_final',
    (finalStatus, message) => {
      const err = failure({ operation: 'exam_invite_cancel', httpStatus: 400, body: errorBody(400, message) });
      expect(err).toMatchObject({ kind: 'already_final', finalStatus, serviceMessage: message });
      expect(isRetryable(err)).toBe(false);
    },
  );

  it('already-final messages match case-insensitively', () => {
    expect(
      failure({
        operation: 'exam_invite_cancel',
        httpStatus: 400,
        body: errorBody(400, 'exam status is ALREADY APPROVED'),
      }),
    ).toMatchObject({ kind: 'already_final', finalStatus: 'Approved' });
  });

  it('the same message on another operation is not already_final', () => {
    expect(
      failure({
        operation: 'exam_invite_resend',
        httpStatus: 400,
        body: errorBody(400, 'Exam status is already approved.'),
      }).kind,
    ).toBe('validation');
  });

  it.each(['Exam status is already cancelled.', 'Exam has already been canceled', 'Exam status is cancelled'])(
    'cancel answered 400 "%s" means already cancelled, not an error',
    (message) => {
      expect(
        classifyServiceAnswer({ operation: 'exam_invite_cancel', httpStatus: 400, body: errorBody(400, message) }),
      ).toEqual({
        type: 'already_cancelled',
        serviceMessage: message,
      });
    },
  );

  it('a cancel refusal that does not say cancelled is not mistaken for success', () => {
    expect(
      failure({
        operation: 'exam_invite_cancel',
        httpStatus: 400,
        body: errorBody(400, 'Exam cannot be cancelled now.'),
      }).kind,
    ).toBe('validation');
  });

  it('5xx, 408 and 429 are server (retryable); other 4xx validation; 3xx bad_response', () => {
    for (const status of [500, 502, 503, 504, 408, 429]) {
      const err = failure({ operation: 'exam_list', httpStatus: status, body: undefined, text: 'upstream down' });
      expect(err).toMatchObject({ kind: 'server', httpStatus: status, serviceMessage: 'upstream down' });
      expect(isRetryable(err)).toBe(true);
    }
    expect(failure({ operation: 'exam_list', httpStatus: 404, body: undefined, text: 'Not Found' }).kind).toBe(
      'validation',
    );
    expect(failure({ operation: 'exam_list', httpStatus: 302, body: undefined, text: '' }).kind).toBe('bad_response');
  });

  it('an error inside a 200 body counts: body http_code >= 400 is the status', () => {
    expect(
      failure({ operation: 'exam_list', httpStatus: 200, body: errorBody(401, 'Unauthorized access.') }),
    ).toMatchObject({
      kind: 'unauthorized',
      httpStatus: 401,
    });
    expect(
      failure({ operation: 'exam_invite', httpStatus: 200, body: errorBody(400, 'Invalid dob', { field: 'dob' }) }),
    ).toMatchObject({ kind: 'validation', field: 'dob', httpStatus: 400 });
    expect(
      failure({ operation: 'exam_list', httpStatus: 200, body: { http_code: '500', message: 'boom' } }),
    ).toMatchObject({
      kind: 'server',
      httpStatus: 500,
      serviceMessage: 'boom',
    });
    expect(
      classifyServiceAnswer({
        operation: 'exam_invite_cancel',
        httpStatus: 200,
        body: errorBody(400, 'Exam status is already cancelled.'),
      }).type,
    ).toBe('already_cancelled');
  });

  it('the error message carries the classification, not the service text', () => {
    const err = failure({
      operation: 'exam_invite',
      httpStatus: 400,
      body: errorBody(400, 'dob 1990-02-30 is invalid'),
    });
    expect(err.message).toBe('exam service exam_invite: validation (HTTP 400, field dob)');
    expect(err.message).not.toContain('1990-02-30');
    expect(err.serviceMessage).toBe('dob 1990-02-30 is invalid');
    expect(err).toBeInstanceOf(ExamServiceError);
    expect(err.name).toBe('ExamServiceError');
  });
});

describe('classifyTransportError', () => {
  const err = (code: string, name = 'Error') => Object.assign(new Error(code), { code, name });

  it('anything that failed while the request was still queued was not sent', () => {
    for (const e of [err('ECONNREFUSED'), err('ECONNRESET'), err('UND_ERR_CONNECT_TIMEOUT'), err('UND_ERR_SOCKET')]) {
      expect(classifyTransportError(e, 'queued')).toBe('not_sent');
    }
  });

  it('anything that failed once the request was on a socket is ambiguous, even a connect-type code', () => {
    for (const phase of ['dispatched', 'sent', 'responded'] as const) {
      for (const e of [err('ECONNRESET'), err('UND_ERR_SOCKET'), err('UND_ERR_HEADERS_TIMEOUT'), err('ECONNREFUSED')]) {
        expect(classifyTransportError(e, phase)).toBe('ambiguous');
      }
    }
  });

  it('without a phase, connection-stage codes are not_sent and the rest ambiguous', () => {
    const expected: Record<string, 'not_sent' | 'ambiguous'> = {
      ECONNREFUSED: 'not_sent',
      ENOTFOUND: 'not_sent',
      EAI_AGAIN: 'not_sent',
      UND_ERR_CONNECT_TIMEOUT: 'not_sent',
      UND_ERR_HEADERS_TIMEOUT: 'ambiguous',
      UND_ERR_BODY_TIMEOUT: 'ambiguous',
      UND_ERR_SOCKET: 'ambiguous',
      ECONNRESET: 'ambiguous',
      EPIPE: 'ambiguous',
    };
    for (const [code, kind] of Object.entries(expected)) expect(classifyTransportError(err(code))).toBe(kind);
    expect(classifyTransportError(new Error('mystery'))).toBe('ambiguous');
  });
});

describe('isRetryable', () => {
  it('only not_sent and server', () => {
    const kinds: Record<ExamServiceErrorKind, boolean> = {
      unauthorized: false,
      account_setup: false,
      validation: false,
      already_final: false,
      server: true,
      not_sent: true,
      ambiguous: false,
      bad_response: false,
    };
    for (const [kind, retryable] of Object.entries(kinds) as [ExamServiceErrorKind, boolean][]) {
      const e = new ExamServiceError({ kind, operation: 'exam_list' });
      expect(isRetryable(e)).toBe(retryable);
      expect(e.retryable).toBe(retryable);
    }
    expect(isRetryable(new Error('x'))).toBe(false);
  });
});
