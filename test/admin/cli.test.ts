/**
 * The CLI's shell: help on every command, wrong command lines, the production confirmation, the
 * progress bar, and the line numbers of import problems.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { confirmChange } from '../../admin/confirm.ts';
import { progressBar, progressLine } from '../../admin/progress.ts';
import type { Target } from '../../admin/target.ts';
import { formatProblem, parseOrders, recordLines } from '../../lib/orders/order-input.ts';
import { generateApiKey, keyHint } from '../../lib/keys/api-key.ts';
import { expectOneLineError, runCli, runCliProcess, tempFile } from './support.ts';

describe('help', () => {
  it.each([
    [['--help'], /^Usage: store-orders-admin <keys\|orders> <command>/],
    [['-h'], /^Usage: store-orders-admin <keys\|orders> <command>/],
    [['keys', '--help'], /^Usage: store-orders-admin keys <command>/],
    [['orders', '--help'], /^Usage: store-orders-admin orders <command>/],
    [
      ['keys', 'create', '--help'],
      /^Usage: store-orders-admin keys create --plan free\|pro\|business\|enterprise/,
    ],
    [['keys', 'list', '--help'], /^Usage: store-orders-admin keys list/],
    [['keys', 'revoke', '--help'], /^Usage: store-orders-admin keys revoke <key-id>/],
    [
      ['keys', 'rotate', '-h'],
      /^Usage: store-orders-admin keys rotate <key-id> \[--grace DURATION\]/,
    ],
    [['keys', 'set-plan', '--help'], /^Usage: store-orders-admin keys set-plan <key-id> --plan/],
    [['orders', 'import', '--help'], /^Usage: store-orders-admin orders import <file\.json>/],
    [['orders', 'ship', '--help'], /^Usage: store-orders-admin orders ship <order-id>/],
    [['orders', 'export', '--help'], /^Usage: store-orders-admin orders export \[file\.json\]/],
  ])('%j prints the usage and exits 0', async (args, usage) => {
    const result = await runCli(args);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(usage);
    expect(result.stdout).toContain('--stage staging|production');
  });

  it('explains the target flags and the exit codes at the top', async () => {
    const { stdout } = await runCli(['--help']);
    for (const text of [
      '--local',
      '--outputs FILE',
      '--table-orders',
      '--endpoint URL',
      '--yes',
      'Exit codes: 0 done, 1 refused or failed',
    ]) {
      expect(stdout).toContain(text);
    }
  });
});

describe('as a process (admin/cli.ts; the other tests run its program in-process)', () => {
  it('exits 0 with the usage on stdout', async () => {
    const result = await runCliProcess(['--help']);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^Usage: store-orders-admin <keys\|orders> <command>/);
  });

  it('exits 2 on a wrong command line and 1 on a failure, each with one line and no stack trace', async () => {
    expectOneLineError(await runCliProcess(['pets']), 2, /^error: unknown command "pets"/);
    const unreachable = [
      '--endpoint',
      'http://127.0.0.1:9',
      '--table-keys',
      'k',
      '--table-orders',
      'o',
    ];
    expectOneLineError(
      await runCliProcess(['keys', 'list', ...unreachable], {
        env: { STORE_ORDERS_ADMIN_TIMEOUT_SECONDS: '1' },
      }),
      1,
      /^error: /,
    );
  });
});

describe('wrong command lines: one line, exit 2', () => {
  it.each([
    [[], /^error: missing command \(see --help\)$/],
    [['pets'], /^error: unknown command "pets": keys or orders/],
    [['keys'], /^error: missing keys command/],
    [
      ['keys', 'delete'],
      /^error: unknown keys command "delete": create, list, show, revoke, rotate, set-plan, set-permissions, unban$/,
    ],
    [
      ['orders', 'cancel', '1'],
      /^error: unknown orders command "cancel": import, show, ship, export, retag, reindex$/,
    ],
    [['orders', 'export', 'a.json', 'b.json'], /^error: unexpected argument "b\.json"/],
    [['keys', 'list', '--stage'], /^error: Option '--stage <value>' argument missing$/],
  ])('%j', async (args, message) => {
    expectOneLineError(await runCli(args), 2, message);
  });
});

describe('a pasted API key is never echoed', () => {
  const key = generateApiKey();
  // What follows the hint: any echo of more than the hint shows these characters.
  const secret = key.slice(keyHint(key).length - 1, keyHint(key).length + 5);
  const target = ['--endpoint', 'http://127.0.0.1:1', '--table-keys', 'k', '--table-orders', 'o'];

  it.each([
    ['as a key id to revoke', ['keys', 'revoke', key, ...target], 2, /that is an API key/],
    ['as a key id to rotate', ['keys', 'rotate', key, ...target], 2, /that is an API key/],
    ['as a key id to re-plan', ['keys', 'set-plan', key, '--plan', 'pro', ...target], 2, /API key/],
    ['as a plan', ['keys', 'create', '--plan', key, ...target], 2, /plan must be one of/],
    ['as a limit', ['keys', 'create', '--plan', 'enterprise', '--per-minute', key], 2, /whole/],
    ['as a grace', ['keys', 'rotate', 'key_A', '--grace', key, ...target], 2, /grace must/],
    ['as an order id', ['orders', 'ship', key, ...target], 2, /order id must be/],
    ['as a command', [key], 2, /unknown command/],
    ['as a keys command', ['keys', key], 2, /unknown keys command/],
    ['as an extra argument', ['keys', 'list', key, ...target], 2, /unexpected argument/],
    ['as a stage', ['keys', 'list', '--stage', key], 2, /--stage must be one of/],
    ['as an endpoint', ['keys', 'list', '--endpoint', key, '--table-keys', 'k'], 2, /--endpoint/],
    ['as an option', ['keys', 'list', `--${key}`], 2, /Unknown option/],
    ['as a file name', ['orders', 'import', key, ...target], 1, /cannot read/],
  ])('%s: one line with its hint at most', async (_, args, code, message) => {
    const result = await runCli(args);
    expectOneLineError(result, code, message);
    expect(result.stderr).not.toContain(secret);
    expect(result.stderr).toContain(keyHint(key));
  });

  it('in an import file: the problem lines show its hint only', async () => {
    const file = tempFile('keyed.json', `[{"id": 1, "status": "${key}"}]`);
    const result = await runCli([
      'orders',
      'import',
      file,
      '--endpoint',
      'http://127.0.0.1:1',
      '--table-orders',
      'o',
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`got "${keyHint(key)}"`);
    expect(result.stderr).not.toContain(secret);
  });
});

/** A stream that says it is (or is not) a terminal. */
function terminal(isTTY: boolean): NodeJS.ReadStream & PassThrough {
  return Object.assign(new PassThrough(), { isTTY }) as unknown as NodeJS.ReadStream & PassThrough;
}

