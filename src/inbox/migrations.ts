// The PostgreSQL inbox's schema, versioned. Applied at start by every replica under an advisory lock (the first one
// migrates, the others wait and find nothing to do). Never edit a released migration: add the next version.

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'callback inbox and dead letters',
    sql: `
      CREATE TABLE callback_inbox (
        -- Arrival order: the forwarder signals each journey's entries in this order.
        id bigserial PRIMARY KEY,
        journey_id text NOT NULL,
        delivery_id text NOT NULL,
        received_at timestamptz NOT NULL,
        appended_at timestamptz NOT NULL DEFAULT now(),
        -- The callback (signal and raw body) sealed with the payload key ring; key_id null when stored unsealed.
        key_id text,
        body bytea NOT NULL
      );
      CREATE INDEX callback_inbox_journey ON callback_inbox (journey_id, id);

      CREATE TABLE dead_letters (
        id text PRIMARY KEY,
        journey_id text NOT NULL,
        reason text NOT NULL,
        received_at timestamptz NOT NULL,
        dead_lettered_at timestamptz NOT NULL,
        replays integer NOT NULL DEFAULT 0,
        -- The whole letter (detail, ids, the body as received) sealed; key_id null when stored unsealed.
        key_id text,
        body bytea NOT NULL
      );
    `,
  },
];

/** Advisory lock key of the migration step (any constant shared by every replica). */
export const MIGRATION_LOCK_KEY = 7_311_420_551;
