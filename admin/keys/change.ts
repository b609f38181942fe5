/** `keys revoke`, `keys set-plan` and `keys set-permissions`: the commands that change a key's record. */
import { limitsOf, permissionsOf } from '../../lib/keys/key-record.ts';
import { changePermissions, changePlan, revokeKey } from '../../lib/keys/lifecycle.ts';
import { formatPermissions } from '../../lib/keys/permissions.ts';
import { defineCommand } from '../command.ts';
import { print } from '../common.ts';
import { confirmChange } from '../confirm.ts';
import {
  CACHE_NOTE,
  describeKey,
  formatLimits,
  keyIdArgument,
  PERMISSION_FLAGS,
  permissionChoice,
  PLAN_FLAGS,
  planChoice,
  refuseUnhonourable,
  withKeyStore,
} from './shared.ts';

export const revoke = defineCommand(
  {
    name: 'keys revoke',
    summary: `stop a key (${CACHE_NOTE.replace(/ \(.*/, '')})`,
    description: `Revokes a key: requests with it are refused ${CACHE_NOTE}.
Revoking a revoked key changes nothing.`,
    flags: {},
    positionals: ['key-id'],
  },
  async (parsed, io) => {
    const keyId = keyIdArgument(parsed.positionals);
    await withKeyStore(parsed.values, async (store, target) => {
      await confirmChange(target, `revoke key ${keyId}`, parsed.values.yes, io);
      const { record, alreadyRevoked } = await revokeKey(store, keyId, io.now());
      print(
        io.stdout,
        alreadyRevoked
          ? `Key ${keyId} was already revoked${record.revokedAt ? ` (at ${record.revokedAt})` : ''}; nothing changed.`
          : `Revoked key ${describeKey(record)}. Requests with it are refused ${CACHE_NOTE}.`,
      );
    });
  },
);

export const setPlan = defineCommand(
  {
    name: 'keys set-plan',
    summary: "change a key's plan (enterprise: with its own limits)",
    description: `Changes the plan of an active key; it takes effect ${CACHE_NOTE}.`,
    flags: PLAN_FLAGS,
    positionals: ['key-id'],
  },
  async (parsed, io) => {
    const { values } = parsed;
    const keyId = keyIdArgument(parsed.positionals);
    const choice = planChoice(values);
    await withKeyStore(values, async (store, target) => {
      refuseUnhonourable(choice, target);
      await confirmChange(target, `move key ${keyId} to plan ${choice.plan}`, values.yes, io);
      const { before, after } = await changePlan(store, keyId, choice, io.now());
      print(
        io.stdout,
        `Key ${keyId}: plan ${before.plan} (${formatLimits(limitsOf(before))}) → ${after.plan} (${formatLimits(limitsOf(after))}). It takes effect ${CACHE_NOTE}.`,
      );
    });
  },
);

export const setPermissions = defineCommand(
  {
    name: 'keys set-permissions',
    summary: 'change what a key may do (read, cancel, or both)',
    description: `Changes what an active key may do: read orders (v1's list, v2's pages), cancel them, or both.
A request the key may not make is answered 403 PERMISSION_DENIED (and counted against its
limits like any other). It takes effect ${CACHE_NOTE}. Giving a key the permissions it holds
changes nothing.`,
    flags: PERMISSION_FLAGS,
    positionals: ['key-id'],
  },
  async (parsed, io) => {
    const { values } = parsed;
    const keyId = keyIdArgument(parsed.positionals);
    const permissions = permissionChoice(values);
    await withKeyStore(values, async (store, target) => {
      await confirmChange(
        target,
        `give key ${keyId} the permissions ${formatPermissions(permissions)}`,
        values.yes,
        io,
      );
      const { before, after, changed } = await changePermissions(
        store,
        keyId,
        permissions,
        io.now(),
      );
      const [was, now] = [before, after].map((record) => formatPermissions(permissionsOf(record)));
      print(
        io.stdout,
        changed
          ? `Key ${keyId}: permissions ${was} → ${now}. It takes effect ${CACHE_NOTE}.`
          : `Key ${keyId} already has the permissions ${now}; nothing changed.`,
      );
    });
  },
);
