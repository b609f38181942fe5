/**
 * `orders …`: load orders from a file, show one as stored (and who cancelled it), ship one,
 * export them all, give the list a new ETag, write the v2 list's index attributes. Thin: parse
 * the command line, call lib/orders, print.
 */
import type { Command } from './command.ts';
import { reindex, retag, ship } from './orders/change.ts';
import { importOrders } from './orders/import.ts';
import { exportOrders, show } from './orders/inspect.ts';

export const ORDER_COMMANDS: readonly Command[] = [
  importOrders,
  show,
  ship,
  exportOrders,
  retag,
  reindex,
];
