/**
 * `npm run invoke -- <function> <event.json>`: runs one handler on one event, like
 * `sam local invoke`, and prints what the function returned. DynamoDB is the running local
 * API's (`npm start`), or --dynamodb-endpoint, or else a DynamoDB Local started for this call
 * with the demo data. A proxy event's request time is stamped with the current time, as API
 * Gateway stamps each request on arrival (the sample files stay as they are): the functions
 * count their time budget from it.
 */
import { readFile } from 'node:fs/promises';
import {
  describeFlags,
  flagsSynopsis,
  switchFlag,
  valueFlag,
  parseFlags,
} from '../lib/config/flags.ts';
import { UsageError } from '../lib/config/usage-error.ts';
import { FUNCTION_NAMES, type FunctionName } from '../lib/functions.ts';
import { requestTimeText } from './access-log-context.ts';
import { createContext, invokeStreaming, isStreamingHandler } from './lambda-runtime.ts';
import {
  loadFunctions,
  readLocalState,
  startLocalStack,
  type LocalFunctions,
  type LocalStack,
} from './local-stack.ts';

const FLAGS = {
  'dynamodb-endpoint': valueFlag(
    'URL',
    "the DynamoDB to use (default: the running local API's, else a DynamoDB Local)",
  ),
  'table-prefix': valueFlag('NAME', 'prefix of the table names'),
  help: switchFlag('show this help'),
};

const USAGE = `Usage: npm run invoke -- <function> <event.json> ${flagsSynopsis(FLAGS)}

Functions: ${FUNCTION_NAMES.join(', ')}. Sample events are in events/.

Options:
${describeFlags(FLAGS)}`;

const isFunctionName = (name: string): name is FunctionName =>
  (FUNCTION_NAMES as readonly string[]).includes(name);

/** The event as if its request arrived now: `requestContext`'s request time, when it has one. */
export function arrivingNow(event: unknown, now: number = Date.now()): unknown {
  const context = (event as { requestContext?: unknown } | null)?.requestContext;
  if (typeof context !== 'object' || context === null) return event;
  return {
    ...(event as object),
    requestContext: {
      ...context,
      requestTime: requestTimeText(now),
      requestTimeEpoch: now,
    },
  };
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, FLAGS, { allowPositionals: true });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const [name, eventFile] = positionals;
  if (!name || !eventFile || positionals.length > 2)
    throw new UsageError(`expected <function> <event.json>\n${USAGE}`);
  if (!isFunctionName(name))
    throw new UsageError(`unknown function "${name}" (one of ${FUNCTION_NAMES.join(', ')})`);
  let event: unknown;
  try {
    event = JSON.parse(await readFile(eventFile, 'utf8'));
  } catch (error) {
    throw new UsageError(
      `${eventFile}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }

  event = arrivingNow(event);
  const running = values['dynamodb-endpoint'] ? undefined : await readLocalState();
  let stack: Pick<LocalStack, 'endpoint' | 'tables'> & { stop?: () => Promise<void> };
  if (running) {
    stack = { endpoint: running.endpoint, tables: running.tables };
    console.error(`Using the running local API's DynamoDB (${running.endpoint})`);
  } else {
    if (!values['dynamodb-endpoint'])
      console.error(
        'No local API running: starting DynamoDB Local with the demo data for this call',
      );
    stack = await startLocalStack({
      dynamodbEndpoint: values['dynamodb-endpoint'],
      tablePrefix: values['table-prefix'],
    });
  }
  try {
    const functions: LocalFunctions = await loadFunctions(stack);
    const handler = functions[name];
    const context = createContext(name);
    try {
      if (isStreamingHandler(handler)) {
        const response = await invokeStreaming(handler, event, context);
        const chunks: Buffer[] = [];
        for await (const chunk of response.body) chunks.push(Buffer.from(chunk as Buffer));
        await response.done;
        console.log(
          JSON.stringify(
            { ...response.prelude, body: Buffer.concat(chunks).toString('utf8') },
            null,
            2,
          ),
        );
      } else {
        const result = await (handler as (e: unknown, c: unknown) => Promise<unknown>)(
          event,
          context,
        );
        console.log(JSON.stringify(result, null, 2));
      }
      return 0;
    } catch (error) {
      console.log(
        JSON.stringify(
          { errorType: (error as Error).name, errorMessage: (error as Error).message },
          null,
          2,
        ),
      );
      return 1;
    }
  } finally {
    await stack.stop?.();
  }
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(`error: ${(error as Error).message}`);
      process.exit(1);
    },
  );
}
