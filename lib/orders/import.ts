/**
 * What an import of orders changes: each order of the file is new, unchanged (stored exactly
 * so: skipped, which is what makes a re-run idempotent) or changed (stored otherwise: a
 * conflict, which replaces the stored order only when the operator asks for it).
 */
import { ORDER_FIELDS, type Order, type OrderField } from './order.ts';

export interface FieldDifference {
  readonly field: OrderField;
  /** undefined: the field is absent. */
  readonly stored: Order[OrderField] | undefined;
  readonly incoming: Order[OrderField] | undefined;
}

/** An order of the file whose id is stored with other values. */
export interface OrderConflict {
  readonly order: Order;
  readonly differences: readonly FieldDifference[];
}

export interface ImportPlan {
  /** Orders whose id is not stored. */
  readonly added: readonly Order[];
  /** How many orders are stored exactly as the file has them. */
  readonly unchanged: number;
  /** Orders stored with other values. */
  readonly conflicts: readonly OrderConflict[];
}

/** The fields in which two orders differ (an absent field differs from any value). */
export function orderDifferences(stored: Order, incoming: Order): FieldDifference[] {
  return ORDER_FIELDS.filter((field) => stored[field] !== incoming[field]).map((field) => ({
    field,
    stored: stored[field],
    incoming: incoming[field],
  }));
}

/** Sorts the orders of a file by what they would change, given the orders stored under their ids. */
export function planImport(incoming: readonly Order[], stored: readonly Order[]): ImportPlan {
  const storedById = new Map(stored.map((order) => [order.id, order]));
  const added: Order[] = [];
  const conflicts: OrderConflict[] = [];
  let unchanged = 0;
  for (const order of incoming) {
    const current = storedById.get(order.id);
    if (current === undefined) {
      added.push(order);
      continue;
    }
    const differences = orderDifferences(current, order);
    if (differences.length === 0) unchanged++;
    else conflicts.push({ order, differences });
  }
  return { added, unchanged, conflicts };
}

/** What the import writes: the new orders, and the changed ones when they are to be replaced. */
export function ordersToWrite(plan: ImportPlan, replace: boolean): Order[] {
  return replace
    ? [...plan.added, ...plan.conflicts.map((conflict) => conflict.order)]
    : [...plan.added];
}
