/** `keys unban`: lifts a key's ban now, in one conditional write. */
import { DynamoDbKeyStore } from '../../lib/dynamodb/keys-table.ts';
import { RateLimitAdmin } from '../../lib/dynamodb/rate-limit-admin.ts';
import { BAN_RECHECK_MS } from '../../lib/dynamodb/rate-limit-items.ts';
import { limitsOf } from '../../lib/keys/key-record.ts';
import { findKey } from '../../lib/keys/lifecycle.ts';
import { refusalsIn } from '../../lib/limits/ban.ts';
import { defineCommand } from '../command.ts';
import { print } from '../common.ts';
import { confirmChange } from '../confirm.ts';
import { withTables } from '../target.ts';
import { counterView } from './inspect.ts';
import { keyIdArgument, shortTime } from './shared.ts';

export const unban = defineCommand(
  {
    name: 'keys unban',
    summary: "lift a key's ban now (one conditional write)",
    description: `Lifts a key's ban in one conditional write: the ban ends, its refusal count restarts, and its
next refusal is not counted as early. A request racing the unban cannot ban the key again from
the state before it. Containers that remember the ban see it lifted within ${BAN_RECHECK_MS / 1000} s. The key's
limits still apply: a request beyond them gets 429 RATE_LIMITED, as keys show says. A key that
is not banned is left as it is.`,
    flags: {},
    positionals: ['key-id'],
  },
  async (parsed, io) => {
    const keyId = keyIdArgument(parsed.positionals);
    await withTables(parsed.values, ['apiKeys', 'rateLimits'], async (client, tables, target) => {
      const record = await findKey(new DynamoDbKeyStore(client, tables.apiKeys), keyId);
      await confirmChange(target, `unban key ${keyId}`, parsed.values.yes, io);
      const now = io.now();
      const { lifted, before } = await new RateLimitAdmin(client, tables.rateLimits).unban(
        keyId,
        now.getTime(),
      );
      if (!lifted) {
        print(io.stdout, `Key ${keyId} is not banned on ${target.description}; nothing changed.`);
        return;
      }
      const until = new Date(before.bannedUntil as number).toISOString();
      const limits = limitsOf(record);
      const after = limits
        ? counterView(
            { ...before, bannedUntil: undefined, retryAt: undefined, refusals: undefined },
            now.getTime(),
            limits,
            target,
          ).next
        : undefined;
      print(
        io.stdout,
        `Unbanned key ${keyId} on ${target.description}: ban until ${shortTime(until)} lifted, refusals counted ${refusalsIn(before, now.getTime())} → 0; a request now is ${after?.outcome === 'admitted' ? 'admitted' : `refused 429 RATE_LIMITED for ${after?.retryAfterSeconds ?? '?'} s (its limits)`} (within ${BAN_RECHECK_MS / 1000} s everywhere).`,
      );
    });
  },
);
