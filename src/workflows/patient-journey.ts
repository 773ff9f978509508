// One durable workflow per invite, told as a story: set up (the rules of this history, the journey, the messages it
// takes), run (check the exam list and invite, prepare, then follow the service's callbacks 1 -> 2 -> 3 and the
// deadlines), end (documents to retention, the summary). The steps are the journey's (journey.ts); its state lives in
// the pure reducer (journey-state/).
import type { JourneyInput } from '../contract/journey-request';
import { openJourney } from './journey';
import { takeMessages } from './journey-messages';
import { rulesOfThisHistory } from './journey-rules';
import type { JourneySummary } from './journey-state';

export async function patientJourney(input: JourneyInput): Promise<JourneySummary> {
  // Set up: the rules this history was made with, the journey, the signals, query and updates it answers.
  const journey = openJourney(input, rulesOfThisHistory(input.rules));
  takeMessages(journey);
  journey.publish();

  // Run: a patient exam a callback claims for an invite in doubt is proven the journey's own, or held for a person.
  if (journey.rules.provesOwnership) void journey.proveOwnership();
  if (await journey.invitePatient()) {
    await journey.prepareInvited();
    await journey.follow();
  }

  // End.
  return journey.end();
}
