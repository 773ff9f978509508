// The worker's workflow bundle entry: every workflow the engine runs.
export { patientJourney } from './patient-journey';
export { attachmentRetention } from './attachment-retention';
