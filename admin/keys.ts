/**
 * `keys …`: issue, list, revoke, rotate, re-plan API keys and change their permissions. Thin: parse the command line,
 * call lib/keys/lifecycle.ts, print. A plaintext key is printed once, by `create` and `rotate`;
 * nothing prints a stored hash.
 */
import type { Command } from './command.ts';
import { revoke, setPermissions, setPlan } from './keys/change.ts';
import { list, show } from './keys/inspect.ts';
import { create, rotate } from './keys/issue.ts';
import { unban } from './keys/unban.ts';

export const KEY_COMMANDS: readonly Command[] = [
  create,
  list,
  show,
  revoke,
  rotate,
  setPlan,
  setPermissions,
  unban,
];
