// The journey's state machine as a pure reducer: (state, event) -> state. Deterministic, no I/O, no clock of its own:
// every event carries its time. The workflow feeds it; unit tests drive it without Temporal.
export {
  isUnread,
  TERMINAL_STAGES,
  type Attention,
  type AttentionCode,
  type CatalogExam,
  type ErrorFacts,
  type EventDisposition,
  type ExamStatus,
  type Fulfilment,
  type JourneyCallback,
  type JourneyEvent,
  type JourneyRules,
  type JourneyStage,
  type JourneyState,
  type MeetingState,
  type OperatorAction,
  type PatientExamState,
  type PrescriptionFacts,
  type PrescriptionState,
  type ReceivedEvent,
  type ResolvedAttention,
  type ShipmentFacts,
  type Tracking,
  type UnreadCallback,
  type Verdict,
  type DueAction,
  type ExamPhase,
  type ExamSnapshot,
  type JourneySnapshot,
  type JourneySummary,
} from '../../contract/journey-types';
export { initialState, reduce } from './reducer';
export { findExam } from './exams';
export { callbackKey } from './callbacks';
export { cancellableExams, examPhase, isFinished, stageOf } from './phases';
export {
  dueActions,
  FINAL_VERDICT_DEADLINE_DEFAULT_MS,
  MORE_DRUGS_GRACE_DEFAULT_MS,
  nextDeadline,
  schedule,
  timerSummary,
} from './timers';
export { searchAttributesOf, snapshot, summary } from './views';
