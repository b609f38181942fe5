/**
 * `keys create` and `keys rotate`: the commands that issue a key. The plaintext key is printed
 * once, here; only its hash is stored.
 */
import { switchFlag, valueFlag } from '../../lib/config/flags.ts';
import { limitsOf, permissionsOf } from '../../lib/keys/key-record.ts';
import { ALL_PERMISSIONS } from '../../lib/keys/permissions.ts';
import {
  DEFAULT_GRACE,
  issueKey,
  parseGrace,
  parseLabel,
  rotateKey,
} from '../../lib/keys/lifecycle.ts';
import { defineCommand } from '../command.ts';
import { print, UsageError, type Io } from '../common.ts';
import { confirmChange } from '../confirm.ts';
import {
  describeKey,
  keyIdArgument,
  PERMISSION_FLAGS,
  permissionChoice,
  PLAN_FLAGS,
  planChoice,
  refuseUnhonourable,
  withKeyStore,
} from './shared.ts';

function printNewKey(io: Io, key: string): void {
  print(io.stdout, 'The API key is shown only this once: it cannot be shown again (only its hash');
  print(io.stdout, 'is stored). Hand it over now:');
  print(io.stdout, '');
  print(io.stdout, `  ${key}`);
  print(io.stdout, '');
}

export const create = defineCommand(
  {
    name: 'keys create',
    summary: 'issue a key; it is printed once and only its hash is stored',
    description: `Issues a new API key and prints it once, with its public id (key_…). Only the key's SHA-256
hash is stored: the key cannot be shown again. It works at once. It may read and cancel orders
unless --permissions or --read-only says less: a screen that only polls the list needs a key
that cannot cancel.`,
    flags: {
      ...PLAN_FLAGS,
      ...PERMISSION_FLAGS,
      label: valueFlag('TEXT', 'a note for people (who holds the key), shown by list'),
      json: switchFlag('print {"keyId", "key", "plan", "limits", "permissions", "label"} instead'),
      quiet: switchFlag(
        'print the key alone, for a script: KEY=$(npm run -s admin -- keys create … --quiet)',
      ),
    },
  },
  async ({ values }, io) => {
    if (values.json && values.quiet) throw new UsageError('--json and --quiet go one at a time');
    const choice = planChoice(values);
    const permissions = permissionChoice(values, ALL_PERMISSIONS);
    const label = parseLabel(values.label);
    await withKeyStore(values, async (store, target) => {
      refuseUnhonourable(choice, target);
      await confirmChange(target, `create a ${choice.plan} key`, values.yes, io);
      const { key, record } = await issueKey(
        store,
        { ...choice, permissions, ...(label !== undefined ? { label } : {}) },
        io.now(),
      );
      if (values.json) {
        print(
          io.stdout,
          JSON.stringify({
            keyId: record.keyId,
            key,
            plan: record.plan,
            limits: limitsOf(record),
            permissions: permissionsOf(record),
            label,
          }),
        );
        return;
      }
      if (values.quiet) {
        print(io.stdout, key);
        return;
      }
      print(io.stdout, `Created key ${describeKey(record)} on ${target.description}.`);
      printNewKey(io, key);
    });
  },
);

export const rotate = defineCommand(
  {
    name: 'keys rotate',
    summary: 'issue a successor now; the old key works until the grace ends',
    description: `Issues a successor with the same plan, limits, permissions and label, printed once; it works at once. The
old key keeps working until the grace period ends, then is refused. A revoked, expired or
already rotated key is not rotated.`,
    flags: {
      grace: valueFlag(
        'DURATION',
        `how long the old key still works, e.g. 30m, 0s, 7d (default ${DEFAULT_GRACE}; at most 90d)`,
      ),
      json: switchFlag('print {"keyId", "key", "oldKeyId", "oldKeyExpiresAt"} instead'),
    },
    positionals: ['key-id'],
  },
  async (parsed, io) => {
    const { values } = parsed;
    const keyId = keyIdArgument(parsed.positionals);
    const graceMs = parseGrace(values.grace ?? DEFAULT_GRACE);
    await withKeyStore(values, async (store, target) => {
      await confirmChange(target, `rotate key ${keyId}`, values.yes, io);
      const rotation = await rotateKey(store, keyId, graceMs, io.now());
      if (values.json) {
        print(
          io.stdout,
          JSON.stringify({
            keyId: rotation.record.keyId,
            key: rotation.key,
            oldKeyId: keyId,
            oldKeyExpiresAt: rotation.old.expiresAt,
          }),
        );
        return;
      }
      print(io.stdout, `Rotated key ${keyId} on ${target.description}.`);
      print(io.stdout, `New key ${describeKey(rotation.record)} works now.`);
      print(io.stdout, `Old key ${keyId} works until ${rotation.old.expiresAt}, then is refused.`);
      printNewKey(io, rotation.key);
    });
  },
);
