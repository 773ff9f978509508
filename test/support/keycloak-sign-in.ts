// A person signing in at Keycloak's pages in a real browser, as they would: the temporary password `npm run
// add-person` printed, then the required actions of a first sign-in (a new password; for operators and admins an
// authenticator set up from the secret the page shows), and at later sign-ins the password and a one-time code.
import { createHmac } from 'node:crypto';
import type { Page } from 'playwright-core';

/** A person of the realm as the test knows them: what they would keep in their head and their authenticator app. */
export interface Person {
  username: string;
  /** The temporary password until the first sign-in replaces it. */
  password: string;
  /** The authenticator's secret, once set up (the raw secret the TOTP is keyed with). */
  totpSecret?: string;
  /** The last time step a code was given for: Keycloak takes each code once. */
  lastStep?: number;
}

/** What a sign-in went through, by page. */
export type SignInStep = 'password' | 'update-password' | 'update-profile' | 'configure-totp' | 'otp' | 'grant';

/** RFC 6238 with the realm's policy (HMAC-SHA1, 6 digits, 30 s), keyed as Keycloak keys it: the secret's bytes. */
export function totp(secret: string, step: number): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', Buffer.from(secret, 'utf8')).update(counter).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  const code = (mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000;
  return code.toString().padStart(6, '0');
}

/** A code for a step the person has not used yet (waits for the next step when this one is spent). */
async function nextCode(person: Person): Promise<string> {
  let step = Math.floor(Date.now() / 30_000);
  if (person.lastStep !== undefined && step <= person.lastStep) {
    await new Promise((r) => setTimeout(r, (person.lastStep! + 1) * 30_000 - Date.now() + 250));
    step = person.lastStep + 1;
  }
  person.lastStep = step;
  return totp(person.totpSecret!, step);
}

const SUBMIT = '#kc-login, #kc-submit, #saveTOTPBtn, #kc-form-buttons [type=submit]';

/**
 * Answers Keycloak's pages until `done()` holds or a page shows none of the forms a sign-in has; the first sign-in's
 * new password becomes the person's. Returns the pages gone through, in order.
 */
export async function completeSignIn(
  page: Page,
  person: Person,
  done: () => boolean,
  newPassword = `${person.username}-renewed-1`,
): Promise<SignInStep[]> {
  const steps: SignInStep[] = [];
  for (let turn = 0; turn < 8 && !done(); turn++) {
    const has = async (selector: string) => (await page.locator(selector).count()) > 0;
    // Each form posts to Keycloak, which answers the next page (or redirects back to the client).
    const submit = async (selector: string) => {
      const next = page.waitForNavigation({ waitUntil: 'domcontentloaded', timeout: 60_000 });
      await page.locator(selector).first().click();
      await next;
    };
    if (await has('#totpSecret')) {
      steps.push('configure-totp');
      person.totpSecret = await page.locator('#totpSecret').inputValue();
      await page.fill('#totp', await nextCode(person));
      if (await has('#userLabel')) await page.fill('#userLabel', 'test authenticator');
      await submit('#saveTOTPBtn');
    } else if (await has('#otp')) {
      steps.push('otp');
      await page.fill('#otp', await nextCode(person));
      await submit(SUBMIT);
    } else if (await has('#password-new')) {
      steps.push('update-password');
      await page.fill('#password-new', newPassword);
      await page.fill('#password-confirm', newPassword);
      await submit(SUBMIT);
      person.password = newPassword;
    } else if ((await has('#firstName')) || (await has('#lastName'))) {
      steps.push('update-profile');
      for (const [field, value] of [
        ['#firstName', 'Test'],
        ['#lastName', 'Person'],
        ['#email', `${person.username}@clinic.example`],
      ] as const) {
        if ((await has(field)) && !(await page.locator(field).inputValue())) await page.fill(field, value);
      }
      await submit(SUBMIT);
    } else if (await has('#username')) {
      steps.push('password');
      await page.fill('#username', person.username);
      await page.fill('#password', person.password);
      await submit('#kc-login');
    } else if (await has('input[name="accept"], button[name="accept"]')) {
      steps.push('grant');
      await submit('input[name="accept"], button[name="accept"]');
    } else {
      break;
    }
  }
  return steps;
}
