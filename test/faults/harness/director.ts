// The run's medical director: journeys planned `Deferred` invite outside test mode, so the sandbox's provider waits for
// its control surface. The director defers each such exam as soon as the sandbox has it, then gives the final verdict
// (Approved) a few seconds later, whatever the faults are doing to the API, the worker and Temporal meanwhile.
import { http } from './journeys';
import { journeyOfUrl, sandboxExams } from './verify';

const DEFERRED = 'Deferred to Medical Director';
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class MedicalDirector {
  readonly #journeys = new Set<string>();
  /** When each patient exam was seen deferred first. */
  readonly #deferredAt = new Map<number, number>();
  #stopped = false;
  readonly given = { deferrals: 0, finalVerdicts: 0 };

  constructor(
    private readonly sandboxUrl: string,
    /** How long an exam stays deferred before the director's final verdict. */
    private readonly holdMs: number,
  ) {}

  /** A journey whose exams this director decides. */
  follow(journeyId: string): void {
    this.#journeys.add(journeyId);
  }

  get following(): number {
    return this.#journeys.size;
  }

  async run(): Promise<void> {
    while (!this.#stopped) {
      if (this.#journeys.size > 0) await this.decide().catch(() => undefined); // the next round tries again
      await sleep(1_000);
    }
  }

  stop(): void {
    this.#stopped = true;
  }

  private async decide(): Promise<void> {
    for (const exam of await sandboxExams(this.sandboxUrl)) {
      const journeyId = journeyOfUrl(exam.webhook_url);
      if (!journeyId || !this.#journeys.has(journeyId)) continue;
      const id = exam.patient_exam_id;
      if (exam.status === 'pending') {
        if ((await this.verdict(id, DEFERRED)) === 200) {
          this.given.deferrals++;
          this.#deferredAt.set(id, Date.now());
        }
      } else if (exam.status === DEFERRED) {
        const since = this.#deferredAt.get(id) ?? Date.now();
        this.#deferredAt.set(id, since);
        if (Date.now() - since >= this.holdMs && (await this.verdict(id, 'Approved')) === 200) {
          this.given.finalVerdicts++;
        }
      }
    }
  }

  private async verdict(patientExamId: number, status: string): Promise<number> {
    const res = await http('POST', `${this.sandboxUrl}/_sandbox/patient-exams/${patientExamId}/verdict`, {
      body: { status },
    });
    return res.status;
  }
}
