/**
 * Every command the documents give works as written: each `npm run <script>` names a script
 * that exists, each `npm start -- …`, `npm run admin -- …`, `npm run smoke -- …`,
 * `npm run invoke -- …` and benchmark command line is accepted by the program it runs (asked
 * with `--help` added, so that nothing runs, but an unknown flag or command is refused), and
 * the README's "Try it" sequence answers, against `npm start`, the statuses its comments say.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stageConfig } from '../../infra/config.ts';
import { DEFAULT_RETRY_AFTER_SECONDS } from '../../lib/api/errors.ts';
import { PROJECT_ROOT } from '../../local/local-stack.ts';
import { startLocalApi, type LocalApi } from '../support/local-api.ts';
import { sendPolitely } from '../support/polite-client.ts';

/** A demo key of `npm start` other than the README's (whose minute the tests above spend). */
const DEMO_PRO_KEY = 'sok_DemoProPlanKeyForLocalUseOnly0004Hu2sv';
import { markdownFiles } from '../support/markdown.ts';

const run = promisify(execFile);

/** Every Markdown file of the repository (the links test finds them). */
const DOCUMENTS = markdownFiles();

const scripts = (path: string) =>
  (JSON.parse(readFileSync(join(PROJECT_ROOT, path), 'utf8')) as { scripts: object }).scripts;
const ROOT_SCRIPTS = Object.keys(scripts('package.json'));
const CLIENT_SCRIPTS = Object.keys(scripts('client/package.json'));

/** The programs behind the scripts whose command lines the documents spell out. */
const PROGRAMS: Readonly<Record<string, string>> = {
  start: 'local/start.ts',
  admin: 'admin/cli.ts',
  smoke: 'smoke/smoke.ts',
  invoke: 'local/invoke.ts',
  'bench:list': 'bench/list.ts',
  'bench:list-v2': 'bench/list-v2.ts',
  'bench:cancel': 'bench/cancel.ts',
  'bench:cost': 'bench/cost.ts',
  'bench:compression': 'bench/compression-levels.ts',
  'bench:cold-init': 'bench/cold-init.ts',
  'bench:hook-cold': 'bench/hook-cold.ts',
  'bench:limiter': 'bench/rate-limiter.ts',
  'bench:import': 'bench/import.ts',
  'bench:client-parse': 'bench/client-parse.ts',
  'bench:test-cpu': 'bench/test-cpu.ts',
};

interface Block {
  readonly file: string;
  readonly lang: string;
  readonly heading: string;
  readonly text: string;
}

/** The fenced code blocks of a document, with the heading they stand under. */
function blocks(file: string): Block[] {
  const lines = readFileSync(join(PROJECT_ROOT, file), 'utf8').split('\n');
  const found: Block[] = [];
  let heading = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, '');
    const fence = /^```(\w*)$/.exec(line);
    if (!fence) continue;
    const start = i + 1;
    while (i + 1 < lines.length && lines[i + 1] !== '```') i++;
    found.push({ file, lang: fence[1] ?? '', heading, text: lines.slice(start, i + 1).join('\n') });
    i++;
  }
  return found;
}

/** The command lines of a shell block: continuations joined, comments dropped. */
function commandLines(text: string): string[] {
  return text
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/**
 * Shell words of a command line, variables and substitutions stood in for by placeholders, and
 * redirections (`2>&1`, `> file`) left out: the shell's, not the program's.
 */
function words(line: string): string[] {
  const plain = line
    .replace(/\$\([^)]*\)/g, 'X')
    .replace(/\$\{?\w+\}?/g, 'X')
    .replace(/(^|\s)\d*[<>]&?\d*(\s+(?![<>])\S+)?(?=\s|$)/g, ' ');
  return [...plain.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? '');
}

interface Invocation {
  readonly where: string;
  readonly script: string;
  readonly args: readonly string[];
}

/** Commands written inline in the prose: `npm run bench:list -- --orders N`. */
function inlineCommands(file: string): Block[] {
  const text = readFileSync(join(PROJECT_ROOT, file), 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    // Inline code may wrap onto the next line of its paragraph.
    .replace(/`[^`]*`/g, (code) => code.replace(/\s*\n\s*/g, ' '));
  return (
    [...text.matchAll(/`(npm (?:run|start)\b[^`]*)`/g)]
      .map((m) => m[1] as string)
      // A pattern rather than a command (`npm run bench:<name>`, `npm run admin -- … --stage`).
      .filter((command) => !/[<…]/.test(command))
      .map((command) => ({ file, lang: 'sh', heading: 'inline', text: command }))
  );
}

