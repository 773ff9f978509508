// Clinic notifications signed the Standard Webhooks way: webhook-id, webhook-timestamp and
// webhook-signature = "v1," + base64(HMAC-SHA256(secret, `${id}.${timestamp}.${body}`)).
import { createHmac } from 'node:crypto';
import { request } from 'undici';
import type { ExamNotification } from './types';

export type NotificationSender = (
  url: string,
  secret: string,
  notification: ExamNotification,
) => Promise<{ status: number }>;

/** The secret as Standard Webhooks gives it (`whsec_` + base64), or any raw string. */
export function secretBytes(secret: string): Buffer {
  return secret.startsWith('whsec_') ? Buffer.from(secret.slice('whsec_'.length), 'base64') : Buffer.from(secret);
}

export function signNotification(secret: string, id: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secretBytes(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

export function notificationHeaders(secret: string, notification: ExamNotification, body: string, nowMs = Date.now()) {
  // Stable per journey and sequence, so the clinic can deduplicate our retries.
  const id = `msg_${notification.journeyId}_${notification.sequence}`;
  const timestamp = Math.floor(nowMs / 1000);
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signNotification(secret, id, timestamp, body),
  };
}

export const sendNotification: NotificationSender = async (url, secret, notification) => {
  const body = JSON.stringify(notification);
  const res = await request(url, {
    method: 'POST',
    headers: notificationHeaders(secret, notification, body),
    body,
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  await res.body.dump();
  return { status: res.statusCode };
};
