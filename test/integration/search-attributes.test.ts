// A worker refuses to start on a namespace that lacks a search attribute the journeys write (one missing would fail
// every journey's workflow tasks), naming it; with all of them registered it starts.
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { requireSearchAttributes } from '../../src/temporal';
import { SEARCH_ATTRIBUTE_KEYS, SearchAttr } from '../../src/contract/definitions';
import { startDevServer } from '../support/temporal-env';

describe('search attributes a worker needs', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await startDevServer(SEARCH_ATTRIBUTE_KEYS.filter((k) => k !== SearchAttr.PatientExamIds));
  }, 120_000);
  afterAll(() => env?.teardown());

  it('names the ones the namespace lacks', async () => {
    await expect(requireSearchAttributes(env.nativeConnection, 'default', SEARCH_ATTRIBUTE_KEYS)).rejects.toThrow(
      /search attributes not registered on namespace default: PatientExamIds;/,
    );
  });

  it('passes when every one is there', async () => {
    const present = SEARCH_ATTRIBUTE_KEYS.filter((k) => k !== SearchAttr.PatientExamIds);
    await expect(requireSearchAttributes(env.nativeConnection, 'default', present)).resolves.toBeUndefined();
  });
});