/** Every `npm run …` and `npm start …` of the documents' shell blocks and inline commands. */
function invocations(): Invocation[] {
  return DOCUMENTS.flatMap((file) =>
    [...blocks(file), ...inlineCommands(file)]
      .filter((block) => block.lang === 'sh')
      .flatMap((block) =>
        commandLines(block.text).flatMap((line) =>
          line.split(/\s*(?:&&|;|\|)\s*/).flatMap((command) => {
            const w = words(command);
            const at = w.indexOf('npm');
            if (at < 0) return [];
            const [verb, name, ...rest] = w.slice(at + 1);
            const where = `${file} (${block.heading}): ${command}`;
            if (verb === 'run' && name) {
              const args = rest[0] === '--' ? rest.slice(1) : rest;
              return [{ where, script: name, args }];
            }
            if (verb === 'start') {
              const args = [name, ...rest].filter((word) => word !== undefined);
              return [{ where, script: 'start', args: args[0] === '--' ? args.slice(1) : args }];
            }
            return [];
          }),
        ),
      ),
  );
}

describe('the commands of the documents', () => {
  const all = invocations();

  it('are many (the extraction works)', () => {
    expect(all.length).toBeGreaterThan(30);
    expect(all.map((i) => i.script)).toEqual(
      expect.arrayContaining(['start', 'admin', 'smoke', 'invoke', 'synth', 'bench:list']),
    );
  });

  it('name scripts that exist', () => {
    for (const { where, script } of all) {
      const known = where.startsWith('client/README.md')
        ? [...ROOT_SCRIPTS, ...CLIENT_SCRIPTS]
        : ROOT_SCRIPTS;
      expect(known, where).toContain(script);
    }
  });

  it('give the programs flags and commands they accept', async () => {
    const checked = all.filter(({ script, args }) => PROGRAMS[script] && args.length > 0);
    expect(checked.length).toBeGreaterThan(10);
    for (const { where, script, args } of checked) {
      const program = join(PROJECT_ROOT, PROGRAMS[script] as string);
      // The argument that names a file of the repository must name one that exists.
      for (const arg of args.filter((a) => /^(events|test)\//.test(a))) {
        expect(existsSync(join(PROJECT_ROOT, arg)), `${where}: ${arg}`).toBe(true);
      }
      const result = await run(process.execPath, [program, ...args, '--help'], {
        cwd: PROJECT_ROOT,
      }).then(
        () => 'accepted',
        (error: { stderr?: string; stdout?: string }) => error.stderr || error.stdout || 'failed',
      );
      expect(result, where).toBe('accepted');
    }
  }, 120_000);

  it('never pass options to npm start without "--" (npm would keep them)', () => {
    for (const file of DOCUMENTS) {
      const text = readFileSync(join(PROJECT_ROOT, file), 'utf8');
      expect(text, file).not.toMatch(/npm start --(?!\s)/);
    }
  });

  it('keep a stage setting in cdk.json as docs/deploy.md shows it, and synth accepts it', () => {
    const example = blocks('docs/deploy.md').find((block) => block.lang === 'json');
    const { context } = JSON.parse(example?.text.replace('…', 'abc') ?? '{}') as {
      context: Record<string, unknown>;
    };
    const config = stageConfig('production', (key) => context[key], {});
    expect(config.customDomain?.domainName).toBe('api.example.com');
    expect(config.apiGatewayAccountRole).toBe(true);
    expect(config.env).toEqual({ account: '123456789012', region: 'eu-west-1' });
  });
});

describe('the README\'s "Try it", against npm start', () => {
  let api: LocalApi;
  beforeAll(async () => {
    api = await startLocalApi();
  });
  afterAll(() => api?.stop());

  it('answers each request with the status its comment says, in order', async () => {
    const tried = blocks('README.md').filter((b) => b.heading === 'Try it' && b.lang === 'sh');
    expect(tried.length).toBeGreaterThan(0);
    const expected: { line: string; status: string }[] = [];
    const script = tried
      .flatMap((block) => block.text.split('\n'))
      .map((line) => {
        if (line.startsWith('API=')) return `API=${api.url}`;
        if (line.startsWith('V2=')) return `V2=${api.url.replace(/\/v1$/, '/v2')}`;
        const checked = /^curl -i (.*?)\s+# (\d{3})\b/.exec(line);
        if (!checked) return line;
        expected.push({ line, status: checked[2] as string });
        // The status line of the answer, marked so that it can be found in the output.
        return `printf '@@ %s\\n' "$(answer ${checked[1]})"`;
      })
      .join('\n');
    // As docs/clients.md tells a client: a 503 (a dependency busy for a moment; on a loaded
    // machine, the shared DynamoDB Local) is tried again after its Retry-After, a few times. Every
    // curl of the script does so, those whose status the README names and the others (the
    // ETag's request, the cancel between the polls), and then prints what curl printed.
    const politeCurl = `curl() {
  local attempt out
  for attempt in 1 2 3 4; do
    out=$(command curl -w '\\n@@ %{http_code}' "$@")
    if [ "\${out##*@@ }" = 503 ] && [ "$attempt" -lt 4 ]; then
      sleep ${DEFAULT_RETRY_AFTER_SECONDS} # a transient 503's Retry-After (curl 7.81 cannot print it)
    else
      printf '%s\\n' "\${out%@@ *}"
      return 0
    fi
  done
}
answer() { curl -sS -o /dev/null -D - "$@" | tr -d '\\r' | head -n 1; }`;
    // `--local` finds the running API by its state file, as it finds `npm start`'s.
    const { stdout } = await run('bash', ['-e', '-c', `${politeCurl}\n${script}`], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, STORE_ORDERS_LOCAL_STATE: api.stateFile },
    });
    const statuses = [...stdout.matchAll(/^@@ HTTP\/1\.1 (\d{3})/gm)].map((m) => m[1]);
    expect(statuses).toEqual(expected.map((e) => e.status));
    expect(expected.length).toBeGreaterThanOrEqual(10);
    // The key the operator's command printed works at once.
    const created = [...stdout.matchAll(/\bsok_\w+/g)].map((m) => m[0]);
    const key = created.find((k) => !script.includes(k));
    expect(key).toBeDefined();
    const { answer } = await sendPolitely(() =>
      fetch(`${api.url}/store/orders`, { headers: { Authorization: `Bearer ${key}` } }),
    );
    expect(answer.status).toBe(200);
  });

  it("walks every page of a filter as docs/paging-v2.md's loop does: each pending order once, in order", async () => {
    const [walk] = blocks('docs/paging-v2.md').filter(
      (b) => b.heading === 'Walk every page of a filter' && b.lang === 'sh',
    );
    expect(walk).toBeDefined();
    const script = walk!.text
      .split('\n')
      .map((line) => (line.startsWith('V2=') ? `V2=${api.url.replace(/\/v1$/, '/v2')}` : line))
      .join('\n')
      // One order a page: a walk of several pages, whatever the tests above left pending.
      .replace('pageSize=2', 'pageSize=1');
    // The pending orders now (the test above cancelled some), ids as their digits.
    const list = await sendPolitely(() =>
      fetch(`${api.url}/store/orders`, {
        headers: { Authorization: `Bearer ${DEMO_PRO_KEY}` },
      }),
    );
    const pending = [
      ...(await list.answer.text()).matchAll(/\{"id":(\d+),[^}]*"status":"pending"\}/g),
    ].map((m) => m[1]);
    expect(pending.length).toBeGreaterThanOrEqual(2);
    // A 503 on a loaded machine (the shared DynamoDB Local) is asked again after its Retry-After,
    // as the page says; any other failure ends the walk, as the loop does.
    const retrying503 = `curl() {
  local out attempt
  for attempt in 1 2 3 4; do
    if out=$(command curl "$@"); then printf '%s' "$out"; return 0; fi
    case "$out" in *'"status":503'*) sleep ${DEFAULT_RETRY_AFTER_SECONDS} ;; *) break ;; esac
  done
  printf '%s' "$out"
  return 22
}`;
    const { stdout } = await run('bash', ['-c', `${retrying503}\n${script}`], {
      cwd: PROJECT_ROOT,
    });
    const pages = stdout.trim().split('\n');
    expect(pages.length).toBeGreaterThanOrEqual(pending.length);
    const walked = pages.flatMap((page) => [...page.matchAll(/"id":(\d+)/g)].map((m) => m[1]));
    expect(walked).toEqual(pending);
    expect(pages.at(-1)).not.toContain('nextPageToken');
  });
});
