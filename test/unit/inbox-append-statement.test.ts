import { APPEND_MAX_ROWS, appendStatement, PREPARED_APPEND_ROWS } from '../../src/inbox/postgres';

const row = (i: number) => [`journey-${i}`, `delivery-${i}`, '2026-12-01T00:00:00.000Z', 'key-1', Buffer.from([i])];

describe('the PostgreSQL inbox append statement', () => {
  it('takes each row as five parameters of its own: the sealed body a Buffer (sent as binary), never array text', () => {
    const values = [...row(1), ...row(2)];
    const q = appendStatement(2, values);
    expect(q.values).toBe(values);
    expect(q.text).toContain(
      'VALUES ($1, $2, $3::timestamptz, $4, $5::bytea), ($6, $7, $8::timestamptz, $9, $10::bytea)',
    );
    expect(q.text).not.toMatch(/unnest|\$11/);
    expect(q.text).toMatch(/pg_notify\('callback_inbox', count\(\*\)::text\) FROM ins$/);
  });

  it('names small batches by their size (each prepared once per connection) and leaves larger ones unnamed', () => {
    const one = appendStatement(1, row(1));
    expect(one.name).toBe('callback_inbox_append_1');
    expect(appendStatement(1, row(9)).text).toBe(one.text);
    const largest = appendStatement(
      PREPARED_APPEND_ROWS,
      Array.from({ length: PREPARED_APPEND_ROWS }, (_v, i) => row(i)).flat(),
    );
    expect(largest.name).toBe(`callback_inbox_append_${PREPARED_APPEND_ROWS}`);
    const burst = appendStatement(
      PREPARED_APPEND_ROWS + 1,
      Array.from({ length: PREPARED_APPEND_ROWS + 1 }, (_v, i) => row(i)).flat(),
    );
    expect(burst.name).toBeUndefined();
    expect(burst.text).toContain(`$${(PREPARED_APPEND_ROWS + 1) * 5}::bytea)`);
  });

  it('refuses a row count it cannot write and values that do not fill the rows', () => {
    expect(() => appendStatement(0, [])).toThrow('an append takes 1 to 13000 rows, not 0');
    expect(() => appendStatement(APPEND_MAX_ROWS + 1, [])).toThrow(`not ${APPEND_MAX_ROWS + 1}`);
    expect(() => appendStatement(2, row(1))).toThrow('an append of 2 rows takes 10 values');
  });
});