const production: Target = {
  description: 'production',
  stage: 'production',
  connection: {},
  tables: {},
};

describe('production confirmation', () => {
  it('asks on stderr and goes ahead on y or yes', async () => {
    for (const answer of ['y\n', 'YES\n']) {
      const stdin = terminal(true);
      const stderr = terminal(true) as unknown as NodeJS.WriteStream & PassThrough;
      let asked = '';
      stderr.on('data', (chunk: Buffer) => (asked += chunk.toString()));
      const confirmed = confirmChange(production, 'revoke key key_1', undefined, { stdin, stderr });
      stdin.write(answer);
      await expect(confirmed).resolves.toBeUndefined();
      expect(asked).toBe('Revoke key key_1 on PRODUCTION? [y/N] ');
    }
  });

  it.each(['n\n', '\n', 'yep\n', ''])('stops on the answer %j', async (answer) => {
    const stdin = terminal(true);
    const stderr = terminal(true) as unknown as NodeJS.WriteStream;
    const confirmed = confirmChange(production, 'ship order 1', undefined, { stdin, stderr });
    if (answer) stdin.write(answer);
    else stdin.end();
    await expect(confirmed).rejects.toThrow(/^not confirmed: nothing was changed$/);
  });

  it('treats tables of production named explicitly as production', async () => {
    const io = { stdin: terminal(false), stderr: terminal(false) as unknown as NodeJS.WriteStream };
    const named = (orders: string): Target => ({
      description: 'AWS eu-west-1',
      connection: { region: 'eu-west-1' },
      tables: { orders },
    });
    await expect(
      confirmChange(
        named('Production-Data-OrdersE1F3A9C2-1XK8W2P7ZQ4R'),
        'ship order 1',
        undefined,
        io,
      ),
    ).rejects.toThrow(/^refusing to ship order 1 on PRODUCTION without confirmation/);
    await expect(
      confirmChange(
        {
          ...named('Staging-Data-OrdersE1F3A9C2-1XK8W2P7ZQ4R'),
          tables: { orders: 'o', apiKeys: 'Production-Data-ApiKeys1-2' },
        },
        'revoke key key_1',
        undefined,
        io,
      ),
    ).rejects.toThrow(/on PRODUCTION/);
    for (const orders of [
      'Staging-Data-OrdersE1F3A9C2-1XK8W2P7ZQ4R',
      'Production-DataOrders',
      'my-Production-Data-x',
    ]) {
      await expect(
        confirmChange(named(orders), 'ship order 1', undefined, io),
      ).resolves.toBeUndefined();
    }
  });

  it('refuses without a terminal, unless --yes; other stages are not asked', async () => {
    const io = { stdin: terminal(false), stderr: terminal(false) as unknown as NodeJS.WriteStream };
    await expect(confirmChange(production, 'ship order 1', undefined, io)).rejects.toThrow(
      /pass --yes$/,
    );
    await expect(confirmChange(production, 'ship order 1', true, io)).resolves.toBeUndefined();
    await expect(
      confirmChange({ ...production, stage: 'staging' }, 'ship order 1', undefined, io),
    ).resolves.toBeUndefined();
  });
});

