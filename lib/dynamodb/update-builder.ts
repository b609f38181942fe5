/** One conditional UpdateItem built clause by clause, with generated placeholders. */
import { UpdateCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';

/**
 * Conditions (joined by AND), SET clauses and their values, REMOVE clauses; `Attribute` is the
 * names the item may have, so that a name outside the item's legend does not type-check.
 */
export class UpdateBuilder<Attribute extends string = string> {
  private readonly conditions: string[] = [];
  private readonly sets: string[] = [];
  private readonly removes: string[] = [];
  private readonly values: Record<string, unknown> = {};
  private readonly names: Record<string, string> = {};

  value(v: unknown): string {
    const placeholder = `:v${Object.keys(this.values).length}`;
    this.values[placeholder] = v;
    return placeholder;
  }

  name(attribute: Attribute): string {
    this.names[`#${attribute}`] = attribute;
    return `#${attribute}`;
  }

  condition(text: string): void {
    this.conditions.push(text);
  }

  set(text: string): void {
    this.sets.push(text);
  }

  /** `attribute = value`, as a SET clause. */
  assign(attribute: Attribute, value: unknown): void {
    this.set(`${this.name(attribute)} = ${this.value(value)}`);
  }

  /** `attribute`, as a REMOVE clause. */
  remove(attribute: Attribute): void {
    this.removes.push(this.name(attribute));
  }

  /** The attribute holds `expected`, or is absent when `expected` is undefined. */
  equalsOrAbsent(attribute: Attribute, expected: unknown): void {
    this.condition(
      expected === undefined
        ? `attribute_not_exists(${this.name(attribute)})`
        : `${this.name(attribute)} = ${this.value(expected)}`,
    );
  }

  /**
   * The write's input: its clauses, and, when its condition fails, the item as it was in the
   * same answer (ReturnValuesOnConditionCheckFailure ALL_OLD, no extra read).
   */
  input(tableName: string, key: Record<string, unknown>): UpdateCommandInput {
    return {
      TableName: tableName,
      Key: key,
      UpdateExpression: [
        ...(this.sets.length > 0 ? [`SET ${this.sets.join(', ')}`] : []),
        ...(this.removes.length > 0 ? [`REMOVE ${this.removes.join(', ')}`] : []),
      ].join(' '),
      ConditionExpression: this.conditions.join(' AND '),
      ExpressionAttributeNames: this.names,
      // DynamoDB refuses an empty map (a write that only removes, on conditions of presence).
      ...(Object.keys(this.values).length > 0 ? { ExpressionAttributeValues: this.values } : {}),
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    };
  }

  /** The write: the item after it (ALL_NEW), or before it when the condition failed (ALL_OLD). */
  command(tableName: string, key: Record<string, unknown>): UpdateCommand {
    return new UpdateCommand({ ...this.input(tableName, key), ReturnValues: 'ALL_NEW' });
  }
}
