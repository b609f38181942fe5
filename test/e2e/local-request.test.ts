/**
 * Following one request by its id against `npm start`, as docs/local.md ("Follow one request by
 * its id") says: the API started at INFO with its output kept, the second block of that section
 * run as written, and what it prints is the request's access-log line and its function lines.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEMO_KEYS } from '../../local/demo-data.ts';
import { startLocalApi, type LocalApi } from '../support/local-api.ts';
import { shellBlocks } from '../support/runbook.ts';

const run = promisify(execFile);
const SECTION = '## Follow one request by its id';

/** The lines of the section's shell blocks, in order: the start, the request and the grep. */
const sectionLines = () => shellBlocks('local.md', SECTION).split('\n').filter(Boolean);

let api: LocalApi;
beforeAll(async () => {
  // The section's first block: `LOG_LEVEL=INFO npm start 2>&1 | tee local.log`.
  expect(sectionLines()[0]).toBe('LOG_LEVEL=INFO npm start 2>&1 | tee local.log');
  api = await startLocalApi({ logLevel: 'INFO' });
});
afterAll(() => api?.stop());

it('finds, by the id the client got, the access-log line and every line of the function', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'follow-request-'));
  const [, request, grep] = sectionLines();
  const env = {
    ...process.env,
    API: api.url,
    KEY: DEMO_KEYS[1]!.key,
  };
  const { stdout: id } = await run('bash', ['-e', '-c', `${request}\nprintf '%s' "$REQUEST_ID"`], {
    cwd: dir,
    env,
  });
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  // What `tee local.log` has kept by now. Both kinds of line are written after the client has its
  // answer: the record of the DynamoDB calls last in the function, the access-log line when the
  // gateway has finished the response; on a busy machine either can trail the client.
  await expect
    .poll(
      () => {
        const kept = api.output().split('\n');
        return {
          accessLog: kept.some((l) => l.includes(`"requestId":"${id}"`)),
          functionLines: kept.filter((l) => l.includes(`"correlation_id":"${id}"`)).length >= 2,
        };
      },
      { timeout: 10_000 },
    )
    .toEqual({ accessLog: true, functionLines: true });
  writeFileSync(join(dir, 'local.log'), api.output());
  const { stdout } = await run('bash', ['-e', '-c', `REQUEST_ID=${id}\n${grep}`], {
    cwd: dir,
    env,
  });
  const lines = stdout.trim().split('\n');
  expect(lines.some((line) => line.includes(`"requestId":"${id}"`))).toBe(true);
  const own = lines.filter((line) => line.includes(`"correlation_id":"${id}"`));
  expect(
    own.map((line) => (JSON.parse(line.slice(line.indexOf('{'))) as { message: string }).message),
  ).toEqual(expect.arrayContaining(['Answered with an error', 'DynamoDB calls']));
  expect(stdout).toContain('"code":"ORDER_NOT_FOUND"');
});
