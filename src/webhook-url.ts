// The exam service signs nothing, so each journey's webhook URL is its own credential: the path carries an HMAC of
// the journey id under a server secret. The worker builds the URL for the invite; the API checks it.
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';

/** The secret as HMAC takes it, made once per secret (a process has one; a test a few). */
const secretKeys = new Map<string, KeyObject>();
function secretKey(secret: string): KeyObject {
  let key = secretKeys.get(secret);
  if (!key) {
    if (secretKeys.size >= 16) secretKeys.clear();
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    secretKeys.set(secret, key);
  }
  return key;
}

export function webhookToken(journeyId: string, secret: string): string {
  return createHmac('sha256', secretKey(secret)).update(`exam-service-webhook:${journeyId}`).digest('base64url');
}

export function webhookUrl(publicBaseUrl: string, journeyId: string, secret: string): string {
  const base = publicBaseUrl.replace(/\/+$/, '');
  return `${base}/webhooks/exam-service/${encodeURIComponent(journeyId)}/${webhookToken(journeyId, secret)}`;
}

/** Constant-time check of a token from the URL. */
export function isValidWebhookToken(journeyId: string, token: string, secret: string): boolean {
  const expected = Buffer.from(webhookToken(journeyId, secret));
  const given = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
