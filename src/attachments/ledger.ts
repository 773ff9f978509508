// What each clinic keeps in the attachment store, kept in the store itself so that both backends and every API replica
// share it: one empty entry per attachment, `usage/<clinic>/<ref>.<size>`, and the claim of the journey that took it
// beside it, `usage/<clinic>/<ref>.taken` (the journey id). The folder is named by a keyed digest of the clinic id
// (RecordSealer.blindNames), so nothing on disk says which clinic a record is of. An upload's entry is written before
// its bytes and the clinic's usage listed after it: over the quota the entry goes and the upload is refused, so two
// replicas racing for the last room see each other (at worst both are refused), never both stored past the bound.
// docs/api.md#attachment-quotas-and-orphans

export interface AttachmentQuota {
  /** Bytes a clinic may keep stored (the uploads' own size); 0: no bound. */
  bytes: number;
  /** Attachments a clinic may keep stored; 0: no bound. */
  count: number;
}

export interface AttachmentUsage {
  bytes: number;
  count: number;
}

/** An upload refused before its bytes were stored: it would take the clinic past its quota. No PHI in the message. */
export class AttachmentQuotaExceededError extends Error {
  constructor(
    readonly clinicId: string,
    readonly quota: AttachmentQuota,
    /** What the clinic had stored, without the refused upload. */
    readonly usage: AttachmentUsage,
    readonly size: number,
  ) {
    const bound = (n: number, unit: string) => (n > 0 ? `${n} ${unit}` : 'no bound');
    super(
      `the attachment quota of clinic ${clinicId} would be exceeded: ${usage.count} attachments of ` +
        `${bound(quota.count, 'attachments')} and ${usage.bytes} bytes of ${bound(quota.bytes, 'bytes')} are stored; ` +
        `this upload is ${size} bytes`,
    );
    this.name = 'AttachmentQuotaExceededError';
  }
}

/** One entry of a usage folder, and when it was written (the backend's own clock: file mtime, object LastModified). */
export interface LedgerEntry {
  name: string;
  at: Date;
}

/** What a backend does for the ledger: small entries in folders, by paths relative to its `usage/` root. */
export interface LedgerBackend {
  write(path: string, body: string): Promise<void>;
  read(path: string): Promise<string | undefined>;
  /** Removes the entries; absent ones are no error. */
  remove(paths: string[]): Promise<void>;
  /** The entries of one folder (names without the folder); none for a missing folder. */
  list(folder: string): Promise<LedgerEntry[]>;
  /** Their names alone (cheaper where the time is a read of its own). */
  names(folder: string): Promise<string[]>;
  /** Every folder (one per clinic and key). */
  folders(): Promise<string[]>;
}

export interface OrphanSweepOptions {
  /** Uploads stored (and claims made) before this that no journey took are deleted. */
  olderThan: Date;
  /**
   * Whether a journey that claimed an upload exists. Undefined: claims are trusted. `false`: the claim is an orphan's
   * too (a start that failed after its claim, or a journey long gone from Temporal). A throw keeps the upload.
   */
  journeyExists?: (journeyId: string) => Promise<boolean>;
  /**
   * Told of each deletion before it happens (the audit trail): when it throws, the upload is kept and the sweep stops
   * (the next one tries again). A deletion cut short after it is finished, and told again, by the next sweep.
   */
  onDeleting?: (deleting: DeletedOrphan) => unknown;
}

export interface DeletedOrphan {
  ref: string;
  /** From the record's metadata, when it could be read. */
  clinicId?: string;
  size: number;
  /** `not_taken`: no journey claimed it; `journey_not_found`: the journey that claimed it does not exist. */
  reason: 'not_taken' | 'journey_not_found';
}

export interface OrphanSweepResult {
  /** Attachments deleted (their records were there). */
  deleted: number;
  /** Entries removed whose record was already gone (an upload that never finished, a deletion cut short). */
  stale: number;
}

