// Clinic notifications signed with the Standard Webhooks library: webhook-id, webhook-timestamp, webhook-signature.
import { Webhook } from 'standardwebhooks';
import { request } from 'undici';
import type { ExamNotification } from '../contract/activity-contract';

export type NotificationSender = (
  url: string,
  secret: string,
  notification: ExamNotification,
) => Promise<{ status: number }>;

/** The signer of a clinic's secret as Standard Webhooks gives it (`whsec_` + base64), or of any raw string. */
export function notificationSigner(secret: string): Webhook {
  return secret.startsWith('whsec_')
    ? new Webhook(secret)
    : new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' });
}

export function notificationHeaders(secret: string, notification: ExamNotification, body: string, nowMs = Date.now()) {
  // Stable per journey and sequence, so the clinic can deduplicate our retries.
  const id = `msg_${notification.journeyId}_${notification.sequence}`;
  // Whole seconds, as the header carries them: the signature covers the timestamp the clinic reads.
  const timestamp = new Date(Math.floor(nowMs / 1000) * 1000);
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp.getTime() / 1000),
    'webhook-signature': notificationSigner(secret).sign(id, timestamp, body),
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
