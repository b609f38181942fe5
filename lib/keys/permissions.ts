/**
 * What a key may do: read orders (v1's list, v2's pages) and cancel them, each a permission of
 * its own, so that a key that only polls cannot cancel. A key holds one or both; a key stored
 * before permissions existed (no permissions stored) holds both, as it always did.
 */

export const PERMISSIONS = ['read', 'cancel'] as const;
export type Permission = (typeof PERMISSIONS)[number];

/** What each permission lets a key do, in the words the CLI's help and the 403 use. */
export const PERMISSION_ACTIONS: Readonly<Record<Permission, string>> = {
  read: 'read orders',
  cancel: 'cancel orders',
};

/** What a key holds when none are stored (a key issued before permissions) or none are chosen. */
export const ALL_PERMISSIONS: readonly Permission[] = PERMISSIONS;

/** Only reading: what `--read-only` gives (a warehouse screen, a dashboard). */
export const READ_ONLY: readonly Permission[] = ['read'];

export function isPermission(value: unknown): value is Permission {
  return typeof value === 'string' && (PERMISSIONS as readonly string[]).includes(value);
}

/** Permissions once each, in PERMISSIONS order: the one form stored, carried and printed. */
export function normalPermissions(permissions: Iterable<Permission>): Permission[] {
  const held = new Set(permissions);
  return PERMISSIONS.filter((permission) => held.has(permission));
}

/**
 * A stored or given list of permissions (a key's record, a keys file's entry), normal; undefined
 * when it is not a non-empty list of known ones (each reader words its own error).
 */
export function readPermissionList(value: unknown): Permission[] | undefined {
  if (!Array.isArray(value) || value.length === 0 || !value.every(isPermission)) return undefined;
  return normalPermissions(value);
}

/** `read,cancel`: how permissions are written (the authorizer's context, the CLI). */
export function formatPermissions(permissions: Iterable<Permission>): string {
  return normalPermissions(permissions).join(',');
}

/**
 * Permissions written as `read,cancel` (any order, spaces around a name allowed): undefined
 * when a name is unknown or none is given (a key holds at least one permission).
 */
export function parsePermissions(text: string): Permission[] | undefined {
  const names = text.split(',').map((name) => name.trim());
  return names.every(isPermission) ? normalPermissions(names) : undefined;
}

/** Whether `held` includes `needed`. */
export function permits(held: readonly Permission[], needed: Permission): boolean {
  return held.includes(needed);
}

/**
 * A request its key may not make (answered 403 PERMISSION_DENIED once the request is counted,
 * having read and written nothing of the orders).
 */
export class PermissionDenied extends Error {
  readonly keyId: string;
  readonly needed: Permission;
  constructor(keyId: string, needed: Permission) {
    super(
      `This API key may not ${PERMISSION_ACTIONS[needed]}: it lacks the "${needed}" permission.`,
    );
    this.name = 'PermissionDenied';
    this.keyId = keyId;
    this.needed = needed;
  }
}

/** The refusal of a request that needs `needed` by a key that lacks it; undefined if it may. */
export function refusalOf(
  caller: { readonly keyId: string; readonly permissions: readonly Permission[] },
  needed: Permission,
): PermissionDenied | undefined {
  return permits(caller.permissions, needed)
    ? undefined
    : new PermissionDenied(caller.keyId, needed);
}