/**
 * What the sweep asks of the store for one orphan: read its clinic, call `before` with it (the deletion on the record
 * first), remove the record; say whether it was there.
 */
export type RemoveRecord = (
  ref: string,
  before: (clinicId: string | undefined) => Promise<void>,
) => Promise<{ existed: boolean; clinicId?: string }>;

const USAGE = /^(att_[A-Za-z0-9_-]{8,64})\.(\d{1,15})$/;
const TAKEN = /^(att_[A-Za-z0-9_-]{8,64})\.taken$/;

export class UsageLedger {
  /** Per clinic, the reservation in flight in this process: this replica's uploads never refuse each other. */
  readonly #locks = new Map<string, Promise<unknown>>();

  constructor(
    readonly backend: LedgerBackend,
    /** The clinic's folders, the one new entries go to first (RecordSealer.blindNames). */
    readonly foldersOf: (clinicId: string) => string[],
  ) {}

  /**
   * Records an upload before its bytes are written; throws AttachmentQuotaExceededError (and records nothing) when the
   * clinic's stored attachments, this one included, would pass the quota.
   */
  async reserve(clinicId: string, ref: string, size: number, quota?: AttachmentQuota): Promise<void> {
    const entry = `${this.foldersOf(clinicId)[0]!}/${ref}.${size}`;
    await this.#locked(clinicId, async () => {
      await this.backend.write(entry, '');
      if (!quota || (quota.bytes <= 0 && quota.count <= 0)) return;
      let usage: AttachmentUsage;
      try {
        usage = await this.usage(clinicId);
      } catch (err) {
        await this.backend.remove([entry]).catch(() => undefined);
        throw err;
      }
      // The listing holds this upload's own entry (written above) and any other replica's written before it.
      if ((quota.count > 0 && usage.count > quota.count) || (quota.bytes > 0 && usage.bytes > quota.bytes)) {
        await this.backend.remove([entry]);
        const before = { count: Math.max(0, usage.count - 1), bytes: Math.max(0, usage.bytes - size) };
        throw new AttachmentQuotaExceededError(clinicId, quota, before, size);
      }
    });
  }

  /** Forgets an attachment (its record is gone or going): its usage and its claim, in every folder of the clinic. */
  async release(clinicId: string, ref: string, size: number): Promise<void> {
    await this.backend.remove(this.foldersOf(clinicId).flatMap((f) => [`${f}/${ref}.${size}`, `${f}/${ref}.taken`]));
  }

  /**
   * A journey takes an upload: beside its entry goes the journey id, so the sweep leaves it to the journey's
   * retention. The first claim stays (a reference belongs to the journey that used it first). Attachments stored
   * before usage was kept have no entry, and get no claim.
   */
  async claim(clinicId: string, ref: string, size: number, journeyId: string): Promise<void> {
    for (const folder of this.foldersOf(clinicId)) {
      if ((await this.backend.read(`${folder}/${ref}.${size}`)) === undefined) continue;
      if ((await this.backend.read(`${folder}/${ref}.taken`)) === undefined) {
        await this.backend.write(`${folder}/${ref}.taken`, journeyId);
      }
      return;
    }
  }

  /** The journey that took an upload; undefined while none has (or for an upload stored before usage was kept). */
  async takerOf(clinicId: string, ref: string): Promise<string | undefined> {
    for (const folder of this.foldersOf(clinicId)) {
      const taken = (await this.backend.read(`${folder}/${ref}.taken`))?.trim();
      if (taken) return taken;
    }
    return undefined;
  }

  /** The uploads a journey took (their refs): what an erasure of its patient deletes. */
  async takenBy(clinicId: string, journeyId: string): Promise<string[]> {
    const refs = new Set<string>();
    for (const folder of this.foldersOf(clinicId)) {
      for (const name of await this.backend.names(folder)) {
        const m = TAKEN.exec(name);
        if (!m || refs.has(m[1]!)) continue;
        if ((await this.backend.read(`${folder}/${name}`)) === journeyId) refs.add(m[1]!);
      }
    }
    return [...refs].sort();
  }

  async usage(clinicId: string): Promise<AttachmentUsage> {
    const seen = new Set<string>();
    let bytes = 0;
    for (const folder of this.foldersOf(clinicId)) {
      for (const name of await this.backend.names(folder)) {
        const m = USAGE.exec(name);
        if (!m || seen.has(m[1]!)) continue;
        seen.add(m[1]!);
        bytes += Number(m[2]);
      }
    }
    return { count: seen.size, bytes };
  }

  /**
   * Deletes the uploads no journey took before `olderThan` (and, with `journeyExists`, those whose claiming journey
   * does not exist), with their entries; entries whose record is gone are removed too. Any replica may run it at any
   * time: a deletion that another replica made first is not counted (nor reported) again.
   */
  async sweep(removeRecord: RemoveRecord, o: OrphanSweepOptions): Promise<OrphanSweepResult> {
    const result: OrphanSweepResult = { deleted: 0, stale: 0 };
    const before = o.olderThan.getTime();
    // One question per journey and sweep, however many of its uploads are claimed.
    const exists = new Map<string, Promise<boolean>>();
    const journeyExists = o.journeyExists
      ? (id: string) => exists.get(id) ?? exists.set(id, o.journeyExists!(id)).get(id)!
      : undefined;
    for (const folder of await this.backend.folders()) {
      const refs = new Map<string, { size?: number; storedAt?: Date; takenAt?: Date }>();
      for (const e of await this.backend.list(folder)) {
        const usage = USAGE.exec(e.name);
        const taken = usage ? undefined : TAKEN.exec(e.name);
        const ref = usage?.[1] ?? taken?.[1];
        if (!ref) continue;
        const r = refs.get(ref) ?? {};
        if (usage) Object.assign(r, { size: Number(usage[2]), storedAt: e.at });
        else r.takenAt = e.at;
        refs.set(ref, r);
      }
      for (const [ref, r] of refs) {
        const takenPath = `${folder}/${ref}.taken`;
        if (r.storedAt === undefined || r.size === undefined) {
          // A claim whose entry is gone (its release was cut short).
          if (r.takenAt && r.takenAt.getTime() < before) await this.backend.remove([takenPath]);
          continue;
        }
        if (r.storedAt.getTime() >= before) continue;
        let reason: DeletedOrphan['reason'] = 'not_taken';
        if (r.takenAt) {
          if (!journeyExists || r.takenAt.getTime() >= before) continue;
          if (!(await this.#journeyGone(takenPath, journeyExists))) continue;
          reason = 'journey_not_found';
        } else if ((await this.backend.read(takenPath)) !== undefined) {
          continue; // taken since the listing
        }
        const size = r.size;
        const removed = await removeRecord(ref, async (clinicId) => {
          await o.onDeleting?.({ ref, size, reason, ...(clinicId !== undefined ? { clinicId } : {}) });
        });
        await this.backend.remove([`${folder}/${ref}.${r.size}`, takenPath]);
        if (removed.existed) result.deleted++;
        else result.stale++;
      }
    }
    return result;
  }

  async #journeyGone(takenPath: string, journeyExists: (journeyId: string) => Promise<boolean>): Promise<boolean> {
    const journeyId = (await this.backend.read(takenPath))?.trim();
    if (!journeyId) return false;
    try {
      return !(await journeyExists(journeyId));
    } catch {
      return false; // Temporal away: kept for the next sweep
    }
  }

  async #locked<T>(clinicId: string, task: () => Promise<T>): Promise<T> {
    const run = (this.#locks.get(clinicId) ?? Promise.resolve()).then(task);
    const settled = run.catch(() => undefined);
    this.#locks.set(clinicId, settled);
    try {
      return await run;
    } finally {
      if (this.#locks.get(clinicId) === settled) this.#locks.delete(clinicId);
    }
  }
}
