/**
 * What `npm start` loads when no --seed / --keys file is given: a few orders in every status
 * (including int64 extremes, to show exact digits) and one fixed demo key per plan, so the
 * README's curl examples work as written. These keys exist only in the local API.
 */
import { apiKeyFromBody } from '../lib/keys/api-key.ts';
import type { KeyEntry } from '../lib/keys/key-input.ts';
import type { Order } from '../lib/orders/order.ts';

export const DEMO_ORDERS: readonly Order[] = [
  {
    id: 1n,
    petId: 101n,
    quantity: 1,
    shipDate: '2026-11-20T09:00:00Z',
    complete: false,
    status: 'pending',
  },
  {
    id: 2n,
    petId: 102n,
    quantity: 2,
    shipDate: '2026-11-21T10:30:00Z',
    complete: false,
    status: 'pending',
  },
  {
    id: 3n,
    petId: 103n,
    quantity: 1,
    shipDate: '2026-11-18T08:15:00Z',
    complete: true,
    status: 'shipped',
  },
  {
    id: 4n,
    petId: 104n,
    quantity: 3,
    shipDate: '2026-11-19T12:00:00Z',
    complete: false,
    status: 'cancelled',
  },
  { id: 5n, petId: 105n, quantity: 5, status: 'pending' },
  {
    id: 9007199254740993n,
    petId: 9007199254740995n,
    quantity: 1,
    shipDate: '2026-12-01T00:00:00Z',
    complete: false,
    status: 'pending',
  },
  {
    id: 9223372036854775807n,
    petId: 9223372036854775806n,
    quantity: 2,
    shipDate: '2026-12-24T18:00:00Z',
    complete: false,
    status: 'shipped',
  },
];

export const DEMO_KEYS: readonly KeyEntry[] = [
  { key: apiKeyFromBody('DemoFreePlanKeyForLocalUseOnly00'), plan: 'free', label: 'demo free' },
  { key: apiKeyFromBody('DemoProPlanKeyForLocalUseOnly000'), plan: 'pro', label: 'demo pro' },
  {
    key: apiKeyFromBody('DemoBusinessPlanKeyForLocalUse00'),
    plan: 'business',
    label: 'demo business',
  },
  {
    key: apiKeyFromBody('DemoEnterprisePlanKeyForLocal000'),
    plan: 'enterprise',
    limits: { perMinute: 5_000, perDay: 1_000_000 },
    label: 'demo enterprise',
  },
];
