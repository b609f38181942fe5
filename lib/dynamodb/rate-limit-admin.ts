/**
 * What an operator does to one key's counter item (`keys show`, `keys unban`), outside the request
 * path. The item's attributes: ./rate-limit-item.ts.
 */
import { GetCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { CounterState } from '../limits/sliding-window.ts';
import { isConditionFailure } from './errors.ts';
import { counterKey, itemOfConditionFailure, itemToState } from './rate-limit-item.ts';

export class RateLimitAdmin {
  private readonly client: DynamoDBDocumentClient;
  private readonly tableName: string;

  constructor(client: DynamoDBDocumentClient, tableName: string) {
    this.client = client;
    this.tableName = tableName;
  }

  /** The stored state of a key (a strongly consistent read); `{}` when it has none. */
  async read(keyId: string): Promise<CounterState> {
    const { Item } = await this.client.send(
      new GetCommand({
        TableName: this.tableName,
        Key: { pk: counterKey(keyId) },
        ConsistentRead: true,
      }),
    );
    return itemToState(Item);
  }

  /**
   * Lifts a key's ban in one conditional write, provided it is banned at `now`: removes the ban
   * and the moment its last refusal named (so the next refusal is not early), and restarts its
   * refusal count. Every write of the limiter pins what it decided on (the refusal count and
   * that moment), so a request decided on the state before the unban fails its condition and
   * decides again from the state after it: it cannot ban the key again from stale state.
   * `lifted: false` when the key was not banned (nothing changed); `before` is the state the
   * write found.
   */
  async unban(keyId: string, now: number): Promise<{ lifted: boolean; before: CounterState }> {
    try {
      const { Attributes } = await this.client.send(
        new UpdateCommand({
          TableName: this.tableName,
          Key: { pk: counterKey(keyId) },
          ConditionExpression: '#bu > :now',
          UpdateExpression: 'REMOVE #bu, #ra SET #rc = :zero',
          ExpressionAttributeNames: { '#bu': 'bu', '#ra': 'ra', '#rc': 'rc' },
          ExpressionAttributeValues: { ':now': now, ':zero': 0 },
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { lifted: true, before: itemToState(Attributes) };
    } catch (error) {
      if (!isConditionFailure(error)) throw error;
      return { lifted: false, before: itemToState(itemOfConditionFailure(error)) };
    }
  }
}
