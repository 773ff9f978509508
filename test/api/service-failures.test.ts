// One failure, one answer: a request the exam service refuses as invalid is answered 422 `exam-service-refused`, naming
// the field in the clinic's own words, on every route that can meet it, whether the API called the service itself (the catalog, the start's
// exam check) or a journey did through its activity (cancel, resend, answers, attachments). The statuses come from
// one table (src/contract/failures.ts) that the API, the activities and the workflow all read.
import { ExamServiceError } from '../../src/exam-service/errors';
import type { ExamServiceOperation } from '../../src/exam-service/schemas';
import type { JourneyActivities } from '../../src/contract/activity-contract';
import { FAILURES } from '../../src/contract/failures';
import { useApiHarness } from '../support/api-harness';
import { activityFailure, auth, eventually, fakeActivities, gfeBody, startJourney, TOKENS } from './support';

/** Operations the fake exam service refuses as invalid at the moment (the others answer as usual). */
const refusing = new Set<ExamServiceOperation>();
const refusal = (operation: ExamServiceOperation, field: string) =>
  new ExamServiceError({ kind: 'validation', operation, httpStatus: 400, field });

/** The activity's failure for a refused request, as src/activities raises it. */
const activityRefusal = (operation: string, field: string) =>
  activityFailure({ kind: 'validation', operation, httpStatus: 400, field });

describe('a validation failure of the exam service, on every route that can meet it', () => {
  const fakes = fakeActivities(95_000);
  const activities: JourneyActivities = {
    ...fakes.activities,
    cancelInvite: () => Promise.reject(activityRefusal('exam_invite_cancel', 'patient_exam_id')),
    resendInvite: () => Promise.reject(activityRefusal('exam_invite_resend', 'patient_exam_id')),
    submitAnswers: () => Promise.reject(activityRefusal('exam_submit_answers', 'answers')),
    uploadAttachment: () => Promise.reject(activityRefusal('exam_upload_attachment', 'content_type')),
  };
  const guard =
    <A extends unknown[], R>(operation: ExamServiceOperation, field: string, fn: (...a: A) => Promise<R>) =>
    (...a: A): Promise<R> =>
      refusing.has(operation) ? Promise.reject(refusal(operation, field)) : fn(...a);
  const stack = useApiHarness({
    taskQueue: 'api-service-failures',
    worker: activities,
    app: { startForwarder: false },
    // A catalog cached for a millisecond: each call reaches the (refusing) service.
    env: { EXAM_CATALOG_CACHE_TTL_MS: '1' },
    fakeExamService: {
      examList: guard('exam_list', 'clinic', () =>
        Promise.resolve({
          exams: [
            { id: 101, title: 'Good Faith Exam', rx_type: 1, price: null, attachments_required: 1, attachments: [] },
          ],
        }),
      ),
      partnerPharmacyList: guard('partner_pharmacy_list', 'clinic', () =>
        Promise.resolve({ pharmacies: [{ pharmacy_id: 501, name: 'Lone Star', type: '503A' }] }),
      ),
      treatmentPackages: guard('partner_pharmacy_treatment_packages', 'pharmacy_id', () =>
        Promise.resolve({ treatment_packages: [] } as never),
      ),
      customPharmacySearch: guard('custom_pharmacy_search', 'zip_code', () => Promise.resolve([] as never)),
    },
  });

  const expected = FAILURES.validation.http;
  const expectRefused = (res: { statusCode: number; json: () => unknown }, field: string) => {
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: expected.status,
      body: expect.objectContaining({
        status: 422,
        type: `urn:patient-journeys:problem:${expected.slug}`,
        detail: expect.stringContaining(expected.say),
        errors: [{ field, message: expected.say }],
      }),
    });
  };
  const get = (url: string) => stack.app.inject({ method: 'GET', url, headers: auth(TOKENS.a) });

  let journeyId: string;
  let patientExamId: number;
  beforeAll(async () => {
    journeyId = (await startJourney(stack.app, 'service-failures', gfeBody())).json().journeyId as string;
    const view = await eventually(
      () => get(`/v1/journeys/${journeyId}`).then((r) => r.json()),
      (v) => v.journey?.stage === 'awaiting_consultation',
    );
    patientExamId = view.journey.exams[0].patientExamId as number;
  }, 60_000);
  afterEach(() => refusing.clear());

  it.each([
    ['GET /v1/catalog/exams', 'exam_list', '/v1/catalog/exams', 'clinic'],
    ['GET /v1/catalog/partner-pharmacies', 'partner_pharmacy_list', '/v1/catalog/partner-pharmacies', 'clinic'],
    [
      'GET /v1/catalog/partner-pharmacies/{id}/treatment-packages',
      'partner_pharmacy_treatment_packages',
      // A partner pharmacy and an exam of the clinic's list: the API asks the service, which refuses.
      '/v1/catalog/partner-pharmacies/501/treatment-packages?examId=101',
      'pharmacyId',
    ],
    [
      'GET /v1/catalog/pharmacies/search',
      'custom_pharmacy_search',
      '/v1/catalog/pharmacies/search?zipCode=73301&search=corner',
      'zipCode',
    ],
  ] as const)('%s: the API calls the service itself', async (_route, operation, url, field) => {
    refusing.add(operation);
    expectRefused(await get(url), field);
  });

  it('POST /v1/journeys: the start checks the exams against the refused list', async () => {
    refusing.add('exam_list');
    expectRefused(await startJourney(stack.app, 'service-failures-start', gfeBody()), 'clinic');
  });

  const post = (path: string, payload: object) =>
    stack.app.inject({ method: 'POST', url: `/v1/journeys/${journeyId}/${path}`, headers: auth(TOKENS.a), payload });
  it.each([
    ['POST /v1/journeys/{id}/cancel', 'cancel', () => ({ patientExamId, reason: 'test' }), 'patientExamId'],
    ['POST /v1/journeys/{id}/resend', 'resend', () => ({ patientExamId }), 'patientExamId'],
    [
      'POST /v1/journeys/{id}/answers',
      'answers',
      () => ({ patientExamId, answers: [{ no: 1, answer: 'No' }] }),
      'answers',
    ],
    [
      'POST /v1/journeys/{id}/attachments',
      'attachments',
      () => ({
        patientExamId,
        kind: 'ID',
        fileName: 'id.jpg',
        contentType: 'image/jpeg',
        contentBase64: Buffer.from('x').toString('base64'),
      }),
      'contentType',
    ],
  ] as const)('%s: the journey calls the service through its activity', async (_route, path, body, field) => {
    expectRefused(await post(path, body()), field);
  });
});
