// Waiting in tests that drive whole processes: a check tried every quarter second until it gives a value.

/** Resolves with the first value `fn` gives (errors count as none); rejects naming `what` after `timeoutMs`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