describe('progress bar', () => {
  function capture(isTTY: boolean) {
    const stream = terminal(isTTY) as unknown as NodeJS.WriteStream & PassThrough;
    let text = '';
    stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
    return { stream, text: () => text };
  }

  it('redraws in place on a terminal, at most ten times a second', () => {
    const out = capture(true);
    let now = 0;
    const bar = progressBar(100, 'orders', out.stream, () => now);
    now = 1000;
    bar.update(25);
    now = 1050;
    bar.update(50); // too soon: not drawn
    now = 2000;
    bar.update(75);
    bar.finish(100);
    const frames = out.text().split('\r').filter(Boolean);
    expect(frames).toEqual([
      `[${'#'.repeat(8)}${'.'.repeat(22)}] 25/100 orders 25% 25 orders/s\x1b[K`,
      `[${'#'.repeat(23)}${'.'.repeat(7)}] 75/100 orders 75% 38 orders/s\x1b[K`,
      `[${'#'.repeat(30)}] 100/100 orders 100% 50 orders/s\x1b[K\n`,
    ]);
  });

  it('clears a phase from a terminal without leaving a line, and prints nothing otherwise', () => {
    for (const isTTY of [true, false]) {
      const out = capture(isTTY);
      let now = 0;
      const bar = progressBar(10, 'checked', out.stream, () => now);
      now = 1000;
      bar.update(5);
      bar.clear();
      expect(out.text()).toBe(
        isTTY
          ? `\r[${'#'.repeat(15)}${'.'.repeat(15)}] 5/10 checked 50% 5 checked/s\x1b[K\r\x1b[K`
          : '',
      );
    }
  });

  it('draws a line of unknown total the same way: in place at most ten times a second, rendered only when drawn, nothing off a terminal', () => {
    for (const isTTY of [true, false]) {
      const out = capture(isTTY);
      let now = 0;
      let rendered = 0;
      const line = progressLine(out.stream, () => now);
      const text = (value: string) => () => (rendered++, value);
      now = 1000;
      line.update(text('1 scanned'));
      now = 1099;
      line.update(text('2 scanned')); // too soon: not drawn, not rendered
      now = 1100;
      line.update('3 scanned');
      line.clear();
      expect(out.text()).toBe(isTTY ? '\r1 scanned\x1b[K\r3 scanned\x1b[K\r\x1b[K' : '');
      expect(rendered).toBe(isTTY ? 1 : 0);
    }
  });

  it('prints only a final line when stderr is not a terminal', () => {
    const out = capture(false);
    const bar = progressBar(3, 'orders', out.stream, () => 500);
    bar.update(1);
    bar.update(2);
    bar.finish(3);
    expect(out.text()).toBe(`[${'#'.repeat(30)}] 3/3 orders 100% 0 orders/s\n`);
  });
});

describe('line numbers of import problems', () => {
  it('finds where each top-level record starts, whatever the strings and nesting hold', () => {
    const text = [
      '[ {"id": 1, "note": "[,{\\"]"},',
      '',
      '  {"id": 2,',
      '   "x": [1, [2, 3]]}, {"id": 3},',
      '\t"text",\r',
      '  [4]',
      ']',
    ].join('\n');
    expect(recordLines(text)).toEqual([1, 3, 4, 5, 6]);
    expect(recordLines('[]')).toEqual([]);
    expect(recordLines('[\n]')).toEqual([]);
  });

  it('puts them in the problems only when asked, so other readers keep their messages', () => {
    const text = '[\n{"id": 1},\n{"id": "2"}\n]';
    const plain = parseOrders(text);
    const located = parseOrders(text, { lines: true });
    expect(plain.ok ? [] : plain.problems.map(formatProblem)).toEqual([
      'record 1: id must be an integer (int64), got "2"',
    ]);
    expect(located.ok ? [] : located.problems.map(formatProblem)).toEqual([
      'line 3 (record 1): id must be an integer (int64), got "2"',
    ]);
  });
});
