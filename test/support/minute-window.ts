/**
 * For tests whose counts hold within one minute window of the rate limiter (admissions, refusals
 * toward a ban): waits, if needed, for the next window, so that `needMs` from now stay inside the
 * current one.
 */
import { setTimeout as sleep } from 'node:timers/promises';

const MINUTE_MS = 60_000;

export async function earlyInAMinute(needMs: number, now = Date.now()): Promise<void> {
  const into = now % MINUTE_MS;
  if (into > MINUTE_MS - needMs) await sleep(MINUTE_MS - into + 200);
}
